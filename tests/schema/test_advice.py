"""Warnings beyond upstream (issue 7): each code fires on its trap and stays quiet otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from draguard.schema.advice.claims import CODES, Version, check_all_mode
from draguard.schema.advice.workloads import check_workload, index_claims
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import release
from draguard.schema.validate import validate_object


def alt(name: str, cls: str = "gpu.example.com", **fields: Any) -> dict[str, Any]:
    return {"name": name, "deviceClassName": cls, **fields}


def claim(
    requests: list[dict[str, Any]],
    *,
    kind: str = "ResourceClaim",
    annotations: dict[str, str] | None = None,
    **devices: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"devices": {"requests": requests, **devices}}
    meta: dict[str, Any] = {"name": "c", "namespace": "ns"}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "spec": {"spec": spec} if kind == "ResourceClaimTemplate" else spec,
    }


def codes(obj: dict[str, Any], **options: Any) -> list[tuple[str, str]]:
    verdict = validate_object(obj, options=Options(**options))
    assert verdict.errors == (), verdict.errors
    # Skew advice fires on every prioritized claim; tests/schema/test_advice_skew.py has it.
    return [(w.code, w.field) for w in verdict.warnings if not w.code.startswith("skew-")]


GPU = {"name": "gpu", "firstAvailable": [alt("big"), alt("small")]}
CONFIG = {"opaque": {"driver": "gpu.example.com", "parameters": {"x": 1}}}
R = "spec.devices.requests"
NIC = {"name": "nic", "exactly": {"deviceClassName": "nic"}}
NIC2 = {"name": "nic2", "exactly": {"deviceClassName": "nic"}}


@pytest.mark.parametrize(
    ("obj", "options", "expected"),
    [
        pytest.param(claim([GPU]), {}, [], id="plain-prioritized-quiet"),
        pytest.param(
            claim([GPU, NIC], config=[{"requests": ["gpu"], **CONFIG}]),
            {},
            [("config-names-parent", "spec.devices.config[0].requests[0]")],
            id="config-names-parent",
        ),
        pytest.param(
            claim([GPU], config=[{"requests": ["gpu"], **CONFIG}]),
            {"release": release("1.36")},
            [("config-names-parent", "spec.devices.config[0].requests[0]")],
            id="config-names-parent-single-1.36",
        ),
        # From 1.37 the allocator clears config[].requests when a config covers every
        # request, and "empty means all" applies it whatever the names (issue 17).
        pytest.param(
            claim([GPU], config=[{"requests": ["gpu"], **CONFIG}]),
            {},
            [],
            id="config-names-parent-single-1.37-quiet",
        ),
        pytest.param(
            claim([GPU, NIC], config=[{"requests": ["gpu", "nic"], **CONFIG}]),
            {},
            [],
            id="config-names-parent-covers-all-1.37-quiet",
        ),
        pytest.param(
            claim([GPU], config=[{"requests": ["gpu/big", "gpu/small"], **CONFIG}]),
            {},
            [],
            id="config-explicit-quiet",
        ),
        pytest.param(
            claim(
                [{"name": "nic", "exactly": {"deviceClassName": "nic"}}],
                config=[{"requests": ["nic"], **CONFIG}],
            ),
            {},
            [],
            id="config-exact-parent-quiet",
        ),
        pytest.param(
            claim(
                [{"name": "gpu", "firstAvailable": [alt("h", "h100"), alt("a", "a100", count=2)]}]
            ),
            {},
            [("quota-charge", R), ("alternative-counts-differ", f"{R}[0].firstAvailable")],
            id="quota-and-counts",
        ),
        pytest.param(
            claim([{"name": "gpu", "firstAvailable": [alt("h", "h100"), alt("a", "a100")]}]),
            {},
            [("quota-charge", R)],
            id="quota-other-class",
        ),
        pytest.param(
            claim([{"name": "gpu", "firstAvailable": [alt("a", count=2), alt("b", count=1)]}]),
            {},
            [("alternative-counts-differ", f"{R}[0].firstAvailable")],
            id="same-class-quota-quiet",
        ),
        pytest.param(
            claim([{"name": "gpu", "firstAvailable": [alt("a"), alt("b", allocationMode="All")]}]),
            {"release": release("1.35")},
            [
                ("quota-charge", R),
                ("all-mode-in-alternative", f"{R}[0].firstAvailable[1].allocationMode"),
                ("alternative-counts-differ", f"{R}[0].firstAvailable"),
            ],
            id="all-mode-1.35",
        ),
        pytest.param(
            claim(
                [
                    {"name": "gpu", "firstAvailable": [alt("a", count=20), alt("b")]},
                    {"name": "g2", "firstAvailable": [alt("c", count=20), alt("d")]},
                ]
            ),
            {},
            [
                ("alternative-counts-differ", f"{R}[0].firstAvailable"),
                ("alternative-counts-differ", f"{R}[1].firstAvailable"),
                ("devices-over-32", R),
            ],
            id="devices-over-32",
        ),
        pytest.param(
            claim(
                [
                    {"name": f"r{k}", "firstAvailable": [alt(f"s{j}") for j in range(5)]}
                    for k in range(3)
                ]
            ),
            {},
            [("combinations", R)],
            id="combinations",
        ),
        pytest.param(
            claim([GPU]),
            {"profiles": frozenset({"kueue"})},
            [("consumer-profile", f"{R}[0].firstAvailable")],
            id="kueue-profile",
        ),
        # kubernetes#134789 (fixed by #134793 in 1.33.6 / 1.34.2): FromClass configs carry no
        # request names; harmless with one request ("empty means all"), prioritized or not.
        pytest.param(
            claim([GPU, NIC]),
            {"release": release("1.34"), "kubernetes_patch": 1},
            [("class-config-request-names", R)],
            id="class-config-1.34.1",
        ),
        pytest.param(
            {**claim([NIC, NIC2]), "apiVersion": "resource.k8s.io/v1beta2"},
            {"release": release("1.33"), "kubernetes_patch": 5},
            [("class-config-request-names", R)],
            id="class-config-1.33.5-not-prioritized",
        ),
        pytest.param(
            claim([GPU]),
            {"release": release("1.34"), "kubernetes_patch": 1},
            [],
            id="class-config-1.34.1-single-request-quiet",
        ),
        pytest.param(
            claim([GPU, NIC]),
            {"release": release("1.34"), "kubernetes_patch": 2},
            [],
            id="class-config-1.34.2",
        ),
        pytest.param(
            {**claim([NIC, NIC2]), "apiVersion": "resource.k8s.io/v1beta2"},
            {"release": release("1.33"), "kubernetes_patch": 6},
            [],
            id="class-config-1.33.6",
        ),
        pytest.param(
            claim(
                [GPU],
                config=[{"requests": ["gpu"], **CONFIG}],
                annotations={"draguard.io/ignore": "config-names-parent"},
            ),
            {},
            [],
            id="silenced",
        ),
    ],
)
def test_advice(
    obj: dict[str, Any], options: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    """Each check yields its code at the trap's path, and nothing for a claim without it."""
    assert codes(obj, **options) == expected


def test_quota_message_shows_numbers() -> None:
    """The quota warning states the per-class charge and the first-choice need."""
    obj = claim(
        [
            {
                "name": "gpu",
                "firstAvailable": [
                    alt("h", "h100"),
                    alt("a", "a100", count=2),
                    alt("t", "t4", count=4),
                ],
            }
        ],
        kind="ResourceClaimTemplate",
    )
    (warning,) = [w for w in validate_object(obj).warnings if w.code == "quota-charge"]
    assert "per pod" in warning.message
    assert "h100 1, a100 2, t4 4 (7 devices)" in warning.message
    assert "need h100 1 (1)" in warning.message


def test_parallel_paths_are_the_users() -> None:
    """For the parallel shape the warning points into prioritizedRequests/options."""
    obj = claim(
        [],
        prioritizedRequests=[
            {"name": "gpu", "options": [alt("a"), alt("b", allocationMode="All")]}
        ],
    )
    fields = [w.field for w in validate_object(obj).warnings]
    assert "spec.devices.prioritizedRequests[0].options[1].allocationMode" in fields


def test_codes_are_kebab_case_and_unique() -> None:
    """Codes are stable kebab-case identifiers."""
    assert len(set(CODES)) == len(CODES)
    assert all(c == c.lower() and " " not in c and "_" not in c for c in CODES)


def pod(
    containers: list[dict[str, Any]], claims: list[dict[str, Any]], kind: str = "Pod"
) -> dict[str, Any]:
    pod_spec = {"resourceClaims": claims, "containers": containers}
    body = {"spec": pod_spec} if kind == "Pod" else {"spec": {"template": {"spec": pod_spec}}}
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": "p", "namespace": "ns"}, **body}


def container(request: str) -> dict[str, Any]:
    return {"name": "c", "resources": {"claims": [{"name": "gpus", "request": request}]}}


@pytest.mark.parametrize(
    ("request_name", "kind", "expected"),
    [
        pytest.param("gpu", "Pod", [], id="parent-ok"),
        pytest.param(
            "gpu/big", "Pod", ["spec.containers[0].resources.claims[0].request"], id="qualified-sub"
        ),
        pytest.param(
            "big", "Pod", ["spec.containers[0].resources.claims[0].request"], id="bare-sub"
        ),
        pytest.param(
            "tpu",
            "Deployment",
            ["spec.template.spec.containers[0].resources.claims[0].request"],
            id="missing-in-deployment",
        ),
    ],
)
def test_pod_names_subrequest(request_name: str, kind: str, expected: list[str]) -> None:
    """A container may name only a top-level request of a claim that is in the same input."""
    template = claim([GPU], kind="ResourceClaimTemplate")
    index = index_claims([template])
    obj = pod([container(request_name)], [{"name": "gpus", "resourceClaimTemplateName": "c"}], kind)
    found = list(check_workload(obj, index, version=Version(release("1.37"))))
    assert [w.field for w in found] == expected
    assert all(w.code == "pod-names-subrequest" for w in found)


def test_unresolvable_claim_is_not_guessed() -> None:
    """A claim that is not in the input is not checked."""
    obj = pod([container("gpu/big")], [{"name": "gpus", "resourceClaimName": "elsewhere"}])
    assert list(check_workload(obj, index_claims([]), version=Version(release("1.37")))) == []


@pytest.mark.parametrize(
    ("minor", "patch", "fires"),
    [("1.34", None, False), ("1.36", 1, True), ("1.36", 2, False), ("1.37", None, False)],
)
def test_scoring_crash_without_firstavailable(minor: str, patch: int | None, fires: bool) -> None:
    """kubernetes#139016 hits any pod mixing a shared and a per-pod claim, firstAvailable or
    not; fixed by #139017, cherry-picked as #139362 (1.35.6) and #139363 (1.36.2)."""
    shared, per_pod = claim([NIC]), claim([NIC], kind="ResourceClaimTemplate")
    per_pod["metadata"]["name"] = "t"
    obj = pod(
        [],
        [{"name": "a", "resourceClaimName": "c"}, {"name": "b", "resourceClaimTemplateName": "t"}],
    )
    found = list(
        check_workload(obj, index_claims([shared, per_pod]), version=Version(release(minor), patch))
    )
    assert [w.code for w in found] == (["scoring-crash"] if fires else [])
    assert all("before 1.36.2" in w.message for w in found)


@pytest.mark.parametrize(("patch", "fires"), [(5, True), (6, False), (None, True)])
def test_scoring_crash_by_patch(patch: int | None, fires: bool) -> None:
    """Mixing shared and per-pod prioritized claims is flagged only in the affected 1.35 patches."""
    shared, per_pod = claim([GPU]), claim([GPU], kind="ResourceClaimTemplate")
    per_pod["metadata"]["name"] = "t"
    obj = pod(
        [],
        [{"name": "a", "resourceClaimName": "c"}, {"name": "b", "resourceClaimTemplateName": "t"}],
    )
    found = list(
        check_workload(
            obj, index_claims([shared, per_pod]), version=Version(release("1.35"), patch)
        )
    )
    assert [w.code for w in found] == (["scoring-crash"] if fires else [])


@pytest.mark.parametrize(("minor", "note"), [("1.33", True), ("1.35", True), ("1.36", False)])
def test_all_mode_release_note(minor: str, note: bool) -> None:
    """1.33 with DRAPrioritizedList turned on also lacks kubernetes#131660 (1.36.0), as 1.34/1.35
    do; where the gate is off the field is dropped, so this is reached only with it on."""
    found = list(check_all_mode([1, 0], FieldPath(("spec",)), Version(release(minor))))
    assert [w.release_note for w in found] == [note]
    gate_words = "with DRAPrioritizedList on" in found[0].message
    assert gate_words == (minor == "1.33")


@pytest.mark.parametrize(
    ("minor", "expected"),
    [
        # 1.34 drops capacity only: no tolerations drop before kubernetes#132927 (1.35.0),
        # and its distinctAttribute drop removed nothing before kubernetes#134962 (1.35.0).
        ("1.34", ["spec.devices.requests[0].exactly.capacity"]),
        (
            "1.35",
            [
                "spec.devices.requests[0].exactly.tolerations",
                "spec.devices.requests[0].exactly.capacity",
            ],
        ),
        ("1.36", []),
    ],
)
def test_lint_under_a_release_warns_of_its_drops(minor: str, expected: list[str]) -> None:
    """`lint --kubernetes-version` says what the release silently drops, naming the gate."""
    request = {
        "name": "nic",
        "exactly": {
            "deviceClassName": "nic",
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "capacity": {"requests": {"nic.example.com/bw": "1Gi"}},
        },
    }
    verdict = validate_object(claim([request]), options=Options(release=release(minor)))
    found = [w for w in verdict.warnings if w.code == "release-drops-field"]
    assert [w.field for w in found] == expected
    gates = {"tolerations": "DRADeviceTaints", "capacity": "DRAConsumableCapacity"}
    for w in found:
        assert f"Kubernetes {minor} drops" in w.message
        assert gates[w.field.rsplit(".", 1)[1]] in w.message
