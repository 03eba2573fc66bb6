"""The cluster-aware checks (issue 20): each code fires and stays silent, at its path."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from draguard.schema.cluster.checks import (
    CLUSTER_CODES,
    CheckSettings,
    check_internal,
    check_object,
    device_references,
    stale_advice,
)
from draguard.schema.cluster.facts import ClusterFacts, facts_from_objects
from draguard.schema.model.options import Options
from draguard.schema.validate import validate_object

HERE = Path(__file__).resolve().parent
OBJECTS = list(yaml.safe_load_all((HERE / "objects" / "cluster.yaml").read_text()))
OPTIONS = Options(default_namespace="team")
GPU = "gpu.example.com"


def facts() -> ClusterFacts:
    return facts_from_objects(OBJECTS)


def baseline() -> dict[str, Any]:
    """A claim every check passes: two alternatives the cluster can satisfy.

    In namespace `ops`: no quota there, and the admin-access label set.
    """
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ops"},
            "spec": {"devices": {"requests": [
                {"name": "gpu", "firstAvailable": [
                    {"name": "two", "deviceClassName": GPU, "count": 2},
                    {"name": "one", "deviceClassName": GPU,
                     "selectors": [{"cel": {"expression":
                                            f'device.attributes["{GPU}"].model == "h100"'}}]}]},
            ]}}}


Mutation = Callable[[dict[str, Any]], None]


def alt(j: int, **fields: Any) -> Mutation:
    def mutate(claim: dict[str, Any]) -> None:
        claim["spec"]["devices"]["requests"][0]["firstAvailable"][j].update(fields)
    return mutate


def selector(expression: str) -> Mutation:
    return alt(1, selectors=[{"cel": {"expression": expression}}])


def namespace(name: str) -> Mutation:
    def mutate(claim: dict[str, Any]) -> None:
        claim["metadata"]["namespace"] = name
    return mutate


def add_request(request: dict[str, Any]) -> Mutation:
    def mutate(claim: dict[str, Any]) -> None:
        claim["spec"]["devices"]["requests"].append(request)
    return mutate


ALT0 = "spec.devices.requests[0].firstAvailable[0]"
ALT1 = "spec.devices.requests[0].firstAvailable[1]"
SEL1 = f"{ALT1}.selectors[0].cel.expression"

CASES = [
    pytest.param(lambda c: None, [], id="baseline"),
    pytest.param(alt(0, deviceClassName="a100.example.com"),
                 [("class-missing", f"{ALT0}.deviceClassName")], id="class-missing"),
    pytest.param(selector(f'device.attributes["{GPU}"].memroy >= 40'),
                 [("attribute-unknown", SEL1)], id="attribute-name-unknown"),
    pytest.param(selector(f'device.capacity["{GPU}"].memory.compareTo(quantity("1Gi")) > 0'),
                 [("attribute-unknown", SEL1)], id="capacity-name-unknown"),
    pytest.param(selector('device.attributes["nvidia.com"].model == "x"'),
                 [("attribute-unknown", SEL1)], id="domain-unknown"),
    pytest.param(selector('device.attributes["dra.example.com"].pcieRoot == "pci0"'), [],
                 id="qualified-attribute-known"),
    pytest.param(selector(f'has(device.attributes["{GPU}"].serial)'),
                 [("alternative-unsatisfiable", ALT1)], id="presence-test-is-no-error"),
    pytest.param(selector(f'"serial" in device.attributes["{GPU}"]'),
                 [("alternative-unsatisfiable", ALT1)], id="in-is-a-presence-test"),
    pytest.param(alt(0, count=5),
                 [("alternative-unsatisfiable", f"{ALT0}.count")], id="more-than-any-node"),
    pytest.param(alt(0, count=4), [], id="exactly-the-biggest-node"),
    pytest.param(alt(1, count=3),
                 [("alternative-unsatisfiable", f"{ALT1}.count")], id="selectors-narrow-the-node"),
    pytest.param(selector(f'device.attributes["{GPU}"].model == "b200"'),
                 [("alternative-unsatisfiable", ALT1)], id="no-device-matches"),
    pytest.param(alt(1, deviceClassName="nic.example.com", selectors=[], count=1), [],
                 id="all-nodes-devices-count"),
    pytest.param(alt(0, allocationMode="All", count=None), [], id="all-mode-needs-one"),
    pytest.param(lambda c: (namespace("team")(c), alt(0, count=3)(c)),
                 [("quota-exceeded", "spec.devices.requests")], id="quota-exceeded"),
    pytest.param(namespace("team"), [], id="quota-within-hard"),
    pytest.param(lambda c: (namespace("team")(c), alt(0, count=1)(c), add_request(
        {"name": "adm", "exactly": {"deviceClassName": GPU, "adminAccess": True}})(c)),
                 [("admin-access-namespace", "spec.devices.requests[1].adminAccess")],
                 id="admin-access-without-label"),
    pytest.param(add_request({"name": "adm", "exactly": {"deviceClassName": GPU,
                                                         "adminAccess": True}}), [],
                 id="admin-access-with-label"),
    pytest.param(lambda c: (namespace("unknown")(c), add_request(
        {"name": "adm", "exactly": {"deviceClassName": GPU, "adminAccess": True}})(c)), [],
                 id="admin-access-namespace-unknown"),
]


def found(claim: dict[str, Any], **kw: Any) -> list[tuple[str, str]]:
    verdict = check_object(claim, kw.pop("facts", None) or facts(),
                           kw.pop("settings", CheckSettings()), options=OPTIONS)
    return sorted((a.code, a.field) for a in verdict.denials + verdict.warnings)


@pytest.mark.parametrize(("mutation", "expected"), CASES)
def test_check(mutation: Mutation, expected: list[tuple[str, str]]) -> None:
    """Each mutation of the baseline gives exactly the expected codes at their paths."""
    claim = baseline()
    mutation(claim)
    claim["spec"]["devices"]["requests"][0]["firstAvailable"] = [
        {k: v for k, v in a.items() if v is not None}
        for a in claim["spec"]["devices"]["requests"][0]["firstAvailable"]]
    assert found(claim) == sorted(expected)


def test_class_missing_message_is_the_schedulers() -> None:
    """The message carries the scheduler's words for a missing class."""
    claim = baseline()
    alt(0, deviceClassName="a100.example.com")(claim)
    (advice,) = check_object(claim, facts(), CheckSettings(), options=OPTIONS).warnings
    assert "request gpu/two: device class a100.example.com does not exist" in advice.message


def test_unknown_names_nearest_first() -> None:
    """An unknown attribute lists the published names, the nearest first."""
    claim = baseline()
    selector(f'device.attributes["{GPU}"].modle == "x"')(claim)
    (advice,) = check_object(claim, facts(), CheckSettings(), options=OPTIONS).warnings
    assert advice.message.endswith("(published: model, memory)")


def test_best_offer_is_stated() -> None:
    """An alternative bigger than any node says the most one node offers."""
    claim = baseline()
    alt(0, count=9)(claim)
    (advice,) = check_object(claim, facts(), CheckSettings(), options=OPTIONS).warnings
    assert advice.message.endswith("the cluster offers at most 4 per node")


@pytest.mark.parametrize("level", ["deny", "warn", "off"])
def test_levels(level: str) -> None:
    """A code's level sends it to denials, to warnings, or nowhere."""
    claim = baseline()
    alt(0, deviceClassName="a100.example.com")(claim)
    settings = CheckSettings({"class-missing": level})  # type: ignore[dict-item]
    verdict = check_object(claim, facts(), settings, options=OPTIONS)
    assert (len(verdict.denials), len(verdict.warnings)) == {
        "deny": (1, 0), "warn": (0, 1), "off": (0, 0)}[level]


def test_ignore_annotation_silences() -> None:
    """`draguard.io/ignore` silences a cluster code like any other."""
    claim = baseline()
    alt(0, deviceClassName="a100.example.com")(claim)
    claim["metadata"]["annotations"] = {"draguard.io/ignore": "class-missing"}
    assert found(claim) == []


def test_nothing_without_the_kinds_loaded() -> None:
    """Facts that never listed DeviceClasses or slices say nothing about them."""
    claim = baseline()
    alt(0, deviceClassName="a100.example.com", count=99)(claim)
    assert found(claim, facts=ClusterFacts()) == []


def test_v1beta1_template() -> None:
    """A v1beta1 template is read through the hub shape; paths are the hub's."""
    template = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "team"},
                "spec": {"spec": {"devices": {"requests": [
                    {"name": "gpu", "deviceClassName": "nope.example.com"}]}}}}
    assert found(template) == [
        ("class-missing", "spec.spec.devices.requests[0].exactly.deviceClassName")]


def test_not_a_claim() -> None:
    """Objects other than claims and templates give an empty verdict."""
    assert found({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}) == []


@pytest.mark.parametrize(("expression", "expected"), [
    (f'device.attributes["{GPU}"].model == "a"', [("attributes", GPU, "model")]),
    (f'device.attributes["{GPU}"]["model"] == "a"', [("attributes", GPU, "model")]),
    (f'has(device.attributes["{GPU}"].model)', [("attributes", GPU, None)]),
    ('device.attributes[device.driver].model == "a"', []),
    (f'device.capacity["{GPU}"].mem.isGreaterThan(quantity("1"))', [("capacity", GPU, "mem")]),
    ('device.attributes["a.io"].x == 1 || device.attributes["b.io"].y == 2',
     [("attributes", "a.io", "x"), ("attributes", "b.io", "y")]),
    ('device.attributes["a.io"].x ==', []),  # does not compile: the rules say so
])
def test_device_references(expression: str, expected: list[tuple[str, str, str | None]]) -> None:
    """References come from the checked CEL tree, not from the text."""
    assert sorted(device_references(expression), key=str) == sorted(expected, key=str)


def test_stale_advice() -> None:
    """The stale warning names the view's state and the checks that did not run."""
    assert "still loading" in stale_advice(None, CheckSettings()).message
    advice = stale_advice(400, CheckSettings(stale_after_seconds=300))
    assert advice.code == "cluster-view-stale"
    assert "400s ago (more than 300s)" in advice.message
    assert all(code in advice.message for code in CLUSTER_CODES)


def test_input_is_not_changed() -> None:
    """check_object reads the object without changing it."""
    claim = baseline()
    before = copy.deepcopy(claim)
    found(claim)
    assert claim == before


def as_template(claim: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": claim["metadata"], "spec": {"spec": claim["spec"]}}


def as_v1beta1(claim: dict[str, Any]) -> dict[str, Any]:
    """The claim in v1beta1's flat request shape (no `exactly`)."""
    out = copy.deepcopy(claim)
    out["apiVersion"] = "resource.k8s.io/v1beta1"
    for request in out["spec"]["devices"]["requests"]:
        request.update(request.pop("exactly", {}))
    return out


@pytest.mark.parametrize("shape", [lambda c: c, as_template, as_v1beta1],
                         ids=["claim", "template", "v1beta1"])
@pytest.mark.parametrize(("mutation", "expected"), CASES)
def test_check_internal_is_check_object_on_the_rule_sets_verdict(
        mutation: Mutation, expected: list[tuple[str, str]],
        shape: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """The webhook's path (the rule set's prepared object, remembered per spec) finds what
    check_object finds reading the object itself, and leaves the shared object unchanged."""
    claim = baseline()
    mutation(claim)
    claim["spec"]["devices"]["requests"][0]["firstAvailable"] = [
        {k: v for k, v in a.items() if v is not None}
        for a in claim["spec"]["devices"]["requests"][0]["firstAvailable"]]
    obj = shape(claim)
    options = Options(default_namespace="team", remember_specs=True)
    verdict = validate_object(obj, options=options)
    assert verdict.internal is not None and verdict.kind is not None
    before = copy.deepcopy(verdict.internal)
    kept = check_internal(verdict.internal, verdict.kind, facts(), CheckSettings(),
                          options=options)
    assert kept == check_object(obj, facts(), CheckSettings(), options=options)
    assert verdict.internal == before


@pytest.mark.parametrize("devices", [
    pytest.param({"requests": "x"}, id="requests-not-a-list"),
    pytest.param({"requests": [1, {"name": "a", "firstAvailable": ["x", {"deviceClassName": 3}]}]},
                 id="items-not-mappings"),
    pytest.param({"requests": [{"name": "b", "exactly": {"deviceClassName": GPU, "count": "2",
                                                         "selectors": "x"}}]},
                 id="wrong-types"),
    pytest.param({"requests": [{"name": "b", "exactly": {
        "deviceClassName": GPU, "selectors": [{"cel": {"expression": "device.attributes["}}]}}]},
                 id="selector-does-not-compile"),
])
def test_malformed_claims_give_nothing(devices: dict[str, Any]) -> None:
    """What the rules refuse gives no cluster finding and no exception."""
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "team"}, "spec": {"devices": devices}}
    assert found(claim) == []


def mutated(mutation: Mutation) -> dict[str, Any]:
    claim = baseline()
    mutation(claim)
    claim["spec"]["devices"]["requests"][0]["firstAvailable"] = [
        {k: v for k, v in a.items() if v is not None}
        for a in claim["spec"]["devices"]["requests"][0]["firstAvailable"]]
    return claim


def renamed(claim: dict[str, Any], tag: str) -> dict[str, Any]:
    out = copy.deepcopy(claim)
    for request in out["spec"]["devices"]["requests"]:
        request["name"] = f"{request['name']}-{tag}"
        for sub in request.get("firstAvailable") or []:
            sub["name"] = f"{sub['name']}-{tag}"
    return out


def test_quiet_claims_are_remembered_without_their_names() -> None:
    """A snapshot remembers that a claim had no finding under what the checks read of it,
    names left out: a claim differing only in names is answered from that, while every
    case, checked after all the others on the same snapshot, still finds what it finds on
    fresh facts (messages included)."""
    shared = facts()
    for _ in range(2):
        for case in CASES:
            mutation, expected = case.values
            claim = mutated(mutation)
            assert found(claim, facts=shared) == sorted(expected)
            fresh = check_object(claim, facts(), CheckSettings(), options=OPTIONS)
            assert check_object(claim, shared, CheckSettings(), options=OPTIONS) == fresh
    cache = shared.snapshot().cache
    size = len(cache)
    for tag in ("a", "b"):
        assert found(renamed(baseline(), tag), facts=shared) == []
    assert len(cache) == size  # answered from the remembered key: nothing new kept
    admin = mutated(lambda c: (alt(0, count=1)(c), add_request(
        {"name": "adm", "exactly": {"deviceClassName": GPU, "adminAccess": True}})(c)))
    assert found(admin, facts=shared) == []  # in `ops`, labelled: quiet
    namespace("team")(admin)  # the same requests where the label is missing
    assert found(admin, facts=shared) == [("admin-access-namespace",
                                           "spec.devices.requests[1].adminAccess")]
    named = renamed(mutated(alt(0, deviceClassName="a100.example.com")), "c")
    message = check_object(named, shared, CheckSettings(), options=OPTIONS).warnings[0].message
    assert message.startswith("request gpu-c/two-c: device class a100.example.com")


def test_selector_outcomes_outlive_a_snapshot() -> None:
    """What a selector makes of a device kind is kept across snapshots (a slice event does
    not have every kind evaluated again), and the checks still follow the devices: node-b's
    H100s turned into B200s leave the `model == "h100"` alternative unsatisfiable."""
    shared = facts()
    matched = shared.snapshot().matched
    assert found(baseline(), facts=shared) == []
    assert matched  # the outcomes of the selector on the GPU kinds
    node_b = next(o for o in OBJECTS if o["metadata"]["name"] == "node-b-gpu")
    b200 = copy.deepcopy(node_b)
    for device in b200["spec"]["devices"]:
        device["attributes"]["model"] = {"string": "b200"}
    shared.apply("ResourceSlice", "MODIFIED", b200)
    assert shared.snapshot().matched is matched
    expected = [("alternative-unsatisfiable", ALT1)]
    assert found(baseline(), facts=shared) == expected
    others = [b200 if o is node_b else o for o in OBJECTS]
    assert found(baseline(), facts=facts_from_objects(others)) == expected
    shared.apply("ResourceSlice", "MODIFIED", node_b)
    assert found(baseline(), facts=shared) == []
