"""A key written twice in one mapping, as the readers find it (issue 17).

kubectl's client-side decoding keeps the last value without a word (kubernetes#125885,
#99286, #89303); the apiserver's strict decoding refuses a body that carries the key
twice (`strict decoding error: … duplicate field "…"`, apimachinery's
pkg/runtime/serializer/json strict mode). So a duplicate is an error, with both lines,
saying which value kubectl would send. `yamlevents` and `jsondecode` record them.
"""

from __future__ import annotations

from typing import NamedTuple

from draguard.schema.model.paths import FieldPath, Segment


class Duplicate(NamedTuple):
    """The path of the repeated key (its mapping's path plus the key) and the 0-based
    line and column of its first and of its last occurrence, counted in the document."""

    path: tuple[Segment, ...]
    first_line: int
    first_column: int
    line: int
    column: int

    @property
    def key(self) -> str:
        return str(self.path[-1])

    def message(self, line_offset: int = 0) -> str:
        """The words, with 1-based lines (`line_offset`: the document's first line in its file)."""
        first, last = self.first_line + line_offset + 1, self.line + line_offset + 1
        where = (f"lines {first} and {last}" if first != last
                 else f"line {last}, columns {self.first_column + 1} and {self.column + 1}")
        return (f'duplicate key "{self.key}" ({where}): the apiserver\'s strict decoding '
                f'refuses it (duplicate field "{self.key}"); kubectl silently sends the last '
                f"value (line {last})")

    def field_path(self) -> FieldPath:
        return FieldPath(self.path)
