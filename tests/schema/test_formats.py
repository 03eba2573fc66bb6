"""Each name format's predicate agrees exactly with its list of upstream messages.

A check asks the format's predicate first and builds the messages only when it fails,
so "valid" must mean "no message" (`model/formats.py`).
"""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from draguard.schema.model import formats

# Characters that matter to the formats: case, digits, the separators, and a non-ASCII one.
NAME_TEXT = st.text(alphabet="aZ09-._/é\n", max_size=12)
EDGE_CASES = [
    "",
    "a" * 63,
    "a" * 64,
    "b." * 126 + "b",
    "b." * 127,
    "a/" + "x" * 63,
    "a/" + "x" * 64,
    "-a",
    "a-",
    "a..b",
    "a.-b",
    "example.com/numa",
    "a/b/c",
]


def _agree(value: str) -> None:
    assert formats.is_dns1123_label(value) == (not formats.dns1123_label_messages(value))
    assert formats.is_dns1123_subdomain(value) == (not formats.dns1123_subdomain_messages(value))
    assert formats.is_qualified_name(value) == (not formats.qualified_name_messages(value))
    assert formats.is_label_value(value) == (not formats.label_value_messages(value))


def test_predicates_agree_with_messages_on_edge_cases() -> None:
    for value in EDGE_CASES:
        _agree(value)


def test_predicates_agree_with_messages_on_every_short_string() -> None:
    for length in range(7):
        for chars in itertools.product("a0-./", repeat=length):
            _agree("".join(chars))


@given(NAME_TEXT)
def test_predicates_agree_with_messages(value: str) -> None:
    _agree(value)



def test_predicate_caches_hold_only_short_values() -> None:
    """Values beyond a format's length limit are refused before its cache sees them."""
    cached = (formats._is_dns1123_label, formats._is_qualified_name, formats._is_label_value)
    for cache in cached:
        cache.cache_clear()
    for index in range(20):
        long = f"a{index}" + "b" * 100_000
        assert not formats.is_dns1123_label(long)
        assert not formats.is_qualified_name(long)
        assert not formats.is_qualified_name(f"{long}.example.com/name")
        assert not formats.is_label_value(long)
    assert formats.is_qualified_name("gpu.example.com/" + "n" * 63)
    assert [cache.cache_info().currsize for cache in cached] == [0, 1, 0]
