"""The rule set's fast paths agree with the checks they stand in for.

The rules ask a cheap predicate first and run the full check (path, messages) only
when it fails, so a predicate that says "valid" must mean "the check finds nothing".
The format predicates must agree exactly with their message lists.
"""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from draguard.schema.model import formats
from draguard.schema.model.errors import FieldError
from draguard.schema.model.releases import RELEASES
from draguard.schema.rules.spec import (
    attribute_name_passes,
    check_reference,
    gather_request_names,
    reference_passes,
    rules_for,
)

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


@given(NAME_TEXT)
def test_a_passing_attribute_name_has_no_finding_in_any_release(name: str) -> None:
    if not attribute_name_passes(name):
        return
    for release in RELEASES.values():
        out: list[FieldError] = []
        rules_for(release).check_qualified_name(name, ("spec",), out)
        assert out == []


@given(NAME_TEXT, st.lists(st.sampled_from(["gpu", "nic", "a.b", "Bad", ""]), max_size=3))
def test_reference_passes_exactly_when_it_has_no_finding(ref: str, subs: list[str]) -> None:
    requests = [
        {"name": "gpu", "firstAvailable": [{"name": s} for s in subs]},
        {"name": "nic", "exactly": {}},
        {"name": "Bad", "exactly": {}},
    ]
    names = gather_request_names(requests)
    out: list[FieldError] = []
    check_reference(ref, ("spec",), names, out)
    assert reference_passes(ref, names) == (out == [])
