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


def pieces(paths: Iterable[str]) -> Iterator[Chunk | Unreadable]:
    """Each document of each input in order, and in its place each input that cannot be read."""
    for path in expand_paths(paths):
        source = read_source(path)
        if isinstance(source, Unreadable):
            yield source
            continue
        yield from split_documents(source)


@dataclass(frozen=True, slots=True)
class Read:
    """One piece read (`read_piece`): what it says on stderr and its value, if any."""

    said: tuple[str, ...]
    value: Any = None
    usable: bool = False  # parsed: `value` is the document
    failed: bool = False  # unreadable or not parsed: the run ends with exit 2
    templated: bool = False


def read_piece(prog: str, piece: Chunk | Unreadable) -> Read:
    """A piece of `pieces` read (in any process: nothing is printed here)."""
    if isinstance(piece, Unreadable):
        return Read((f"{prog}: cannot read {piece.name}: {piece.reason}",), failed=True)
    placeholder = templates.find(piece.text)
    if placeholder is not None:
        line = piece.line + placeholder.line + 1
        return Read((f"{prog}: {piece.file}:{line}:{placeholder.column + 1}: "
                     f"document {piece.index}: {placeholder.message}",), templated=True)
    parsed = parse(piece)
    if isinstance(parsed, SyntaxProblem):
        return Read((f"{prog}: {piece.file}:{parsed.line}:{parsed.column}: {parsed.detail}",),
                    failed=True)
    # Duplicates are said, then the document is checked as kubectl sends it.
    said = tuple(f"{prog}: {piece.file}:{piece.line + duplicate.line + 1}: "
                 f"document {piece.index}: {duplicate.message(piece.line)}"
                 for duplicate in parsed.duplicates)
    return Read(said, parsed.value, usable=True)


@dataclass
class DocumentReader:
    """Yields `(chunk, object)` for every parsed document; `failed` tells if any input did not read."""

    prog: str
    failed: bool = False
    templated: int = 0

    def documents(self, paths: Iterable[str]) -> Iterator[tuple[Chunk, Any]]:
        for piece in pieces(paths):
            read = self.take(read_piece(self.prog, piece))
            if read.usable and isinstance(piece, Chunk):
                yield piece, read.value

    def take(self, read: Read) -> Read:
        """Say what a piece read says, and count it."""
        for line in read.said:
            print(line, file=sys.stderr)
        self.failed = self.failed or read.failed
        self.templated += read.templated
        return read

    def summary(self) -> str | None:
        """The count of templates left unchecked, for stderr at the end; None for none."""
        if not self.templated:
            return None
        noun = "document looks" if self.templated == 1 else "documents look"
        return f"{self.prog}: {self.templated} {noun} like a template, not checked: render first"
