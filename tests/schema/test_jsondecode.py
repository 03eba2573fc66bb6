"""JSON text: lone surrogates read as Go's encoding/json reads them (U+FFFD); nodes located."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draguard.schema.model.paths import Segment
from draguard.schema.read import jsondecode, yamlevents
from draguard.schema.read.sources import _walk


def test_lone_surrogates_become_the_replacement_character_in_keys_and_values() -> None:
    text = r'{"a\ud800": ["x\udfffy", {"k": "\ud83d"}], "b": "\ud83d\ude00", "c": 1}'
    assert jsondecode.loads(text) == {
        "a\ufffd": ["x\ufffdy", {"k": "\ufffd"}],
        "b": "\U0001f600",  # a valid pair stays one character
        "c": 1,
    }
    assert list(jsondecode.loads(text)) == ["a\ufffd", "b", "c"]  # key order kept


def test_the_result_always_encodes_as_utf8() -> None:
    value = jsondecode.loads(r'[{"\udc80": "\ud800\ud800"}]')
    json.dumps(value, ensure_ascii=False).encode("utf-8")


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=15,
))
def test_values_without_lone_surrogates_are_read_as_json_reads_them(value: object) -> None:
    text = json.dumps(value)  # text() may hold lone surrogates: escaped, then replaced
    decoded = jsondecode.loads(text)
    json.dumps(decoded, ensure_ascii=False).encode("utf-8")
    if not re.search("[\ud800-\udfff]", json.dumps(value, ensure_ascii=False)):
        assert decoded == json.loads(text)


@pytest.mark.parametrize("offset", range(-20, 2))
def test_a_long_integer_across_the_scan_windows_is_read_exactly(offset: int) -> None:
    """The digit runs are looked for window by window: a run across a window's end counts."""
    big = 12345678901234567890123  # beyond 64 bits: orjson would make a float of it
    pad = jsondecode._WINDOW + offset - len('{"p": "", "n": ')
    data = f'{{"p": "{"x" * pad}", "n": {big}}}'.encode()
    assert data.index(b"1234") == jsondecode._WINDOW + offset
    assert _same(jsondecode.loads_utf8(data), {"p": "x" * pad, "n": big})


def _same(a: object, b: object) -> bool:
    """Equal with the same types all the way down (1 is not 1.0 nor True); NaN equals NaN.

    Iterative: the texts nest deeper than Python's recursion limit.
    """
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif isinstance(x, dict) and isinstance(y, dict):
            if list(x) != list(y):
                return False
            pending.extend((x[k], y[k]) for k in x)
        elif x != y and not (isinstance(x, float) and x != x and y != y):
            return False
    return True


def _outcome(read: Callable[[], object]) -> object:
    """The value read, or the error type's name."""
    try:
        return read()
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__


def _both(text: str) -> tuple[object, object]:
    """(loads of the text, loads_utf8 of its bytes)."""
    data = text.encode("utf-8")
    return _outcome(lambda: jsondecode.loads(text)), _outcome(lambda: jsondecode.loads_utf8(data))


def _decoded_first(data: bytes) -> object:
    return _outcome(lambda: jsondecode.loads(data.decode("utf-8")))


NUMBERS = st.one_of(
    st.integers(), st.integers(min_value=2**62, max_value=2**66),
    st.integers(min_value=-(2**66), max_value=-(2**62)), st.floats(), st.booleans(), st.none())
JSON_VALUES = st.recursive(
    NUMBERS | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
TRICKY_TEXTS = [
    "NaN", "[Infinity]", "[1e400]", "[-0]", "[-0.0]", "[18446744073709551615]",
    "[18446744073709551616]", "[-9223372036854775808]", "[-9223372036854775809]",
    "123456789012345678901234567890", '{"a":1,"a":2}', '"\\ud800"', '"\\ud83d\\ude00"',
    "[" * 1100 + "]" * 1100, '"a\x01"', "{} x", " [1] ", "\ufeff{}", "[1.5e3, 2E-2]",
]


@given(JSON_VALUES, st.booleans())
def test_the_orjson_path_reads_exactly_as_json(value: object, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    if re.search("[\ud800-\udfff]", text):  # not UTF-8: parse_review refuses it before
        return
    plain, fast = _both(text)
    assert _same(plain, fast)


@given(st.sampled_from(TRICKY_TEXTS) | st.text(alphabet='[]{}",:0123456789-.eEtrufalsn \\u',
                                               max_size=40))
def test_the_orjson_path_reads_and_refuses_texts_as_json(text: str) -> None:
    plain, fast = _both(text)
    assert _same(plain, fast)


@given(st.one_of(
    st.tuples(JSON_VALUES, st.booleans()).map(lambda t: json.dumps(t[0], ensure_ascii=t[1])),
    st.sampled_from(TRICKY_TEXTS),
    st.integers(0, 1100).map(lambda n: "[" * n + "]" * n),
    st.text(alphabet='[]{}",:0123456789-.eEtrufalsn ', max_size=40),
))
def test_loads_checked_reads_and_refuses_as_json(text: str) -> None:
    """With or without a backslash (the counting test for repeated keys, no search for
    surrogate escapes): the value `loads` reads (types, key order, a repeated key's
    last value) or the same refusal, in the same words."""
    if re.search("[\ud800-\udfff]", text):  # not from UTF-8: lint never reads one
        return
    assert _same(_worded(lambda: jsondecode.loads(text)),
                 _worded(lambda: jsondecode.loads_checked(text)[0]))


def _worded(read: Callable[[], object]) -> object:
    """`_outcome`, a decoding error with its words and place (lint reports them)."""
    try:
        return read()
    except json.JSONDecodeError as exc:
        return ("JSONDecodeError", exc.msg, exc.pos)
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__


BROKEN_UTF8 = [b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xff", b"\xe2\x82", b"\x80"]


@given(st.one_of(
    st.binary(max_size=40),
    st.tuples(JSON_VALUES, st.sampled_from(BROKEN_UTF8), st.integers(min_value=0)).map(
        lambda t: (lambda d: d[: t[2] % (len(d) + 1)] + t[1] + d[t[2] % (len(d) + 1):])(
            json.dumps(t[0], ensure_ascii=False).encode("utf-8", "surrogatepass"))),
    st.sampled_from([b"\xef\xbb\xbf{}", b'"\xed\xa0\x80"', b'{"a": "\xc3"}']),
))
def test_loads_utf8_reads_and_refuses_bytes_as_decoding_first_does(data: bytes) -> None:
    """Encoded surrogates, overlongs, stray bytes, a BOM: the same value or the same refusal."""
    assert _same(_decoded_first(data), _outcome(lambda: jsondecode.loads_utf8(data)))


# --- positions: `Nodes` against libyaml's marks (JSON read as YAML) -----------------------

def _paths(value: object, prefix: tuple[Segment, ...] = ()) -> Iterator[tuple[Segment, ...]]:
    """Every node's path, and paths just past the ends (a missing key, an index too far)."""
    yield prefix
    if isinstance(value, dict):
        yield (*prefix, "no-such-key")
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        yield (*prefix, len(value))
        for k, child in enumerate(value):
            yield from _paths(child, (*prefix, k))
    else:
        yield (*prefix, "below-a-scalar")


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(
        alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.text(alphabet='ab"\\\u00e9', max_size=3), inner, max_size=3),
    max_leaves=15,
)


@settings(deadline=None)
@given(value=_JSON_VALUES, indent=st.sampled_from([None, 1, 2]), pad=st.integers(0, 3))
def test_json_nodes_are_placed_where_libyaml_places_them(
    value: object, indent: int | None, pad: int
) -> None:
    """Every node of a JSON text is found at the line and column of libyaml's mark."""
    text = json.dumps(value, indent=indent)
    marks = yamlevents.load_with_positions(" " * pad + text)[1]
    nodes = jsondecode.Nodes(text, pad)
    for path in _paths(value):
        assert nodes.walk(path) == _walk(marks, path), path


@settings(deadline=None)
@given(value=_JSON_VALUES, indent=st.sampled_from([None, 1, 2]), pad=st.integers(0, 3))
def test_json_nodes_read_lazily_are_placed_where_libyaml_places_them(
    value: object, indent: int | None, pad: int
) -> None:
    """A text without repeated keys (any `json.dumps`), read only as far as each path
    needs: every node where libyaml places it, whatever order the paths come in."""
    text = json.dumps(value, indent=indent)
    marks = yamlevents.load_with_positions(" " * pad + text)[1]
    paths = list(_paths(value))
    for order in (paths, paths[::-1]):
        nodes = jsondecode.Nodes(text, pad, unique=True)
        for path in order:
            assert nodes.walk(path) == _walk(marks, path), path


def test_json_nodes_read_lazily_skip_siblings_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Placing every item of a long array, lazily, reads on from the last item found:
    each item and member is read once, not once per item from the array's start."""
    read = jsondecode._Open._next
    calls: list[int] = []

    def counted(self: jsondecode._Open, text: str, members: object) -> None:
        calls.append(self.pos)
        read(self, text, members)  # type: ignore[arg-type]

    monkeypatch.setattr(jsondecode._Open, "_next", counted)
    for n in (1_000, 4_000):
        calls.clear()
        text = json.dumps({"items": [{"k": j} for j in range(n)]})
        nodes, whole = jsondecode.Nodes(text, unique=True), jsondecode.Nodes(text)
        for j in range(n):
            assert nodes.walk(("items", j, "k")) == whole.walk(("items", j, "k"))
        # The top object's one member, then per item its dash and its one member.
        assert len(calls) == 2 * n + 1, (n, len(calls))


def test_json_nodes_of_a_repeated_key_are_the_last_ones() -> None:
    """A key written twice is placed at its last occurrence, whose value the decoder keeps."""
    nodes = jsondecode.Nodes('{"a": 1,\n "a": {"b": 2}}')
    assert nodes.walk(("a", "b")) == (2, 1, 7)


def test_json_nodes_read_each_collection_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Placing every item of a long array reads the array once, not once per item."""
    read = jsondecode._read_collection
    calls: list[int] = []

    def counted(text: str, at: int, closers: dict[int, int]) -> object:
        calls.append(at)
        return read(text, at, closers)

    monkeypatch.setattr(jsondecode, "_read_collection", counted)
    for n in (1_000, 4_000):
        calls.clear()
        nodes = jsondecode.Nodes(json.dumps({"items": [{"k": j} for j in range(n)]}))
        for j in range(n):
            assert nodes.walk(("items", j, "k"))[0] == 3
        # The top object, the array, then each item's members once.
        assert len(calls) == n + 2, (n, len(calls))


# --- repeated keys: the counting test against the member hook ------------------------------

# Keys and strings that look like JSON inside a string (`":`, `\"`, `\\`), escapes of
# the same key (`"a"` and `"\u0061"`), and lone surrogates that `loads` replaces.
_KEYS = st.sampled_from(["a", "b", 'a":', "\\", '"', ":", "a\ud800", "a\udfff", "é"])
_WS = st.sampled_from(["", " ", "\n  ", "\t"])


def _string(text: str, ascii_only: bool, spelled_out: bool) -> str:
    if spelled_out:  # every character as \uXXXX: another spelling of the same key
        return '"' + "".join(f"\\u{ord(c):04x}" for c in text) + '"'
    # A raw lone surrogate cannot be in a text decoded from UTF-8: escaped then.
    return json.dumps(text, ensure_ascii=ascii_only or re.search("[\ud800-\udfff]", text) is not None)


@st.composite
def _json_texts(draw: st.DrawFn, depth: int = 0) -> str:
    """A JSON text whose objects may write a key twice, in any spelling and spacing."""
    kind = draw(st.sampled_from(["scalar", "string", "array", "object"] if depth < 3
                                else ["scalar", "string"]))
    if kind == "scalar":
        return draw(st.sampled_from(["1", "-2.5", "true", "null", "123456789012345678901234"]))
    if kind == "string":
        return _string(draw(st.text(alphabet='a":\\}{,[ ]\ud800é', max_size=6)),
                       draw(st.booleans()), draw(st.booleans()))
    ws = draw(_WS)
    items = draw(st.lists(_json_texts(depth + 1), max_size=4))
    if kind == "array":
        return "[" + ws + f"{ws},{ws}".join(items) + ws + "]"
    members = [
        _string(draw(_KEYS), draw(st.booleans()), draw(st.booleans())) + ws + ":" + ws + item
        for item in items
    ]
    return "{" + ws + f"{ws},{ws}".join(members) + ws + "}"


def _hooked(text: str) -> tuple[object, bool]:
    """The reference: the C decoder's member hook sees every member, repeats included."""
    repeated = False

    def members(pairs: list[tuple[str, object]]) -> dict[str, object]:
        nonlocal repeated
        repeated = repeated or len(dict(pairs)) != len(pairs)
        return dict(pairs)

    return jsondecode.loads(json.dumps(json.loads(text, object_pairs_hook=members))), repeated


@settings(deadline=None)
@given(_json_texts())
def test_repeated_keys_are_found_exactly_when_the_member_hook_sees_them(text: str) -> None:
    value, duplicates = jsondecode.loads_checked(text)
    expected, repeated = _hooked(text)
    assert _same(value, expected)
    assert bool(duplicates) == repeated
    assert duplicates == (jsondecode._duplicates(text) if repeated else [])


def test_a_colon_in_a_string_value_is_not_a_key() -> None:
    assert jsondecode.loads_checked('{"a": "b\\":", "c": ["\\":", "a"]}')[1] == []
    assert jsondecode.loads_checked('{"a": "x\\":", "a": 1}')[1] != []
    assert jsondecode.loads_checked('{"a": ":", "b": {"a": 1, "\\u0061": 2}}')[1] != []
    assert jsondecode.loads_checked('{"a": ":", "b": {"a": 1, "a": 2}}')[1] != []


# --- a List read item by item ---------------------------------------------------------------


def _items_or_none(data: bytes) -> tuple[dict[str, object], list[object]] | None:
    """`list_items` run to the end: the other members and every item, None where it declines."""
    listed = jsondecode.list_items(data)
    if listed is None:
        return None
    members, items = listed
    read = list(items)
    return None if any(item is None for item in read) else (members, read)


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
    | st.text(alphabet=st.sampled_from('ab"\\}]{[\n\u00e9\ud800,')),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["a", "items", "kind", "}"]), inner, max_size=3),
    max_leaves=10,
)


@settings(deadline=None)
@given(items=st.lists(st.dictionaries(st.sampled_from(["kind", "spec", "x"]), _JSON_VALUES,
                                      max_size=3), max_size=6),
       indent=st.sampled_from([None, 1, 4, "\t", 8]), sort_keys=st.booleans(),
       kind=st.sampled_from(["List", "PodList", 7]))
def test_a_list_read_item_by_item_is_the_list_decoded_whole(
        items: list[dict[str, object]], indent: int | str | None, sort_keys: bool,
        kind: object) -> None:
    """Wherever `list_items` reads a List, it reads what `loads_utf8` reads from it whole."""
    data = json.dumps({"apiVersion": "v1", "kind": kind, "items": items, "metadata": {}},
                      indent=indent, sort_keys=sort_keys).encode("utf-8", "surrogatepass")
    try:
        whole = jsondecode.loads_utf8(data)
    except ValueError:  # not UTF-8 (a lone surrogate written raw): nothing to compare
        return
    read = _items_or_none(data)
    if read is not None:
        members, decoded = read
        assert _same(members, {k: v for k, v in whole.items() if k != "items"})
        assert _same(decoded, whole["items"])


def _listed(*items: str, before: str = '{\n    "apiVersion": "v1",\n    "items": [\n',
            after: str = '\n    ],\n    "kind": "List"\n}\n') -> bytes:
    return (before + ",\n".join(items) + after).encode()


_ITEM = '        {\n            "kind": "Node",\n            "n": %s\n        }'


def test_a_kubectl_list_is_read_item_by_item() -> None:
    data = _listed(*(_ITEM % i for i in range(3000)))  # more than one batch
    assert len(data) > 4 * jsondecode._BATCH
    assert _items_or_none(data) == ({"apiVersion": "v1", "kind": "List"},
                                    [{"kind": "Node", "n": i} for i in range(3000)])


@pytest.mark.parametrize("data", [
    pytest.param(_listed(_ITEM % 1).replace(b"\n", b""), id="one-line"),
    pytest.param(_listed(_ITEM % 1, before='{"items": [\n', after="\n], \"items\": []}"),
                 id="items-twice"),
    pytest.param(_listed(_ITEM % 1, before='{"a": {"items": [\n', after="\n]}, \"items\": []}"),
                 id="items-of-a-member"),
    pytest.param(_listed(_ITEM % 1, after="\n    ],\n    \"kind\": \"L\\u0069st\"\n}"),
                 id="an-escape-outside-the-items"),
    pytest.param(_listed(_ITEM % 1, after="\n    ],\n    \"kind\": \"List\", \"x\": [1]\n}"),
                 id="a-bracket-after-the-items"),
    pytest.param(_listed(_ITEM % 12345678901234567890123), id="a-19-digit-run"),
    pytest.param(_listed("        []"), id="an-item-not-an-object"),
    pytest.param(_listed(), id="no-items"),
    pytest.param(_listed(_ITEM % 1, after='\n    ],\n    "x": "%s"\n}' % ("y" * 70_000)),
                 id="large-other-members"),
    pytest.param(_listed(_ITEM % 1 + "], [" + (_ITEM % 2).lstrip()), id="an-array-closed-and-opened"),
])
def test_lists_read_otherwise_are_declined_whole(data: bytes) -> None:
    """Declined at once, or by an item that does not end where the List's layout says."""
    assert _items_or_none(data) is None


@pytest.mark.parametrize("item", [
    pytest.param('        {"s": "\\ud800"\n        }', id="a-lone-surrogate"),
    pytest.param('        {"n": NaN\n        }', id="nan"),
    pytest.param('        {"a": 1\n        }\n        }', id="a-stray-closer"),
    pytest.param('        {"a": 1\n        } 2', id="no-comma"),
    pytest.param('        {"d": ' + "[" * 1022 + "]" * 1022 + "\n        }", id="too-deep-in-the-list"),
])
def test_an_item_that_does_not_decode_alone_stops_the_reading(item: str) -> None:
    """Each such List decodes whole with `json` (or not at all): the caller reads it so."""
    listed = jsondecode.list_items(_listed(_ITEM % 1, item, _ITEM % 2))
    assert listed is not None
    assert list(listed[1])[-1] is None


def test_an_item_as_deep_as_orjson_reads_in_the_list_is_read() -> None:
    item = '        {"d": ' + "[" * 1021 + "]" * 1021 + "\n        }"  # 1,024 deep in the List
    read = _items_or_none(_listed(item))
    assert read is not None and _same(read[1], jsondecode.loads_utf8(_listed(item))["items"])
