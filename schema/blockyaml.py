"""The fast path for plain block-style YAML: values from yaml-rs, positions from the lines.

Manifests in git are nearly always block-style YAML with plain keys and one-line
scalars. For such a document the Rust parser `yaml-rs` builds the value in about a
third of the time libyaml's events take (`yamlevents`), and a node's position can be
read off the lines themselves, on demand, for the few paths that have findings.

yaml-rs reads YAML 1.2, draguard (like PyYAML) reads YAML 1.1 (`yamlevents`), and the
two differ on some plain scalars (`yes`, `on`, `0777`, `1_000`, `1:20`, `1e3`, …). So a
document takes this path only when every line matches `_BLOCK`, a grammar whose plain
scalars mean the same in both: keys are identifiers or simply quoted, values are
strings that start with a letter (and are not YAML 1.1 booleans), decimal numbers,
one-line quoted strings, `~`, `[]` or `{}`. Anything else (flow collections, block
scalars, anchors, tags, multi-line quoted strings, other characters libyaml refuses,
duplicate keys) goes to `yamlevents`, which also gives the precise error for a
document that does not parse. `tests/schema/test_blockyaml.py` checks both halves
against `yamlevents`: same values, same positions.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import yaml_rs

from draguard.schema.paths import Segment

# Characters libyaml refuses in a scalar (outside its printable set), line breaks (NEL,
# LS and PS are breaks in YAML 1.1 only), the BOM and surrogates.
_BAD = r"\n\r\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff"
_TAIL = r"(?:[ \t]++(?:#[^\n]*+)?+)?+"  # trailing blanks and a comment
_BOOL11 = r"(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)"  # booleans in 1.1 only
_KEYWORD = rf"(?:{_BOOL11}|y|Y|n|N|true|True|TRUE|false|False|FALSE|null|Null|NULL)"
_KEY = (
    rf"(?:(?!{_KEYWORD}:)[A-Za-z_][A-Za-z0-9_./-]*+"
    rf"|\"[^\"\\{_BAD}]*+\"|'[^'{_BAD}]*+')"
)
_SCALAR = (
    r"(?:\[\]|\{\}|~"
    rf'|"[^"\\{_BAD}]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{{4}})[^"\\{_BAD}]*+)*+"'
    rf"|'[^'{_BAD}]*+(?:''[^'{_BAD}]*+)*+'"
    r"|-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?"
    rf")(?=[ \t\n]|\Z){_TAIL}"
)
# A plain string: not a 1.1-only boolean, and never `: ` (that would be a mapping).
_PLAIN = rf"(?!{_BOOL11}(?:[ \t#\n]|\Z))[A-Za-z_/][^{_BAD}:]*+(?::[^ \t{_BAD}:][^{_BAD}:]*+)*+"
_VALUE = rf"(?:{_SCALAR}|{_PLAIN})"
_ENTRY_LINE = rf"{_KEY}:(?:[ ]++{_VALUE}|{_TAIL})"
_LINE = (
    rf"(?:(?:---|\.\.\.){_TAIL}"  # document markers
    rf"|[ ]*+(?:-(?:[ ]++(?:{_ENTRY_LINE}|{_VALUE})|{_TAIL})"  # `- key: value`, `- value`, `-`
    rf"|{_ENTRY_LINE}"  # `key: value`, `key:`
    r"|(?:#[^\n]*+)?))"  # a comment, a blank line
)
_BLOCK = re.compile(rf"(?:{_LINE}\n)*+{_LINE}")


def load(text: str) -> Any | None:
    """The document's value, or None when it is not plain block YAML (or does not parse).

    A None sends the caller to `yamlevents`, which reads any YAML and reports errors.
    """
    if "\r" in text or _BLOCK.fullmatch(text) is None:
        return None
    try:
        return yaml_rs.loads(
            text,
            parse_datetime=False,
            duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.Error,
        )
    except (yaml_rs.YAMLDecodeError, ValueError, TypeError, OverflowError, RecursionError):
        return None


# --- positions ---------------------------------------------------------------------------
# Only for documents that `load` accepted: every line is blank, a comment, a marker,
# `[- ]key:[ value]` or `-[ value]`, so where a node starts follows from the columns.
# The patterns start with the line break before a line (the text gets one in front),
# so that the regular expression engine can skip to line starts.

# A line that starts a node: its indentation, and its dash when it is a list item.
_CONTENT_LINE = re.compile(r"\n(?!---|\.\.\.)( *+)(?:(-)(?=[ \n]|\Z)|(?=[^ \n#]))")
_ENTRY = re.compile(rf"({_KEY}):(?=[ \n]|\Z)")
_VALUE_HERE = re.compile(r"[ \t]*+[^ \t#\n]")  # a scalar, `[]` or `{}` after the colon
_SPACES = re.compile(r" *+")


@lru_cache(maxsize=512)
def _key_or_end(column: int, key: str) -> re.Pattern[str]:
    """The line of entry `key` at `column`, or the first line less indented (the end)."""
    k = re.escape(key)
    end = rf"| {{0,{column - 1}}}[^ \n#]" if column else ""
    return re.compile(rf"\n(?:( {{{column}}})(?:{k}|\"{k}\"|'{k}'):(?=[ \n]|\Z){end})")


@lru_cache(maxsize=128)
def _dash_or_end(column: int) -> re.Pattern[str]:
    """A list item's line (its dash at `column`), or the first line past the list: less
    indented, or a key at the dash's column (a list may sit at its parent key's column)."""
    end = rf"| {{0,{column - 1}}}[^ \n#]" if column else ""
    return re.compile(rf"\n(?:( {{{column}}})-(?=[ \n]|\Z){end}| {{{column}}}[^ \n#-])")


class _Node:
    """A collection: the line break before its first line, its column, where it starts."""

    __slots__ = ("column", "mark", "seq", "start")

    def __init__(self, start: int, column: int, mark: int, *, seq: bool) -> None:
        self.start, self.column, self.mark, self.seq = start, column, mark, seq


class Lines:
    """Where the nodes of a document that `load` accepted start, read from its lines."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = "\n" + text

    def walk(self, parts: Sequence[Segment]) -> tuple[int, int, int]:
        """How many of `parts` exist, and the 0-based line and column where the deepest
        of them starts (a mapping entry at its key; the top node for none)."""
        text = self.text
        node = _collection(text, 0, -1, indentless=False)
        if node is None:
            return 0, 0, 0
        mark, depth = node.mark, 0
        for part in parts:
            found = _child(text, node, part)
            if found is None:
                break
            depth += 1
            mark, child = found
            if child is None:
                break
            node = child
        return depth, text.count("\n", 0, mark) - 1, mark - text.rfind("\n", 0, mark) - 1


def _collection(text: str, start: int, parent: int, *, indentless: bool) -> _Node | None:
    """The collection on the first content line after `start` if it belongs to a node at
    column `parent`: indented past it, or a list at its column when `indentless`."""
    line = _CONTENT_LINE.search(text, start)
    if line is None:
        return None
    column, seq = len(line.group(1)), line.group(2) is not None
    if column < parent or (column == parent and not (seq and indentless)):
        return None
    return _Node(line.start(), column, line.start() + 1 + column, seq=seq)


def _child(text: str, node: _Node, part: Segment) -> tuple[int, _Node | None] | None:
    """Where `part` of `node` starts, and the collection it holds (None: a scalar)."""
    if node.seq:
        return _item(text, node, part) if isinstance(part, int) else None
    return _entry(text, node, part) if isinstance(part, str) else None


def _entry(text: str, node: _Node, key: str) -> tuple[int, _Node | None] | None:
    first = _ENTRY.match(text, node.mark)  # the first key, which may follow an item's dash
    if first is not None and _unquote(first.group(1)) == key:
        at, colon = node.mark, first.end()
    else:
        found = _key_or_end(node.column, key).search(text, _eol(text, node.mark))
        if found is None or found.group(1) is None:
            return None
        at, colon = found.start() + 1 + node.column, found.end()
    eol = _eol(text, colon)
    if _VALUE_HERE.match(text, colon, eol):
        return at, None
    return at, _collection(text, eol, node.column, indentless=True)


def _item(text: str, node: _Node, index: int) -> tuple[int, _Node | None] | None:
    if index < 0:
        return None
    lines = _dash_or_end(node.column).finditer(text, node.start)
    dash = next(itertools.islice(lines, index, None), None)
    if dash is None or dash.group(1) is None:
        return None
    spaces = _SPACES.match(text, dash.end())
    content = spaces.end() if spaces is not None else dash.end()
    eol = _eol(text, content)
    if content < eol and text[content] != "#":
        if _ENTRY.match(text, content) is None:
            return content, None  # a scalar item
        return content, _Node(dash.start(), content - dash.start() - 1, content, seq=False)
    child = _collection(text, eol, node.column, indentless=False)
    # libyaml places a null item just past its dash.
    return (child.mark if child is not None else dash.end()), child


def _unquote(key: str) -> str:
    return key[1:-1] if key[:1] in ("\"", "'") else key


def _eol(text: str, at: int) -> int:
    eol = text.find("\n", at)
    return len(text) if eol < 0 else eol
