"""Cutting a block-style `kind: List` document into its items, by their lines.

`kubectl get … -o yaml` prints one document, a List whose `items:` key sits at
column 0 and whose items start with a dash at column 0 (or 2). Read whole, such a
document is one value as large as the cluster's objects (a 50,000-claim List took
1.1 GB and 15 s, issue 21), and one process reads it. Cut into its items, each item is
read, checked and dropped on its own, and items can be shared over processes.

An item's text keeps its lines and columns: its dash becomes a blank, so that its
mapping starts at the column it has in the file, and a node is found in the item where
it is in the document (`blockyaml.Lines`, libyaml's marks). Lines at most as indented
as the dashes end an item; a line indented less, or at the dashes' column without a
dash, ends the list (YAML's block structure: an item's content is indented past its
dash, block scalars past their key).

Documents this cut could read differently from a whole parse are left whole: anchors
and aliases (an alias may name an anchor of another item), tags and directives, tabs
and carriage returns, a second top-level `items:` key (a duplicate). The caller reads
the head (the document with `items: []` in place of the items) to learn the List's
kind, and reads the whole document again when an item does not parse, so that a
syntax error is reported as before.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache
from typing import NamedTuple

_ITEMS = re.compile(r"^items:[ ]*+(?:#[^\n]*+)?+\n", re.MULTILINE)
# `&a`, `*a`, `!tag`, `%DIRECTIVE` where a node or a line may start, and tabs or CRs
# anywhere: rare in kubectl's output, and any of them sends the document to a whole
# parse. Candidates are found by `str.find`, one character at a time (a scan for a
# character class looked at every position of a 60 MB List; `find` skips between them
# as `memchr` does).
_MARKS = "&*!%"
_FIRST_DASH = re.compile(r"(?:[ ]*+(?:#[^\n]*+)?+\n)*+( ?+ ?+)-(?=[ \n])")


class Item(NamedTuple):
    """One item: its first line in the document (0-based), where its lines start and
    end in the document, and its dash's column. Its text is made by whoever reads it
    (`text`): cutting a List of tens of thousands of items is the part of lint's work
    that one process does before the others can start."""

    line: int
    start: int
    end: int
    column: int

    def text(self, document: str) -> str:
        """The item's lines of `document`, its dash a blank."""
        dash = self.start + self.column
        return document[self.start : dash] + " " + document[dash + 1 : self.end]


class ListCut(NamedTuple):
    """A List document cut: its head (`items: []` in place of the items) and its items
    (their places in the document)."""

    head: str
    items: list[Item]


def _top_items(text: str, start: int) -> re.Match[str] | None:
    """The first `items:` line at column 0 from `start` (`str.find` skips fastest)."""
    at = text.find("items:", start)
    while at >= 0:
        if at == 0 or text[at - 1] == "\n":
            found = _ITEMS.match(text, at)
            if found is not None:
                return found
        at = text.find("items:", at + 1)
    return None


def _unsafe(text: str) -> bool:
    """Whether the text has an anchor, alias, tag or directive, a tab or a CR."""
    if "\t" in text or "\r" in text:
        return True
    for mark in _MARKS:
        at = text.find(mark)
        while at >= 0:
            if (at == 0 or text[at - 1] in " [{,\n") and text[at + 1 : at + 2] not in (
                "", " ", "\n"
            ):
                return True
            at = text.find(mark, at + 1)
    return False


@lru_cache(maxsize=4)
def _at_most(column: int) -> re.Pattern[str]:
    """A content line (not blank, not a comment) indented `column` or less, matched from
    the line break before it to its first character: a pattern that starts with a
    literal lets the engine skip to line breaks (`^` in MULTILINE mode is tried at
    every position)."""
    return re.compile(rf"\n {{0,{column}}}+[^ \n#]")


def cut_list(text: str) -> ListCut | None:
    """The items of a block-style List document and its head, or None to read it whole."""
    found = _top_items(text, 0)
    if found is None or _top_items(text, found.end()) is not None:
        return None
    first = _FIRST_DASH.match(text, found.end())
    if first is None or _unsafe(text):
        return None
    column = len(first.group(1))
    starts: list[int] = []
    end = len(text)
    # The first dash's line follows a line break (`items:` or a blank line's).
    for line in _at_most(column).finditer(text, first.start(1) - 1):
        begin, at = line.start() + 1, line.end() - 1
        if at - begin == column and text[at] == "-" and (
            at + 1 == len(text) or text[at + 1] in " \n"
        ):
            starts.append(begin)
        else:
            end = begin
            break
    items: list[Item] = []
    line_number = text.count("\n", 0, starts[0])
    bounds = [*starts, end]
    for begin, stop in itertools.pairwise(bounds):
        items.append(Item(line_number, begin, stop, column))
        line_number += text.count("\n", begin, stop)
    head = text[: found.start()] + "items: []\n" + text[end:]
    return ListCut(head, items)
