"""What the exported schemas accept and reject, per version, kind and release.

Scenario tables over a valid baseline with one mutation each (the upstream test
style); a rejection names the path where the schema complains, rendered like the
apiserver's paths. A Hypothesis property ties the schemas to the rule set: whatever
`validate_object` accepts, the schema of its shape accepts too.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from functools import cache
from typing import Any

import jsonschema
import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draguard.schema.export import Variant, build_schema
from draguard.schema.model.options import Options
from draguard.schema.model.releases import RELEASES, Release
from draguard.schema.model.shapes import identify
from draguard.schema.validate import validate_object

NEWEST = RELEASES["1.37"]
NESTED = ("v1", "v1beta2")
ALL = ("v1", "v1beta2", "v1beta1")
KINDS = ("ResourceClaim", "ResourceClaimTemplate")

Doc = dict[str, Any]
Mutation = Callable[[Doc, str], None]  # (claim spec, version) → mutated in place


def subrequest(name: str, cls: str, **extra: Any) -> Doc:
    return {"name": name, "deviceClassName": cls, **extra}


def baseline_spec(version: str) -> Doc:
    """A claim spec that uses every field the schemas constrain, valid in `version`."""
    nic = {
        "deviceClassName": "nic.example.com",
        "selectors": [{"cel": {"expression": "device.driver == 'nic.example.com'"}}],
        "allocationMode": "ExactCount",
        "count": 2,
        "adminAccess": False,
        "tolerations": [
            {
                "key": "example.com/maintenance",
                "operator": "Equal",
                "value": "soon",
                "effect": "NoSchedule",
                "tolerationSeconds": 30,
            },
            {"operator": "Exists"},
        ],
        "capacity": {"requests": {"memory": "10Gi", "bandwidth": 2}},
    }
    gpu = {
        "name": "gpu",
        "firstAvailable": [
            subrequest(
                "big",
                "big.example.com",
                count=1,
                selectors=[{"cel": {"expression": "true"}}],
                tolerations=[{"key": "t", "effect": "NoExecute"}],
            ),
            subrequest("small", "small.example.com", allocationMode="All"),
        ],
    }
    second = {"name": "nic", **nic} if version == "v1beta1" else {"name": "nic", "exactly": nic}
    return {
        "devices": {
            "requests": [gpu, second],
            "constraints": [
                {"requests": ["gpu", "nic"], "matchAttribute": "example.com/numa"},
                {"requests": ["gpu/big"], "distinctAttribute": "example.com/pcieRoot"},
            ],
            "config": [
                {
                    "requests": ["gpu/big", "nic"],
                    "opaque": {
                        "driver": "gpu.example.com",
                        "parameters": {"sharing": {"on": True}},
                    },
                },
            ],
        }
    }


def document(kind: str, version: str, spec: Doc) -> Doc:
    meta = {"name": "claim", "namespace": "team-a", "labels": {"app.kubernetes.io/name": "x"}}
    if kind == "ResourceClaimTemplate":
        spec = {"metadata": {"labels": {"tier": "gpu"}}, "spec": spec}
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": kind,
        "metadata": meta,
        "spec": spec,
    }


@cache
def validator(kind: str, version: str, parallel: bool, release: Release) -> Any:
    return jsonschema.Draft202012Validator(build_schema(Variant(kind, version, parallel), release))


def render(path: Any) -> str:
    """A jsonschema path in the apiserver's spelling: `spec.devices.requests[0].name`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def schema_errors(
    doc: Doc,
    *,
    parallel: bool = False,
    release: Release = NEWEST,
    variant: tuple[str, str] | None = None,
) -> set[str]:
    """Rendered paths of the schema's errors; the schema is the document's own unless
    `variant` (kind, version) names another."""
    kind, version = variant or (doc["kind"], doc["apiVersion"].split("/")[1])
    check = validator(kind, version, parallel, release)
    return {render(e.absolute_path) for e in check.iter_errors(doc)}


def spec_prefix(kind: str) -> str:
    return "spec.spec" if kind == "ResourceClaimTemplate" else "spec"


# ---------------------------------------------------------------------------------------
# Mutations. `exact(spec, version)` is the exact request body: `exactly` or the flat request.


def exact(spec: Doc, version: str) -> Doc:
    nic: Doc = spec["devices"]["requests"][1]
    return nic if version == "v1beta1" else nic["exactly"]


def exact_path(version: str) -> str:
    return "devices.requests[1]" if version == "v1beta1" else "devices.requests[1].exactly"


def first(spec: Doc) -> Doc:
    sub: Doc = spec["devices"]["requests"][0]["firstAvailable"][0]
    return sub


def gpu(spec: Doc) -> Doc:
    req: Doc = spec["devices"]["requests"][0]
    return req


def on_exact(**fields: Any) -> Mutation:
    return lambda spec, version: exact(spec, version).update(fields)


def on_first(**fields: Any) -> Mutation:
    return lambda spec, _v: first(spec).update(fields)


def on_gpu(**fields: Any) -> Mutation:
    return lambda spec, _v: gpu(spec).update(fields)


def on_devices(**fields: Any) -> Mutation:
    return lambda spec, _v: spec["devices"].update(fields)


def on_constraint(i: int, **fields: Any) -> Mutation:
    return lambda spec, _v: spec["devices"]["constraints"][i].update(fields)


def on_config(**fields: Any) -> Mutation:
    return lambda spec, _v: spec["devices"]["config"][0].update(fields)


def on_opaque(**fields: Any) -> Mutation:
    return lambda spec, _v: spec["devices"]["config"][0]["opaque"].update(fields)


def without(getter: Callable[[Doc, str], Doc], key: str) -> Mutation:
    return lambda spec, version: getter(spec, version).pop(key)


def both(*mutations: Mutation) -> Mutation:
    def apply(spec: Doc, version: str) -> None:
        for m in mutations:
            m(spec, version)

    return apply


def nested_both_set(spec: Doc, version: str) -> None:
    gpu(spec)["exactly"] = {"deviceClassName": "x.example.com"}


def requests_n(n: int) -> Mutation:
    def apply(spec: Doc, version: str) -> None:
        spec["devices"]["requests"] = [
            {"name": f"r{i}", "deviceClassName": "c"}
            if version == "v1beta1"
            else {"name": f"r{i}", "exactly": {"deviceClassName": "c"}}
            for i in range(n)
        ]
        spec["devices"].pop("constraints")
        spec["devices"].pop("config")

    return apply


def subrequests_n(n: int) -> Mutation:
    return on_gpu(firstAvailable=[subrequest(f"s{i}", "c") for i in range(n)])


def selectors_n(n: int) -> Mutation:
    return on_exact(selectors=[{"cel": {"expression": "true"}}] * n)


# (id, versions, mutation, path relative to the claim spec, or None when accepted)
Case = tuple[str, tuple[str, ...], Mutation, str | None]

SPEC_CASES: list[Case] = [
    ("baseline", ALL, lambda spec, v: None, None),
    # Rule 7: the one-of, as each shape spells it.
    (
        "neither-exactly-nor-firstAvailable",
        ALL,
        without(lambda s, v: gpu(s), "firstAvailable"),
        "devices.requests[0]",
    ),
    (
        "empty-firstAvailable-counts-as-absent",
        ALL,
        on_gpu(firstAvailable=[]),
        "devices.requests[0]",
    ),
    (
        "null-firstAvailable-counts-as-absent",
        ALL,
        on_gpu(firstAvailable=None),
        "devices.requests[0]",
    ),
    ("exactly-and-firstAvailable", NESTED, nested_both_set, "devices.requests[0]"),
    (
        "v1beta1-class-and-firstAvailable",
        ("v1beta1",),
        on_gpu(deviceClassName="c.example.com"),
        "devices.requests[0]",
    ),
    (
        "v1beta1-empty-selectors-next-to-firstAvailable",
        ("v1beta1",),
        on_gpu(selectors=[]),
        "devices.requests[0]",
    ),
    (
        "v1beta1-empty-tolerations-next-to-firstAvailable",
        ("v1beta1",),
        on_gpu(tolerations=[]),
        "devices.requests[0]",
    ),
    (
        "v1beta1-adminAccess-false-next-to-firstAvailable",
        ("v1beta1",),
        on_gpu(adminAccess=False),
        "devices.requests[0]",
    ),
    ("v1beta1-count-next-to-firstAvailable", ("v1beta1",), on_gpu(count=2), "devices.requests[0]"),
    ("v1beta1-empty-class-next-to-firstAvailable", ("v1beta1",), on_gpu(deviceClassName=""), None),
    ("v1beta1-null-selectors-next-to-firstAvailable", ("v1beta1",), on_gpu(selectors=None), None),
    ("v1beta1-zero-count-next-to-firstAvailable", ("v1beta1",), on_gpu(count=0), None),
    ("v1beta1-null-class-next-to-firstAvailable", ("v1beta1",), on_gpu(deviceClassName=None), None),
    ("null-toleration-key", ALL, on_exact(tolerations=[{"key": None, "operator": "Exists"}]), None),
    (
        "null-match-with-distinct",
        ALL,
        on_constraint(1, matchAttribute=None),
        None,
    ),
    (
        "v1beta1-flat-count-without-class",
        ("v1beta1",),
        without(exact, "deviceClassName"),
        "devices.requests[1]",
    ),
    # Rules 3, 8, 14, 5: list limits.
    ("32-requests", ALL, requests_n(32), None),
    ("33-requests", ALL, requests_n(33), "devices.requests"),
    ("8-subrequests", ALL, subrequests_n(8), None),
    ("9-subrequests", ALL, subrequests_n(9), "devices.requests[0].firstAvailable"),
    ("32-selectors", ALL, selectors_n(32), None),
    ("33-selectors", ALL, selectors_n(33), "{exact}.selectors"),
    (
        "33-constraints",
        ALL,
        on_devices(constraints=[{"matchAttribute": "a.b/c"}] * 33),
        "devices.constraints",
    ),
    (
        "33-configs",
        ALL,
        on_devices(config=[{"opaque": {"driver": "d", "parameters": {}}}] * 33),
        "devices.config",
    ),
    (
        "33-constraint-references",
        ALL,
        on_constraint(0, requests=[f"r{i}" for i in range(33)]),
        "devices.constraints[0].requests",
    ),
    # Rules 6, 10a: names.
    ("request-name-uppercase", ALL, on_gpu(name="GPU"), "devices.requests[0].name"),
    ("request-name-with-dot", ALL, on_gpu(name="g.pu"), "devices.requests[0].name"),
    ("request-name-63", ALL, on_gpu(name="g" * 63), None),
    ("request-name-64", ALL, on_gpu(name="g" * 64), "devices.requests[0].name"),
    ("request-name-empty", ALL, on_gpu(name=""), "devices.requests[0].name"),
    ("request-name-missing", ALL, without(lambda s, v: gpu(s), "name"), "devices.requests[0]"),
    (
        "subrequest-name-underscore",
        ALL,
        on_first(name="big_one"),
        "devices.requests[0].firstAvailable[0].name",
    ),
    # Rules 10b, 11: classes.
    (
        "subrequest-class-missing",
        ALL,
        without(lambda s, v: first(s), "deviceClassName"),
        "devices.requests[0].firstAvailable[0]",
    ),
    (
        "subrequest-class-invalid",
        ALL,
        on_first(deviceClassName="Big_GPU"),
        "devices.requests[0].firstAvailable[0].deviceClassName",
    ),
    ("exact-class-too-long", ALL, on_exact(deviceClassName="a" * 254), "{exact}.deviceClassName"),
    ("exact-class-253", ALL, on_exact(deviceClassName=".".join(["a" * 63] * 4)[:253]), None),
    # Rule 15: allocationMode / count.
    ("allocationMode-empty-is-defaulted", ALL, on_exact(allocationMode=""), None),
    ("allocationMode-unknown", ALL, on_exact(allocationMode="Some"), "{exact}.allocationMode"),
    ("count-negative", ALL, on_first(count=-1), "devices.requests[0].firstAvailable[0].count"),
    ("count-zero-is-defaulted", ALL, on_first(count=0), None),
    ("all-with-count", ALL, on_exact(allocationMode="All", count=2), "{exact}.count"),
    ("all-with-zero-count", ALL, on_exact(allocationMode="All", count=0), None),
    ("count-as-string", ALL, on_exact(count="2"), "{exact}.count"),
    ("count-beyond-int64", ALL, on_exact(count=2**63), "{exact}.count"),
    # Rule 16: tolerations.
    (
        "toleration-exists-with-value",
        ALL,
        on_exact(tolerations=[{"operator": "Exists", "value": "v"}]),
        "{exact}.tolerations[0].value",
    ),
    (
        "toleration-operator-unknown",
        ALL,
        on_exact(tolerations=[{"operator": "Like"}]),
        "{exact}.tolerations[0].operator",
    ),
    ("toleration-effect-None", ALL, on_exact(tolerations=[{"effect": "None"}]), None),
    (
        "toleration-effect-unknown",
        ALL,
        on_exact(tolerations=[{"effect": "Later"}]),
        "{exact}.tolerations[0].effect",
    ),
    (
        "toleration-key-invalid",
        ALL,
        on_exact(tolerations=[{"key": "no spaces"}]),
        "{exact}.tolerations[0].key",
    ),
    (
        "toleration-empty-key-with-equal",
        ALL,
        on_exact(tolerations=[{"key": "", "operator": "Equal"}]),
        None,
    ),
    (
        "toleration-value-too-long",
        ALL,
        on_exact(tolerations=[{"key": "k", "value": "v" * 64}]),
        "{exact}.tolerations[0].value",
    ),
    (
        "toleration-unknown-field",
        ALL,
        on_exact(tolerations=[{"key": "k", "oops": 1}]),
        "{exact}.tolerations[0]",
    ),
    # Rule 14: selectors.
    ("selector-without-cel", ALL, on_exact(selectors=[{}]), "{exact}.selectors[0]"),
    (
        "expression-empty",
        ALL,
        on_exact(selectors=[{"cel": {"expression": ""}}]),
        "{exact}.selectors[0].cel.expression",
    ),
    ("expression-10240", ALL, on_exact(selectors=[{"cel": {"expression": "t" * 10240}}]), None),
    (
        "expression-10241",
        ALL,
        on_exact(selectors=[{"cel": {"expression": "t" * 10241}}]),
        "{exact}.selectors[0].cel.expression",
    ),
    # Capacity: only the decoder's quantity syntax.
    (
        "capacity-bad-quantity",
        ALL,
        on_exact(capacity={"requests": {"memory": "ten"}}),
        "{exact}.capacity.requests.memory",
    ),
    # Rules 17-20: constraints.
    (
        "constraint-duplicate-reference",
        ALL,
        on_constraint(0, requests=["gpu", "gpu"]),
        "devices.constraints[0].requests",
    ),
    (
        "constraint-three-segments",
        ALL,
        on_constraint(0, requests=["a/b/c"]),
        "devices.constraints[0].requests[0]",
    ),
    (
        "constraint-empty-subrequest",
        ALL,
        on_constraint(0, requests=["gpu/"]),
        "devices.constraints[0].requests[0]",
    ),
    (
        "constraint-no-attribute",
        ALL,
        without(lambda s, v: s["devices"]["constraints"][0], "matchAttribute"),
        "devices.constraints[0]",
    ),
    (
        "constraint-attribute-without-domain",
        ALL,
        on_constraint(0, matchAttribute="numa"),
        "devices.constraints[0].matchAttribute",
    ),
    (
        # No release rejects a third segment (kubernetes#141869 open, PR #141644 unmerged).
        "constraint-attribute-two-slashes",
        ALL,
        on_constraint(0, matchAttribute="a.b/c/d"),
        None,
    ),
    (
        "constraint-attribute-long-name",
        ALL,
        on_constraint(0, matchAttribute="a.b/" + "n" * 33),
        "devices.constraints[0].matchAttribute",
    ),
    (
        "constraint-attribute-caseless-domain",
        ALL,
        on_constraint(0, matchAttribute="DRA.Example.COM/x"),
        None,
    ),
    (
        "constraint-distinct-invalid",
        ALL,
        on_constraint(1, distinctAttribute="nodomain"),
        "devices.constraints[1].distinctAttribute",
    ),
    (
        "constraint-match-wins-over-bad-distinct",
        ALL,
        on_constraint(0, distinctAttribute="ignored anyway"),
        None,
    ),
    # Rule 21: config.
    (
        "config-without-opaque",
        ALL,
        without(lambda s, v: s["devices"]["config"][0], "opaque"),
        "devices.config[0]",
    ),
    ("config-driver-empty", ALL, on_opaque(driver=""), "devices.config[0].opaque.driver"),
    ("config-driver-mixed-case", ALL, on_opaque(driver="GPU.Example.com"), None),
    ("config-driver-64", ALL, on_opaque(driver="d" * 64), "devices.config[0].opaque.driver"),
    (
        "config-parameters-list",
        ALL,
        on_opaque(parameters=[1]),
        "devices.config[0].opaque.parameters",
    ),
    (
        "config-parameters-null",
        ALL,
        on_opaque(parameters=None),
        "devices.config[0].opaque.parameters",
    ),
    (
        "config-parameters-missing",
        ALL,
        without(lambda s, v: s["devices"]["config"][0]["opaque"], "parameters"),
        "devices.config[0].opaque",
    ),
    (
        "config-duplicate-reference",
        ALL,
        on_config(requests=["nic", "nic"]),
        "devices.config[0].requests",
    ),
    # Unknown fields (contract §3 `Unknown`).
    (
        "subrequest-adminAccess",
        ALL,
        on_first(adminAccess=True),
        "devices.requests[0].firstAvailable[0]",
    ),
    (
        "subrequest-firstAvailable",
        ALL,
        on_first(firstAvailable=[subrequest("x", "c")]),
        "devices.requests[0].firstAvailable[0]",
    ),
    ("v1-flat-class", NESTED, on_gpu(deviceClassName="c"), "devices.requests[0]"),
    (
        "v1beta1-exactly",
        ("v1beta1",),
        on_gpu(exactly={"deviceClassName": "c"}),
        "devices.requests[0]",
    ),
    ("exact-unknown-field", ALL, on_exact(colour="red"), "{exact}"),
    (
        "devices-prioritizedRequests-in-upstream-shape",
        ALL,
        on_devices(prioritizedRequests=[]),
        "devices",
    ),
    # In the newest types, behind an alpha gate: accepted, then dropped (upstream-rules.md §3.8).
    ("derivedAttributes-accepted", ALL, on_exact(derivedAttributes=[]), None),
]


def _spec_params() -> list[Any]:
    params = []
    for case_id, versions, mutation, path in SPEC_CASES:
        for version in versions:
            for kind in KINDS:
                tag = "claim" if kind == "ResourceClaim" else "template"
                params.append(
                    pytest.param(kind, version, mutation, path, id=f"{version}-{tag}-{case_id}")
                )
    return params


@pytest.mark.parametrize(("kind", "version", "mutation", "path"), _spec_params())
def test_claim_spec_cases(kind: str, version: str, mutation: Mutation, path: str | None):
    """The schema of the document's version accepts it, or rejects it at the expected path."""
    spec = baseline_spec(version)
    mutation(spec, version)
    errors = schema_errors(document(kind, version, spec))
    if path is None:
        assert errors == set()
    else:
        full = f"{spec_prefix(kind)}.{path.format(exact=exact_path(version))}"
        assert full in errors, errors


def _document_case(mutate: Callable[[Doc], None]) -> Callable[[str, str], Doc]:
    def build(kind: str, version: str) -> Doc:
        doc = document(kind, version, baseline_spec(version))
        mutate(doc)
        return doc

    return build


DOCUMENT_CASES = [
    (
        "generateName-instead-of-name",
        KINDS,
        lambda d: d["metadata"].update(name=None, generateName="claim-"),
        None,
    ),
    ("no-name", KINDS, lambda d: d["metadata"].pop("name"), "metadata"),
    ("no-metadata", KINDS, lambda d: d.pop("metadata"), ""),
    ("name-not-a-subdomain", KINDS, lambda d: d["metadata"].update(name="Claim"), "metadata.name"),
    ("namespace-omitted-kubectl-fills-it", KINDS, lambda d: d["metadata"].pop("namespace"), None),
    (
        "bad-label-value",
        KINDS,
        lambda d: d["metadata"]["labels"].update(a="no spaces"),
        "metadata.labels.a",
    ),
    (
        "bad-label-key",
        KINDS,
        lambda d: d["metadata"]["labels"].update({"a/b/c": "x"}),
        "metadata.labels",
    ),
    ("unknown-top-level-field", KINDS, lambda d: d.update(extra=1), ""),
    ("wrong-kind", ("ResourceClaim",), lambda d: d.update(kind="ResourceClaimTemplate"), "kind"),
    (
        "wrong-api-version",
        KINDS,
        lambda d: d.update(apiVersion="resource.k8s.io/v1alpha3"),
        "apiVersion",
    ),
    (
        "claim-status-is-reset",
        ("ResourceClaim",),
        lambda d: d.update(status={"allocation": {}}),
        None,
    ),
    ("template-has-no-status", ("ResourceClaimTemplate",), lambda d: d.update(status={}), ""),
    (
        "template-meta-name",
        ("ResourceClaimTemplate",),
        lambda d: d["spec"]["metadata"].update(name="x"),
        "spec.metadata.name",
    ),
    (
        "template-meta-zero-values",
        ("ResourceClaimTemplate",),
        lambda d: d["spec"]["metadata"].update(name="", creationTimestamp=None, finalizers=[]),
        None,
    ),
    (
        "template-meta-bad-label",
        ("ResourceClaimTemplate",),
        lambda d: d["spec"]["metadata"]["labels"].update(tier="-x"),
        "spec.metadata.labels.tier",
    ),
    (
        "template-without-inner-spec",
        ("ResourceClaimTemplate",),
        lambda d: d["spec"].pop("spec"),
        None,
    ),
]


@pytest.mark.parametrize(
    ("kind", "version", "mutate", "path"),
    [
        pytest.param(kind, version, mutate, path, id=f"{version}-{kind}-{case_id}")
        for case_id, kinds, mutate, path in DOCUMENT_CASES
        for kind in kinds
        for version in ALL
    ],
)
def test_document_cases(kind: str, version: str, mutate: Callable[[Doc], None], path: str | None):
    """Top-level fields and metadata: accepted, or rejected at the expected path."""
    doc = document(kind, version, baseline_spec(version))
    mutate(doc)
    errors = schema_errors(doc, variant=(kind, version))
    assert errors == set() if path is None else path in errors, errors


# ---------------------------------------------------------------------------------------
# The parallel shape (contract §2).


def parallel_spec(version: str) -> Doc:
    spec = baseline_spec(version)
    prioritized = spec["devices"]["requests"].pop(0)
    spec["devices"]["prioritizedRequests"] = [
        {"name": prioritized["name"], "options": prioritized["firstAvailable"]}
    ]
    return spec


PARALLEL_CASES: list[tuple[str, Callable[[Doc], None], str | None]] = [
    ("baseline", lambda s: None, None),
    ("only-prioritized", lambda s: s["devices"].update(requests=[]), None),
    (
        "entry-without-options",
        lambda s: s["devices"]["prioritizedRequests"][0].pop("options"),
        "devices.prioritizedRequests[0]",
    ),
    (
        "entry-with-empty-options",
        lambda s: s["devices"]["prioritizedRequests"][0].update(options=[]),
        "devices.prioritizedRequests[0].options",
    ),
    (
        "nine-options",
        lambda s: s["devices"]["prioritizedRequests"][0].update(
            options=[subrequest(f"o{i}", "c") for i in range(9)]
        ),
        "devices.prioritizedRequests[0].options",
    ),
    (
        "entry-adminAccess",
        lambda s: s["devices"]["prioritizedRequests"][0].update(adminAccess=True),
        "devices.prioritizedRequests[0]",
    ),
    (
        "option-name-invalid",
        lambda s: s["devices"]["prioritizedRequests"][0]["options"][0].update(name="A"),
        "devices.prioritizedRequests[0].options[0].name",
    ),
    (
        "33-prioritized",
        lambda s: s["devices"].update(
            prioritizedRequests=[
                {"name": f"p{i}", "options": [subrequest("o", "c")]} for i in range(33)
            ]
        ),
        "devices.prioritizedRequests",
    ),
    # Contract §2: `requests` of the parallel shape holds only exact requests.
    (
        "firstAvailable-left-in-requests",
        lambda s: s["devices"]["requests"].append(
            {"name": "x", "firstAvailable": [subrequest("o", "c")]}
        ),
        "devices.requests[1]",
    ),
    (
        "neither-in-requests",
        lambda s: s["devices"]["requests"].append({"name": "x"}),
        "devices.requests[1]",
    ),
]


@pytest.mark.parametrize(
    ("kind", "version", "mutate", "path"),
    [
        pytest.param(kind, version, mutate, path, id=f"{version}-{kind}-{case_id}")
        for case_id, mutate, path in PARALLEL_CASES
        for kind in KINDS
        for version in ALL
    ],
)
def test_parallel_cases(kind: str, version: str, mutate: Callable[[Doc], None], path: str | None):
    """The `-parallel` schemas accept the parallel layout and reject its broken forms."""
    spec = parallel_spec(version)
    mutate(spec)
    errors = schema_errors(document(kind, version, spec), parallel=True)
    if path is None:
        assert errors == set()
    else:
        assert f"{spec_prefix(kind)}.{path}" in errors, errors


def test_upstream_schema_rejects_the_parallel_layout():
    """A parallel document is not mistaken for an upstream one: the upstream schema rejects it."""
    errors = schema_errors(document("ResourceClaim", "v1", parallel_spec("v1")))
    assert "spec.devices" in errors


# ---------------------------------------------------------------------------------------
# Older releases: fields that do not exist yet, gates that are off by default (§2.3, §3.8).

RELEASE_CASES = [
    ("1.33-firstAvailable-dropped", "1.33", "v1beta2", lambda s, v: None, "devices.requests[0]"),
    (
        "1.33-v1beta1-class-and-firstAvailable-survive-the-drop",
        "1.33",
        "v1beta1",
        on_gpu(deviceClassName="c"),
        None,
    ),
    ("1.35-distinct-only-needs-match", "1.35", "v1", lambda s, v: None, "devices.constraints[1]"),
    (
        "1.35-tolerations-dropped-unchecked",
        "1.35",
        "v1",
        both(
            on_exact(tolerations=[{"effect": "Later", "operator": "Like"}]),
            on_constraint(1, matchAttribute="example.com/numa"),
        ),
        None,
    ),
    (
        "1.36-tolerations-checked",
        "1.36",
        "v1",
        on_exact(tolerations=[{"effect": "Later"}]),
        "devices.requests[1].exactly.tolerations[0].effect",
    ),
    ("1.38-v1beta2-still-there", "1.38", "v1beta2", lambda s, v: None, None),
    ("1.36-null-match-with-distinct", "1.36", "v1", on_constraint(1, matchAttribute=None), None),
    (
        "1.36-three-part-attribute-unchecked",
        "1.36",
        "v1",
        on_constraint(0, matchAttribute="a/b/c"),
        None,
    ),
    (
        # No release rejects it (kubernetes#141869 open, PR #141644 unmerged).
        "1.37-three-part-attribute-unchecked",
        "1.37",
        "v1",
        on_constraint(0, matchAttribute="a/b/c"),
        None,
    ),
]


def release_spec(release: str, version: str) -> Doc:
    """The baseline without what `release` does not have: 1.33 lacks capacity and
    distinctAttribute (§2.3)."""
    spec = baseline_spec(version)
    if release == "1.33":
        exact(spec, version).pop("capacity")
        spec["devices"]["constraints"].pop(1)
    return spec


@pytest.mark.parametrize(
    ("release", "version", "mutation", "path"),
    [pytest.param(rel, ver, m, p, id=cid) for cid, rel, ver, m, p in RELEASE_CASES],
)
def test_release_cases(release: str, version: str, mutation: Mutation, path: str | None):
    """A release's schema encodes that release's fields and default gates."""
    spec = release_spec(release, version)
    mutation(spec, version)
    errors = schema_errors(document("ResourceClaim", version, spec), release=RELEASES[release])
    if path is None:
        assert errors == set()
    else:
        assert f"spec.{path}" in errors, errors


@pytest.mark.parametrize(
    ("release", "field", "rejected"),
    [
        pytest.param("1.33", "capacity", True, id="1.33-capacity-unknown"),
        pytest.param("1.34", "capacity", False, id="1.34-capacity-known"),
        pytest.param("1.33", "distinctAttribute", True, id="1.33-distinctAttribute-unknown"),
    ],
)
def test_fields_newer_than_the_release_are_unknown(release: str, field: str, rejected: bool):
    """A field the release's types lack (§2.3) is rejected where it appears."""
    spec = release_spec("1.33", "v1beta2")
    if field == "capacity":
        exact(spec, "v1beta2")["capacity"] = {"requests": {"memory": "1Gi"}}
        where = "spec.devices.requests[1].exactly"
    else:
        spec["devices"]["constraints"][0]["distinctAttribute"] = "example.com/x"
        where = "spec.devices.constraints[0]"
    errors = schema_errors(document("ResourceClaim", "v1beta2", spec), release=RELEASES[release])
    assert (where in errors) is rejected, errors


# ---------------------------------------------------------------------------------------
# The schemas never reject what the rule set accepts.

MUTATIONS = [m for _id, _versions, m, _path in SPEC_CASES]


def shape_errors(doc: Doc, release: Release) -> set[str]:
    """Errors of the schema the rule set would pick: `identify` decides nested or parallel."""
    shape = identify(doc)
    assert shape is not None
    return schema_errors(doc, parallel=shape.parallel, release=release)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KINDS),
    version=st.sampled_from(ALL),
    release=st.sampled_from(["1.33", "1.34", "1.35", "1.36", "1.37"]),
    picks=st.lists(st.integers(0, len(MUTATIONS) - 1), max_size=3),
)
def test_schema_accepts_whatever_the_rule_set_accepts(kind, version, release, picks):
    """A document that `validate_object` finds valid is accepted by its shape's schema."""
    chosen = RELEASES[release]
    if not chosen.has_api_version(version):
        return
    spec = release_spec(release, version)
    if not chosen.consumable_capacity and len(spec["devices"]["constraints"]) > 1:
        spec["devices"]["constraints"].pop(1)  # distinctAttribute is dropped: keep it valid
    for i in picks:
        # An earlier mutation may have removed what this one edits.
        with contextlib.suppress(KeyError, IndexError, TypeError, AttributeError):
            MUTATIONS[i](spec, version)
    doc = copy.deepcopy(document(kind, version, spec))
    if validate_object(doc, options=Options(release=chosen)).valid:
        assert shape_errors(doc, chosen) == set()


# Fields whose only rule is a format: here schema and rule set must agree both ways.
def _put_request_name(doc: Doc, version: str, value: str) -> None:
    extra = (
        {"name": value, "deviceClassName": "c"}
        if version == "v1beta1"
        else {"name": value, "exactly": {"deviceClassName": "c"}}
    )
    doc["spec"]["devices"]["requests"].append(extra)


def _put_toleration(field: str) -> Callable[[Doc, str, str], None]:
    def put(doc: Doc, version: str, value: str) -> None:
        exact(doc["spec"], version)["tolerations"] = [{"operator": "Equal", field: value}]

    return put


FORMAT_FIELDS: dict[str, Callable[[Doc, str, str], None]] = {
    "request-name": _put_request_name,
    "subrequest-name": lambda d, v, x: gpu(d["spec"])["firstAvailable"][1].update(name=x),
    "subrequest-class": lambda d, v, x: gpu(d["spec"])["firstAvailable"][1].update(
        deviceClassName=x
    ),
    "exact-class": lambda d, v, x: exact(d["spec"], v).update(deviceClassName=x),
    "toleration-key": _put_toleration("key"),
    "toleration-value": _put_toleration("value"),
    "opaque-driver": lambda d, v, x: d["spec"]["devices"]["config"][0]["opaque"].update(driver=x),
    "match-attribute": lambda d, v, x: d["spec"]["devices"]["constraints"][0].update(
        matchAttribute=x
    ),
    "metadata-name": lambda d, v, x: d["metadata"].update(name=x),
    "label-key": lambda d, v, x: d["metadata"].update(labels={x: "v"}),
    "label-value": lambda d, v, x: d["metadata"].update(labels={"k": x}),
}

# Short strings over the characters that matter to these formats, and long runs for limits.
# No newline: Python's `re` lets `$` match before a final newline (RE2 and ECMA-262 do not).
TRICKY = st.one_of(
    st.text(alphabet="abzAZ09-._/", max_size=10),
    st.builds(
        lambda ch, n, tail: ch * n + tail,
        st.sampled_from("aA0"),
        st.integers(28, 70),
        st.sampled_from(["", "/x", "a/b"]),
    ),
    st.builds(lambda n: ".".join(["a" * 63] * n), st.integers(3, 5)),
    st.builds(
        lambda d, n: f"{d}/{'n' * n}", st.sampled_from(["a.b", "A.B", "a_b"]), st.integers(30, 34)
    ),
)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.sampled_from(sorted(FORMAT_FIELDS)),
    version=st.sampled_from(ALL),
    release=st.sampled_from(["1.34", "1.35", "1.36", "1.37"]),
    value=TRICKY,
)
def test_format_checks_agree_with_the_rule_set(field, version, release, value):
    """For a field whose only rule is its format, the schema accepts exactly what lint accepts."""
    chosen = RELEASES[release]
    doc = document("ResourceClaim", version, release_spec(release, version))
    if not chosen.consumable_capacity:
        doc["spec"]["devices"]["constraints"].pop(1)  # distinctAttribute is dropped then
    FORMAT_FIELDS[field](doc, version, value)
    lint_ok = validate_object(doc, options=Options(release=chosen)).valid
    schema_ok = not shape_errors(doc, chosen)
    assert schema_ok == lint_ok, (field, value)


PARALLEL_MUTATIONS: list[Mutation] = [
    *(lambda spec, _v, m=m: m(spec) for _id, m, _path in PARALLEL_CASES),
    *MUTATIONS,
]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KINDS),
    version=st.sampled_from(ALL),
    picks=st.lists(st.integers(0, len(PARALLEL_MUTATIONS) - 1), max_size=3),
)
def test_parallel_schema_accepts_whatever_the_rule_set_accepts(kind, version, picks):
    """A parallel document that `validate_object` finds valid passes its `-parallel` schema."""
    spec = parallel_spec(version)
    for i in picks:
        with contextlib.suppress(KeyError, IndexError, TypeError, AttributeError):
            PARALLEL_MUTATIONS[i](spec, version)
    doc = document(kind, version, spec)
    if validate_object(copy.deepcopy(doc)).valid:
        assert shape_errors(doc, NEWEST) == set()


def _key_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path that ends in a mapping key, below apiVersion/kind."""
    paths: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if prefix or key not in ("apiVersion", "kind"):
                paths.append((*prefix, key))
            paths.extend(_key_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            paths.extend(_key_paths(value, (*prefix, i)))
    return paths


@pytest.mark.parametrize("action", ["null", "remove"])
@pytest.mark.parametrize("parallel", [False, True], ids=["nested", "parallel"])
@pytest.mark.parametrize("version", ALL)
@pytest.mark.parametrize("kind", KINDS)
def test_every_field_set_to_null_or_removed_is_judged_as_lint_does(kind, version, parallel, action):
    """Nulling or dropping any one field: whenever lint still accepts, so does the schema."""
    spec = parallel_spec(version) if parallel else baseline_spec(version)
    base = document(kind, version, spec)
    checked = 0
    for path in _key_paths(base):
        doc = copy.deepcopy(base)
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        if action == "null":
            parent[path[-1]] = None
        else:
            del parent[path[-1]]
        if validate_object(copy.deepcopy(doc)).valid:
            checked += 1
            assert shape_errors(doc, NEWEST) == set(), path
    assert checked > 10  # most fields are optional: the loop really compared something
