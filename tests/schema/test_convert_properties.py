"""Properties of conversion between every pair of shapes (issue 3 §3), over generated claims.

Every generated document is first taken to each of the four shapes (v1, v1beta2,
v1beta1, parallel), and each property is checked from there to every other shape, so
N examples give N objects for every ordered shape pair. N is `budget.examples(100)` for
the round trips and for the findings (flawed documents also go through every conversion
in tests/schema/test_convert_corpus.py, the whole corpus each run): a pass in seconds
with the `ci` (default) profile, 10,000 with `deep` before a release
(`pytest tests/schema/test_convert_properties.py --hypothesis-profile=deep`, see
docs/convert.md). A failure prints the minimal document and the differences.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import strategies
from budget import examples
from hypothesis import HealthCheck, given, note, settings
from parallel_findings import hub_findings

from draguard.schema.convert import TARGETS, Conversion, convert_document, plain_copy
from draguard.schema.model.diff import diff
from draguard.schema.model.options import Options
from draguard.schema.model.releases import release
from draguard.schema.roundtrip import meaning, round_trips
from draguard.schema.validate import validate_object

SHAPES: tuple[str, ...] = strategies.SHAPES

# Generated documents are large by design (every field of every type); the profile's
# deadline=None and too_slow are repeated because this list replaces the profile's.
BIG = [HealthCheck.too_slow, HealthCheck.data_too_large]


def convert(obj: dict[str, Any], target: str) -> dict[str, Any]:
    """Convert and insist that nothing was lost (a valid object fits every shape)."""
    conversion: Conversion = convert_document(obj, target)
    assert conversion.lossless, f"→ {target}: " + "; ".join(map(str, conversion.losses))
    assert conversion.document is not None
    return conversion.document


def in_every_shape(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for shape in SHAPES:
        yield shape, convert(obj, shape)


def check_round_trips(start: str, base: dict[str, Any]) -> None:
    """For every other shape B: start → B → start means what `base` meant (defaults may be added)."""
    expected = meaning(base)
    for via in SHAPES:
        if via != start:
            back = convert(convert(base, via), start)
            differences = [str(c) for c in diff(expected, meaning(back))]
            assert not differences, f"{start} → {via} → {start}: {differences}"


def check_valid_in_every_target(start: str, base: dict[str, Any]) -> None:
    """A valid document in `start` converts to every target with nothing lost and stays valid."""
    for target in TARGETS:
        converted = convert(base, target)
        errors = [f"{e.path}: {e.message}" for e in validate_object(converted).errors]
        assert not errors, f"{start} → {target}: {errors}"


def check_layout_moves_are_exact(start: str, base: dict[str, Any]) -> None:
    """nested → parallel → nested gives back the very document (contract §2: layout only).

    One exception: v1beta1 read-back writes `deviceClassName: ""` on a prioritized
    request (no omitempty, §2.2); an entry of `prioritizedRequests` has no such field,
    so that empty string, Go's zero value, does not come back.
    """
    nested = convert(base, "nested")
    again = convert(convert(nested, "parallel"), "nested")
    assert again == _without_empty_class(nested), start


def _without_empty_class(doc: dict[str, Any]) -> dict[str, Any]:
    # A copy: a conversion shares what it leaves unchanged with its input (`base` here).
    doc = plain_copy(doc)
    holder = doc["spec"]["spec"] if doc["kind"] == "ResourceClaimTemplate" else doc["spec"]
    for request in holder["devices"]["requests"]:
        if request.get("firstAvailable") and request.get("deviceClassName") == "":
            del request["deviceClassName"]
    return doc


def check_idempotent(start: str, base: dict[str, Any]) -> None:
    """A document already read back in a version reads back unchanged in it (§4 defaults once)."""
    if start in ("v1", "v1beta2", "v1beta1"):
        assert convert(base, start) == base, start


# The checks share one generated document: generating it costs as much as all checks
# together. The budget is the suite's (issue 16: `pytest` in under 3 minutes).
@settings(max_examples=examples(100), deadline=None, suppress_health_check=BIG)
@given(strategies.documents())
def test_every_shape_pair_round_trips_and_stays_valid(doc: dict[str, Any]) -> None:
    """From every shape to every other: there and back keeps the meaning, and the result is valid."""
    assert validate_object(doc).valid, [str(e) for e in validate_object(doc).errors]
    for start, base in in_every_shape(doc):
        note(f"in {start}: {base}")
        check_round_trips(start, base)
        check_valid_in_every_target(start, base)
        check_layout_moves_are_exact(start, base)
        check_idempotent(start, base)
    # §5.1: v1 and v1beta2 are field-for-field identical; only apiVersion differs.
    in_v1, in_v1beta2 = convert(doc, "v1"), convert(doc, "v1beta2")
    assert {**in_v1beta2, "apiVersion": in_v1["apiVersion"]} == in_v1


@settings(max_examples=examples(100), deadline=None, suppress_health_check=BIG)
@given(strategies.documents(flaws=True))
def test_the_rule_set_finds_the_same_in_every_shape(doc: dict[str, Any]) -> None:
    """Findings before and after a conversion agree, paths mapped from the parallel layout."""
    expected = hub_findings(doc)
    for start, base in in_every_shape(doc):
        assert hub_findings(base) == expected, start
        for target in TARGETS:
            assert hub_findings(convert(base, target)) == expected, f"{start} → {target}"


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.documents())
def test_the_roundtrip_command_finds_nothing_to_report(doc: dict[str, Any]) -> None:
    """`round_trips`, behind `draguard roundtrip`, reports every pair of a valid document lossless."""
    trips = round_trips(doc) or []
    assert len(trips) == len(SHAPES) * (len(SHAPES) - 1)
    assert all(t.lossless for t in trips), [t for t in trips if not t.lossless]


OLDER = ("1.34", "1.35", "1.36")


@pytest.mark.parametrize("name", OLDER)
def test_older_releases_round_trip_and_stay_valid(name: str) -> None:
    """In 1.34–1.36 (other gates off by default, §1.1), a claim using only what is on converts, keeps its meaning and stays valid."""
    options = Options(release=release(name))

    @settings(max_examples=examples(50), deadline=None, suppress_health_check=BIG)
    @given(strategies.documents(release=options.release))
    def check(doc: dict[str, Any]) -> None:
        for start in SHAPES:
            base = convert_with(doc, start, options)
            for via in SHAPES:
                if via != start:
                    back = convert_with(convert_with(base, via, options), start, options)
                    assert meaning(back, options) == meaning(base, options), (start, via)
            for target in TARGETS:
                verdict = validate_object(convert_with(base, target, options), options=options)
                assert verdict.valid, (start, target, [str(e) for e in verdict.errors])

    check()


def convert_with(obj: dict[str, Any], target: str, options: Options) -> dict[str, Any]:
    conversion = convert_document(obj, target, options=options)
    assert conversion.lossless, f"→ {target}: " + "; ".join(map(str, conversion.losses))
    assert conversion.document is not None
    return conversion.document
