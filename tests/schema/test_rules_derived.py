"""`derivedAttributes` with and without DRADerivedAttributes (issue 17, rules/derived.py).

Upstream: staging/src/k8s.io/api/resource/v1/types.go (DeviceDerivedAttribute and its
unprefixed declarative tags), apimachinery pkg/api/validate strfmt.go
(ResourceFullyQualifiedName); the hand-written pkg/apis/resource/validation/validation.go
(validateDeviceDerivedAttributes, isAttributeUsedByConstraint, validateCELExpression with
derivedAttribute, validateDeviceClaim's total cost) and dynamic-resource-allocation
cel/compile.go (validateOutputType), kubernetes master at 009801d9.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from draguard.schema.cel.check import DERIVED_TYPE
from draguard.schema.model.options import Options
from draguard.schema.model.releases import release
from draguard.schema.rules.derived import NO_SLASH, TOTAL_COST, UNUSED
from draguard.schema.validate import validate_object

GATE = frozenset({"DRADerivedAttributes"})
# Estimated costs (draguard's estimator, cel/cost.py): one over 1,000,000 alone; each
# PRICEY about 300,000, so four of them pass one by one and not together.
EXPENSIVE = ("device.attributes.all(d, device.attributes[d].all(k, device.attributes.all("
             "e, device.attributes[e].all(j, k == j))))")
PRICEY = 'device.attributes.all(d, device.attributes[d].all(k, device.attributes["a"].all(j, k == j)))'
E = "spec.devices.requests[0].exactly.derivedAttributes"
S = "spec.devices.requests[1].firstAvailable[0].derivedAttributes"


def baseline(version: str = "v1") -> dict[str, Any]:
    """Valid with the gate on: each derived attribute is named by a constraint that
    applies to its request (the exact request by name, the subrequest by `parent/sub`)."""
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": {
            "requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "derivedAttributes": [
                    {"name": "derived/numa", "expression": "device.attributes['gpu.example.com'].numa"},
                ]}},
                {"name": "nic", "firstAvailable": [{"name": "a", "deviceClassName": "nic.example.com",
                                                    "derivedAttributes": [
                                                        {"name": "derived/numa", "expression": "1"},
                                                    ]}]},
            ],
            "constraints": [{"requests": ["gpu", "nic/a"], "matchAttribute": "derived/numa"}],
        }},
    }


def found(obj: dict[str, Any], k8s: str = "1.37", gates: frozenset[str] = GATE) -> list[tuple[str, str, str]]:
    options = Options(release=release(k8s), feature_gates=gates)
    return [(e.type.value, e.field, e.detail) for e in validate_object(obj, options=options).errors]


Mutation = Callable[[dict[str, Any]], None]


def _exact_attrs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    attrs: list[dict[str, Any]] = obj["spec"]["devices"]["requests"][0]["exactly"]["derivedAttributes"]
    return attrs


def _set(key: str, value: Any) -> Mutation:
    return lambda obj: _exact_attrs(obj)[0].__setitem__(key, value)


def _constraints(value: list[dict[str, Any]]) -> Mutation:
    return lambda obj: obj["spec"]["devices"].__setitem__("constraints", value)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda obj: None, [], id="baseline"),
        # A constraint without `requests` applies to every request.
        pytest.param(_constraints([{"matchAttribute": "derived/numa"}]), [], id="constraint-for-all"),
        # The subrequest's attribute is also in reach through its parent's name.
        pytest.param(_constraints([{"requests": ["gpu", "nic"], "distinctAttribute": "derived/numa"}]), [],
                     id="parent-name-distinct"),
        pytest.param(_constraints([{"requests": ["gpu"], "matchAttribute": "derived/numa"}]),
                     [("Invalid", f"{S}[0].name", UNUSED)], id="subrequest-unused"),
        pytest.param(_constraints([{"requests": ["nic/a"], "matchAttribute": "derived/numa"}]),
                     [("Invalid", f"{E}[0].name", UNUSED)], id="exact-unused"),
        # Unprefixed declarative tags: Required without detail, after hand-written errors.
        pytest.param(_set("name", ""), [("Required", f"{E}[0].name", "")], id="name-required"),
        pytest.param(_set("expression", ""), [("Required", f"{E}[0].expression", "")], id="expression-required"),
        # ResourceFullyQualifiedName's words (strfmt.go); the unused check (hand-written) first.
        pytest.param(_set("name", "numa"),
                     [("Invalid", f"{E}[0].name", UNUSED), ("Invalid", f"{E}[0].name", NO_SLASH)],
                     id="name-no-domain"),
        pytest.param(_set("name", "/numa"),
                     [("Invalid", f"{E}[0].name", UNUSED), ("Invalid", f"{E}[0].name", "prefix must not be empty")],
                     id="name-empty-prefix"),
        pytest.param(_set("name", "derived/"),
                     [("Invalid", f"{E}[0].name", UNUSED), ("Invalid", f"{E}[0].name", "name must not be empty")],
                     id="name-empty-name"),
        # 1.37 does not reject extra slashes (Release.rejects_extra_slashes).
        pytest.param(lambda obj: (_set("name", "a/b/c")(obj), _constraints([
            {"requests": ["gpu"], "matchAttribute": "a/b/c"},
            {"requests": ["nic"], "matchAttribute": "derived/numa"}])(obj)),
                     [], id="name-extra-slash-accepted"),
        pytest.param(lambda obj: obj["spec"]["devices"]["requests"][0]["exactly"].__setitem__(
            "derivedAttributes", [{"name": "derived/numa", "expression": "1"}] * 33),
            # validateSet's Duplicates (hand-written), then the declarative maxItems.
            [*(("Duplicate", f"{E}[{k}]", "") for k in range(1, 33)),
             ("TooMany", E, "must have at most 32 items")], id="too-many"),
        pytest.param(lambda obj: _exact_attrs(obj).append(dict(_exact_attrs(obj)[0])),
                     [("Duplicate", f"{E}[1]", "")], id="name-duplicate"),
        # gatherConstraintAttributes takes matchAttribute when both are set.
        pytest.param(_constraints([{"requests": ["gpu", "nic/a"], "matchAttribute": "other/x",
                                    "distinctAttribute": "derived/numa"}]),
                     [("Invalid", f"{E}[0].name", UNUSED), ("Invalid", f"{S}[0].name", UNUSED)],
                     id="match-taken-over-distinct"),
        # validateCELExpression(…, derivedAttribute=true): compiled, a scalar, a cost cap.
        pytest.param(_set("expression", "nope"), [("Invalid", f"{E}[0].expression",
                     "compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope' "
                     "(in container '')\n | nope\n | ^")], id="expression-compile"),
        pytest.param(_set("expression", "[1, 2]"),
                     [("Invalid", f"{E}[0].expression", DERIVED_TYPE + "list(int)")],
                     id="expression-list-without-list-attributes"),
        pytest.param(_set("expression", "1.5"),
                     [("Invalid", f"{E}[0].expression", DERIVED_TYPE + "double")], id="expression-double"),
        pytest.param(_set("expression", 'semver("1.0.0")'), [], id="expression-semver"),
        pytest.param(_set("expression", "true"), [], id="expression-bool"),
        # Its cost still counts towards the claim's total (validateCELExpression adds it).
        pytest.param(_set("expression", EXPENSIVE), [("Forbidden", f"{E}[0].expression",
                     "too complex, exceeds cost limit"), ("Forbidden", "spec.devices", TOTAL_COST)],
                     id="expression-cost"),
        pytest.param(_set("expression", "x" * 10241), [("TooLong", f"{E}[0].expression",
                     "may not be more than 10240 bytes")], id="expression-too-long"),
    ],
)
def test_derived_attributes_gate_on(mutate: Mutation, expected: list[tuple[str, str, str]]) -> None:
    obj = baseline()
    mutate(obj)
    assert found(obj) == expected


def test_declarative_errors_follow_hand_written_in_traversal_order() -> None:
    obj = baseline()
    _exact_attrs(obj).append({"name": "", "expression": ""})
    obj["spec"]["devices"]["requests"][1]["firstAvailable"][0]["derivedAttributes"][0]["name"] = "x"
    obj["spec"]["devices"]["constraints"].append({"requests": ["nic/b"], "matchAttribute": "derived/numa"})
    assert [(t, f) for t, f, _ in found(obj)] == [
        ("Invalid", f"{S}[0].name"),  # unused: hand-written, in the requests' walk
        ("Invalid", "spec.devices.constraints[1].requests[0]"),  # hand-written, not covered
        ("Required", f"{E}[1].name"),  # declarative, in the order the generated code walks
        ("Required", f"{E}[1].expression"),
        ("Invalid", f"{S}[0].name"),  # the format of "x"
    ]


@pytest.mark.parametrize("version", ["v1", "v1beta2"])
def test_gate_off_drops_the_field(version: str) -> None:
    obj = baseline(version)
    _exact_attrs(obj)[0]["name"] = ""
    assert found(obj, gates=frozenset()) == []


def test_release_without_the_field_reports_it_unknown() -> None:
    assert [t for t, _, _ in found(baseline(), k8s="1.36")] == ["Unknown", "Unknown"]


def test_gate_is_part_of_the_remembered_options() -> None:
    obj = baseline()
    _exact_attrs(obj)[0]["name"] = ""
    on = Options(release=release("1.37"), feature_gates=GATE, remember_specs=True)
    off = Options(release=release("1.37"), remember_specs=True)
    assert validate_object(copy.deepcopy(obj), options=on).errors
    assert not validate_object(copy.deepcopy(obj), options=off).errors


def test_total_cost_of_a_claim() -> None:
    """validateDeviceClaim: the summed cost, Forbidden at spec.devices after requests,
    constraints and config, before the declarative errors."""
    obj = baseline()
    _exact_attrs(obj)[:] = [{"name": f"derived/n{k}", "expression": PRICEY} for k in range(4)]
    _exact_attrs(obj).append({"name": "", "expression": "1"})
    obj["spec"]["devices"]["constraints"] = [
        {"requests": ["gpu"], "matchAttribute": f"derived/n{k}"} for k in range(4)
    ] + [{"matchAttribute": "derived/numa"}, {"requests": ["zzz"], "matchAttribute": "a/b"}]
    assert found(obj) == [
        ("Invalid", "spec.devices.constraints[5].requests[0]",
         "must be the name of a request in the claim or the name of a request and a "
         "subrequest separated by '/'"),
        ("Forbidden", "spec.devices", TOTAL_COST),
        ("Required", f"{E}[4].name", ""),
    ]
    del _exact_attrs(obj)[3]
    assert ("Forbidden", "spec.devices", TOTAL_COST) not in found(obj)


def test_feature_gates_flag_turns_the_field_on() -> None:
    """`--feature-gates=DRADerivedAttributes=true` gives the same answer as the option."""
    obj = baseline()
    _exact_attrs(obj)[0]["expression"] = "nope"
    gated = release("1.37").with_gates({"DRADerivedAttributes": True})
    assert not isinstance(gated, str)
    by_release = [(e.type.value, e.field) for e in validate_object(
        copy.deepcopy(obj), options=Options(release=gated)).errors]
    assert by_release == [("Invalid", f"{E}[0].expression")] == [(t, f) for t, f, _ in found(obj)]
