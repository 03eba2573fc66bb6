"""Skew warnings and the apiserver's warning limits (draguard.schema.advice.skew)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from draguard.schema.advice.skew import (
    MAX_TOTAL_CHARS,
    MAX_WARNING_CHARS,
    limit_warnings,
    skew_warnings,
)


def claim(*requests: dict[str, Any], kind: str = "ResourceClaim", **devices: Any) -> dict[str, Any]:
    spec = {"devices": {"requests": list(requests), **devices}}
    if kind == "ResourceClaimTemplate":
        spec = {"spec": spec}
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "spec": spec}


PRIORITIZED = {"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "a"}]}
EXACT = {"name": "nic", "exactly": {"deviceClassName": "nic"}}


@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param(claim(EXACT), [], id="exact-only"),
    pytest.param(claim(PRIORITIZED), [
        "request gpu uses firstAvailable: schedulers before 1.34 cannot allocate it"],
        id="prioritized"),
    pytest.param(claim(PRIORITIZED, kind="ResourceClaimTemplate"), [
        "request gpu uses firstAvailable: schedulers before 1.34 cannot allocate it"],
        id="template"),
    pytest.param(claim({"name": "x", "adminAccess": True, "deviceClassName": "c"}), [
        "request x uses adminAccess: clusters before 1.34 drop it"], id="v1beta1-flat-admin"),
    pytest.param(claim({"name": "t", "exactly": {"deviceClassName": "c", "tolerations": [{}]}}), [
        "request t uses tolerations: clusters before 1.36 drop them"], id="tolerations"),
    pytest.param(claim(PRIORITIZED, constraints=[{"requests": ["gpu/a"],
                                                  "matchAttribute": "x/y"}]), [
        "request gpu uses firstAvailable: schedulers before 1.34 cannot allocate it",
        "constraints[0] names subrequest gpu/a: drivers built before 1.33 do not understand "
        "subrequest results"], id="subrequest-reference"),
    pytest.param({"kind": "ResourceClaim", "spec": {"devices": {"requests": "junk"}}}, [],
                 id="malformed-requests"),
    pytest.param([1, 2], [], id="not-an-object"),
])
def test_skew_warnings(obj: Any, expected: list[str]) -> None:
    """Each feature newer than the oldest supported release gets its sentence, in order."""
    assert skew_warnings(obj) == expected


def test_long_warning_is_cut() -> None:
    """A warning longer than 256 characters is cut to 256, ending in an ellipsis."""
    [line] = limit_warnings(["x" * 1000])
    assert len(line) == MAX_WARNING_CHARS and line.endswith("…")


def test_control_characters_are_flattened() -> None:
    """Control characters become spaces; other spacing is kept as written."""
    assert limit_warnings(["a\nb\t c\x00d  e"]) == ["a b  c d  e"]


@given(st.lists(st.text(max_size=400), max_size=60))
def test_limits_hold_for_any_input(warnings: list[str]) -> None:
    """Whatever comes in, every warning is ≤256 characters and all together ≤4,096."""
    out = limit_warnings(warnings)
    assert all(len(w) <= MAX_WARNING_CHARS for w in out)
    assert sum(len(w) for w in out) <= MAX_TOTAL_CHARS


def test_many_requests_stay_within_total() -> None:
    """32 prioritized requests' warnings, once limited, fit the total budget."""
    requests = [{**PRIORITIZED, "name": f"request-number-{i:02d}-" + "x" * 40} for i in range(32)]
    out = limit_warnings(skew_warnings(claim(*requests)))
    assert 0 < len(out) < 32
    assert sum(map(len, out)) <= MAX_TOTAL_CHARS
