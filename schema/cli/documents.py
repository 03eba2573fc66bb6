"""Reading documents for the commands that walk inputs one object at a time.

`skew` and `roundtrip` take each object of each document in turn; a file that
cannot be read or a document that does not parse is named on stderr and makes the
run end with exit 2, while the other inputs are still handled.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from draguard.schema.read.sources import (
    Chunk,
    SyntaxProblem,
    Unreadable,
    expand_paths,
    load,
    read_source,
    split_documents,
)


@dataclass
class DocumentReader:
    """Yields `(chunk, object)` for every parsed document; `failed` tells if any input did not read."""

    prog: str
    failed: bool = False

    def documents(self, paths: Iterable[str]) -> Iterator[tuple[Chunk, Any]]:
        for path in expand_paths(paths):
            source = read_source(path)
            if isinstance(source, Unreadable):
                self._fail(f"cannot read {source.name}: {source.reason}")
                continue
            for chunk in split_documents(source):
                obj = load(chunk)
                if isinstance(obj, SyntaxProblem):
                    self._fail(f"{chunk.file}:{obj.line}:{obj.column}: {obj.detail}")
                    continue
                yield chunk, obj

    def _fail(self, message: str) -> None:
        print(f"{self.prog}: {message}", file=sys.stderr)
        self.failed = True
