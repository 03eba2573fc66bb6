"""Offsets in a text → 0-based lines and columns, in time that does not grow with the text.

A document of a few kilobytes is simply counted; a big one (a `kind: List` of thousands
of items, placed once per finding) would make counting from its start quadratic, so its
line starts are listed once and searched by bisection.
"""

from __future__ import annotations

import bisect
import re
from array import array

# Below this many characters counting is cheaper than building the index.
_SMALL = 16_384
_BREAK = re.compile("\n")


class LineIndex:
    """Where each line of `text` starts; built on first use for a big text."""

    __slots__ = ("_starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts: array[int] | None = None

    def line_column(self, offset: int) -> tuple[int, int]:
        """The 0-based line and column of `offset`."""
        text = self.text
        if len(text) <= _SMALL:
            line = text.count("\n", 0, offset)
            return line, offset - text.rfind("\n", 0, offset) - 1
        starts = self._starts
        if starts is None:
            # An array of machine integers: a list would hold an object per line.
            starts = self._starts = array("q", [0])
            starts.extend(m.end() for m in _BREAK.finditer(text))
        line = bisect.bisect_right(starts, offset) - 1
        return line, offset - starts[line]
