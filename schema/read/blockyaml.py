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
one-line quoted strings, `~`, `[]`, `{}`, or a one-line flow collection of such
scalars (`_FLOW`, as PyYAML writes the innermost collections). Anything else (nested
or multi-line flow collections, block scalars, anchors, tags, multi-line quoted
strings, other characters libyaml refuses, duplicate keys) goes to `yamlevents`, which also gives the precise error for a
document that does not parse. `tests/schema/test_blockyaml.py` checks both halves
against `yamlevents`: same values, same positions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import yaml_rs

from draguard.schema.model.paths import Segment
from draguard.schema.read.offsets import LineIndex

# Characters libyaml refuses in a scalar (outside its printable set) and line breaks
# (NEL is a break in YAML 1.1 only) up to U+00FF: the grammar's character classes below
# exclude them.
_BAD = r"\n\r\x00-\x08\x0b-\x1f\x7f-\x9f"
# The rest, beyond U+00FF: LS and PS (breaks in YAML 1.1 only), surrogates, the BOM and
# U+FFFE/U+FFFF. A text with one anywhere, even in a comment, goes to `yamlevents`. Not
# in `_BAD`: a class beyond U+00FF, in each of the grammar's classes, was two thirds of
# its compile time, paid at every start; and most texts are ASCII, never searched (the
# pattern is compiled on the first text that is not).
_REFUSED_WIDE = r"[\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]"
_TAIL = r"(?:[ \t]++(?:#[^\n]*+)?+)?+"  # trailing blanks and a comment
_BOOL11 = r"(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)"  # booleans in 1.1 only
_KEYWORD = rf"(?:{_BOOL11}|y|Y|n|N|true|True|TRUE|false|False|FALSE|null|Null|NULL)"
# The keyword lookaheads run only for a first letter that may start a keyword: most keys
# and values start with another, and the lookahead is a fifth of the grammar's time.
# Keys of managed fields, as `kubectl get -o yaml` prints them: `f:spec`, `k:{"name":"a"}`,
# `v:"x"`, `i:0` and `.`, strings in both versions (a colon inside is not followed by
# a blank; no blank at all).
_FIELDS_KEY = rf"[fkvi]:[^ \t{_BAD}:]++(?::[^ \t{_BAD}:]++)*+|\.(?=:)"
# Managed fields' keys first: they are a third of the lines kubectl prints, and tried
# last each of them failed the name alternative (its keyword check included) first. The
# alternatives cannot both match where a key ends (`:` then a blank or the line's end:
# a name has no colon, a managed field's key has no blank after its colon), so the
# order changes the time only, not what matches.
_KEY = (
    rf"(?:{_FIELDS_KEY}"
    rf"|(?:[A-EG-MP-SU-XZa-eg-mp-su-xz_]|(?!{_KEYWORD}:)[FNOTYfnoty])[A-Za-z0-9_./-]*+"
    rf"|\"[^\"\\{_BAD}]*+\"|'[^'{_BAD}]*+')"
)
_SCALAR = (
    r"(?:\[\]|\{\}|~"
    rf'|"[^"\\{_BAD}]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{{4}})[^"\\{_BAD}]*+)*+"'
    rf"|'[^'{_BAD}]*+(?:''[^'{_BAD}]*+)*+'"
    r"|-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?"
    # A UID (lower-case hex in 8-4-4-4-12): a string in both versions, even when it
    # starts with digits, and in every object the apiserver returns.
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    # A Kubernetes quantity with a suffix (`80Gi`, `500m`, `1.5G`): a string in both
    # versions (no 1.1 int or float pattern ends in a letter without an exponent), and
    # in every ResourceSlice's capacities.
    r"|[0-9]++(?:\.[0-9]++)?+(?:[KMGTPE]i|[numkMGTPE])"
    rf")(?=[ \t\n]|\Z){_TAIL}"
)
# A plain string: not a 1.1-only boolean, and never `: ` (that would be a mapping).
_PLAIN = (
    rf"(?:[A-MP-XZa-mp-xz_/]|(?!{_BOOL11}(?:[ \t#\n]|\Z))[NOYnoy])"
    rf"[^{_BAD}:]*+(?::[^ \t{_BAD}:][^{_BAD}:]*+)*+"
)
# A one-line flow collection of scalars (`labels: {app: x}`, `- {name: a, count: 1}`,
# `requests: [a, b]`), as PyYAML writes the innermost collections by default: its plain
# scalars stop at `,`, brackets, `:`, `#` and `?` (where libyaml's may stop in a flow),
# and mean the same in both versions for the reasons `_PLAIN` gives; keys are names or
# quoted. No nesting, no line breaks: the positions below read it from its one line.
_FLOW_KEY = (
    rf"(?:(?:[A-EG-MP-SU-XZa-eg-mp-su-xz_]|(?!{_KEYWORD}:)[FNOTYfnoty])[A-Za-z0-9_./-]*+"
    rf"|\"[^\"\\{_BAD}]*+\"|'[^'{_BAD}]*+')"
)
_DOUBLE = rf'"[^"\\{_BAD}]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{{4}})[^"\\{_BAD}]*+)*+"'
_SINGLE = rf"'[^'{_BAD}]*+(?:''[^'{_BAD}]*+)*+'"
_FLOW_SCALAR = (
    rf"(?:~|{_DOUBLE}|{_SINGLE}"
    r"|-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|[0-9]++(?:\.[0-9]++)?+(?:[KMGTPE]i|[numkMGTPE])"
    rf"|(?:[A-MP-XZa-mp-xz_/]|(?![ ]*+{_BOOL11}[ ]*+[,\]}}])[NOYnoy])"
    rf"[^{_BAD}:,\[\]{{}}#?]*+"
    r")(?=[ ]*+[,\]}])[ ]*+"
)
# Each collection written with its scalar (and key) pattern once: the grammar's
# compile time grows with its length.
_FLOW = (
    rf"(?:\{{[ ]*+(?:{_FLOW_KEY}:[ ]++{_FLOW_SCALAR}(?:,[ ]*+(?!\}})|(?=\}})))*+\}}"
    rf"|\[[ ]*+(?:{_FLOW_SCALAR}(?:,[ ]*+(?!\])|(?=\])))*+\])(?=[ \t\n]|\Z){_TAIL}"
)


def _line(value: str) -> str:
    """A line of plain block YAML whose values match `value`."""
    entry = rf"{_KEY}:(?:[ ]++{value}|{_TAIL})"
    return (
        rf"(?:(?:---|\.\.\.){_TAIL}"  # document markers
        rf"|[ ]*+(?:-(?:[ ]++(?:{entry}|{value})|{_TAIL})"  # `- key: value`, `- value`, `-`
        rf"|{entry}"  # `key: value`, `key:`
        r"|(?:#[^\n]*+)?))"  # a comment, a blank line
    )


# Plain first, as most values are: none of these can start with the same character.
# Each line followed by a break or the end: the line written once, so that compiling
# the grammar (at every start) takes half the time `(?:LINE\n)*+LINE` would.
_BLOCK = re.compile(rf"(?:{_line(rf'(?:{_PLAIN}|{_SCALAR})')}(?:\n|\Z))*+")
# A flow collection where a value starts (after `key: ` or `- `), not `[]` or `{}`.
_FLOW_OPEN = re.compile(r"[:-][ ]++[\[{](?![ ]*+[\]}])")


@lru_cache(maxsize=1)
def _block_with_flow() -> re.Pattern[str]:
    """`_BLOCK` with one-line flow collections as values too: compiled only for an input
    that has them, as it takes several times `_BLOCK`'s compile time."""
    return re.compile(rf"(?:{_line(rf'(?:{_PLAIN}|{_SCALAR}|{_FLOW})')}(?:\n|\Z))*+")


def plain_block(text: str) -> bool:
    """Whether every line of the text is in the grammar (`_BLOCK`, flow values allowed)."""
    if not text.isascii() and re.search(_REFUSED_WIDE, text) is not None:
        return False
    # `_BLOCK` reads one whole line (up to its break) per repetition, possessively: where
    # it stops is the start of the first line it refuses. The grammar with flow values
    # accepts every line `_BLOCK` does, also one line per repetition, so it goes on from
    # there: a flow document's first lines are read once, not twice.
    done = _BLOCK.match(text)
    end = done.end() if done is not None else 0
    if end == len(text):
        return True
    # A flow collection is looked for on the refused line first (most often it is there),
    # then on the lines before it (no match spans a line break).
    opens = _FLOW_OPEN.search(text, end) or _FLOW_OPEN.search(text, 0, end)
    return opens is not None and _block_with_flow().fullmatch(text, end) is not None


def load(text: str) -> Any | None:
    """The document's value, or None when it is not plain block YAML (or does not parse).

    A None sends the caller to `yamlevents`, which reads any YAML and reports errors.
    """
    if "\r" in text or not plain_block(text):
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
_CONTENT_LINE = re.compile(r"\n(?!---|\.\.\.)( *+)(?:(-)(?=[ \n])|(?=[^ \n#]))")
_ENTRY = re.compile(rf"({_KEY}):(?=[ \n])")
_NO_VALUE = re.compile(r"[ \t]*+(?:#[^\n]*+)?+\n")  # nothing (but a comment) after a colon
_SPACES = re.compile(r" *+")
# `_NO_VALUE` then `_CONTENT_LINE` in one match: nothing after the colon, lines that are
# not content (blank, comment, marker), then the content line. When it fails, the two
# steps say why (a scalar, or no line follows).
_COLLECTION_VALUE = re.compile(
    r"[ \t]*+(?:#[^\n]*+)?+"
    r"(?:\n(?:(?:---|\.\.\.)[^\n]*+| *+(?:#[^\n]*+)?+)(?=\n))*+"
    r"\n( *+)(?:(-)(?=[ \n])|(?=[^ \n#]))"
)


@lru_cache(maxsize=512)
def _key_or_end(column: int, key: str) -> re.Pattern[str]:
    """The line of entry `key` at `column`, or the first line less indented (the end)."""
    k = re.escape(key)
    end = rf"| {{0,{column - 1}}}[^ \n#]" if column else ""
    return re.compile(rf"\n(?:( {{{column}}})(?:{k}|\"{k}\"|'{k}'):(?=[ \n]){end})")


@lru_cache(maxsize=128)
def _indented_at_most(column: int) -> re.Pattern[str]:
    """The next content line indented `column` or less: a list item's dash at `column`,
    or the first line past the list (less indented, or a key at the dash's column, as a
    list may sit at its parent key's column). One alternative, possessive: the lines
    inside the items, the most, fail at their first character past `column`."""
    return re.compile(rf"\n {{0,{column}}}+[^ \n#]")


_Node = tuple[int, int, int, bool]
"""A collection: the line break before its first line, its column (of its keys or its
dashes), the offset where it starts, and whether it is a list. A one-line flow
collection has -1 for the first two and its opening bracket's offset for the third."""

# After a key's colon: a flow collection that is not empty (its opening bracket).
_FLOW_START = re.compile(r"[ ]++([\[{])(?![ ]*+[\]}])")
_FLOW_BLANKS = re.compile(r"[ ]*+")


@lru_cache(maxsize=1)
def _flow_steps() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """In a flow collection (`_FLOW`): a member (its key, group 1) and an item, each
    with its blanks and the comma after it (group 2) and the blanks after that, in one
    match (the value part may match nothing, so it never fails past the key). Compiled
    on first use: most inputs have no flow collection."""
    value = rf"(?:{_DOUBLE}|{_SINGLE}|[^,\]}}]*+)[ ]*+(?:(,)[ ]*+)?"
    return re.compile(rf"({_FLOW_KEY}):[ ]++{value}"), re.compile(value)


_Found = tuple[int, "_Node | None", dict[Segment, "_Found"]]
"""A node found: where it starts, the collection it is (None for a scalar), and its
children found so far, by segment."""


class Lines:
    """Where the nodes of a document that `load` accepted start, read from its lines.

    Lint places a document's findings one by one, and their paths share prefixes
    (`spec.devices.requests[i]`), so each node found is remembered, in a tree of the
    segments that lead to it: a walk then follows dict lookups from the top, where
    keys of path prefixes would be sliced and hashed at every depth. The items of a
    list found so far are remembered too, so that placing every item of a `kind: List`
    reads the list once, not once per item.
    """

    __slots__ = ("_flows", "_items", "_lines", "_top", "text")

    def __init__(self, text: str) -> None:
        # Every line, the first and the last too, then sits between two line breaks.
        self.text = "\n" + text + "\n"
        self._top: _Found | None = None
        self._items: dict[int, list[int]] = {}
        self._flows: dict[int, dict[str, int] | list[int]] = {}
        self._lines = LineIndex(self.text)

    def walk(self, parts: Sequence[Segment]) -> tuple[int, int, int]:
        """How many of `parts` exist, and the 0-based line and column where the deepest
        of them starts (a mapping entry at its key; the top node for none)."""
        text = self.text
        found = self._top
        if found is None:
            top = _collection(text, 0, -1, indentless=False)
            found = self._top = (top[2] if top is not None else 1, top, {})  # 1: the text's start
        depth = 0
        for part in parts:
            children = found[2]
            child = children.get(part)
            if child is None:
                node = found[1]
                if node is None:
                    break
                if node[0] < 0:
                    located = _flow_child(text, node, part, self._flows)
                elif node[3]:
                    located = (
                        _item(text, node, part, self._items.setdefault(node[0], []))
                        if type(part) is int else None
                    )
                else:
                    located = _entry(text, node, part) if type(part) is str else None
                if located is None:
                    break
                child = children[part] = (located[0], located[1], {})
            found = child
            depth += 1
        line, column = self._lines.line_column(found[0])
        return depth, line - 1, column


def _collection(text: str, start: int, parent: int, *, indentless: bool) -> _Node | None:
    """The collection on the first content line after `start` if it belongs to a node at
    column `parent`: indented past it, or a list at its column when `indentless`."""
    line = _CONTENT_LINE.search(text, start)
    return None if line is None else _belonging(line, parent, indentless=indentless)


def _belonging(line: re.Match[str], parent: int, *, indentless: bool) -> _Node | None:
    """The collection whose first line `line` matched (group 1 its indent after the line
    break, group 2 a dash), if it belongs to a node at column `parent`."""
    begin, column, seq = line.start(1) - 1, line.end(1) - line.start(1), line.start(2) >= 0
    if column < parent or (column == parent and not (seq and indentless)):
        return None
    return begin, column, begin + 1 + column, seq


def _entry(text: str, node: _Node, key: str) -> tuple[int, _Node | None] | None:
    _, column, at, _ = node  # `at`: the first key, which may follow an item's dash
    if text.startswith(key, at) and text.startswith(":", at + len(key)):
        colon = at + len(key) + 1
    elif text[at] in "\"'" and (first := _ENTRY.match(text, at)) and _unquote(first[1]) == key:
        colon = first.end()
    else:
        found = _key_or_end(column, key).search(text, text.find("\n", at))
        if found is None or found.start(1) < 0:
            return None
        at, colon = found.start() + 1 + column, found.end()
    line = _COLLECTION_VALUE.match(text, colon)
    if line is not None:
        return at, _belonging(line, column, indentless=True)
    empty = _NO_VALUE.match(text, colon)
    if empty is None:
        flow = _FLOW_START.match(text, colon)
        if flow is not None:
            return at, (-1, -1, flow.start(1), flow[1] == "[")
        return at, None  # a scalar, `[]` or `{}`
    return at, _collection(text, empty.end() - 1, column, indentless=True)


def _item(
    text: str, node: _Node, index: int, known: list[int]
) -> tuple[int, _Node | None] | None:
    """Item `index` of list `node`; `known` holds where the items found so far start
    (just past their dashes), and grows as the list is read further."""
    if index < 0:
        return None
    if index >= len(known) and not _find_items(text, node, index, known):
        return None
    pos = known[index]
    spaces = _SPACES.match(text, pos)
    content = spaces.end() if spaces is not None else pos
    if text[content] not in "#\n":
        if text[content] in "[{":  # a flow collection (`_FLOW`), or `[]`, `{}`
            return content, (-1, -1, content, text[content] == "[")
        if _ENTRY.match(text, content) is None:
            return content, None  # a scalar item
        begin = text.rfind("\n", 0, pos)
        return content, (begin, content - begin - 1, content, False)
    child = _collection(text, text.find("\n", content), node[1], indentless=False)
    # libyaml places a null item just past its dash.
    return (child[2] if child is not None else pos), child


def _find_items(text: str, node: _Node, index: int, known: list[int]) -> bool:
    """Read the list on from its last known item until item `index`; False past its end."""
    column = node[1]
    line = _indented_at_most(column)
    pos = known[-1] if known else node[0]
    while len(known) <= index:  # to the dash of item `index`, or past the list
        dash = line.search(text, pos)
        if dash is None:
            return False
        pos = dash.end()  # just past the line's first character
        if pos - dash.start() - 2 != column or text[pos - 1] != "-":
            return False  # less indented, or a key at the dash's column: past the list
        if text[pos] not in " \n":
            continue  # not a dash that starts an item (`-\t`): neither an item nor the end
        known.append(pos)
    return True


def _flow_child(
    text: str, node: _Node, part: Segment, known: dict[int, dict[str, int] | list[int]]
) -> tuple[int, _Node | None] | None:
    """Member `part` of the one-line flow collection `node` (its key), or its item
    `part`; its children are scalars (`_FLOW`). Each collection is read once."""
    at = node[2]
    children = known.get(at)
    if children is None:
        children = known[at] = _flow_children(text, at)
    found: int | None = None
    if isinstance(children, dict):
        found = children.get(part) if isinstance(part, str) else None
    elif isinstance(part, int) and 0 <= part < len(children):
        found = children[part]
    return None if found is None else (found, None)


def _flow_children(text: str, at: int) -> dict[str, int] | list[int]:
    """Where the members (their keys) or items of the flow collection at `at` start."""
    members: dict[str, int] = {}
    items: list[int] = []
    member_step, item_step = _flow_steps()
    is_map = text[at] == "{"
    pos = _past(_FLOW_BLANKS, text, at + 1)
    while text[pos] not in "]}":
        if is_map:
            member = member_step.match(text, pos)
            if member is None:
                break  # cannot happen in a text `load` accepted
            members[_unquote(member[1])] = pos
            comma = member.start(2)
        else:
            items.append(pos)
            member = item_step.match(text, pos)
            if member is None:
                break  # cannot happen: the pattern may match nothing
            comma = member.start(1)
        if comma < 0:
            break  # the closing bracket (a text `load` accepted has nothing else here)
        pos = member.end()
    return members if is_map else items


def _past(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """The end of `pattern` (which may match nothing) at `pos`."""
    found = pattern.match(text, pos)
    return found.end() if found is not None else pos


def _unquote(key: str) -> str:
    return key[1:-1] if key[:1] in ("\"", "'") else key


# --- the head of a document, read before (instead of) its value -------------------------
# Lint checks two kinds; a repository holds many others, which it only counts. For a
# document that `load` would accept (every line in `_BLOCK`), whose top node is a
# mapping whose keys start at column 0, the lines at column 0 are exactly its keys, and
# the lines at the first indentation under `metadata:` exactly the keys of metadata:
# so apiVersion, kind, metadata.name and metadata.namespace can be read off the lines
# when they are written plainly, and the value need not be built at all.

class Head(NamedTuple):
    """The identity of a document, as the values of its top-level fields, and the
    0-based line where its top node starts."""

    api_version: str
    kind: str
    name: str | None
    namespace: str | None
    line: int


# A value read the same by YAML 1.1 and 1.2 and kept as a string: starts with a letter
# or `_` and is no keyword (checked apart); then a comment at most.
_WORD = r"([A-Za-z_][A-Za-z0-9_./-]*+)[ \t]*+(?:#[^\n]*+)?+"
# As above, patterns start with the line break before a line (the text gets one in front).
_TOP_KEY = re.compile(r"\n(apiVersion|kind|metadata):(?=[ \t\n]|\Z)([^\n]*+)")
_WORD_VALUE = re.compile(rf"[ \t]++{_WORD}|[ \t]*+(?:#[^\n]*+)?+")
_QUOTED_OR_ODD_TOP = re.compile(r"\n[\"'?&*!|>%@`{\[]")
_BELOW = re.compile(r"\n(?:[ \t]*+(?:#[^\n]*+)?+\n)*+( ++)[^ \n]")
_TOP_LINE = re.compile(r"\n[^ \n#]")
_KIND_LINE = re.compile(r"\nkind:(?:[ \t]++([A-Za-z_][A-Za-z0-9_./-]*+)[ \t]*+(?:#[^\n]*+)?+\n)?")
_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


@lru_cache(maxsize=16)
def _meta_key(indent: int) -> re.Pattern[str]:
    """A line of metadata's own keys: `name` or `namespace` (plain value or none), or a
    quoted key, which ends the reading."""
    return re.compile(
        rf"\n {{{indent}}}(?:(name|namespace):(?:[ \t]++{_WORD}|[ \t]*+(?:#[^\n]*+)?+)(?=\n)"
        rf"|(name|namespace):|[\"'?])")


def peek(text: str, wanted: Callable[[str], bool]) -> Head | None:
    """apiVersion, kind, metadata.name and .namespace of a plain block document, read
    from its lines, if `wanted(kind)`; None when the document is not one `load` takes,
    or the four are not all written plainly there (then its value tells).

    The kind is looked at first, so that a document whose head is not wanted costs a
    scan of its lines at column 0 and nothing more.
    """
    lined = "\n" + text + "\n"
    # The first `kind:` line at column 0 settles most documents (lint's claims): when
    # its word is not wanted, the answer is None whatever the rest says (a None only
    # means "read the value"), so the other lines are not scanned.
    first_kind = _KIND_LINE.search(lined)
    if first_kind is not None and first_kind[1] is not None and not wanted(first_kind[1]):
        return None
    first = _CONTENT_LINE.search(lined)
    if first is None or first.end(1) != first.start(1) or first.start(2) >= 0:
        return None  # the top node is not a mapping at column 0
    found: dict[str, re.Match[str] | None] = {}
    meta_end = 0
    for entry in _TOP_KEY.finditer(lined):
        if entry[1] in found:
            return None  # a repeated key: the value has the last, or `load` refuses it
        found[entry[1]] = _WORD_VALUE.fullmatch(entry[2])
        if entry[1] == "metadata":
            if _FLOW_START.match(entry[2]) is not None:
                return None  # a flow collection (`_FLOW`): its value tells
            meta_end = entry.end()
    api_version, kind = _word(found.get("apiVersion")), _word(found.get("kind"))
    if api_version is None or kind is None or not wanted(kind):
        return None
    if _QUOTED_OR_ODD_TOP.search(lined) is not None or not plain_block(text):
        return None
    meta = _metadata(lined, found["metadata"], meta_end) if "metadata" in found else {}
    if meta is None:
        return None
    line = lined.count("\n", 1, first.start() + 1)  # lines before the first content line
    return Head(api_version, kind, meta.get("name"), meta.get("namespace"), line)


def _word(value: re.Match[str] | None) -> str | None:
    """The plain word a value is, if it is one (not a keyword, not empty)."""
    word = value[1] if value is not None else None
    return word if word is not None and word.lower() not in _WORDS else None


def _metadata(
    text: str, value: re.Match[str] | None, end: int
) -> dict[str, str | None] | None:
    """`name` and `namespace` of `metadata:` whose line ends at `end`; None when unsure."""
    if value is None or value[1] is not None:
        return {}  # a one-line scalar, `[]` or `{}` (`_BLOCK`): no name, no namespace
    below = _BELOW.match(text, end)
    if below is None:
        return {}  # nothing indented under `metadata:`: null, or a list at column 0
    stop = _TOP_LINE.search(text, below.end())
    block_end = stop.start() + 1 if stop is not None else len(text)
    meta: dict[str, str | None] = {}
    for line in _meta_key(len(below[1])).finditer(text, below.start(), block_end):
        key = line[1]
        if key is None or key in meta:
            return None  # a quoted key, a value not plainly a word, or a repeated key
        word = line[2]
        if word is not None and word.lower() in _WORDS:
            return None
        meta[key] = word
    return meta
