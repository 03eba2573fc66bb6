"""Skew advice: features older components lack, as `skew-*` codes (draguard.schema.advice.skew)."""

from __future__ import annotations

from typing import Any

import pytest

from draguard.schema.model.options import Options
from draguard.schema.model.releases import release
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


def skew(obj: dict[str, Any], version: str = "1.37") -> list[tuple[str, str, str]]:
    verdict = validate_object(obj, options=Options(release=release(version)))
    return [(w.code, w.field, w.message) for w in verdict.warnings
            if w.code.startswith("skew-")]


# Issue 17: a warning only when a component the version-skew policy allows next to an
# apiserver of the target release lacks the feature: kube-scheduler (and
# kube-controller-manager) "may be up to one minor version older", kubelet (and the
# drivers it calls) "up to three" (https://kubernetes.io/releases/version-skew-policy/).
# So the default target 1.37 (scheduler 1.36, kubelet 1.34) warns of nothing here.
TOLERATING = {"name": "t", "exactly": {"deviceClassName": "c", "tolerations": [
    {"key": "k", "operator": "Exists"}]}}
SUBREQUEST_REF = claim(PRIORITIZED, constraints=[{"requests": ["gpu/a"], "matchAttribute": "x/y"}])
DISTINCT = claim(EXACT, constraints=[{"distinctAttribute": "x/y"}])
ADMIN = claim({"name": "x", "adminAccess": True, "deviceClassName": "c"}, version="v1beta1")


@pytest.mark.parametrize(("obj", "version", "expected"), [
    pytest.param(claim(EXACT), "1.34", [], id="exact-only"),
    pytest.param(claim(PRIORITIZED), "1.37", [], id="prioritized-1.37"),
    pytest.param(claim(PRIORITIZED), "1.35", [], id="prioritized-1.35-scheduler-1.34-has-it"),
    pytest.param(claim(PRIORITIZED), "1.34", [
        ("skew-first-available", "spec.devices.requests[0].firstAvailable",
         "request gpu uses firstAvailable: schedulers before 1.34 cannot allocate it, and a "
         "1.34 cluster may run kube-scheduler 1.33 (version-skew policy)")],
        id="prioritized-1.34"),
    pytest.param(claim(PRIORITIZED, kind="ResourceClaimTemplate"), "1.34", [
        ("skew-first-available", "spec.spec.devices.requests[0].firstAvailable",
         "request gpu uses firstAvailable: schedulers before 1.34 cannot allocate it, and a "
         "1.34 cluster may run kube-scheduler 1.33 (version-skew policy)")],
        id="template-1.34"),
    pytest.param(ADMIN, "1.34", [
        ("skew-admin-access", "spec.devices.requests[0]",
         "request x uses adminAccess: schedulers before 1.34 do not know it, and a 1.34 "
         "cluster may run kube-scheduler 1.33 (version-skew policy)")], id="v1beta1-flat-admin"),
    pytest.param(ADMIN, "1.35", [], id="admin-1.35"),
    pytest.param(claim(TOLERATING), "1.36", [
        ("skew-tolerations", "spec.devices.requests[0]",
         "request t uses tolerations: schedulers before 1.36 ignore device taints, and a 1.36 "
         "cluster may run kube-scheduler 1.35 (version-skew policy)")], id="tolerations-1.36"),
    pytest.param(claim(TOLERATING), "1.34", [
        ("skew-tolerations", "spec.devices.requests[0]",
         "request t uses tolerations: schedulers before 1.36 ignore device taints, and so "
         "does the kube-scheduler of a 1.34 cluster")], id="tolerations-1.34"),
    # 1.35 drops them on create: `release-drops-field` says so, not skew advice.
    pytest.param(claim(TOLERATING), "1.35", [], id="tolerations-1.35-dropped"),
    pytest.param(claim(TOLERATING), "1.37", [], id="tolerations-1.37"),
    pytest.param(SUBREQUEST_REF, "1.35", [
        ("skew-subrequest-results", "spec.devices.constraints[0].requests[0]",
         "constraints[0] names subrequest gpu/a: drivers built before 1.33 do not understand "
         "subrequest results, and a 1.35 cluster may run kubelet 1.32 (version-skew policy) "
         "with drivers of its age")], id="subrequest-reference-1.35"),
    pytest.param(SUBREQUEST_REF, "1.36", [], id="subrequest-reference-1.36-kubelet-1.33"),
    pytest.param(DISTINCT, "1.36", [
        ("skew-distinct-attribute", "spec.devices.constraints[0].distinctAttribute",
         "constraints[0] uses distinctAttribute: schedulers before 1.36 ignore it, and a 1.36 "
         "cluster may run kube-scheduler 1.35 (version-skew policy)")],
        id="distinct-attribute-1.36"),
    pytest.param(DISTINCT, "1.37", [], id="distinct-attribute-1.37"),
])
def test_skew_advice(obj: dict[str, Any], version: str, expected: list[tuple[str, str, str]]) -> None:
    """Each feature an allowed older component lacks gets its code and sentence, in order."""
    assert skew(obj, version) == expected


def test_skew_advice_is_silenced_by_the_ignore_annotation() -> None:
    """`draguard.io/ignore: skew-first-available` silences it like any other code."""
    obj = claim(PRIORITIZED, annotations={"draguard.io/ignore": "skew-first-available"})
    assert skew(obj, "1.34") == []


def test_skew_advice_comes_first() -> None:
    """Skew advice precedes the other claim advice, as the webhook listed it before."""
    obj = claim({"name": "gpu", "firstAvailable": [
        {"name": "a", "deviceClassName": "a", "count": 2},
        {"name": "b", "deviceClassName": "b"}]})
    codes = [w.code for w in validate_object(obj, options=Options(release=release("1.34"))).warnings]
    assert codes[0] == "skew-first-available" and "alternative-counts-differ" in codes
