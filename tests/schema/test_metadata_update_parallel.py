"""Metadata rules (§3.3 rules 1–2), updates (§3.6) and the parallel shape (contract §2)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from draguard.schema.model.options import Options
from draguard.schema.validate import validate_object, validate_update


def claim(meta: dict[str, Any] | None = None, version: str = "v1", **devices: Any) -> dict[str, Any]:
    devices.setdefault("requests", [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}])
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ns"} if meta is None else meta,
            "spec": {"devices": devices}}


def pairs(obj: Any, **options: Any) -> list[tuple[str, str]]:
    return [(e.type.value, e.field) for e in validate_object(obj, options=Options(**options)).errors]


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        pytest.param({"name": "c", "namespace": "ns"}, [], id="valid"),
        pytest.param({"namespace": "ns"}, [("Required", "metadata.name")], id="name-missing"),
        pytest.param({"generateName": "gpu-", "namespace": "ns"}, [], id="generate-name-ok"),
        pytest.param({"generateName": "GPU-", "namespace": "ns"}, [("Invalid", "metadata.generateName")],
                     id="generate-name-invalid"),
        pytest.param({"name": "C_1", "namespace": "ns"}, [("Invalid", "metadata.name")], id="name-invalid"),
        pytest.param({"name": "a" * 254, "namespace": "ns"}, [("Invalid", "metadata.name")], id="name-too-long"),
        pytest.param({"name": "c"}, [("Required", "metadata.namespace")], id="namespace-missing"),
        pytest.param({"name": "c", "namespace": "n.s"}, [("Invalid", "metadata.namespace")], id="namespace-dots"),
        pytest.param({"name": "c", "namespace": "ns", "labels": {"a/b/c": "x", "ok": "-bad-"}},
                     [("Invalid", "metadata.labels"), ("Invalid", "metadata.labels")], id="labels"),
        pytest.param({"name": "c", "namespace": "ns", "annotations": {"_x": "y"}},
                     [("Invalid", "metadata.annotations")], id="annotation-key"),
        pytest.param({"name": "c", "namespace": "ns", "annotations": {"big": "x" * 262145}},
                     [("TooLong", "metadata.annotations")], id="annotations-too-big"),
    ],
)
def test_object_meta(meta: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    """Rule 1: ValidateObjectMeta with a required namespace and a DNS-subdomain name."""
    assert pairs(claim(meta)) == expected


def test_missing_namespace_filled_like_kubectl() -> None:
    """With a default namespace (lint's kubectl behaviour) a missing namespace is not reported."""
    assert pairs(claim({"name": "c"}), default_namespace="default") == []


@pytest.mark.parametrize(
    ("template_meta", "expected"),
    [
        pytest.param({"labels": {"app": "x"}, "annotations": {"a.com/b": "c"}}, [], id="labels-annotations-ok"),
        pytest.param({"name": "x", "namespace": "y", "finalizers": ["f"]},
                     [("Forbidden", "spec.metadata.name"), ("Forbidden", "spec.metadata.namespace"),
                      ("Forbidden", "spec.metadata.finalizers")], id="other-fields-forbidden"),
        pytest.param({"labels": {"-": "x"}}, [("Invalid", "spec.metadata.labels")], id="bad-label"),
    ],
)
def test_template_metadata(template_meta: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    """Rule 2: a template's spec.metadata may hold only labels and annotations."""
    doc = {"apiVersion": "resource.k8s.io/v1beta2", "kind": "ResourceClaimTemplate",
           "metadata": {"name": "t", "namespace": "ns"},
           "spec": {"metadata": template_meta, "spec": claim()["spec"]}}
    assert pairs(doc) == expected


def test_update_changing_spec_is_immutable() -> None:
    """§3.10 #17: any spec change is `spec: Invalid value: …: field is immutable`."""
    old = claim()
    new = copy.deepcopy(old)
    new["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    errors = validate_update(old, new).errors
    assert [(e.type.value, e.field) for e in errors] == [("Invalid", "spec")]
    assert errors[0].message.endswith(": field is immutable")


def test_update_with_only_defaults_or_labels_is_allowed() -> None:
    """Defaults written out and label changes are not spec changes; the spec is not re-validated."""
    old = claim(requests=[{"name": "gpu", "exactly": {"deviceClassName": "bad_CLASS"}}])
    new = copy.deepcopy(old)
    new["spec"]["devices"]["requests"][0]["exactly"].update(allocationMode="ExactCount", count=1)
    new["metadata"]["labels"] = {"team": "ml"}
    assert validate_update(old, new).errors == ()


def test_update_cross_version_same_meaning_is_allowed() -> None:
    """A v1beta1 write of the same claim compares equal after conversion (semantic equality)."""
    old = claim()
    new = claim(version="v1beta1", requests=[{"name": "gpu", "deviceClassName": "gpu.example.com"}])
    assert validate_update(old, new).errors == ()


def test_update_renaming_is_immutable() -> None:
    """metadata.name cannot change on update."""
    old, new = claim(), claim({"name": "d", "namespace": "ns"})
    assert [(e.type.value, e.field) for e in validate_update(old, new).errors] == [("Invalid", "metadata.name")]


def parallel(**devices: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "p", "namespace": "ns"}, "spec": {"devices": devices}}


OPT = {"name": "a", "deviceClassName": "a.example.com"}


@pytest.mark.parametrize(
    ("devices", "expected"),
    [
        pytest.param({"requests": [], "prioritizedRequests": [{"name": "gpu", "options": [OPT]}]}, [],
                     id="valid"),
        pytest.param({"prioritizedRequests": [{"name": "gpu", "options": [OPT, OPT]}]},
                     [("Duplicate", "spec.devices.prioritizedRequests[0].options[1]")], id="duplicate-option"),
        pytest.param({"prioritizedRequests": [{"name": "gpu"}]},
                     [("Required", "spec.devices.prioritizedRequests[0].options")], id="options-required"),
        pytest.param({"prioritizedRequests": [{"name": "gpu", "options": [OPT] * 9}]},
                     [("TooMany", "spec.devices.prioritizedRequests[0].options")], id="too-many-options"),
        pytest.param({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "c"}}],
                      "prioritizedRequests": [{"name": "gpu", "options": [OPT]}]},
                     [("Duplicate", "spec.devices.prioritizedRequests[0]")], id="name-shared-with-requests"),
        pytest.param({"prioritizedRequests": [{"name": "gpu", "options": [OPT], "adminAccess": True}]},
                     [("Unknown", "spec.devices.prioritizedRequests[0].adminAccess")], id="admin-access-unknown"),
        pytest.param({"prioritizedRequests": [{"name": "gpu", "options": [{**OPT, "count": 0}]}],
                      "constraints": [{"requests": ["gpu/a", "gpu/b"], "matchAttribute": "x.com/y"}]},
                     [("Invalid", "spec.devices.constraints[0].requests[1]")], id="references-resolve"),
    ],
)
def test_parallel_shape(devices: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    """Contract §2: the firstAvailable rules at the parallel document's own paths, plus its own rules."""
    assert pairs(parallel(**devices)) == expected


def test_skipped_kinds_carry_no_errors() -> None:
    """A Pod or an unknown version is skipped with a reason, never validated."""
    for obj in ({"apiVersion": "v1", "kind": "Pod"}, {"apiVersion": "resource.k8s.io/v1alpha3",
                                                       "kind": "ResourceClaim"}, "text", None, [1]):
        verdict = validate_object(obj)
        assert verdict.skipped and not verdict.errors and verdict.skip_reason
