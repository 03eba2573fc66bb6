"""`draguard.schema.convert.convert_document`: losses, refusals and layout rules (issue 3 §1).

Whole input/expected documents live in tests/golden/ (test_convert_golden.py); this
file pins the rules a golden pair does not show well: what counts as a loss, in which
release, and where the parallel layout puts things.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from draguard.schema.convert import TARGETS, convert_document
from draguard.schema.model.diff import diff
from draguard.schema.model.options import DEFAULT_OPTIONS, Options
from draguard.schema.model.releases import release


def claim(version: str, requests: list[dict[str, Any]], **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": {"requests": requests, **devices}},
    }


def template(version: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"metadata": {"labels": {"app": "x"}}, "spec": {"devices": {"requests": requests}}},
    }


GPU = {"name": "gpu", "firstAvailable": [{"name": "big", "deviceClassName": "gpu.example.com"}]}
NIC = {"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}


def at(kubernetes: str) -> Options:
    return Options(release=release(kubernetes))


def loss_paths(doc: dict[str, Any], target: str, options: Options = DEFAULT_OPTIONS) -> list[str]:
    return [str(loss.path) for loss in convert_document(doc, target, options=options).losses]


def test_unknown_target_is_a_programming_error() -> None:
    """A target outside v1|v1beta2|v1beta1|parallel|nested raises ValueError."""
    with pytest.raises(ValueError, match="v1alpha3"):
        convert_document(claim("v1", [NIC]), "v1alpha3")


@pytest.mark.parametrize("target", TARGETS)
def test_other_documents_are_left_alone(target: str) -> None:
    """A ConfigMap is not converted."""
    conversion = convert_document({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, target)
    assert not conversion.is_dra and conversion.document is None


@pytest.mark.parametrize("version", ["v1alpha3", "v1alpha2", "v2"])
@pytest.mark.parametrize("target", TARGETS)
def test_claim_of_an_unserved_version_is_refused(target: str, version: str) -> None:
    """Issue 17: a v1alpha3 claim is refused as the apiserver answers (no such kind in that
    version; v1alpha3 holds DeviceTaintRule only from 1.34), naming the version that serves it,
    and no `--allow-loss` makes it convertible."""
    doc = {**claim("v1", [NIC]), "apiVersion": f"resource.k8s.io/{version}"}
    conversion = convert_document(doc, target)
    assert conversion.is_dra and not conversion.convertible
    (loss,) = conversion.losses
    assert str(loss.path) == "apiVersion"
    assert loss.reason.startswith(
        f'no matches for kind "ResourceClaim" in version "resource.k8s.io/{version}": '
        "Kubernetes 1.37 serves it as resource.k8s.io/v1"
    )


@pytest.mark.parametrize(
    ("doc", "target", "options", "expected"),
    [
        pytest.param(
            claim("v1beta1", [{**GPU, "adminAccess": False}]),
            "v1",
            Options(),
            ["spec.devices.requests[0]"],
            id="v1beta1-admin-false-next-to-first-available-is-ambiguous",
        ),
        pytest.param(
            claim("v1", [{**GPU, **NIC, "name": "gpu"}]),
            "parallel",
            Options(),
            ["spec.devices.requests[0]"],
            id="both-members-cannot-be-parallel",
        ),
        pytest.param(
            claim(
                "v1",
                [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "g",
                            "capacity": {"requests": {"memory": "1Gi"}},
                        },
                    }
                ],
            ),
            "v1beta2",
            at("1.33"),
            ["spec.devices.requests[0].exactly.capacity", "apiVersion"],
            id="capacity-and-v1-do-not-exist-in-1.33",
        ),
        pytest.param(
            claim(
                "v1",
                [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "g",
                            "tolerations": [{"operator": "Exists"}],
                        },
                    }
                ],
            ),
            "v1",
            at("1.35"),
            ["spec.devices.requests[0].exactly.tolerations"],
            id="tolerations-dropped-while-gate-off-in-1.35",
        ),
        pytest.param(
            claim("v1", [GPU]),
            "v1",
            at("1.33"),
            ["apiVersion", "spec.devices.requests[0].firstAvailable"],
            id="v1-and-first-available-in-1.33",
        ),
        pytest.param(
            claim("v1", [NIC]),
            "v1beta1",
            at("1.38"),
            ["apiVersion"],
            id="v1beta1-behind-a-gate-in-1.38",
        ),
        pytest.param(claim("v1", [NIC, GPU]), "v1beta1", Options(), [], id="nothing-lost"),
    ],
)
def test_what_the_target_cannot_hold_is_a_loss(
    doc: dict[str, Any], target: str, options: Options, expected: list[str]
) -> None:
    """Each field the target (in the chosen release) cannot hold is named, at the source path."""
    assert sorted(loss_paths(doc, target, options)) == sorted(expected)


def test_losses_say_why() -> None:
    """A loss names the release and the reason, so a refusal can be acted on."""
    doc = claim("v1", [{"name": "gpu", "exactly": {"deviceClassName": "g", "adminAccess": True}}])
    source_version, dropped = convert_document(doc, "v1", options=at("1.33")).losses
    assert "1.33" in source_version.reason and "does not exist" in source_version.reason
    assert "1.33" in dropped.reason and "gate" in dropped.reason
    assert str(dropped.path) == "spec.devices.requests[0].exactly.adminAccess"


def test_changes_name_every_moved_field() -> None:
    """The fields a conversion moved, added or removed, as `diff` names them."""
    source = claim("v1", [NIC])
    changed = {str(c.path) for c in diff(source, convert_document(source, "v1beta1").document)}
    assert "apiVersion" in changed
    assert "spec.devices.requests[0].exactly" in changed
    assert "spec.devices.requests[0].deviceClassName" in changed


def test_parallel_records_the_order_as_compact_json() -> None:
    """nested → parallel writes `draguard.io/request-order` as a compact JSON list of names."""
    out = convert_document(claim("v1", [GPU, NIC]), "parallel").document
    assert out is not None
    assert out["metadata"]["annotations"] == {"draguard.io/request-order": '["gpu","nic"]'}
    assert [r["name"] for r in out["spec"]["devices"]["requests"]] == ["nic"]
    assert out["spec"]["devices"]["prioritizedRequests"] == [
        {"name": "gpu", "options": GPU["firstAvailable"]}
    ]


def test_all_prioritized_leaves_an_empty_requests_list() -> None:
    """A document whose requests are all prioritized has `requests: []` (contract §4)."""
    out = convert_document(claim("v1", [GPU]), "parallel").document
    assert out is not None and out["spec"]["devices"]["requests"] == []


def test_template_order_goes_on_the_objects_own_metadata() -> None:
    """For a template the annotation sits on the top-level metadata, not `spec.metadata`."""
    out = convert_document(template("v1", [GPU, NIC]), "parallel").document
    assert out is not None
    assert "draguard.io/request-order" in out["metadata"]["annotations"]
    assert out["spec"]["metadata"] == {"labels": {"app": "x"}}


def test_empty_first_available_next_to_exactly_stays_an_exact_request() -> None:
    """`firstAvailable: []` counts as absent (rule 7): the request stays in `requests`, without it."""
    doc = claim("v1", [{**NIC, "firstAvailable": []}])
    conversion = convert_document(doc, "parallel")
    assert conversion.lossless and conversion.document is not None
    assert conversion.document["spec"]["devices"]["requests"] == [NIC]
    back = convert_document(conversion.document, "v1")
    assert back.lossless, [str(loss) for loss in back.losses]


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        pytest.param('["gpu","nic"]', ["gpu", "nic"], id="recorded-order"),
        pytest.param(None, ["nic", "gpu"], id="no-annotation-exact-first"),
        pytest.param('["gpu"]', ["nic", "gpu"], id="annotation-missing-a-name"),
        pytest.param("not json", ["nic", "gpu"], id="annotation-unreadable"),
    ],
)
def test_nested_puts_requests_back_in_the_recorded_order(
    annotation: str | None, expected: list[str]
) -> None:
    """parallel → nested follows the annotation when it names exactly the requests, else exact first."""
    doc = claim(
        "v1",
        [NIC],
        prioritizedRequests=[{"name": "gpu", "options": GPU["firstAvailable"]}],
    )
    if annotation is not None:
        doc["metadata"]["annotations"] = {"draguard.io/request-order": annotation, "keep": "me"}
    out = convert_document(doc, "nested").document
    assert out is not None
    assert [r["name"] for r in out["spec"]["devices"]["requests"]] == expected
    annotations = out["metadata"].get("annotations", {})
    assert "draguard.io/request-order" not in annotations
    assert annotations == ({"keep": "me"} if annotation is not None else {})


@pytest.mark.parametrize("target", ["v1", "v1beta2", "v1beta1"])
def test_parallel_to_a_version_is_nested_and_drops_the_annotation(target: str) -> None:
    """A version target is what the apiserver returns: nested layout, no draguard annotation."""
    parallel = convert_document(claim("v1", [GPU, NIC]), "parallel").document
    out = convert_document(parallel, target).document
    assert out is not None
    assert "prioritizedRequests" not in out["spec"]["devices"]
    assert [r["name"] for r in out["spec"]["devices"]["requests"]] == ["gpu", "nic"]
    assert "annotations" not in out["metadata"]
    assert out["apiVersion"] == f"resource.k8s.io/{target}"


@pytest.mark.parametrize("target", ["parallel", "nested"])
def test_layout_targets_add_no_defaults(target: str) -> None:
    """parallel / nested are layout only: no allocationMode or count appears (contract §4)."""
    out = convert_document(claim("v1beta1", [{"name": "nic", "deviceClassName": "n"}]), target)
    assert out.document is not None
    text = json.dumps(out.document)
    assert "allocationMode" not in text and "count" not in text
    assert out.document["apiVersion"] == "resource.k8s.io/v1beta1"


def test_conversion_never_mutates_its_input() -> None:
    """The caller's object is left as it was, whatever the target."""
    doc = claim("v1beta1", [{"name": "nic", "deviceClassName": "n", "selectors": []}, GPU])
    snapshot = json.dumps(doc, sort_keys=True)
    for target in TARGETS:
        convert_document(doc, target)
    assert json.dumps(doc, sort_keys=True) == snapshot


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        pytest.param(
            {"name": "gpu", "deviceClassName": "g", "count": 2},
            ["name", "deviceClassName", "allocationMode", "count"],
            id="mode-before-count",
        ),
        pytest.param(
            {
                "name": "gpu",
                "deviceClassName": "g",
                "tolerations": [{"operator": "Exists"}],
                "capacity": {},
            },
            ["name", "deviceClassName", "allocationMode", "count", "tolerations", "capacity"],
            id="both-before-tolerations",
        ),
        pytest.param(
            {"name": "gpu", "count": 3, "deviceClassName": "g"},
            ["name", "allocationMode", "count", "deviceClassName"],
            id="user-order-kept",
        ),
    ],
)
def test_defaults_go_in_go_struct_order(request_: dict[str, Any], expected: list[str]) -> None:
    """Added defaults sit where upstream's JSON prints them: allocationMode, then count (§2.1)."""
    doc = claim("v1", [{"name": "gpu", "firstAvailable": [request_]}])
    out = convert_document(doc, "v1").document
    assert out is not None
    assert list(out["spec"]["devices"]["requests"][0]["firstAvailable"][0]) == expected


def test_prioritized_requests_follow_requests() -> None:
    """nested → parallel puts `prioritizedRequests` right after `requests`, as contract §2 shows it."""
    doc = claim("v1", [NIC, GPU], constraints=[{"matchAttribute": "dra.example.com/x"}])
    out = convert_document(doc, "parallel").document
    assert out is not None
    assert list(out["spec"]["devices"]) == ["requests", "prioritizedRequests", "constraints"]


@pytest.mark.parametrize(
    ("doc", "target", "expected"),
    [
        pytest.param(
            {**claim("v1", []), "spec": {"devices": {"requests": {"name": "gpu"}}}},
            "parallel",
            ["spec.devices.requests"],
            id="requests-not-a-list",
        ),
        pytest.param(
            claim(
                "v1",
                [NIC],
                prioritizedRequests=[
                    {**GPU, "options": GPU["firstAvailable"], "adminAccess": True}
                ],
            ),
            "nested",
            [
                "spec.devices.prioritizedRequests[0].adminAccess",
                "spec.devices.prioritizedRequests[0].firstAvailable",
            ],
            id="fields-no-entry-has",
        ),
        pytest.param(
            claim("v1", [GPU, {**NIC, "name": "gpu"}]),
            "parallel",
            ["spec.devices.requests[1]"],
            id="duplicate-names",
        ),
    ],
)
def test_layout_moves_refuse_what_they_would_drop(
    doc: dict[str, Any], target: str, expected: list[str]
) -> None:
    """A move that would silently drop data (unreadable parts, names the order cannot place) is refused."""
    assert sorted(loss_paths(doc, target)) == sorted(expected)


def test_layout_targets_leave_a_document_already_in_that_layout_alone() -> None:
    """`--to nested` of a nested document (even an unreadable one) changes and refuses nothing."""
    doc = {**claim("v1", []), "spec": {"devices": {"requests": "oops"}}}
    conversion = convert_document(doc, "nested")
    assert conversion.lossless and conversion.document == doc


@pytest.mark.parametrize("target", ["v1", "v1beta2"])
def test_class_less_exactly_reads_back_an_empty_class(target: str) -> None:
    """ExactDeviceRequest's `deviceClassName` has no omitempty (v1 and v1beta2 types.go:
    `json:"deviceClassName"`), so a class-less `exactly` reads back with `""`, first."""
    doc = claim("v1", [{"name": "gpu", "exactly": {"count": 2}}])
    conversion = convert_document(doc, target)
    assert conversion.document is not None
    exactly = conversion.document["spec"]["devices"]["requests"][0]["exactly"]
    assert next(iter(exactly.items())) == ("deviceClassName", "")


def test_allocation_result_tolerations_are_defaulted() -> None:
    """The generated defaulter (SetObjectDefaults_ResourceClaim) also sets operator Equal in
    `status.allocation.devices.results[].tolerations` (upstream-rules.md §4.1)."""
    doc = claim("v1", [NIC])
    result = {"request": "nic", "driver": "d.example.com", "pool": "p", "device": "x",
              "tolerations": [{"key": "k", "value": "v"}, {"key": "e", "operator": "Exists"}]}
    doc["status"] = {"allocation": {"devices": {"results": [result]}}}
    conversion = convert_document(doc, "v1")
    assert conversion.document is not None
    got = conversion.document["status"]["allocation"]["devices"]["results"][0]["tolerations"]
    assert [t["operator"] for t in got] == ["Equal", "Exists"]


def test_parallel_of_a_document_without_first_available_is_unchanged() -> None:
    """Nothing to move: no empty `prioritizedRequests`, no order annotation (issue 17)."""
    doc = claim("v1", [NIC, {**NIC, "name": "nic2"}])
    conversion = convert_document(doc, "parallel")
    assert conversion.lossless and conversion.document == doc


OPAQUE = {"driver": "gpu.example.com",
          "parameters": {"selectors": [], "requests": [], "keep": {"config": []}}}


@pytest.mark.parametrize("target", TARGETS)
def test_opaque_parameters_keep_their_empty_lists(target: str) -> None:
    """Opaque parameters are the driver's (a RawExtension): empty lists inside them stay,
    whatever the apiserver's encoder drops from the claim's own fields."""
    doc = claim("v1beta1", [{"name": "gpu", "deviceClassName": "gpu.example.com"}],
                config=[{"requests": ["gpu"], "opaque": OPAQUE}])
    out = convert_document(doc, target).document
    assert out is not None
    assert out["spec"]["devices"]["config"] == [{"requests": ["gpu"], "opaque": OPAQUE}]


@pytest.mark.parametrize("metadata", [None, {"name": "c", "annotations": None}])
def test_null_metadata_and_annotations_read_as_absent(metadata: Any) -> None:
    """`metadata: null` or `annotations: null` is absent to the apiserver: parallel writes
    the order annotation into a new mapping, and nested reads no recorded order."""
    doc = claim("v1", [GPU, NIC])
    doc["metadata"] = metadata
    out = convert_document(doc, "parallel").document
    assert out is not None and out["metadata"]["annotations"] == {
        "draguard.io/request-order": '["gpu","nic"]'}
    parallel = convert_document(claim("v1", [GPU, NIC]), "parallel").document
    assert parallel is not None
    parallel["metadata"] = metadata
    back = convert_document(parallel, "nested").document
    assert back is not None and back["metadata"] == metadata
    assert [r["name"] for r in back["spec"]["devices"]["requests"]] == ["nic", "gpu"]
