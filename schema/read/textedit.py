"""Edit a block YAML document as text: splice the parts that changed, keep every other byte.

`yamledit` makes a ruamel round-trip document equal to a converted value; ruamel's
pure-Python reader and writer are most of `convert`'s and `fix`'s time. This module
does the same edit on the text: it reads the document's lines into a tree of spans
(mappings, sequences, one-line values), walks it beside the new value, and writes
each changed subtree in block style at the column where it lands, copying verbatim
every line that did not change. It follows `yamledit.apply` step for step (same key
order, same reuse of moved values, "donors"), so that both paths give the same value.

It only does what it can be sure of, and says None otherwise (the caller then takes
the ruamel path): a line it does not read (block scalars, anchors, aliases, tags,
multi-line scalars or flow collections, tabs, complex keys, `- - x`), a tree that does
not match the document's value, a new scalar it cannot write plainly or quoted on one
line, a comment that would be lost. Last, the new text is read back (yaml-rs) and must
give exactly the new value.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import orjson
import yaml_rs

from draguard.schema.read.sources import Chunk, Source, split_documents


class _Unsure(Exception):
    """Internal: the text path cannot be sure; `edit` returns None (the ruamel path)."""


# A key as a plain word (what Kubernetes and label keys are) or simply quoted, then `:`
# and a blank or the end of the line.
_KEY = re.compile(r"""([A-Za-z0-9_][A-Za-z0-9_./-]*|"[^"\\\n]*"|'[^'\n]*')[ ]*:(?= |$)""")
_DOUBLE = re.compile(r'"(?:[^"\\]|\\.)*"')
_SINGLE = re.compile(r"'(?:[^']|'')*'")
_AFTER = re.compile(r" *(#.*)?$")  # what may follow a value: blanks and a comment
_NOT_A_VALUE_START = frozenset("|>&*!%@`?")


@dataclass(slots=True)
class _Line:
    """One line: its indentation, a dash, a key, an inline value and a comment (columns)."""

    indent: int  # -1: blank or comment only
    dash: bool = False
    key: str | None = None
    key_col: int = -1
    colon: int = -1  # the column just past the key's colon
    value: tuple[int, int] | None = None  # where the inline value's text starts and ends
    comment: str = ""


def _tokenize(text: str) -> list[_Line]:
    """Every line's token: most in one pass of `_LINES`, the others by `_token`.

    `_LINES` captures each piece of a line in turn (indentation, dash, key, colon,
    value, blanks, comment), so that columns are sums of lengths, from one `groups()`."""
    tokens: list[_Line] = []
    append = tokens.append
    line_token = _Line
    for line in _LINES.finditer(text):
        indent, dash, key, colon, value, blanks, comment, _, own, other = line.groups()
        if other is not None:
            append(_token(other))
        elif own is not None:
            append(line_token(-1, comment=own))
        elif dash is None and key is None and value is None:
            append(_token(line[0]) if comment is not None else line_token(-1))
        elif comment is not None and not blanks and not (
                value is None and colon and colon[-1] == " "):
            append(_token(line[0]))  # `#` right after a word: not a comment
        else:
            col = len(indent)
            at = col if dash is None else col + len(dash)
            if key is None:
                key_col = colon_at = -1
            else:
                key_col, colon_at = at, at + len(key) + 1
                at += len(key) + len(colon)
            append(line_token(col, dash is not None, key, key_col, colon_at,
                              None if value is None else (at, at + len(value)),
                              "" if comment is None else comment))
    return tokens


# Most lines: `[- ]key: value`, `[- ]key:`, `- value` with a plain value free of `#`,
# `:`, quotes and brackets, a one-line quoted value, or a flow collection on its line
# (two levels at most), then a comment; read in one match (`_token` reads the others).
# Runs of ordinary characters are taken whole and never given back (`++`, `*+`): what
# follows a run (a quote, a bracket) cannot be part of one, so no match is lost, and
# the engine does not step and backtrack through a long flow line one character a time.
_Q = r"'(?:[^'\n]++|'')*+'" + r'|"(?:[^"\\\n]++|\\.)*+"'
_FLOW1 = rf"""[\[{{](?:[^'"{{}}\[\]#\n]++|{_Q})*+[\]}}]"""
_FLOW2 = rf"""[\[{{](?:[^'"{{}}\[\]#\n]++|{_Q}|{_FLOW1})*+[\]}}]"""
# A plain value takes a run of blanks only before more of itself, so that it ends at its
# last character without trying each shorter end against the rest of the line.
_WORD = r"""[^#:'"{}\[\]\t\r\n ]"""
_SIMPLE = re.compile(
    r"( *)(- +|-(?= *$))?(?:([A-Za-z_][A-Za-z0-9_./-]*)(: +|:$))?"
    rf"""([A-Za-z0-9_./](?:{_WORD}++| ++(?={_WORD}))*+|{_Q}|{_FLOW2})?( *)(#.*)?"""
)


_LINES = re.compile(rf"^(?:{_SIMPLE.pattern}|( *)(#.*)|(.+))$", re.M)


def _token(line: str) -> _Line:
    stripped = line.lstrip(" ")
    if not stripped or stripped[0] == "#":
        return _Line(-1, comment=stripped)
    indent = len(line) - len(stripped)
    if "\t" in line or "\r" in line:
        raise _Unsure("tab or carriage return")
    token = _Line(indent)
    pos = indent
    if stripped[0] == "-" and (len(stripped) == 1 or stripped[1] == " "):
        token.dash = True
        pos = indent + 1
        while pos < len(line) and line[pos] == " ":
            pos += 1
        if pos == len(line) or line[pos] == "#":
            token.comment = line[pos:]
            return token
        if line[pos] == "-" and (pos + 1 == len(line) or line[pos + 1] == " "):
            raise _Unsure("a sequence inside a sequence item on one line")
    key = _KEY.match(line, pos)
    if key is not None:
        token.key, token.key_col, token.colon = _unquote(key[1]), pos, key.end()
        pos = key.end()
        while pos < len(line) and line[pos] == " ":
            pos += 1
        if pos == len(line) or line[pos] == "#":
            token.comment = line[pos:]
            return token
    if line[pos] in "\"'{[":
        end = _quoted_end(line, pos) if line[pos] in "\"'" else _flow_end(line, pos)
    elif line[pos] in _NOT_A_VALUE_START or line.startswith(("---", "..."), pos):
        raise _Unsure("block scalar, anchor, alias, tag or marker")
    else:
        hash_at = line.find(" #", pos)
        end = len(line) if hash_at < 0 else hash_at
        while line[end - 1] == " ":
            end -= 1
        if ": " in line[pos:end] or line[pos:end].endswith(":"):
            raise _Unsure("a key this reader does not take")
    rest = _AFTER.match(line, end)
    if rest is None:
        raise _Unsure("text after a value")
    token.value, token.comment = (pos, end), rest[1] or ""
    return token


def _quoted_end(line: str, pos: int) -> int:
    found = (_DOUBLE if line[pos] == '"' else _SINGLE).match(line, pos)
    if found is None:
        raise _Unsure("a quoted scalar over several lines")
    return found.end()


_FLOW_SPECIAL = re.compile(r"[\"'\[\]{}]| #")


def _flow_end(line: str, pos: int) -> int:
    """The end of a flow collection that closes on its line."""
    depth, i = 0, pos
    while (special := _FLOW_SPECIAL.search(line, i)) is not None:
        c, i = special[0], special.end()
        if c in "\"'":
            i = _quoted_end(line, special.start())
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return i
        else:
            break  # a comment
    raise _Unsure("a flow collection over several lines")


def _unquote(key: str) -> str:
    return key[1:-1] if key[0] in "\"'" else key


# --- the tree ---------------------------------------------------------------------------


class _Node:
    """A value's text: `line` its first content line, `end` past its last one.

    A class with slots and a plain `__init__` rather than a dataclass: a document makes
    one per value, and a dataclass's generated `__init__` (keyword defaults, a default
    factory) costs about twice as much to call."""

    __slots__ = ("children", "col", "compact", "end", "kind", "lead", "line", "value")

    def __init__(self, kind: str, col: int, line: int, end: int, value: Any,
                 compact: bool = False) -> None:
        self.kind = kind  # "map", "seq", "inline", "null"
        self.col = col
        self.line = line
        self.end = end
        self.compact = compact  # a mapping whose first key follows its item's dash
        self.lead = -1  # a block value's first line after its key's: comments before it
        self.children: list[_Child] = []
        self.value = value


class _Child:
    """A mapping entry (`key`) or a sequence item: its first line, content end, value."""

    __slots__ = ("end", "key", "line", "node")

    def __init__(self, key: str | None, line: int, node: _Node, end: int) -> None:
        self.key = key
        self.line = line
        self.node = node
        self.end = end


# Entries leaving a mapping, by key and `exact_text` of their value (`_Editor._leaving`),
# with the column of the mapping they leave.
_Entries = dict[tuple[str, bytes | str], tuple[_Child, int]]

_MISSING = object()


class _Tree:
    """The tokenized lines of a document and its top node, bound to its value as it is
    built: each node holds its part of the value, and the shapes must agree."""

    def __init__(self, text: str, value: Any) -> None:
        self.lines = text.split("\n")
        self.tokens = _tokenize(text)
        self.content = [i for i, t in enumerate(self.tokens) if t.indent >= 0]
        # The content lines' tokens, then one that ends every node (indent -1).
        self._next = [self.tokens[i] for i in self.content] + [_Line(-1)]
        self.content.append(len(self.tokens))
        self.pos = 0
        # The containers by kind and length, in document order (see `_Editor.donor`).
        self.donors: dict[tuple[bool, int], list[_Node]] = {}
        root = self._value(-1, value, indentless=False)
        if root is None or root.kind != "map" or self.pos != len(self.content) - 1:
            raise _Unsure("not a block mapping this reader takes")
        self.root = root

    def _value(self, parent: int, value: Any, *, indentless: bool) -> _Node | None:
        token = self._next[self.pos]
        col = token.indent
        if col < 0:
            return None
        if token.dash:
            if col < parent or (col == parent and not indentless):
                return None
            return self._seq(col, value)
        return self._map(col, value, compact=False) if col > parent else None

    def _map(self, col: int, value: Any, *, compact: bool) -> _Node:
        if not isinstance(value, dict):
            raise _Unsure("a mapping whose value is not one")
        content, tokens, pos = self.content, self._next, self.pos
        node = _Node("map", col, content[pos], 0, value, compact)
        self.donors.setdefault((True, len(value)), []).append(node)
        children = node.children
        keys = iter(value)
        first = compact  # a compact mapping's first key follows its item's dash
        while (token := tokens[pos]).indent >= 0:
            if not first:
                if token.dash or token.indent < col:
                    break
                if token.indent > col:
                    raise _Unsure("a line that is not an entry of its mapping")
            first = False
            key = token.key
            if key is None:
                raise _Unsure("a line that is not an entry of its mapping")
            if next(keys, _MISSING) != key:
                raise _Unsure("keys differ from the value's")
            line = content[pos]
            self.pos = pos + 1
            if token.value is not None:
                child = self._inline(token.value[0], line, value[key])
            else:
                child = self._entry_value(token, line, col, value[key])
            pos = self.pos
            node.end = content[pos - 1] + 1
            children.append(_Child(key, line, child, node.end))
        if next(keys, _MISSING) is not _MISSING:
            raise _Unsure("keys differ from the value's")
        return node

    def _entry_value(self, token: _Line, line: int, col: int, value: Any) -> _Node:
        if token.value is not None:
            return self._inline(token.value[0], line, value)
        child = self._value(col, value, indentless=True)
        if child is None:
            return _null(col, line, value)
        child.lead = line + 1
        return child

    def _inline(self, col: int, line: int, value: Any) -> _Node:
        node = _Node("inline", col, line, line + 1, value)
        if isinstance(value, dict | list) and value:  # a flow collection
            self.donors.setdefault((isinstance(value, dict), len(value)), []).append(node)
        return node

    def _seq(self, col: int, value: Any) -> _Node:
        if not isinstance(value, list):
            raise _Unsure("a sequence whose value is not one")
        node = _Node("seq", col, self.content[self.pos], 0, value)
        self.donors.setdefault((False, len(value)), []).append(node)
        while (token := self._next[self.pos]).dash and token.indent == col:
            index = len(node.children)
            if index >= len(value):
                raise _Unsure("items differ from the value's")
            item = value[index]
            line = self.content[self.pos]
            if token.key is not None:
                child = self._map(token.key_col, item, compact=True)
            else:
                self.pos += 1
                if token.value is not None:
                    child = self._inline(token.value[0], line, item)
                else:
                    nested = self._value(col, item, indentless=False)
                    child = nested if nested is not None else _null(col, line, item)
            node.children.append(_Child(None, line, child, self.content[self.pos - 1] + 1))
            node.end = node.children[-1].end
        if token.indent > col:
            raise _Unsure("a line that is not an item of its sequence")
        if len(node.children) != len(value):
            raise _Unsure("items differ from the value's")
        return node


def _null(col: int, line: int, value: Any) -> _Node:
    if value is not None:
        raise _Unsure("an empty node that is not null")
    return _Node("null", col, line, line + 1, None)


# --- values: equality, scalars ---------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Equal, key order included, with 1, 1.0 and True told apart (as ruamel's nodes
    keep them apart): `==` first, which fails fast on most pairs, then `exact_text`."""
    return type(a) is type(b) and a == b and (
        not isinstance(a, dict | list) or exact_text(a) == exact_text(b))


_EXACT = (orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
          | orjson.OPT_PASSTHROUGH_DATACLASS)


def exact_text(value: Any) -> bytes | str:
    """A text that tells values (what a YAML or JSON reader gives) apart exactly, as
    `repr` does: equal texts, equal values with the same key order and types.

    orjson's JSON (bytes), many times faster than `repr`, keeps key order and writes 1,
    1.0 and true apart; `repr` (a str, never equal to bytes) where JSON is not exact: a
    key that is not a string, an integer past 64 bits, a date or a subclass (orjson
    would write a plain string or value), and any `null`, which orjson also writes for
    NaN and the infinities (a "null" inside a string falls back too: only slower)."""
    try:
        text = orjson.dumps(value, option=_EXACT)
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)
    return repr(value) if b"null" in text else text


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./-]*")
# Words a YAML 1.1 reader (kubectl's go-yaml, PyYAML) takes for booleans or null.
_KEYWORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")


def _scalar(value: Any) -> str:
    """One line of YAML that every reader (1.1 and 1.2) reads as `value`."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is not str:
        raise _Unsure("a scalar this path does not write")
    if _PLAIN.fullmatch(value) and value.lower() not in _KEYWORDS:
        return value
    if _UNPRINTABLE.search(value):
        raise _Unsure("a character to escape")
    return json.dumps(value, ensure_ascii=False)


def _flow(value: Any) -> str:
    """`value` in flow style on one line (its scalars plain or double-quoted)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_scalar(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return _scalar(value)


# --- the edit ---------------------------------------------------------------------------


def _shift(line: str, delta: int) -> str:
    if delta >= 0:
        return " " * delta + line if line else line
    cut = min(-delta, len(line) - len(line.lstrip(" ")))
    return line[cut:]


class _Editor:
    def __init__(self, tree: _Tree, seq_offset: int) -> None:
        self.tree = tree
        self.lines = tree.lines
        self.seq_offset = seq_offset

    # -- donors: containers of the original by value (as `yamledit.Donors`) --
    def donor(self, value: Any) -> _Node | None:
        """The first node (in document order) whose value equals `value`, key order aside.

        A value is compared with the containers of its kind and length only, by `==`
        first (which takes 1 and True for equal), then by canonical JSON, as `Donors`."""
        if not isinstance(value, dict | list) or not value:
            return None
        for node in self.tree.donors.get((isinstance(value, dict), len(value)), ()):
            if node.value == value and _canonical(node.value) == _canonical(value):
                return node
        return None

    def copy(self, node: _Node, col: int) -> list[str]:
        """A container's lines (or one-line text) moved so that it starts at `col`."""
        if node.kind == "inline":
            token = self.tree.tokens[node.line]
            assert token.value is not None
            return [" " * col + self.lines[node.line][token.value[0] : token.value[1]]]
        lead = self.lines[node.lead : node.line] if node.lead >= 0 else []
        return [_shift(line, col - node.col) for line in lead] + self.copy_span(
            node.line, node.end, node.col, col)

    def copy_span(self, start: int, end: int, old: int, col: int) -> list[str]:
        delta = col - old
        first = " " * col + self.lines[start][old:]
        return [first] + [_shift(line, delta) for line in self.lines[start + 1 : end]]

    # -- fresh values, written at a column --
    def fresh(self, value: Any, col: int, entries: _Entries
              ) -> tuple[str | None, list[str]]:
        """`value` as one-line text, or as lines whose first content starts at `col`."""
        donor = self.donor(value)
        if donor is not None:
            if donor.kind == "inline":
                return self._inline_text(donor), []
            return None, self.copy(donor, col)
        if isinstance(value, dict) and value:
            out: list[str] = []
            for key, item in value.items():
                found = entries.get((key, exact_text(item))) if entries else None
                if found is not None:
                    child, old_col = found
                    out += self.copy_span(child.line, child.end, old_col, col)
                else:
                    out += self.fresh_entry(key, item, col)
            return None, out
        if isinstance(value, list) and value:
            out = []
            for item in value:
                out += self.fresh_item(item, col)
            return None, out
        if isinstance(value, dict | list):
            return ("{}" if isinstance(value, dict) else "[]"), []
        return _scalar(value), []

    def anew(self, node: _Node, new: Any, col: int) -> tuple[str | None, list[str]]:
        """`new` in place of `node`: a flow collection stays one (as ruamel keeps a flow
        node's style when its items change), anything else as `fresh` writes it."""
        if node.kind == "inline" and isinstance(node.value, dict | list) and isinstance(
                new, dict | list) and self.donor(new) is None:
            return _flow(new), []
        return self.fresh(new, col, {})

    def _inline_text(self, node: _Node) -> str:
        token = self.tree.tokens[node.line]
        assert token.value is not None
        return self.lines[node.line][token.value[0] : token.value[1]]

    def fresh_entry(self, key: str, value: Any, col: int) -> list[str]:
        name = _scalar(key)
        child = col + (self.seq_offset if isinstance(value, list) else 2)
        text, lines = self.fresh(value, child, {})
        if text is not None:
            return [f"{' ' * col}{name}: {text}"]
        return [f"{' ' * col}{name}:", *lines]

    def fresh_item(self, value: Any, col: int) -> list[str]:
        if isinstance(value, list) and value:
            raise _Unsure("a sequence inside a sequence item")
        text, lines = self.fresh(value, col + 2, {})
        if text is not None:
            return [f"{' ' * col}- {text}"]
        return _dashed(lines, col)

    # -- edits in place (as `yamledit.apply`) --
    def edit_map(self, node: _Node, new: dict[str, Any], out: list[str], head: str) -> None:
        """Write mapping `node` as `new`: kept keys in their order, new keys after their
        predecessor in `new` (`yamledit._apply_map`), removed keys' lines dropped but the
        comment lines between entries kept. `head`: a compact mapping's item dash."""
        old = {c.key: c for c in node.children}
        keys = [c.key for c in node.children if c.key in new]
        previous: str | None = None
        for key in new:
            if key not in old:
                keys.insert(0 if previous is None else keys.index(previous) + 1, key)
            previous = key
        entries = self._leaving(node, new)
        gaps: dict[str | None, list[str]] = {}
        carry: list[str] = []
        previous_end = node.line
        for child in node.children:
            gap = self.lines[previous_end : child.line]
            previous_end = child.end
            if child.key in new:
                gaps[child.key], carry = carry + gap, []
            else:
                carry += gap
        mine: list[str] = []
        for key in keys:
            assert key is not None
            mine += gaps.get(key, [])
            found = old.get(key)
            if found is None:
                col = node.col + (self.seq_offset if isinstance(new[key], list) else 2)
                text, lines = self.fresh(new[key], col, entries)
                name = f"{' ' * node.col}{_scalar(key)}:"
                mine += [f"{name} {text}"] if text is not None else [name, *lines]
            else:
                strip = node.compact and found is node.children[0] and keys[0] != key
                self.edit_entry(found, new[key], mine, strip_dash=strip)
        mine += carry
        if node.compact and keys and keys[0] != node.children[0].key:
            self._place_dash(head, mine)
        out += mine

    def _leaving(self, node: _Node, new: dict[str, Any]
                 ) -> _Entries:
        """Entries that leave mapping `node` (and those of a mapping that leaves), by key
        and value: a new mapping here takes their lines, comments and all (v1beta1's flat
        request fields moving into v1's `exactly:`, and back)."""
        entries: _Entries = {}
        for child in node.children:
            if child.key in new:
                continue
            assert child.key is not None
            entries[(child.key, exact_text(child.node.value))] = (child, node.col)
            for grand in child.node.children if child.node.kind == "map" else []:
                assert grand.key is not None
                entries.setdefault((grand.key, exact_text(grand.node.value)),
                                   (grand, child.node.col))
        return entries

    @staticmethod
    def _place_dash(head: str, mine: list[str]) -> None:
        """A compact mapping's first content line carries its item's dash (`head`)."""
        for i, line in enumerate(mine):
            if _token(line).indent >= 0:
                if line[: len(head)].strip(" "):
                    raise _Unsure("no room for the dash")
                mine[i] = head + line[len(head) :]
                return
        raise _Unsure("an item left without content")

    def edit_entry(self, child: _Child, new: Any, out: list[str], *, strip_dash: bool) -> None:
        token = self.tree.tokens[child.line]
        line = self.lines[child.line]
        if strip_dash:  # the item's dash moves to the mapping's new first line
            line = " " * token.key_col + line[token.key_col :]
        node = child.node
        if _same(node.value, new):
            out += [line, *self.lines[child.line + 1 : child.end]]
            return
        block = node.kind in ("map", "seq")
        if block and self.donor(new) is None and self._alike(node, new):
            out += [line, *self.lines[child.line + 1 : node.line]]
            self._edit_block(node, new, out)
            return
        col = token.key_col + (self.seq_offset if isinstance(new, list) else 2)
        text, lines = self.anew(node, new, col)
        key_part = line[: token.colon]
        if token.value is not None:
            tail = line[token.value[1] :]
        else:
            tail = "  " + token.comment if token.comment else ""
        out.append(key_part + (f" {text}" if text is not None else "") + tail)
        if block:
            out += self.lines[child.line + 1 : node.line]  # comment lines before the value
        out += lines

    @staticmethod
    def _alike(node: _Node, new: Any) -> bool:
        """A block node edited in place into `new`: a mapping into a dict, a list into a
        list; not into an empty one, which is written `{}` or `[]`."""
        return bool(new) and ((node.kind == "map" and isinstance(new, dict)) or (
            node.kind == "seq" and isinstance(new, list)))

    def _edit_block(self, node: _Node, new: Any, out: list[str]) -> None:
        if isinstance(new, dict):
            self.edit_map(node, new, out, "")
        else:
            self.edit_seq(node, new, out)

    def edit_seq(self, node: _Node, new: list[Any], out: list[str]) -> None:
        """Item by item (`yamledit._apply_seq`); items past `new`'s end are dropped."""
        previous_end = node.line
        for i, value in enumerate(new):
            if i < len(node.children):
                child = node.children[i]
                out += self.lines[previous_end : child.line]
                previous_end = child.end
                self.edit_item(child, value, out, node.col)
            else:
                out += self.fresh_item(value, node.col)

    def edit_item(self, child: _Child, new: Any, out: list[str], col: int) -> None:
        line = self.lines[child.line]
        node = child.node
        if _same(node.value, new):
            out += self.lines[child.line : child.end]
            return
        donor = self.donor(new)
        if donor is None and node.compact and isinstance(new, dict) and new:
            self.edit_map(node, new, out, line[: node.col])
            return
        if donor is None and not node.compact and self._alike(node, new):
            out += self.lines[child.line : node.line]
            self._edit_block(node, new, out)
            return
        token = self.tree.tokens[child.line]
        if node.kind == "inline":
            assert token.value is not None
            tail = line[token.value[1] :]
        else:
            tail = "  " + token.comment if token.comment and not node.compact else ""
        flow, _ = self.anew(node, new, col + 2)
        lines = self.fresh_item(new, col) if flow is None else [f"{' ' * col}- {flow}"]
        out.append(lines[0] + tail)
        out += lines[1:]


def _dashed(lines: list[str], col: int) -> list[str]:
    """A mapping's lines (at `col` + 2) as a list item: the dash on its first content line."""
    for i, line in enumerate(lines):
        stripped = line.lstrip(" ")
        if stripped and stripped[0] != "#":
            if len(line) - len(stripped) != col + 2:
                raise _Unsure("an item's first line elsewhere than its column")
            return [*lines[:i], line[:col] + "- " + line[col + 2 :], *lines[i + 1 :]]
    raise _Unsure("an item without content")


def _seq_offset(tree: _Tree) -> int:
    """How far this document indents a sequence under its key (0 or 2, as written)."""
    stack = [tree.root]
    while stack:
        node = stack.pop()
        for child in node.children:
            if node.kind == "map" and child.node.kind == "seq":
                token = tree.tokens[child.line]
                return max(0, child.node.col - token.key_col)
            stack.append(child.node)
    return 0


def _comments(tokens: list[_Line]) -> Counter[str]:
    return Counter(t.comment for t in tokens if t.comment)


@dataclass(frozen=True, slots=True)
class Declined:
    """The text path's answer when it cannot be sure: why (the caller takes ruamel's)."""

    reason: str


def edit(text: str, old: Any, new: Any) -> str | Declined:
    """`text` (a block YAML document body whose value is `old`) rewritten to hold `new`,
    or why the text path cannot be sure (see the module docstring)."""
    try:
        tree = _Tree(text, old)
        editor = _Editor(tree, _seq_offset(tree))
        out = tree.lines[: tree.root.line]
        editor.edit_map(tree.root, new, out, "")
        out += tree.lines[tree.root.end :]
        result = "\n".join(out)
        # Every comment of the document at least as often (a moved value may copy one).
        if not _comments([_token(line) for line in out if "#" in line]) >= _comments(
                tree.tokens):
            return Declined("a comment would be lost")
        back = yaml_rs.loads(result, parse_datetime=False,
                             duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.Error)
    except _Unsure as exc:
        return Declined(str(exc))
    except (yaml_rs.YAMLDecodeError, ValueError, TypeError, RecursionError) as exc:
        return Declined(f"the new text does not read back: {type(exc).__name__}")
    return result if _same(back, new) else Declined("the new text reads back differently")


# Plain scalars that YAML 1.1 (draguard, kubectl) and 1.2 (yaml-rs) may read apart: 1.1's
# booleans, `<<` and `=`, and any word that starts like a number (octal, sexagesimal,
# exponent, date, …) unless it is a plain decimal integer. Conservative: a match in a
# quoted string or a comment only sends the document to lint's reader.
_RISKY_WORD = re.compile(
    r"[yYnNoO<=](?<![^\s\[\]{},:].)(?:|es|ES|o|O|n|N|ff|FF|<)(?=[\s\[\]{},:]|\Z)")
# A word that starts like a number: a digit or `.`, or a sign before one, after a blank,
# `[`, `{`, `,`, `:` or the text's start. The class comes first so that the engine skips
# to candidates in C; the checks on the neighbours run only there.
_NUMBER_LIKE = re.compile(
    r"[-+.0-9](?<![^\s\[{,:].)(?:(?<=[-+])(?=[.0-9])|(?<=[.0-9]))[^\s\[\]{},#'\"]*")
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]{0,14})")


def _same_in_1_1(text: str) -> bool:
    """Whether no plain scalar of `text` may read apart in YAML 1.1 and 1.2 (see above)."""
    if _RISKY_WORD.search(text) is not None:
        return False
    fullmatch = _INTEGER.fullmatch
    return all(fullmatch(word) for word in _NUMBER_LIKE.findall(text))


def read(text: str) -> Any | None:
    """The value of a one-document YAML text read by yaml-rs, when every plain scalar in
    it means the same in YAML 1.1 and 1.2 (as `blockyaml.load` decides for block YAML,
    here with flow collections too); None: lint's reader (`sources.parse`) decides."""
    if not _same_in_1_1(text):
        return None
    try:
        return yaml_rs.loads(text, parse_datetime=False,
                             duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.Error)
    except (yaml_rs.YAMLDecodeError, ValueError, TypeError, OverflowError, RecursionError):
        return None


# Kept verbatim around a rewritten document: directives and the `---` line before it,
# a `...` line after it (it separates documents).
HEAD = re.compile(r"\A(?:%[^\n]*\n|[ \t]*(?:#[^\n]*)?\n)*---[ \t]*(?:#[^\n]*)?(?:\n|\Z)")
TAIL = re.compile(r"^\.\.\.[ \t]*(?:#[^\n]*)?\n?\Z", re.M)


def tail(text: str, start: int) -> re.Match[str] | None:
    """`TAIL.search(text, start)`, tried on the last line only, the one place it can
    match (it ends at the text's end, after one line break at most): a search tries
    every line of the document."""
    end = len(text) - 1 if text.endswith("\n") else len(text)
    line = text.rfind("\n", 0, end) + 1
    return TAIL.match(text, line) if line >= start else None


def edit_document(text: str, old: Any, new: Any) -> str | Declined:
    """`edit` on one document of a stream: its `---` line and a `...` line kept as they are."""
    head = HEAD.match(text)
    start = head.end() if head else 0
    if not head and text.startswith("---"):
        return Declined("a document on its marker's line")
    found = tail(text, start)
    end = found.start() if found else len(text)
    body = edit(text[start:end], old, new)
    return body if isinstance(body, Declined) else text[:start] + body + text[end:]


def located(source: Source) -> list[tuple[Chunk, int]]:
    """Each document of `source` with the offset of its first character in the text.

    The documents come in order: a document's line is reached from the one before it,
    whose lines are counted in C (`str.count`), rather than through a list of every
    line's start (a match object per line of the input, made in the parent process
    while the workers wait)."""
    text = source.text
    found: list[tuple[Chunk, int]] = []
    line, at, end = 0, 0, 0  # `at`: where line `line` starts; `end`: the last document's end
    for chunk in split_documents(source):
        if chunk.line > line:
            passed = text.count("\n", at, end)  # the last document's lines
            if passed:
                at, line = text.rindex("\n", at, end) + 1, line + passed
            while line < chunk.line:
                at, line = text.index("\n", at) + 1, line + 1
        start = at + chunk.column
        assert text.startswith(chunk.text, start), "documents are slices of the text"
        found.append((chunk, start))
        end = start + len(chunk.text)
    return found
