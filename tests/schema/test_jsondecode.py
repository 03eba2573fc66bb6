"""Lone surrogates in JSON text are read as Go's encoding/json reads them (U+FFFD)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from draguard.schema.read import jsondecode


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
