"""Hypothesis strategies for DRA claims and templates in every shape (issue 3 §3).

The structure comes from the model, not from this file: which fields a request, a
subrequest, an exact request, a toleration, a constraint or a config entry has in a
release is read from `draguard.schema.model.shapes.claim_spec_node`, so a field the model
gains (or a release lacks, such as `capacity` before 1.34) is generated, or not, without
editing this file. What is written here is only the value domain of each field (what
a valid class name, CEL selector or toleration looks like, `upstream-rules.md` §3.3),
the few fields each type requires, and the cross-field rules: the request one-of
(rule 7), allocationMode/count (rule 15), `Exists` without value (rule 16), unique
names (rules 4, 9) and references that resolve (rule 19).

`flaws=True` lets each value domain sometimes yield a value one rule rejects (a bad
DNS label, a negative count, a non-bool CEL expression, an unknown effect, a reference
to nothing), so that properties can compare findings; the layout (one-of, uniqueness
of names) stays valid so that every shape can hold the object.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

from hypothesis import strategies as st

from draguard.schema.model.releases import DEFAULT_RELEASE, FEATURE_SINCE, Release
from draguard.schema.model.shapes import ListOf, MapOf, Node, Obj, claim_spec_node

SHAPES = ("v1", "v1beta2", "v1beta1", "parallel")
VERSIONS = ("v1", "v1beta2", "v1beta1")
KINDS = ("ResourceClaim", "ResourceClaimTemplate")
ORDER_ANNOTATION = "draguard.io/request-order"

MAX_REQUESTS = 4  # upstream allows 32; more only slows the search down
MAX_SUBREQUESTS = 8  # FirstAvailableDeviceRequestMaxSize (§2.4)

Draw = Callable[[st.SearchStrategy[Any]], Any]

# --- value domains ---------------------------------------------------------------------

# Pools rather than regular expressions: drawing a pooled value is one choice, drawing
# from a regex one per character, and generation dominates the run time of the suite.
_LABELS = (
    "gpu", "nic", "fpga", "tpu", "big", "small", "a", "b", "x1", "h100", "a100",
    "m-2", "n0", "z9z", "sub", "req", "opt-a", "opt-b", "l4", "t4",
)  # fmt: skip
dns_labels = st.sampled_from(_LABELS)
dns_subdomains = st.one_of(
    st.sampled_from(("gpu.example.com", "nic.example.com", "h100.nvidia.com", "fpga")),
    st.builds("{}.{}".format, dns_labels, dns_labels),
)
_DOMAINS = ("dra.example.com", "gpu.nvidia.com", "resource.kubernetes.io")
c_identifiers = st.sampled_from(("model", "memory", "index", "healthy", "uuid", "_x1", "pcieRoot"))
qualified_names = st.builds("{}/{}".format, st.sampled_from(_DOMAINS), c_identifiers)
label_keys = st.one_of(dns_labels, st.builds("{}/{}".format, st.sampled_from(_DOMAINS), dns_labels))
label_values = st.sampled_from(("", "true", "v1", "a.b_c-d", "Z"))
quantities = st.one_of(
    st.integers(0, 1 << 20).map(str),
    st.builds(
        "{}{}".format, st.integers(1, 512), st.sampled_from(("Ki", "Mi", "Gi", "k", "M", "m"))
    ),
)
_CEL_STRING = st.sampled_from(("gpu.example.com", "x", "a-b.c", "", "1.2.3"))


@st.composite
def cel_atoms(draw: Draw) -> str:
    """`device.driver == "<x>"` or `device.attributes["<d>"].<id> == <int|bool|string>`."""
    if draw(st.booleans()):
        return f"device.driver == {json.dumps(draw(_CEL_STRING))}"
    literal = draw(
        st.one_of(
            st.integers(-1000, 1000).map(str),
            st.sampled_from(("true", "false")),
            _CEL_STRING.map(json.dumps),
        )
    )
    domain, ident = draw(st.sampled_from(_DOMAINS)), draw(c_identifiers)
    return f"device.attributes[{json.dumps(domain)}].{ident} == {literal}"


def cel_expressions(depth: int = 2) -> st.SearchStrategy[str]:
    """A small grammar: atoms combined with `&&` / `||`, parenthesised."""
    if depth == 0:
        return cel_atoms()
    inner = cel_expressions(depth - 1)
    return st.one_of(
        cel_atoms(),
        st.builds("({}) {} ({})".format, inner, st.sampled_from(("&&", "||")), inner),
    )


def _flawed(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any], flaws: bool) -> Any:
    """The valid domain, or now and then (with `flaws`) a value some rule rejects."""
    if not flaws:
        return good
    return st.one_of(good, good, good, good, good, good, good, bad)


@cache
def _domains(flaws: bool, release: Release = DEFAULT_RELEASE) -> dict[str, st.SearchStrategy[Any]]:
    """Scalar value domains by field name (rules 6, 10–16, 20, 21)."""
    return {
        "deviceClassName": _flawed(dns_subdomains, st.sampled_from(("GPU", "-x")), flaws),
        "allocationMode": st.sampled_from(("ExactCount", "All")),
        "count": _flawed(st.integers(1, 16), st.integers(-3, -1), flaws),
        "adminAccess": st.booleans(),
        "expression": _flawed(
            cel_expressions(), st.sampled_from(("device.driver", "device.nope ==")), flaws
        ),
        "key": label_keys,
        "operator": st.sampled_from(("Equal", "Exists")),
        "value": label_values,
        "effect": _flawed(st.sampled_from(release.toleration_effects), st.just("Evict"), flaws),
        "tolerationSeconds": st.integers(0, 3600),
        "matchAttribute": _flawed(qualified_names, st.just("noslash"), flaws),
        "distinctAttribute": qualified_names,
        "driver": dns_subdomains,
        "parameters": st.dictionaries(
            dns_labels, st.one_of(st.integers(), st.booleans(), dns_labels), max_size=3
        ),
    }


# Fields each type requires for a valid object (the rest are optional).
_REQUIRED = {
    "DeviceSubRequest": ("name", "deviceClassName"),
    "ExactDeviceRequest": ("deviceClassName",),
    "DeviceSelector": ("cel",),
    "CELDeviceSelector": ("expression",),
    "OpaqueDeviceConfiguration": ("driver", "parameters"),
}
# Filled in by the claim-level strategy (names, references) or chosen by the one-of.
# derivedAttributes: an alpha field whose gate is off, so the apiserver drops it (§3.8);
# a valid object generated for round trips does not carry it.
_LEFT_TO_CALLER = frozenset({"name", "requests", "firstAvailable", "exactly", "derivedAttributes"})


def _fix_allocation(obj: dict[str, Any]) -> dict[str, Any]:
    """Rule 15: `All` takes no count."""
    if obj.get("allocationMode") == "All":
        obj.pop("count", None)
    return obj


def _fix_toleration(obj: dict[str, Any]) -> dict[str, Any]:
    """Rule 16: `Exists` takes no value."""
    if obj.get("operator") == "Exists":
        obj.pop("value", None)
    return obj


_FIXES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "ExactDeviceRequest": _fix_allocation,
    "DeviceSubRequest": _fix_allocation,
    "DeviceToleration": _fix_toleration,
}


_BUILT: dict[tuple[int, str, bool, Release], st.SearchStrategy[Any]] = {}


def from_node(
    node: Node, field: str, flaws: bool, release: Release = DEFAULT_RELEASE
) -> st.SearchStrategy[Any]:
    """Values for one model node; scalars from the domain of the field they sit in."""
    key = (id(node), field, flaws, release)
    if key not in _BUILT:
        _BUILT[key] = _build(node, field, flaws, release)
    return _BUILT[key]


def _gated_off(release: Release) -> frozenset[str]:
    """Fields whose feature gate is off by default in `release`: it drops them on create (§3.8).

    Read from the skew report's table of when each gated field turned on, so the
    generator and `draguard.schema.model.gates` are checked against each other.
    """
    return frozenset(f for f, (since, _) in FEATURE_SINCE.items() if release.minor < since)


def _build(node: Node, field: str, flaws: bool, release: Release) -> st.SearchStrategy[Any]:
    if isinstance(node, Obj):
        skip = _LEFT_TO_CALLER | _gated_off(release)
        fields = {k: v for k, v in node.fields.items() if k not in skip}
        required = _REQUIRED.get(node.type_name, ())
        if node.type_name == "CapacityRequirements":
            return st.fixed_dictionaries(
                {"requests": st.dictionaries(qualified_names, quantities, min_size=1, max_size=2)}
            )
        strategy = st.fixed_dictionaries(
            {k: from_node(v, k, flaws, release) for k, v in fields.items() if k in required},
            optional={
                k: from_node(v, k, flaws, release) for k, v in fields.items() if k not in required
            },
        )
        fix = _FIXES.get(node.type_name)
        return strategy.map(fix) if fix else strategy
    if isinstance(node, ListOf):
        return st.lists(from_node(node.item, field, flaws, release), max_size=2)
    if isinstance(node, MapOf):
        return st.dictionaries(
            qualified_names, from_node(node.value, field, flaws, release), max_size=2
        )
    return _domains(flaws, release)[field]


# --- requests, references, devices ------------------------------------------------------


@cache
def _model(version: str, release: Release, parallel: bool) -> dict[str, Obj]:
    """The named types of one version's claim spec, looked up in the model."""
    devices = claim_spec_node(version, release, parallel).fields["devices"]
    assert isinstance(devices, Obj)
    types: dict[str, Obj] = {"DeviceClaim": devices}
    for node in devices.fields.values():
        assert isinstance(node, ListOf) and isinstance(node.item, Obj)
        types[node.item.type_name] = node.item
    request = types["DeviceRequest"]
    # The parallel shape's `requests` hold only exact requests (contract §2); its
    # subrequests are the options of `prioritizedRequests`.
    sub = (
        request.fields.get("firstAvailable") or types["PrioritizedDeviceRequest"].fields["options"]
    )
    assert isinstance(sub, ListOf) and isinstance(sub.item, Obj)
    types["DeviceSubRequest"] = sub.item
    exact = request.fields.get("exactly")
    # v1beta1 has no `exactly`: its exact fields are the request's own (§2.2).
    types["ExactDeviceRequest"] = (
        exact
        if isinstance(exact, Obj)
        else Obj(
            "ExactDeviceRequest",
            {k: v for k, v in request.fields.items() if k not in ("name", "firstAvailable")},
        )
    )
    return types


def _unique_names(min_size: int, max_size: int) -> st.SearchStrategy[list[str]]:
    return st.lists(dns_labels, min_size=min_size, max_size=max_size, unique=True)


@st.composite
def subrequest_lists(
    draw: Draw, types: dict[str, Obj], flaws: bool, release: Release = DEFAULT_RELEASE
) -> list[dict[str, Any]]:
    """1..8 subrequests with names unique within their request (rules 8, 9)."""
    names = draw(_unique_names(1, MAX_SUBREQUESTS))
    body = from_node(types["DeviceSubRequest"], "", flaws, release)
    return [{"name": name, **draw(body)} for name in names]


@st.composite
def hub_requests(
    draw: Draw, types: dict[str, Obj], flaws: bool, release: Release = DEFAULT_RELEASE
) -> list[dict[str, Any]]:
    """Requests in the hub layout: each either `exactly` or `firstAvailable` (rule 7)."""
    names = draw(_unique_names(0, MAX_REQUESTS))
    exact_body = from_node(types["ExactDeviceRequest"], "", flaws, release)
    prioritized = "firstAvailable" not in _gated_off(release)
    requests = []
    for name in names:
        if not prioritized or draw(st.booleans()):
            requests.append({"name": name, "exactly": draw(exact_body)})
        else:
            subrequests = draw(subrequest_lists(types, flaws, release))
            requests.append({"name": name, "firstAvailable": subrequests})
    return requests


def references(requests: list[dict[str, Any]], flaws: bool) -> st.SearchStrategy[list[str]]:
    """Reference lists that resolve (rule 19): `req` or `req/sub` of a prioritized request."""
    targets = [r["name"] for r in requests]
    targets += [f"{r['name']}/{s['name']}" for r in requests for s in r.get("firstAvailable", [])]
    if not targets:
        return st.just([])
    good = st.sampled_from(targets)
    one = _flawed(good, st.sampled_from(("missing", "a/b/c", f"{targets[0]}/nope")), flaws)
    return st.lists(one, max_size=3, unique=True)


@st.composite
def constraints(
    draw: Draw,
    node: Obj,
    requests: list[dict[str, Any]],
    flaws: bool,
    release: Release = DEFAULT_RELEASE,
) -> dict[str, Any]:
    """One constraint with exactly one of the attribute fields the model has (rule 18)."""
    attributes = [
        k
        for k in ("matchAttribute", "distinctAttribute")
        if k in node.fields and k not in _gated_off(release)
    ]
    attribute = draw(st.sampled_from(attributes))
    out: dict[str, Any] = {}
    refs = draw(references(requests, flaws))
    if refs or draw(st.booleans()):
        out["requests"] = refs
    out[attribute] = draw(_domains(flaws, release)[attribute])
    return out


@st.composite
def configs(
    draw: Draw,
    node: Obj,
    requests: list[dict[str, Any]],
    flaws: bool,
    release: Release = DEFAULT_RELEASE,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    refs = draw(references(requests, flaws))
    if refs:
        out["requests"] = refs
    opaque = node.fields["opaque"]
    out["opaque"] = draw(from_node(opaque, "opaque", flaws, release))
    return out


@st.composite
def hub_devices(
    draw: Draw, types: dict[str, Obj], flaws: bool, release: Release = DEFAULT_RELEASE
) -> dict[str, Any]:
    """A `DeviceClaim` in the hub layout with constraints and config referring to its requests."""
    requests = draw(hub_requests(types, flaws, release))
    devices: dict[str, Any] = {"requests": requests}
    items = st.integers(0, 2)
    constraint_list = [
        draw(constraints(types["DeviceConstraint"], requests, flaws, release))
        for _ in range(draw(items))
    ]
    config_list = [
        draw(configs(types["DeviceClaimConfiguration"], requests, flaws, release))
        for _ in range(draw(items))
    ]
    if constraint_list:
        devices["constraints"] = constraint_list
    if config_list:
        devices["config"] = config_list
    return devices


# --- rendering one layout into a shape ---------------------------------------------------


def _flat(request: dict[str, Any]) -> dict[str, Any]:
    """A v1beta1 request: the exact fields on the request itself (§2.2)."""
    if "exactly" in request:
        return {"name": request["name"], **request["exactly"]}
    return dict(request)


@st.composite
def claim_specs(
    draw: Draw, shape: str, *, flaws: bool = False, release: Release = DEFAULT_RELEASE
) -> tuple[str, dict[str, Any], list[str] | None]:
    """(apiVersion version, claim spec, request order for the annotation) in `shape`."""
    served = [v for v in VERSIONS if release.has_api_version(v)]
    version = draw(st.sampled_from(served)) if shape == "parallel" else shape
    types = _model(version, release, shape == "parallel")
    devices = draw(hub_devices(types, flaws, release))
    if version == "v1beta1":
        devices["requests"] = [_flat(r) for r in devices["requests"]]
    if shape != "parallel":
        return version, {"devices": devices}, None
    exact = [r for r in devices["requests"] if "firstAvailable" not in r]
    prioritized = [
        {"name": r["name"], "options": r["firstAvailable"]}
        for r in devices["requests"]
        if "firstAvailable" in r
    ]
    order = [r["name"] for r in devices["requests"]]
    parallel = {"requests": exact, "prioritizedRequests": prioritized}
    parallel.update({k: v for k, v in devices.items() if k != "requests"})
    # Without the annotation the order is: exact requests, then prioritized ones (contract §2).
    return version, {"devices": parallel}, (order if draw(st.booleans()) else None)


@st.composite
def documents(
    draw: Draw,
    shape: str | None = None,
    *,
    flaws: bool = False,
    kind: str | None = None,
    release: Release = DEFAULT_RELEASE,
) -> dict[str, Any]:
    """A ResourceClaim or ResourceClaimTemplate in `shape` (any shape when None)."""
    shape = shape or draw(st.sampled_from(SHAPES))
    kind = kind or draw(st.sampled_from(KINDS))
    version, spec, order = draw(claim_specs(shape, flaws=flaws, release=release))
    metadata: dict[str, Any] = {"name": draw(dns_subdomains), "namespace": draw(dns_labels)}
    if order is not None:
        metadata["annotations"] = {ORDER_ANNOTATION: json.dumps(order, separators=(",", ":"))}
    if kind == "ResourceClaimTemplate":
        template_meta = draw(
            st.fixed_dictionaries(
                {}, optional={"labels": st.dictionaries(label_keys, label_values, max_size=2)}
            )
        )
        body: dict[str, Any] = {
            "spec": spec,
            **({"metadata": template_meta} if template_meta else {}),
        }
    else:
        body = spec
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": kind,
        "metadata": metadata,
        "spec": body,
    }
