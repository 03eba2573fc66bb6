"""Release-specific behaviour (upstream-rules.md §1, §3.8, §3.9) selected by `--kubernetes-version`."""

from __future__ import annotations

from typing import Any

import pytest

from draguard.schema.model.options import Options
from draguard.schema.model.releases import release
from draguard.schema.validate import validate_object


def claim(requests: list[dict[str, Any]], version: str = "v1", **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": {"requests": requests, **devices}},
    }


def pairs(obj: dict[str, Any], k8s: str) -> list[tuple[str, str]]:
    verdict = validate_object(obj, options=Options(release=release(k8s)))
    return [(e.type.value, e.field) for e in verdict.errors]


PRIORITIZED = {"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "a.example.com"}]}
NINE = {"name": "gpu", "firstAvailable": [{"name": "BAD", "deviceClassName": "c"}] * 9}
DUP = {"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "c"}] * 2}
R0 = "spec.devices.requests[0]"


@pytest.mark.parametrize(
    ("obj", "k8s", "expected"),
    [
        # §3.8: DRAPrioritizedList off by default in 1.33 → firstAvailable dropped → neither member.
        pytest.param(claim([PRIORITIZED], "v1beta2"), "1.33", [("Required", R0)], id="1.33-drops-first-available"),
        pytest.param(claim([PRIORITIZED], "v1beta1"), "1.33", [("Required", R0)], id="1.33-v1beta1-drops"),
        pytest.param(claim([PRIORITIZED], "v1beta2"), "1.34", [], id="1.34-keeps-first-available"),
        # §3.9: no TooMany short-circuit before 1.35; items validated, TooMany appended last.
        pytest.param(claim([NINE], "v1"), "1.34",
                     [*[("Invalid", f"{R0}.firstAvailable[{j}].name") for j in range(9)],
                      *[("Duplicate", f"{R0}.firstAvailable[{j}].name") for j in range(1, 9)],
                      ("TooMany", f"{R0}.firstAvailable")], id="1.34-too-many-not-short-circuit"),
        pytest.param(claim([NINE], "v1"), "1.35", [("TooMany", f"{R0}.firstAvailable")], id="1.35-short-circuit"),
        # rule 4/9 version note: Duplicate at `[i].name` before 1.35, at `[i]` from 1.35.
        pytest.param(claim([DUP]), "1.34", [("Duplicate", f"{R0}.firstAvailable[1].name")], id="1.34-dup-at-name"),
        pytest.param(claim([DUP]), "1.36", [("Duplicate", f"{R0}.firstAvailable[1]")], id="1.36-dup-at-index"),
        # §2.3: capacity does not exist in 1.33; from 1.34 it exists but the gate is off until 1.36.
        pytest.param(claim([{"name": "m", "exactly": {"deviceClassName": "c", "capacity": {"requests": {"m": "1Gi"}}}}],
                           "v1beta2"), "1.33", [("Unknown", f"{R0}.exactly.capacity")], id="1.33-no-capacity-field"),
        # rule 16: effect None joined in 1.35.
        pytest.param(claim([{"name": "t", "exactly": {"deviceClassName": "c", "tolerations": [
            {"operator": "Exists", "effect": "None"}]}}]), "1.36", [], id="1.36-effect-none"),
        # rule 18: constraint without attribute, gate DRAConsumableCapacity off (1.35) vs on (1.36).
        pytest.param(claim([PRIORITIZED], constraints=[{"requests": ["gpu"]}]), "1.35",
                     [("Required", "spec.devices.constraints[0].matchAttribute")], id="1.35-match-attribute-required"),
        pytest.param(claim([PRIORITIZED], constraints=[{"requests": ["gpu"]}]), "1.36",
                     [("Required", "spec.devices.constraints[0]")], id="1.36-one-of-attribute-required"),
        # §3.8: distinctAttribute dropped while the gate is off → the constraint lacks an attribute.
        pytest.param(claim([PRIORITIZED], constraints=[{"distinctAttribute": "a.com/b"}]), "1.35",
                     [("Required", "spec.devices.constraints[0].matchAttribute")], id="1.35-distinct-dropped"),
        # rule 20: older messages use Required for an empty name.
        pytest.param(claim([PRIORITIZED], constraints=[{"matchAttribute": ""}]), "1.34",
                     [("Required", "spec.devices.constraints[0].matchAttribute")], id="1.34-qualified-name-required"),
        pytest.param(claim([PRIORITIZED], constraints=[{"matchAttribute": "a/b/c"}]), "1.36", [],
                     id="1.36-accepts-two-slashes"),
        # rule 20: 1.37 ships without the "more than one slash" check (kubernetes#141869 is
        # open, PR #141644 unmerged), so `a/b/c` passes in every release.
        pytest.param(claim([PRIORITIZED], constraints=[{"matchAttribute": "a/b/c"}]), "1.37", [],
                     id="1.37-accepts-two-slashes"),
        # §1.2: v1 does not exist in 1.33.
        pytest.param(claim([PRIORITIZED]), "1.33", [("Unknown", "apiVersion")], id="1.33-no-v1"),
    ],
)
def test_release_behaviour(obj: dict[str, Any], k8s: str, expected: list[tuple[str, str]]) -> None:
    """The selected release's gates, fields and validation generation decide the findings."""
    assert pairs(obj, k8s) == expected


def test_gate_drop_is_reported() -> None:
    """The verdict lists what a disabled gate dropped, for the skew report."""
    verdict = validate_object(claim([PRIORITIZED], "v1beta2"), options=Options(release=release("1.33")))
    assert [str(p) for p in verdict.dropped] == [f"{R0}.firstAvailable"]


@pytest.mark.parametrize(
    ("labels", "k8s", "expected"),
    [
        pytest.param({}, "1.37", [("Forbidden", "spec.devices.requests[1].adminAccess")], id="no-label"),
        pytest.param({"resource.kubernetes.io/admin-access": "true"}, "1.37", [], id="labelled"),
        pytest.param(None, "1.37", [], id="labels-unknown-skips-check"),
    ],
)
def test_admin_access_namespace_label(labels: dict[str, str] | None, k8s: str,
                                      expected: list[tuple[str, str]]) -> None:
    """§3.7: admin access needs the namespace label; only the first such request is reported."""
    obj = claim([PRIORITIZED, {"name": "a", "exactly": {"deviceClassName": "c", "adminAccess": True}},
                 {"name": "b", "exactly": {"deviceClassName": "c", "adminAccess": True}}])
    verdict = validate_object(obj, options=Options(release=release(k8s), namespace_labels=labels))
    assert [(e.type.value, e.field) for e in verdict.errors] == expected


def test_admin_access_message_names_label() -> None:
    """The Forbidden message names the release's label key."""
    obj = claim([{"name": "a", "exactly": {"deviceClassName": "c", "adminAccess": True}}])
    verdict = validate_object(obj, options=Options(namespace_labels={}))
    assert verdict.errors[0].message == (
        "Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` "
        "label on the containing namespace"
    )


@pytest.mark.parametrize("text", ["1.35", "v1.35", "1.35.4", " 1.35 "])
def test_release_lookup_accepts_common_spellings(text: str) -> None:
    """`--kubernetes-version` accepts 1.35, v1.35 and patch versions."""
    assert release(text).minor == 35


@pytest.mark.parametrize("text", ["1.20", "two", "1", "1.x", ""])
def test_release_lookup_rejects_unknown(text: str) -> None:
    """An unknown version is a clear ValueError, not a silent default."""
    with pytest.raises(ValueError, match="version"):
        release(text)
