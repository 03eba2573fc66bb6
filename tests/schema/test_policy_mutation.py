"""The mutating policy applied to claims and templates: catalog, limits, defaults, rewrite."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jsonpatch
import pytest

from draguard.schema.model.errors import ErrorType
from draguard.schema.model.options import DEFAULT_OPTIONS, Options
from draguard.schema.model.releases import release
from draguard.schema.policy.file import load_policy, parse_policy
from draguard.schema.policy.model import (
    Alternative,
    CatalogEntry,
    Policy,
)
from draguard.schema.policy.mutation import Mutation, mutate
from draguard.schema.validate import validate_object

VERSIONS = ("v1", "v1beta2", "v1beta1")
KINDS = ("ResourceClaim", "ResourceClaimTemplate")
SHAPES = [pytest.param(v, k, id=f"{v}-{k}") for v in VERSIONS for k in KINDS]

CATALOG = """
catalog:
  gpu.example.com:
    original: {original}
    alternatives:
    - name: h100
      deviceClassName: h100.nvidia.com
    - name: a100
      deviceClassName: a100.nvidia.com
      count: 2
defaults: {defaults}
configNamesParent: {rewrite}
"""


def catalog_policy(original: str = "first", *, defaults: bool = False,
                   rewrite: str = "keep") -> Policy:
    text = CATALOG.format(original=original, defaults=str(defaults).lower(), rewrite=rewrite)
    return parse_policy(text)


def exact(version: str, name: str, device_class: str, **fields: Any) -> dict[str, Any]:
    """A request for one class in the shape of `version` (flat in v1beta1)."""
    if version == "v1beta1":
        return {"name": name, "deviceClassName": device_class, **fields}
    return {"name": name, "exactly": {"deviceClassName": device_class, **fields}}


def prioritized(name: str, *classes: str) -> dict[str, Any]:
    subs = [{"name": f"s{j}", "deviceClassName": c, "allocationMode": "ExactCount", "count": 1}
            for j, c in enumerate(classes)]
    return {"name": name, "firstAvailable": subs}


def document(version: str, kind: str, requests: list[dict[str, Any]],
             config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": requests}
    if config is not None:
        devices["config"] = config
    spec: dict[str, Any] = {"devices": devices}
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": kind,
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": spec if kind == "ResourceClaim" else {"spec": spec},
    }


def devices_of(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj["spec"] if obj["kind"] == "ResourceClaim" else obj["spec"]["spec"]
    devices: dict[str, Any] = spec["devices"]
    return devices


def patched(obj: dict[str, Any], mutation: Mutation) -> dict[str, Any]:
    """The object as the apiserver sees it after applying the webhook's patch."""
    assert mutation.allowed, mutation.errors
    result: dict[str, Any] = jsonpatch.apply_patch(obj, mutation.patch)
    return result


def config_entry(*refs: str) -> dict[str, Any]:
    return {"requests": list(refs), "opaque": {"driver": "gpu.example.com", "parameters": {}}}


def spec_prefix(kind: str) -> str:
    return "/spec/devices" if kind == "ResourceClaim" else "/spec/spec/devices"


@pytest.mark.parametrize(("version", "kind"), SHAPES)
def test_catalog_expands_exact_request_keeping_original_first(version: str, kind: str) -> None:
    """A request for a catalogued class becomes firstAvailable: its own choice, then the catalog."""
    obj = document(version, kind, [exact(version, "gpu", "gpu.example.com", count=3)])
    result = patched(obj, mutate(obj, policy=catalog_policy(), options=DEFAULT_OPTIONS))
    request = devices_of(result)["requests"][0]
    assert request == {"name": "gpu", "firstAvailable": [
        {"name": "requested", "deviceClassName": "gpu.example.com", "count": 3},
        {"name": "h100", "deviceClassName": "h100.nvidia.com"},
        {"name": "a100", "deviceClassName": "a100.nvidia.com", "count": 2},
    ]}


@pytest.mark.parametrize(("version", "kind"), SHAPES)
def test_patch_paths_stay_under_the_claim_spec(version: str, kind: str) -> None:
    """Every operation addresses the request being expanded, under `spec.spec` for templates."""
    obj = document(version, kind, [exact(version, "nic", "nic.example.com"),
                                   exact(version, "gpu", "gpu.example.com")])
    mutation = mutate(obj, policy=catalog_policy(), options=DEFAULT_OPTIONS)
    assert mutation.patch
    assert {op["path"].rsplit("/", 1)[0] for op in mutation.patch} == {
        f"{spec_prefix(kind)}/requests/1"}


@pytest.mark.parametrize(
    ("original", "names"),
    [
        pytest.param("first", ["requested", "h100", "a100"], id="first"),
        pytest.param("last", ["h100", "a100", "requested"], id="last"),
        pytest.param("replace", ["h100", "a100"], id="replace"),
    ],
)
def test_original_placement(original: str, names: list[str]) -> None:
    """`original` puts the request's own choice first, last, or drops it."""
    obj = document("v1", "ResourceClaim", [exact("v1", "gpu", "gpu.example.com")])
    result = patched(obj, mutate(obj, policy=catalog_policy(original), options=DEFAULT_OPTIONS))
    alternatives = devices_of(result)["requests"][0]["firstAvailable"]
    assert [a["name"] for a in alternatives] == names


def test_original_name_is_configurable() -> None:
    """`originalName` names the subrequest that holds the request's own choice."""
    policy = parse_policy("catalog: {gpu.example.com: {originalName: mine, alternatives: "
                          "[{name: h100, deviceClassName: h100.nvidia.com}]}}")
    obj = document("v1", "ResourceClaim", [exact("v1", "gpu", "gpu.example.com")])
    result = patched(obj, mutate(obj, policy=policy, options=DEFAULT_OPTIONS))
    assert devices_of(result)["requests"][0]["firstAvailable"][0]["name"] == "mine"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"selectors": [{"cel": {"expression": "device.driver == 'x'"}}]},
                     id="selectors"),
        pytest.param({"count": 2}, id="count"),
        pytest.param({"allocationMode": "All"}, id="all-mode"),
        pytest.param({"tolerations": [{"key": "k", "operator": "Exists"}]}, id="tolerations"),
        pytest.param({"capacity": {"requests": {"memory": "1Gi"}}}, id="capacity"),
    ],
)
def test_replace_leaves_a_request_with_its_own_constraints(version: str,
                                                           fields: dict[str, Any]) -> None:
    """`replace` never drops the user's selectors, count, …: the request is kept, with a warning."""
    obj = document(version, "ResourceClaim", [exact(version, "gpu", "gpu.example.com", **fields)])
    mutation = mutate(obj, policy=catalog_policy("replace"), options=DEFAULT_OPTIONS)
    assert mutation.patch == []
    assert mutation.allowed
    assert len(mutation.warnings) == 1
    assert "not expanded" in mutation.warnings[0].message


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({}, id="bare"),
        pytest.param({"allocationMode": "ExactCount", "count": 1}, id="defaulted"),
        pytest.param({"selectors": []}, id="empty-selectors"),
    ],
)
def test_replace_expands_a_plain_request(version: str, fields: dict[str, Any]) -> None:
    """`replace` swaps a request that asks for nothing beyond its class and the defaults."""
    obj = document(version, "ResourceClaim", [exact(version, "gpu", "gpu.example.com", **fields)])
    result = patched(obj, mutate(obj, policy=catalog_policy("replace"), options=DEFAULT_OPTIONS))
    assert devices_of(result)["requests"][0] == {"name": "gpu", "firstAvailable": [
        {"name": "h100", "deviceClassName": "h100.nvidia.com"},
        {"name": "a100", "deviceClassName": "a100.nvidia.com", "count": 2},
    ]}


@pytest.mark.parametrize("version", VERSIONS)
def test_admin_access_request_is_not_expanded(version: str) -> None:
    """A request with adminAccess: true stays exact (subrequests cannot carry admin access)."""
    obj = document(version, "ResourceClaim",
                   [exact(version, "gpu", "gpu.example.com", adminAccess=True)])
    mutation = mutate(obj, policy=catalog_policy(), options=DEFAULT_OPTIONS)
    assert mutation.patch == []
    assert "admin access" in mutation.warnings[0].message


def test_admin_access_false_is_dropped_from_the_moved_original() -> None:
    """`adminAccess: false` is not carried into a subrequest, which has no such field."""
    obj = document("v1", "ResourceClaim",
                   [exact("v1", "gpu", "gpu.example.com", adminAccess=False)])
    result = patched(obj, mutate(obj, policy=catalog_policy(), options=DEFAULT_OPTIONS))
    assert "adminAccess" not in devices_of(result)["requests"][0]["firstAvailable"][0]


@pytest.mark.parametrize(
    "request_",
    [
        pytest.param(exact("v1", "gpu", "other.example.com"), id="other-class"),
        pytest.param(prioritized("gpu", "gpu.example.com"), id="already-prioritized"),
        pytest.param({"name": "gpu"}, id="neither"),
        pytest.param({"name": "gpu", "exactly": "gpu.example.com"}, id="malformed-exactly"),
    ],
)
def test_requests_outside_the_catalog_are_untouched(request_: dict[str, Any]) -> None:
    """Only exact requests for a catalogued class are expanded; everything else is left alone."""
    obj = document("v1", "ResourceClaim", [request_])
    assert mutate(obj, policy=catalog_policy(), options=DEFAULT_OPTIONS).patch == []


def test_v1beta1_expansion_removes_every_flat_field() -> None:
    """Flat fields go even when empty: `selectors: []` would count as set in conversion (§5.2)."""
    request = exact("v1beta1", "gpu", "gpu.example.com", selectors=[], tolerations=[],
                    adminAccess=False)
    obj = document("v1beta1", "ResourceClaim", [request])
    result = patched(obj, mutate(obj, policy=catalog_policy(), options=DEFAULT_OPTIONS))
    assert set(devices_of(result)["requests"][0]) == {"name", "firstAvailable"}


@pytest.mark.parametrize(
    ("cap", "user_list", "kept"),
    [
        pytest.param(2, 5, ["s0", "s1"], id="trims-tail"),
        pytest.param(5, 5, ["s0", "s1", "s2", "s3", "s4"], id="at-cap"),
        pytest.param(1, 3, ["s0"], id="cap-one"),
    ],
)
def test_max_alternatives_trims_the_tail(cap: int, user_list: int, kept: list[str]) -> None:
    """`limits.maxAlternatives` keeps the first N alternatives, also of lists the user wrote."""
    policy = parse_policy(f"limits: {{maxAlternatives: {cap}}}\ndefaults: false")
    obj = document("v1", "ResourceClaim",
                   [prioritized("gpu", *[f"c{j}.example.com" for j in range(user_list)])])
    mutation = mutate(obj, policy=policy, options=DEFAULT_OPTIONS)
    result = patched(obj, mutation)
    assert [a["name"] for a in devices_of(result)["requests"][0]["firstAvailable"]] == kept
    assert len(mutation.warnings) == (1 if user_list > cap else 0)


def test_max_alternatives_applies_after_expansion() -> None:
    """The cap also trims the list the catalog just built, keeping the original first."""
    policy = parse_policy(CATALOG.format(original="first", defaults="false", rewrite="keep")
                          + "limits: {maxAlternatives: 2}\n")
    obj = document("v1", "ResourceClaim", [exact("v1", "gpu", "gpu.example.com")])
    result = patched(obj, mutate(obj, policy=policy, options=DEFAULT_OPTIONS))
    names = [a["name"] for a in devices_of(result)["requests"][0]["firstAvailable"]]
    assert names == ["requested", "h100"]


@pytest.mark.parametrize(
    ("version", "kind", "request_", "field"),
    [
        pytest.param("v1", "ResourceClaim", exact("v1", "r", "old.legacy.example.com"),
                     "spec.devices.requests[0].exactly.deviceClassName", id="v1-exactly"),
        pytest.param("v1beta1", "ResourceClaim", exact("v1beta1", "r", "old.legacy.example.com"),
                     "spec.devices.requests[0].exactly.deviceClassName", id="v1beta1-flat"),
        pytest.param("v1beta2", "ResourceClaimTemplate",
                     prioritized("r", "ok.example.com", "old.legacy.example.com"),
                     "spec.spec.devices.requests[0].firstAvailable[1].deviceClassName",
                     id="template-subrequest"),
    ],
)
def test_forbidden_class_is_denied(version: str, kind: str, request_: dict[str, Any],
                                   field: str) -> None:
    """A forbidden class denies the object with a Forbidden error at the internal-shape path."""
    policy = parse_policy("limits: {forbiddenClasses: ['*.legacy.example.com']}")
    obj = document(version, kind, [request_])
    mutation = mutate(obj, policy=policy, options=DEFAULT_OPTIONS)
    assert [(e.type, e.field) for e in mutation.errors] == [(ErrorType.FORBIDDEN, field)]
    assert mutation.patch == []


def test_forbidden_message_names_class_and_pattern() -> None:
    """The denial says which class and which policy pattern refused it."""
    policy = parse_policy("limits: {forbiddenClasses: ['*.legacy.example.com']}")
    obj = document("v1", "ResourceClaim", [exact("v1", "r", "old.legacy.example.com")])
    (error,) = mutate(obj, policy=policy, options=DEFAULT_OPTIONS).errors
    assert error.message == ("Forbidden: device class 'old.legacy.example.com' is not allowed in "
                             "this cluster (draguard policy limits.forbiddenClasses: "
                             "'*.legacy.example.com')")


def test_forbidden_portable_class_is_allowed_once_replaced() -> None:
    """A forbidden portable class that the catalog replaces no longer appears, so it passes."""
    policy = parse_policy(CATALOG.format(original="replace", defaults="false", rewrite="keep")
                          + "limits: {forbiddenClasses: [gpu.example.com]}\n")
    obj = document("v1", "ResourceClaim", [exact("v1", "gpu", "gpu.example.com")])
    assert mutate(obj, policy=policy, options=DEFAULT_OPTIONS).allowed


@pytest.mark.parametrize(
    ("version", "request_", "expected"),
    [
        pytest.param("v1", {"name": "r", "exactly": {"deviceClassName": "c.example.com"}},
                     {"name": "r", "exactly": {"deviceClassName": "c.example.com",
                                               "allocationMode": "ExactCount", "count": 1}},
                     id="v1-exactly"),
        pytest.param("v1beta2", {"name": "r", "exactly": {"deviceClassName": "c.example.com",
                                                           "allocationMode": "All"}},
                     {"name": "r", "exactly": {"deviceClassName": "c.example.com",
                                               "allocationMode": "All"}},
                     id="v1beta2-all-gets-no-count"),
        pytest.param("v1", {"name": "r", "exactly": {"deviceClassName": "c.example.com",
                                                      "count": 4,
                                                      "tolerations": [{"key": "k"}]}},
                     {"name": "r", "exactly": {"deviceClassName": "c.example.com", "count": 4,
                                               "allocationMode": "ExactCount",
                                               "tolerations": [{"key": "k",
                                                                "operator": "Equal"}]}},
                     id="v1-keeps-count-defaults-operator"),
        pytest.param("v1beta1", {"name": "r", "deviceClassName": "c.example.com"},
                     {"name": "r", "deviceClassName": "c.example.com",
                      "allocationMode": "ExactCount", "count": 1},
                     id="v1beta1-flat"),
        pytest.param("v1beta1", {"name": "r", "firstAvailable": [
                         {"name": "a", "deviceClassName": "c.example.com"}]},
                     {"name": "r", "firstAvailable": [
                         {"name": "a", "deviceClassName": "c.example.com",
                          "allocationMode": "ExactCount", "count": 1}]},
                     id="v1beta1-prioritized-only-subrequests"),
        pytest.param("v1", {"name": "r", "exactly": {"deviceClassName": "c.example.com",
                                                      "allocationMode": "", "count": 0}},
                     {"name": "r", "exactly": {"deviceClassName": "c.example.com",
                                               "allocationMode": "ExactCount", "count": 1}},
                     id="v1-zero-values-count-as-unset"),
    ],
)
def test_defaults_fill_only_unset_fields(version: str, request_: dict[str, Any],
                                         expected: dict[str, Any]) -> None:
    """Upstream's defaults (§4) per API version, and only where the field is unset."""
    obj = document(version, "ResourceClaim", [request_])
    result = patched(obj, mutate(obj, policy=Policy(), options=DEFAULT_OPTIONS))
    assert devices_of(result)["requests"][0] == expected


def test_defaults_leave_a_fully_defaulted_object_alone() -> None:
    """An object the apiserver already defaulted gets an empty patch."""
    obj = document("v1", "ResourceClaim", [exact("v1", "r", "c.example.com",
                                                 allocationMode="ExactCount", count=1)])
    assert mutate(obj, policy=Policy(), options=DEFAULT_OPTIONS) == Mutation()


def test_v1beta1_flat_request_without_class_is_not_defaulted() -> None:
    """§4.2 edge case: without deviceClassName the flat allocation fields are not defaulted."""
    obj = document("v1beta1", "ResourceClaim", [{"name": "r", "firstAvailable": [
        {"name": "a", "deviceClassName": "c.example.com", "allocationMode": "ExactCount",
         "count": 1}]}])
    assert mutate(obj, policy=Policy(), options=DEFAULT_OPTIONS).patch == []


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        pytest.param(["gpu"], ["gpu/s0", "gpu/s1"], id="parent"),
        pytest.param(["nic", "gpu"], ["nic", "gpu/s0", "gpu/s1"], id="keeps-position"),
        pytest.param(["gpu", "gpu/s1"], ["gpu/s0", "gpu/s1"], id="no-duplicates"),
        pytest.param(["gpu/s0"], ["gpu/s0"], id="already-explicit"),
        pytest.param(["nic"], ["nic"], id="exact-request"),
    ],
)
def test_config_naming_parent_is_rewritten(refs: list[str], expected: list[str]) -> None:
    """`configNamesParent: rewrite` names every subrequest instead of the parent (issue 7)."""
    obj = document("v1", "ResourceClaim",
                   [exact("v1", "nic", "nic.example.com", allocationMode="ExactCount", count=1),
                    prioritized("gpu", "a.example.com", "b.example.com")],
                   [config_entry(*refs)])
    result = patched(obj, mutate(obj, policy=Policy(), options=DEFAULT_OPTIONS))
    assert devices_of(result)["config"][0]["requests"] == expected


def test_config_rewrite_fixes_the_lint_warning() -> None:
    """The patched claim is valid and no longer draws the `config-names-parent` warning."""
    # Two requests: from 1.37 a config covering every request is not affected (issue 17).
    obj = document("v1", "ResourceClaim",
                   [prioritized("gpu", "a.example.com", "b.example.com"),
                    exact("v1", "nic", "nic.example.com", allocationMode="ExactCount", count=1)],
                   [config_entry("gpu")])
    before = validate_object(obj)
    assert "config-names-parent" in {w.code for w in before.warnings}
    mutation = mutate(obj, policy=Policy(), options=DEFAULT_OPTIONS)
    assert mutation.patch == [
        {"op": "replace", "path": "/spec/devices/config/0/requests/0", "value": "gpu/s0"},
        {"op": "add", "path": "/spec/devices/config/0/requests/1", "value": "gpu/s1"},
    ]
    after = validate_object(patched(obj, mutation))
    assert after.valid
    assert "config-names-parent" not in {w.code for w in after.warnings}


def test_config_rewrite_sees_the_catalog_expansion() -> None:
    """A config naming a request the catalog just expanded names the new subrequests."""
    obj = document("v1beta1", "ResourceClaimTemplate",
                   [exact("v1beta1", "gpu", "gpu.example.com")], [config_entry("gpu")])
    policy = catalog_policy(rewrite="rewrite")
    result = patched(obj, mutate(obj, policy=policy, options=DEFAULT_OPTIONS))
    assert devices_of(result)["config"][0]["requests"] == ["gpu/requested", "gpu/h100",
                                                           "gpu/a100"]


def test_config_rewrite_keep_leaves_parent() -> None:
    """`configNamesParent: keep` leaves the parent reference as written."""
    obj = document("v1", "ResourceClaim", [prioritized("gpu", "a.example.com")],
                   [config_entry("gpu")])
    policy = parse_policy("configNamesParent: keep")
    assert mutate(obj, policy=policy, options=DEFAULT_OPTIONS).patch == []


def test_config_rewrite_over_32_references_is_left_with_warning() -> None:
    """A rewrite that would exceed upstream's 32 references is not done, and says why."""
    requests = [prioritized(f"g{i}", *[f"c{j}.example.com" for j in range(8)]) for i in range(5)]
    obj = document("v1", "ResourceClaim", requests, [config_entry(*[f"g{i}" for i in range(5)])])
    mutation = mutate(obj, policy=Policy(), options=DEFAULT_OPTIONS)
    assert mutation.patch == []
    assert "40 entries" in mutation.warnings[0].message


def test_no_policy_gives_an_empty_patch() -> None:
    """Policy.empty() changes nothing, even for an object defaults or the catalog would touch."""
    obj = document("v1", "ResourceClaim", [exact("v1", "gpu", "gpu.example.com")],
                   [config_entry("gpu")])
    assert mutate(obj, policy=Policy.empty(), options=DEFAULT_OPTIONS) == Mutation()


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({"apiVersion": "v1", "kind": "Pod", "spec": {}}, id="pod"),
        pytest.param({"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceClaim",
                      "spec": {"devices": {"requests": [{"name": "r"}]}}}, id="old-version"),
        pytest.param({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                      "spec": []}, id="spec-not-mapping"),
        pytest.param([], id="not-an-object"),
        pytest.param(None, id="null"),
    ],
)
def test_other_objects_get_an_empty_patch(obj: Any) -> None:
    """Objects that are not DRA claims or templates, or cannot be read, are left alone."""
    assert mutate(obj, policy=catalog_policy(defaults=True, rewrite="rewrite"),
                  options=DEFAULT_OPTIONS) == Mutation()


def test_mutated_object_failing_the_rules_is_denied() -> None:
    """A trim that drops a subrequest a constraint names leaves an invalid object: denied."""
    policy = parse_policy("limits: {maxAlternatives: 2}")
    obj = document("v1", "ResourceClaim", [prioritized("gpu", "a.example.com", "b.example.com",
                                                       "c.example.com")])
    devices_of(obj)["constraints"] = [{"requests": ["gpu/s2"],
                                       "matchAttribute": "example.com/model"}]
    mutation = mutate(obj, policy=policy, options=DEFAULT_OPTIONS)
    assert [(e.type, e.field) for e in mutation.errors] == [
        (ErrorType.INVALID, "spec.devices.constraints[0].requests[0]")]
    assert mutation.patch == []
    assert "dropped 's2'" in mutation.warnings[0].message


def test_catalog_selector_failing_the_rules_is_denied() -> None:
    """A catalog alternative whose CEL selector does not compile denies the expanded claim.

    The file reader refuses such a catalog, so the policy is built in code here: the
    denial is the safety net for what a load-time check cannot see.
    """
    bad = Alternative("bad", "b.example.com", selectors=("device.driver",))
    policy = Policy(catalog=MappingProxyType(
        {"gpu.example.com": CatalogEntry("gpu.example.com", (bad,))}))
    obj = document("v1", "ResourceClaim", [exact("v1", "gpu", "gpu.example.com")])
    mutation = mutate(obj, policy=policy, options=DEFAULT_OPTIONS)
    assert [(e.type, e.field) for e in mutation.errors] == [
        (ErrorType.INVALID,
         "spec.devices.requests[0].firstAvailable[1].selectors[0].cel.expression")]
    assert mutation.patch == []


def test_expansion_the_release_cannot_store_is_denied() -> None:
    """Under 1.33 (DRAPrioritizedList off) the expanded list is dropped, so the claim is denied."""
    obj = document("v1beta2", "ResourceClaim", [exact("v1beta2", "gpu", "gpu.example.com")])
    options = Options(release=release("1.33"))
    mutation = mutate(obj, policy=catalog_policy(), options=options)
    assert [(e.type, e.field) for e in mutation.errors] == [
        (ErrorType.REQUIRED, "spec.devices.requests[0]")]


def test_denial_after_expansion_explains_the_expansion() -> None:
    """A denied expanded claim says how it was expanded, since its error paths are new."""
    obj = document("v1beta2", "ResourceClaim", [exact("v1beta2", "gpu", "gpu.example.com")])
    mutation = mutate(obj, policy=catalog_policy(), options=Options(release=release("1.33")))
    assert [(w.code, w.field, w.message) for w in mutation.warnings] == [(
        "policy-expanded", "spec.devices.requests[0]",
        "request 'gpu' was expanded with the catalog for "
        "gpu.example.com into firstAvailable [requested, h100, a100]")]


def test_policy_advice_is_silenced_by_the_ignore_annotation() -> None:
    """`draguard.io/ignore: policy-expanded` drops that advice like any other code."""
    obj = document("v1beta2", "ResourceClaim", [exact("v1beta2", "gpu", "gpu.example.com")])
    obj["metadata"]["annotations"] = {"draguard.io/ignore": "policy-expanded"}
    mutation = mutate(obj, policy=catalog_policy(), options=Options(release=release("1.33")))
    assert mutation.errors and mutation.warnings == ()


def test_allowed_expansion_carries_no_warning() -> None:
    """An accepted expansion is silent: the patch itself says what changed."""
    obj = document("v1", "ResourceClaim", [exact("v1", "gpu", "gpu.example.com")])
    assert mutate(obj, policy=catalog_policy(), options=DEFAULT_OPTIONS).warnings == ()


def test_expanded_object_passes_the_rules() -> None:
    """The example policy's expansion of a v1 claim is accepted by the rule set."""
    obj = document("v1", "ResourceClaim", [exact("v1", "gpu", "gpu.example.com")],
                   [config_entry("gpu")])
    mutation = mutate(obj, policy=catalog_policy(defaults=True, rewrite="rewrite"),
                      options=DEFAULT_OPTIONS)
    assert mutation.allowed
    assert mutation.patch


UNKNOWN: dict[str, Any] = {
    "a/b~c": {"nested": [1, 2.5, "ü", None, True]},
    "x": "  spaced  ",
    "big": 12345678901234567890,
}


@pytest.mark.parametrize(("version", "kind"), SHAPES)
def test_unknown_fields_survive_byte_for_byte(version: str, kind: str) -> None:
    """Fields draguard does not know, anywhere, are unchanged after the patch is applied."""
    obj = document(version, kind, [exact(version, "gpu", "gpu.example.com"),
                                   exact(version, "nic", "nic.example.com")],
                   [config_entry("gpu")])
    obj.update(copy.deepcopy(UNKNOWN))
    obj["metadata"]["annotations"] = {"example.com/a.b": "v"}
    devices = devices_of(obj)
    devices.update(copy.deepcopy(UNKNOWN))
    for request in devices["requests"]:
        request.update(copy.deepcopy(UNKNOWN))
    devices["config"][0].update(copy.deepcopy(UNKNOWN))
    text = json.dumps(obj, ensure_ascii=False)
    mutation = mutate(json.loads(text), policy=catalog_policy(defaults=True, rewrite="rewrite"),
                      options=DEFAULT_OPTIONS)
    assert mutation.patch
    result = patched(json.loads(text), mutation)
    after = devices_of(result)
    for holder in (result, after, *after["requests"], after["config"][0]):
        assert {k: json.dumps(holder[k], ensure_ascii=False) for k in UNKNOWN} == {
            k: json.dumps(v, ensure_ascii=False) for k, v in UNKNOWN.items()}
    assert result["metadata"] == json.loads(text)["metadata"]


def test_unknown_fields_inside_exactly_move_with_the_original() -> None:
    """A field unknown to draguard inside `exactly` travels into the original's subrequest."""
    obj = document("v1", "ResourceClaim",
                   [exact("v1", "gpu", "gpu.example.com", futureField={"k": [1]})])
    result = patched(obj, mutate(obj, policy=catalog_policy(), options=DEFAULT_OPTIONS))
    assert devices_of(result)["requests"][0]["firstAvailable"][0]["futureField"] == {"k": [1]}


def test_mutate_does_not_change_its_input() -> None:
    """The caller's object is left as it was; the change is only in the patch."""
    obj = document("v1beta1", "ResourceClaim", [exact("v1beta1", "gpu", "gpu.example.com")],
                   [config_entry("gpu")])
    before = copy.deepcopy(obj)
    mutate(obj, policy=catalog_policy(defaults=True, rewrite="rewrite"), options=DEFAULT_OPTIONS)
    assert obj == before


EXAMPLE_POLICY = Path(__file__).resolve().parents[2] / "examples" / "policy.yaml"


@pytest.mark.parametrize(("version", "kind"), SHAPES)
@pytest.mark.parametrize(
    ("device_class", "names"),
    [
        pytest.param("gpu.nvidia.com", ["requested", "h100", "a100-pair"], id="first"),
        pytest.param("gpu.portable.example.com", ["mi300", "any-gpu"], id="replace"),
    ],
)
def test_example_policy_expands_into_valid_objects(version: str, kind: str, device_class: str,
                                                   names: list[str]) -> None:
    """examples/policy.yaml turns a one-class template into an accepted prioritized one."""
    obj = document(version, kind, [exact(version, "gpu", device_class)], [config_entry("gpu")])
    mutation = mutate(obj, policy=load_policy(EXAMPLE_POLICY), options=DEFAULT_OPTIONS)
    result = patched(obj, mutation)
    request = devices_of(result)["requests"][0]
    assert [a["name"] for a in request["firstAvailable"]] == names
    assert devices_of(result)["config"][0]["requests"] == [f"gpu/{n}" for n in names]
    assert validate_object(result).valid
