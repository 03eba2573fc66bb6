"""The apiserver's limits on admission warnings (draguard.webhook.review.limit_warnings)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from draguard.webhook.review import MAX_TOTAL_CHARS, MAX_WARNING_CHARS, limit_warnings


def test_long_warning_is_cut() -> None:
    """A warning longer than 256 characters is cut to 256, ending in an ellipsis."""
    [line] = limit_warnings(["x" * 1000])
    assert len(line) == MAX_WARNING_CHARS and line.endswith("…")


def test_control_characters_are_flattened() -> None:
    """Control characters become spaces; other spacing is kept as written."""
    assert limit_warnings(["a\nb\t c\x00d  e"]) == ["a b  c d  e"]


@settings(deadline=None)
@given(st.lists(st.text(max_size=400), max_size=60))
def test_limits_hold_for_any_input(warnings: list[str]) -> None:
    """Whatever comes in, every warning is ≤256 characters and all together ≤4,096."""
    out = limit_warnings(warnings)
    assert all(len(w) <= MAX_WARNING_CHARS for w in out)
    assert sum(len(w) for w in out) <= MAX_TOTAL_CHARS


def test_many_warnings_stay_within_total() -> None:
    """Sixty long warnings, once limited, fit the total budget."""
    out = limit_warnings(f"spec.devices.requests[{i}]: " + "x" * 120 for i in range(60))
    assert 0 < len(out) < 60
    assert sum(map(len, out)) <= MAX_TOTAL_CHARS
