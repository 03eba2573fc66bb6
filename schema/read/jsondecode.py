"""JSON text → values as the apiserver's decoder sees them.

Python's `json` turns an escaped lone UTF-16 surrogate (`"\\ud800"`) into a lone
surrogate code point, a string that cannot be encoded as UTF-8 again; Go's
`encoding/json`, which decodes for the apiserver and kubectl, replaces it with U+FFFD.
So does `loads` here, so that every later step (sizes of annotations, messages, the
JSON output) sees the same text as upstream and never fails on it.

Given the UTF-8 bytes, `loads_utf8` reads with orjson (a third of the time)
whenever orjson reads the text as `json` does. It does for everything but: integers
beyond 64 bits (orjson makes floats of them, so a text with a run of 19 digits goes to
`json`), and texts orjson refuses (NaN, lone surrogates, nesting past 1024, 1e400,
broken JSON), which `json` then reads or explains in its own words.
"""

from __future__ import annotations

import json
import mmap
import re
from collections.abc import Iterator, Sequence
from typing import Any

from draguard.schema.model.paths import Segment
from draguard.schema.read.duplicates import Duplicate
from draguard.schema.read.offsets import LineIndex

# An escape in the surrogate range (\ud800-\udfff), valid pairs included; only a text
# with one is walked.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")  # raw: `re` reads the escapes
REPLACEMENT = "\ufffd"


# Digits to "0", everything else to " ": a run of 19 zeros is a run of 19 digits.
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_DIGIT_RUN = b"0" * 19  # -2**63 - 1 and 2**64 have 19 and 20 digits


def loads(text: str) -> Any:
    """`json.loads`, with each lone surrogate replaced by U+FFFD (as Go decodes it)."""
    value = json.loads(text)
    if _SURROGATE_ESCAPE.search(text) is None:
        return value
    return _replace(value)


def loads_checked(text: str) -> tuple[Any, list[Duplicate]]:
    """`loads`, and every key repeated in an object (kept last, as `loads` keeps it).

    A text without a backslash (most) is checked by counting: each of its string tokens
    (every `"` opens or closes one) is a key or a string of the decoded value, unless a
    later member with the same key overwrote its member, which takes the earlier key
    out of the value. So the value has fewer strings exactly when a key is repeated.
    Other texts go through the C decoder's member hook, which notices a repeat by the
    count of each object's members. Only on a repeat is the text walked for the paths
    and lines (`_duplicates`).
    """
    if "\\" in text:
        value, repeated = _loads_hooked(text)
    else:
        value = json.loads(text)
        repeated = _strings_in_value(value) != text.count('"') // 2
    if _SURROGATE_ESCAPE.search(text) is not None:
        value = _replace(value)
    return value, (_duplicates(text) if repeated else [])


def _loads_hooked(text: str) -> tuple[Any, bool]:
    """`json.loads`, and whether some object had a key twice."""
    repeated = False

    def members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        obj = dict(pairs)
        if len(obj) != len(pairs):
            repeated = True
        return obj

    return json.loads(text, object_pairs_hook=members), repeated


def _strings_in_value(value: Any) -> int:
    """How many keys and string scalars a value decoded from a text without escapes holds.

    Counted in orjson's encoding (C speed): such strings hold no `"`, `\\` or control
    character, so the encoding has no escape and every `"` opens or closes a string.
    A value orjson cannot encode (an integer beyond 64 bits) is walked.
    """
    import orjson  # here: a YAML input never needs it, and it imports uuid and platform

    try:
        return orjson.dumps(value).count(b'"') // 2
    except orjson.JSONEncodeError:
        pass
    count = 0
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is str:
            count += 1
        elif kind is dict:
            count += len(item)
            pending.extend(item.values())
        elif kind is list:
            pending.extend(item)
    return count


def _duplicates(text: str) -> list[Duplicate]:
    """Walk a text that decoded: each repeated key with both of its places."""
    lines = LineIndex(text)
    closers = _closers(text)
    found: list[Duplicate] = []
    pending: list[tuple[int, tuple[Segment, ...]]] = [(_skip(text, 0), ())]
    while pending:
        at, path = pending.pop()
        if text[at] == "[":
            pending.extend((item, (*path, k)) for k, item in enumerate(_read_items(text, at, closers)))
            continue
        if text[at] != "{":
            continue
        seen: dict[str, int] = {}
        for key, key_at, value_at in _read_members(text, at, closers):
            if key in seen:
                (l1, c1), (l2, c2) = lines.line_column(seen[key]), lines.line_column(key_at)
                found.append(Duplicate((*path, key), l1, c1, l2, c2))
            seen[key] = key_at
            pending.append((value_at, (*path, key)))
    found.sort(key=lambda d: (d.line, d.column))
    return found


def loads_utf8(data: bytes | memoryview) -> Any:
    """`loads(data.decode("utf-8"))`: UnicodeDecodeError for bytes that are not UTF-8.

    orjson reads the bytes without the text being made first when it reads them as
    `json` would (see the module docstring); it refuses every byte sequence that
    strict UTF-8 decoding refuses, and those go the slow way to fail as it does.
    """
    if not _long_digit_run(data):
        import orjson  # here: see `_strings_in_value`

        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return loads(str(data, "utf-8"))


_WINDOW = 1 << 16  # below malloc's mmap threshold: one buffer reused, not fresh pages


def _long_digit_run(data: bytes | memoryview) -> bool:
    """Whether the bytes hold 19 digits in a row, looked for window by window.

    Translating the whole input at once made a copy as large as it (40 MB for a
    5,000-node List): a tenth of the command's page faults, for a scan that needs
    no more than a window and the 18 bytes after it.
    """
    overlap = len(_LONG_DIGIT_RUN) - 1
    for start in range(0, len(data), _WINDOW):
        if _LONG_DIGIT_RUN in bytes(data[start:start + _WINDOW + overlap]).translate(_DIGITS_ONLY):
            return True
    return False


# --- a List read item by item ---------------------------------------------------------------
# A 50,000-node `kubectl get -o json` List decoded whole is a tree of 450,000 items, 1.6 GB of
# fresh pages (their faults are a fifth of the command's time, bench/RESULTS.md issue 19)
# for objects that explain reads once each. Decoded one item at a time, each item's memory
# is given back before the next is decoded and the same pages serve them all.

Buffer = bytes | mmap.mmap
_ITEMS_OPEN = re.compile(rb'"items"[ \t\n\r]*+:[ \t\n\r]*+\[')
_SPACE_BYTES = re.compile(rb"[ \t\n\r]*+")
_SENTINEL = "draguard: the items, read one by one"
_MEMBERS_MAX = 1 << 16  # bytes of a List's other members (apiVersion, kind, metadata)
_BATCH = 1 << 14  # bytes of items decoded together: few cuts, their objects stay in the cache


def list_items(data: Buffer, start: int = 0) -> tuple[dict[str, Any], Iterator[Any | None]] | None:
    """The List at `data[start:]` as `loads_utf8` would decode it, its items one at a time.

    For the layout every JSON encoder that indents writes (`kubectl get -o json`,
    `json.dump(indent=…)`): an `items` array whose first item opens on a line of its
    own and whose items each close on a line with the same indentation. The items are
    cut at those lines and each piece is decoded alone; nothing relies on the layout
    being right: the other members are decoded with a marker in the array's place,
    which must come back as the one top-level `items`, and an item either decodes whole
    from its piece, followed by a comma or the array's end, or the iterator yields None
    (read the file whole instead). JSON's grammar has one parse, so pieces that decode
    this way are the items the whole text holds. None when the text is not such a List.
    """
    at = data.find(b'"items"', start)
    opened = _ITEMS_OPEN.match(data, at) if at >= 0 else None
    close = data.rfind(b"]")
    if opened is None or close < opened.end():
        return None
    if opened.end() - start + len(data) - close > _MEMBERS_MAX:
        return None  # not a List's few members: decoding them with `json` would cost more
    first = _space_end(data, opened.end())
    line = data.rfind(b"\n", 0, first) + 1
    indent = data[line:first]
    if (first >= close or data[first:first + 1] != b"{" or line <= opened.end()
            or indent.strip(b" \t")):
        return None
    members = _other_members(data, start, opened.end() - 1, close + 1)
    if members is None:
        return None
    return members, _items(data, first, close, b"\n" + indent + b"}")


def _space_end(data: Buffer, at: int) -> int:
    space = _SPACE_BYTES.match(data, at)
    return space.end() if space is not None else at


def _other_members(data: Buffer, start: int, opened: int, after: int) -> dict[str, Any] | None:
    """The List's object with a marker for the items array, checked to be its one `items`."""
    try:
        before, rest = str(data[start:opened], "utf-8"), str(data[after:], "utf-8")
    except UnicodeDecodeError:
        return None
    if any("\\" in t or _SENTINEL in t for t in (before, rest)):
        return None  # no escape: the marker cannot be written another way
    objects: list[list[tuple[str, Any]]] = []

    def members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        objects.append(pairs)
        return dict(pairs)

    try:
        value = json.loads(before + json.dumps(_SENTINEL) + rest, object_pairs_hook=members)
    except (ValueError, RecursionError):
        return None
    if type(value) is not dict or [v for k, v in objects[-1] if k == "items"] != [_SENTINEL]:
        return None
    del value["items"]
    return value


def _items(data: Buffer, at: int, close: int, closer: bytes) -> Iterator[Any | None]:
    """The items from `at` to the array's end at `close`, decoded a batch of them at a
    time (cut at an item's end); None where a batch does not decode alone."""
    view = memoryview(data)
    while True:
        end = data.find(closer, min(at + _BATCH, close), close)
        if end < 0:  # the last batch
            end = data.rfind(closer, at, close)
            if end < 0:
                yield None
                return
        end += len(closer)
        batch = _batch(view[at:end])
        if batch is None:
            yield None
            return
        yield from batch
        after = _space_end(data, end)
        if after == close:
            return
        if data[after:after + 1] != b",":
            yield None
            return
        at = after + 1


def _batch(piece: memoryview) -> list[Any] | None:
    """`item, item, …` decoded, or None when orjson would not decode them in the whole
    text, or would decode them otherwise than `json` (a 19-digit run, see `loads_utf8`:
    a number lies inside an item). Inside `[[…]]` each item is as deep as in the List,
    whose depth orjson limits. One array inside the outer one: the piece is exactly its
    body (a comma-separated run of values)."""
    import orjson  # here: see `_strings_in_value`

    text = b"".join((b"[[", piece, b"]]"))
    if _LONG_DIGIT_RUN in text.translate(_DIGITS_ONLY):
        return None
    try:
        batch = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if len(batch) != 1:  # `…}], [{…`: the piece is not the body of one array
        return None
    items: list[Any] = batch[0]
    return items


def _replace(value: Any) -> Any:
    # Iterative: a document may nest as deep as json.loads allows.
    root = [value]
    pending: list[tuple[Any, Any]] = [(root, 0)]
    while pending:
        holder, key = pending.pop()
        item = holder[key]
        if isinstance(item, str):
            holder[key] = _LONE_SURROGATE.sub(REPLACEMENT, item)
        elif isinstance(item, list):
            pending.extend((item, k) for k in range(len(item)))
        elif isinstance(item, dict):
            if any(_LONE_SURROGATE.search(k) for k in item):  # rebuilt to keep the order
                fixed = {_LONE_SURROGATE.sub(REPLACEMENT, k): v for k, v in item.items()}
                item.clear()
                item.update(fixed)
            pending.extend((item, k) for k in item)
    return root[0]


# --- positions -----------------------------------------------------------------------------
# Lint places the findings of a JSON document in its text. The text is valid JSON (it
# was decoded), so the members of an object and the items of an array are found one
# after the other from where the collection starts, each value skipped in one step: a
# string or scalar by a pattern, a collection by its closing bracket (all of a text's
# brackets are paired in one pass, `_closers`, the first time a node is asked for).
# Only the collections on a path asked for are read, each once (its children's
# offsets are remembered).
#
# A text known to write no key twice (`loads_checked` found none) is read lazily
# instead: a collection's members only up to the one asked for (with no repeats, the
# first with its key is the one the decoder kept), each sibling before it skipped by
# the C decoder. Pairing every bracket of the text cost more than the rest of the
# placing: lint asks for a few paths a document, and the pairing loop ran once per
# bracket of the whole text.

_SPACE = re.compile(r"[ \t\n\r]*+")


def _skip(text: str, pos: int) -> int:
    """The first offset at or after `pos` that is not JSON whitespace."""
    space = _SPACE.match(text, pos)
    return space.end() if space is not None else pos
_Children = dict[str, tuple[int, int]] | list[int]
"""An object's members: key → (offset of the key, offset of the value); an array's
items: their offsets."""


class Nodes:
    """Where the nodes of a JSON value start in its text, read on demand.

    A mapping entry is placed at its key's opening quote, an array item at its first
    character, as libyaml places them when it reads JSON as YAML. `unique`: the text
    writes no key twice in any object, so collections can be read lazily (`_Open`).
    """

    __slots__ = ("_children", "_closers", "_lines", "_open", "_pad", "_unique", "text")

    def __init__(self, text: str, pad: int = 0, *, unique: bool = False) -> None:
        """`pad`: the column where the text starts on its first line."""
        self.text = text
        self._pad = pad
        self._unique = unique
        self._children: dict[int, _Children | None] = {}
        self._open: dict[int, _Open | None] = {}
        self._closers: dict[int, int] | None = None
        self._lines = LineIndex(text)

    def walk(self, parts: Sequence[Segment]) -> tuple[int, int, int]:
        """How many of `parts` exist, and the 0-based line and column where the deepest
        of them starts (the value's first character for none), as `Lines.walk`."""
        at = mark = _skip(self.text, 0)
        depth = 0
        step = self._lazy_step if self._unique else self._step
        for part in parts:
            found = step(at, part)
            if found is None:
                break
            mark, at = found
            depth += 1
        line, column = self._lines.line_column(mark)
        return depth, line, column + (self._pad if line == 0 else 0)

    def _step(self, at: int, part: Segment) -> tuple[int, int] | None:
        """Child `part` of the collection at `at` (where it is placed, where its value
        starts), its collection read whole."""
        children = self._read(at)
        if type(part) is int and type(children) is list and 0 <= part < len(children):
            return children[part], children[part]
        if type(part) is str and type(children) is dict:
            return children.get(part)
        return None

    def _read(self, at: int) -> _Children | None:
        if at not in self._children:
            if self._closers is None:
                self._closers = _closers(self.text)
            try:
                self._children[at] = _read_collection(self.text, at, self._closers)
            except (ValueError, KeyError, IndexError):  # cannot happen in a text that decoded
                self._children[at] = None
        return self._children[at]

    def _lazy_step(self, at: int, part: Segment) -> tuple[int, int] | None:
        """`_step` for a text without repeated keys: the collection read only as far
        as `part`, from where its reading stopped before."""
        if at in self._open:
            state = self._open[at]
        else:
            opener = self.text[at]
            state = self._open[at] = (
                _Open(opener == "{", _skip(self.text, at + 1)) if opener in "{[" else None)
        if state is None:
            return None
        try:
            return state.find(self.text, part)
        except (ValueError, IndexError, RecursionError):  # cannot happen in a text that decoded
            state.pos = -1
            return None


class _Open:
    """A collection of a text without repeated keys, read as far as asked: its members
    (key → key offset, value offset) or items (offsets) so far, and where the reading
    goes on: at the last one's value, which is skipped only when the next is asked for
    (the one asked for is often the biggest), or -1 past the closing bracket."""

    __slots__ = ("items", "members", "pos", "value")

    def __init__(self, is_object: bool, pos: int) -> None:
        self.members: dict[str, tuple[int, int]] | None = {} if is_object else None
        self.items: list[int] = []
        self.pos = pos
        self.value = False  # whether `pos` is the last one's value, still to skip

    def find(self, text: str, part: Segment) -> tuple[int, int] | None:
        members = self.members
        if members is not None:
            if type(part) is not str:
                return None
            while part not in members and self.pos >= 0:
                self._next(text, members)
            return members.get(part)
        items = self.items
        if type(part) is not int or part < 0:
            return None
        while len(items) <= part and self.pos >= 0:
            self._next(text, None)
        return (items[part], items[part]) if part < len(items) else None

    def _next(self, text: str, members: dict[str, tuple[int, int]] | None) -> None:
        """Read one more member or item, or the closing bracket."""
        pos = self.pos
        if self.value:
            after = _AFTER.match(text, _skipped(text, pos))
            if after is None:
                raise ValueError("no value end")  # cannot happen: `_AFTER` matches anywhere
            pos = after.end()
        if text[pos] in "}]":
            self.pos = -1
            return
        if members is not None:
            member = _MEMBER.match(text, pos)
            if member is None:
                raise ValueError("not a member")  # cannot happen in a text that decoded
            key, value = member[1], member.end()
            members[key if "\\" not in key else loads(f'"{key}"')] = (pos, value)
        else:
            value = pos
            self.items.append(pos)
        self.pos, self.value = value, True


_DECODER = json.JSONDecoder()


def _skipped(text: str, at: int) -> int:
    """The offset just past the value at `at`: a collection decoded (C speed; its
    value is dropped), a scalar by its pattern."""
    if text[at] in "{[":
        return _DECODER.raw_decode(text, at)[1]
    return _value_end(text, at, {})


# A member's key (its text between the quotes) up to its value; the break after a value.
_MEMBER = re.compile(r'"([^"\\]*+(?:\\.[^"\\]*+)*+)"[ \t\n\r]*+:[ \t\n\r]*+')
_AFTER = re.compile(r"[ \t\n\r]*+,?[ \t\n\r]*+")


def _read_members(text: str, at: int, closers: dict[int, int]) -> list[tuple[str, int, int]]:
    """Each member of the object at `at`, repeats included: key, key offset, value offset."""
    out: list[tuple[str, int, int]] = []
    pos = _skip(text, at + 1)
    while text[pos] != "}":
        member = _MEMBER.match(text, pos)
        if member is None:
            raise ValueError("not a member")  # cannot happen in a text that decoded
        key = member[1] if "\\" not in member[1] else loads(f'"{member[1]}"')
        out.append((key, pos, member.end()))
        end = _value_end(text, member.end(), closers)
        after = _AFTER.match(text, end)
        pos = after.end() if after is not None else end
    return out


def _read_items(text: str, at: int, closers: dict[int, int]) -> list[int]:
    items = _read_collection(text, at, closers)
    return items if isinstance(items, list) else []


def _read_collection(text: str, at: int, closers: dict[int, int]) -> _Children | None:
    """The members or items of the collection starting at `at`; None for a scalar."""
    opener = text[at]
    if opener not in "{[":
        return None
    closer = "}" if opener == "{" else "]"
    members: dict[str, tuple[int, int]] = {}
    items: list[int] = []
    pos = _skip(text, at + 1)
    while text[pos] != closer:
        if opener == "{":
            member = _MEMBER.match(text, pos)
            if member is None:
                raise ValueError("not a member")  # cannot happen in a text that decoded
            key, value = member[1], member.end()
            if "\\" in key:  # escaped: decoded as `loads` has it
                key = loads(f'"{key}"')
            members[key] = (pos, value)  # a repeated key: the last one, as decoded
        else:
            value = pos
            items.append(value)
        after = _AFTER.match(text, _value_end(text, value, closers))
        if after is None:
            raise ValueError("no value end")  # cannot happen: `_AFTER` matches anywhere
        pos = after.end()
    return members if opener == "{" else items


# A JSON text's brackets, each found past the strings and scalars before it: the loop
# over them runs once per bracket, and the rest is skipped at the engine's speed. The
# last match runs to the end (`\Z`, no bracket), so that no search starts again past
# a match, inside a string.
_BRACKET = re.compile(
    r'[^"\[\]{}]*+(?:"[^"\\]*+(?:\\.[^"\\]*+)*+"[^"\[\]{}]*+)*+([\[\]{}]|\Z)')
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"')
_LITERAL = re.compile(r"[^,\]} \t\n\r]*+")  # a number, true, false, null


def _closers(text: str) -> dict[int, int]:
    """Where each collection of a decoded text ends: its opening offset → its closing one.

    One pass over the text, so that reading a collection's members skips each value in
    one step (a nested one by its closer, not by decoding it again at every depth).
    """
    closers: dict[int, int] = {}
    opened: list[int] = []
    for bracket in _BRACKET.finditer(text):
        if not bracket[1]:
            break
        if bracket[1] in "{[":
            opened.append(bracket.start(1))
        else:
            closers[opened.pop()] = bracket.start(1)
    return closers


def _value_end(text: str, at: int, closers: dict[int, int]) -> int:
    """The offset just past the value that starts at `at`."""
    first = text[at]
    if first in "{[":
        return closers[at] + 1
    scalar = (_STRING if first == '"' else _LITERAL).match(text, at)
    if scalar is None:
        raise ValueError("not a value")  # cannot happen in a text that decoded
    return scalar.end()
