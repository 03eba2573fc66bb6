"""Reading documents for the commands that walk inputs one object at a time.

`skew` and `roundtrip` take each object of each document in turn; a file that
cannot be read or a document that does not parse is named on stderr and makes the
run end with exit 2, while the other inputs are still handled. A document that looks
like a template (`templates.find`) is not read: it is named on stderr with its line,
counted in `templated`, and does not change the exit code (issue 17).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from draguard.schema.read import templates
from draguard.schema.read.sources import (
    Chunk,
    SyntaxProblem,
    Unreadable,
    expand_paths,
    parse,
    read_source,
    split_documents,
)


@dataclass
class DocumentReader:
    """Yields `(chunk, object)` for every parsed document; `failed` tells if any input did not read."""

    prog: str
    failed: bool = False
    templated: int = 0

    def documents(self, paths: Iterable[str]) -> Iterator[tuple[Chunk, Any]]:
        for path in expand_paths(paths):
            source = read_source(path)
            if isinstance(source, Unreadable):
                self._fail(f"cannot read {source.name}: {source.reason}")
                continue
            for chunk in split_documents(source):
                placeholder = templates.find(chunk.text)
                if placeholder is not None:
                    line = chunk.line + placeholder.line + 1
                    print(f"{self.prog}: {chunk.file}:{line}:{placeholder.column + 1}: "
                          f"document {chunk.index}: {placeholder.message}", file=sys.stderr)
                    self.templated += 1
                    continue
                parsed = parse(chunk)
                if isinstance(parsed, SyntaxProblem):
                    self._fail(f"{chunk.file}:{parsed.line}:{parsed.column}: {parsed.detail}")
                    continue
                for duplicate in parsed.duplicates:  # said, then checked as kubectl sends it
                    print(f"{self.prog}: {chunk.file}:{chunk.line + duplicate.line + 1}: "
                          f"document {chunk.index}: {duplicate.message(chunk.line)}",
                          file=sys.stderr)
                yield chunk, parsed.value

    def summary(self) -> str | None:
        """The count of templates left unchecked, for stderr at the end; None for none."""
        if not self.templated:
            return None
        noun = "document looks" if self.templated == 1 else "documents look"
        return f"{self.prog}: {self.templated} {noun} like a template, not checked: render first"

    def _fail(self, message: str) -> None:
        print(f"{self.prog}: {message}", file=sys.stderr)
        self.failed = True
