"""Upstream's literal and homogeneity validators (cel-go `cel/validator.go`)."""

from __future__ import annotations

import pytest

from draguard.schema.cel.check import check_selector
from draguard.schema.cel.validators import valid_duration, valid_regex, valid_timestamp
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import RELEASES

PATH = FieldPath.root("spec").child("devices", "requests").index(0).child(
    "exactly", "selectors").index(0).child("cel", "expression")
NEWEST = RELEASES["1.37"]

DURATIONS = [
    pytest.param("1h30m", True, id="hours-minutes"),
    pytest.param("-1.5s", True, id="negative-fraction"),
    pytest.param("0", True, id="bare-zero"),
    pytest.param("300ms", True, id="milliseconds"),
    pytest.param("2µs", True, id="micro-sign"),
    pytest.param("1", False, id="no-unit"),
    pytest.param("1d", False, id="days-unknown"),
    pytest.param("", False, id="empty"),
    pytest.param("3000000h", False, id="overflows-time.Duration"),
]


@pytest.mark.parametrize(("text", "valid"), DURATIONS)
def test_duration_literal(text: str, valid: bool) -> None:
    """Durations follow Go's `time.ParseDuration` syntax and range."""
    assert valid_duration(text) is valid


TIMESTAMPS = [
    pytest.param("2024-02-29T12:00:00Z", True, id="leap-day"),
    pytest.param("2024-01-01T00:00:00.123+05:30", True, id="fraction-and-offset"),
    pytest.param("2023-02-29T00:00:00Z", False, id="not-a-leap-year"),
    pytest.param("2024-01-01 00:00:00Z", False, id="space-separator"),
    pytest.param("2024-01-01T00:00:00", False, id="no-zone"),
    pytest.param("2024-01-01T24:00:00Z", False, id="hour-24"),
]


@pytest.mark.parametrize(("text", "valid"), TIMESTAMPS)
def test_timestamp_literal(text: str, valid: bool) -> None:
    """Timestamps are RFC 3339 with a zone, as Go's `time.RFC3339` layout reads them."""
    assert valid_timestamp(text) is valid


REGEXES = [
    pytest.param("^GPU-[0-9a-f-]+$", True, id="plain"),
    pytest.param(r"\pL+", True, id="re2-unicode-class"),
    pytest.param(r"\++", True, id="escaped-plus-repeated"),
    pytest.param("(?P<model>H100|A100)", True, id="named-group"),
    pytest.param("[", False, id="unclosed-class"),
    pytest.param("*gpu", False, id="nothing-to-repeat"),
    pytest.param("(?=x)", False, id="lookahead"),
    pytest.param(r"(a)\1", False, id="backreference"),
    pytest.param("a++", False, id="possessive"),
]


@pytest.mark.parametrize(("pattern", "valid"), REGEXES)
def test_regex_literal(pattern: str, valid: bool) -> None:
    """Regexes are judged by RE2's rules where Python's `re` disagrees."""
    assert valid_regex(pattern) is valid


SELECTORS = [
    pytest.param('duration("1x") > duration("0s")',
                 "ERROR: <input>:1:10: invalid duration argument\n"
                 ' | duration("1x") > duration("0s")\n | .........^', id="duration"),
    pytest.param('timestamp("yesterday") < timestamp("2024-01-01T00:00:00Z")',
                 "ERROR: <input>:1:11: invalid timestamp argument\n"
                 ' | timestamp("yesterday") < timestamp("2024-01-01T00:00:00Z")\n'
                 " | ..........^", id="timestamp"),
    pytest.param('device.driver.matches("[")',
                 "ERROR: <input>:1:23: invalid matches argument\n"
                 ' | device.driver.matches("[")\n | ......................^', id="regex"),
    pytest.param('{"a": 1, "b": "x", 2: 3}.size() > 0',
                 "ERROR: <input>:1:15: expected type 'int' but found 'string'\n"
                 ' | {"a": 1, "b": "x", 2: 3}.size() > 0\n | ..............^\n'
                 "ERROR: <input>:1:20: expected type 'string' but found 'int'\n"
                 ' | {"a": 1, "b": "x", 2: 3}.size() > 0\n | ...................^',
                 id="map-reports-every-entry"),
]


@pytest.mark.parametrize(("expression", "issues"), SELECTORS)
def test_validator_issue_in_selector(expression: str, issues: str) -> None:
    """A validator finding is a compile issue at the offending literal."""
    [error] = check_selector(expression, PATH, release=NEWEST)
    assert error.detail == "compilation failed: " + issues


def test_format_arguments_may_mix_types() -> None:
    """Lists passed straight to `format` are exempt from the homogeneity rule."""
    assert check_selector('"%s-%d".format(["a", 1]) == "a-1"', PATH, release=NEWEST) == []


def test_literal_inside_another_call_is_not_exempt() -> None:
    """Only `format`'s own arguments are exempt, not literals nested in other calls."""
    errors = check_selector('"%d".format([[1, "a"].size()]) == "2"', PATH, release=NEWEST)
    assert [e.type.value for e in errors] == ["Invalid"]


def test_issue_at_a_line_start_is_placed_as_upstream_places_it() -> None:
    """cel-go puts a node that starts a line at the end of the previous line."""
    [error] = check_selector('["a",\n1].size() > 0', PATH, release=NEWEST)
    assert error.detail == ("compilation failed: ERROR: <input>:1:7: expected type 'string' "
                            "but found 'int'\n | [\"a\",\n | .....^")
