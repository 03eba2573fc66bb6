"""Skew advice: features older components lack, as `skew-*` codes (draguard.schema.advice.skew)."""

from __future__ import annotations

from typing import Any

import pytest

from draguard.schema.validate import validate_object


def claim(*requests: dict[str, Any], kind: str = "ResourceClaim", version: str = "v1",
          annotations: dict[str, str] | None = None, **devices: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"devices": {"requests": list(requests), **devices}}
    if kind == "ResourceClaimTemplate":
        spec = {"spec": spec}
    meta: dict[str, Any] = {"name": "c", "namespace": "ns"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": kind, "metadata": meta,
            "spec": spec}


PRIORITIZED = {"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "a"}]}
EXACT = {"name": "nic", "exactly": {"deviceClassName": "nic"}}


def skew(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    verdict = validate_object(obj)
    return [(w.code, w.field, w.message) for w in verdict.warnings
            if w.code.startswith("skew-")]


@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param(claim(EXACT), [], id="exact-only"),
    pytest.param(claim(PRIORITIZED), [
        ("skew-first-available", "spec.devices.requests[0].firstAvailable",
         "request gpu uses firstAvailable: schedulers before 1.34 cannot allocate it")],
        id="prioritized"),
    pytest.param(claim(PRIORITIZED, kind="ResourceClaimTemplate"), [
        ("skew-first-available", "spec.spec.devices.requests[0].firstAvailable",
         "request gpu uses firstAvailable: schedulers before 1.34 cannot allocate it")],
        id="template"),
    pytest.param(claim({"name": "x", "adminAccess": True, "deviceClassName": "c"},
                       version="v1beta1"), [
        ("skew-admin-access", "spec.devices.requests[0]",
         "request x uses adminAccess: clusters before 1.34 drop it")], id="v1beta1-flat-admin"),
    pytest.param(claim({"name": "t", "exactly": {"deviceClassName": "c", "tolerations": [
        {"key": "k", "operator": "Exists"}]}}), [
        ("skew-tolerations", "spec.devices.requests[0]",
         "request t uses tolerations: clusters before 1.36 drop them (1.35) or ignore them "
         "(1.33, 1.34)")], id="tolerations"),
    pytest.param(claim(PRIORITIZED, constraints=[{"requests": ["gpu/a"],
                                                  "matchAttribute": "x/y"}]), [
        ("skew-first-available", "spec.devices.requests[0].firstAvailable",
         "request gpu uses firstAvailable: schedulers before 1.34 cannot allocate it"),
        ("skew-subrequest-results", "spec.devices.constraints[0].requests[0]",
         "constraints[0] names subrequest gpu/a: drivers built before 1.33 do not understand "
         "subrequest results")], id="subrequest-reference"),
    pytest.param(claim(EXACT, constraints=[{"distinctAttribute": "x/y"}]), [
        ("skew-distinct-attribute", "spec.devices.constraints[0].distinctAttribute",
         "constraints[0] uses distinctAttribute: clusters before 1.36 drop it (1.35) or ignore "
         "it (1.34)")],
        id="distinct-attribute"),
])
def test_skew_advice(obj: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    """Each feature newer than the oldest supported release gets its code and sentence, in order."""
    assert skew(obj) == expected


def test_skew_advice_is_silenced_by_the_ignore_annotation() -> None:
    """`draguard.io/ignore: skew-first-available` silences it like any other code."""
    obj = claim(PRIORITIZED, annotations={"draguard.io/ignore": "skew-first-available"})
    assert skew(obj) == []


def test_skew_advice_comes_first() -> None:
    """Skew advice precedes the other claim advice, as the webhook listed it before."""
    obj = claim({"name": "gpu", "firstAvailable": [
        {"name": "a", "deviceClassName": "a", "count": 2},
        {"name": "b", "deviceClassName": "b"}]})
    codes = [w.code for w in validate_object(obj).warnings]
    assert codes[0] == "skew-first-available" and "alternative-counts-differ" in codes
