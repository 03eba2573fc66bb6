"""Rendered messages, pinned once per error kind (upstream-rules.md §3.1, §3.10 worked examples)."""

from __future__ import annotations

from typing import Any

import pytest
from lint_fakes import parse_path

from draguard.schema.model.errors import aggregate_message, go_quote, invalid, required
from draguard.schema.model.paths import FieldPath
from draguard.schema.validate import validate_object


def claim(devices: dict[str, Any], version: str = "v1") -> dict[str, Any]:
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": devices}}


def sub(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "deviceClassName": "gpu.example.com", **fields}


LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
REF_MSG = ("must be the name of a request in the claim or the name of a request and a subrequest "
           "separated by '/'")


@pytest.mark.parametrize(
    ("devices", "expected"),
    [
        pytest.param({"requests": [{"name": "gpu"}]},
                     ["spec.devices.requests[0]: Required value: exactly one of `exactly` or "
                      "`firstAvailable` is required"], id="1-required-one-of"),
        pytest.param({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "x"},
                                    "firstAvailable": [sub("a")]}]},
                     ["spec.devices.requests[0]: Invalid value: null: exactly one of `exactly` or "
                      "`firstAvailable` is required, but multiple fields are set"], id="2-both"),
        pytest.param({"requests": [{"name": "gpu", "firstAvailable": [sub(f"s{i}") for i in range(9)]}]},
                     ["spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items"],
                     id="3-too-many"),
        pytest.param({"requests": [{"name": "gpu", "firstAvailable": [sub("a"), sub("a")]}]},
                     ['spec.devices.requests[0].firstAvailable[1]: Duplicate value: "a"'], id="4-duplicate"),
        pytest.param({"requests": [{"name": "gpu", "firstAvailable": [{"name": "a"}]}]},
                     ["spec.devices.requests[0].firstAvailable[0].deviceClassName: Required value"],
                     id="5-required"),
        pytest.param({"requests": [{"name": "gpu", "firstAvailable": [sub("a", count=-1)]}]},
                     ["spec.devices.requests[0].firstAvailable[0].count: Invalid value: -1: must be greater "
                      "than zero"], id="6-invalid-int"),
        pytest.param({"requests": [{"name": "gpu", "firstAvailable": [sub("a", allocationMode="All", count=2)]}]},
                     ["spec.devices.requests[0].firstAvailable[0].count: Invalid value: 2: must not be "
                      "specified when allocationMode is 'All'"], id="7-all-with-count"),
        pytest.param({"requests": [{"name": "gpu", "firstAvailable": [sub("a", allocationMode="Some")]}]},
                     ['spec.devices.requests[0].firstAvailable[0].allocationMode: Unsupported value: "Some": '
                      'supported values: "All", "ExactCount"'], id="8-not-supported"),
        pytest.param({"requests": [{"name": "gpu", "firstAvailable": [sub("a"), sub("b")]}],
                      "constraints": [{"requests": ["gpu/missing"], "matchAttribute": "a.com/b"}]},
                     [f'spec.devices.constraints[0].requests[0]: Invalid value: "gpu/missing": {REF_MSG}'],
                     id="9-reference"),
        pytest.param({"requests": [{"name": "gpu", "firstAvailable": [sub("a")]}],
                      "config": [{"requests": ["gpu/"], "opaque": {"driver": "a.b", "parameters": {}}}]},
                     [f'spec.devices.config[0].requests[0]: Invalid value: "": {LABEL_MSG}',
                      f'spec.devices.config[0].requests[0]: Invalid value: "gpu/": {REF_MSG}'],
                     id="11-empty-segment"),
        pytest.param({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "x", "selectors": [
            {"cel": {"expression": "x" * 10241}}]}}]},
                     ["spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: may not be "
                      "more than 10240 bytes"], id="too-long"),
        pytest.param({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "x"}}],
                      "constraints": [{"requests": ["gpu"]}]},
                     ['spec.devices.constraints[0]: Required value: exactly one of "matchAttribute" or '
                      '"distinctAttribute" is required, but multiple fields are set'], id="constraint-quirk"),
        pytest.param({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "x"}}],
                      "config": [{"opaque": {"driver": "a.b", "parameters": "s"}}]},
                     ['spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a '
                      "valid JSON object"], id="parameters-not-object"),
    ],
)
def test_worked_example_message(devices: dict[str, Any], expected: list[str]) -> None:
    """The full `path: body` text equals the apiserver's (§3.10)."""
    assert [str(e) for e in validate_object(claim(devices)).errors] == expected


def test_template_path_prefix_and_forbidden_message() -> None:
    """§3.10 #15 and rule 2: template paths start `spec.spec.`; forbidden metadata renders `cannot be set`."""
    doc = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
           "metadata": {"name": "t", "namespace": "ns"},
           "spec": {"metadata": {"uid": "x"},
                    "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [sub("a"), sub("a")]}]}}}}
    assert [str(e) for e in validate_object(doc).errors] == [
        "spec.metadata.uID: Forbidden: cannot be set",
        'spec.spec.devices.requests[0].firstAvailable[1]: Duplicate value: "a"',
    ]


def test_unknown_and_malformed_render() -> None:
    """draguard's own types render with the version and type that lack the field, and the JSON types.

    Like the apiserver's decoder (§3.0 step 1), decoding findings stop the rules: the
    request lacking both members is not reported on top.
    """
    doc = claim({"requests": [{"name": "gpu", "deviceClassName": "x", "firstAvailable": [sub("a", count="2")]}]})
    assert [str(e) for e in validate_object(doc).errors] == [
        "spec.devices.requests[0].deviceClassName: Unknown field: resource.k8s.io/v1 DeviceRequest has no such field",
        "spec.devices.requests[0].firstAvailable[0].count: Malformed value: expected integer, got string",
    ]


def test_aggregate_drops_repeats_and_brackets_several() -> None:
    """`ToAggregate`: one error bare, several bracketed, exact repeats dropped (§3.1)."""
    a = required(FieldPath.root("spec"), "x")
    b = invalid(FieldPath.root("spec", "devices"), 3, "bad")
    assert aggregate_message([a]) == "spec: Required value: x"
    assert aggregate_message([a, b, a]) == "[spec: Required value: x, spec.devices: Invalid value: 3: bad]"


@pytest.mark.parametrize(
    ("text", "quoted"),
    [("a", '"a"'), ('say "hi"', '"say \\"hi\\""'), ("tab\t", '"tab\\t"'), ("\x01", '"\\x01"'), ("é", '"é"')],
)
def test_go_quote(text: str, quoted: str) -> None:
    """String values are quoted like Go's %q."""
    assert go_quote(text) == quoted


@pytest.mark.parametrize("text", ["spec", "spec.devices.requests[0].name", "metadata.labels[app]", "a[1][2].b"])
def test_path_round_trip(text: str) -> None:
    """A rendered path parses back to the same path."""
    assert str(parse_path(text)) == text
