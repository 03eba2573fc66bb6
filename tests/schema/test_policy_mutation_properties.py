"""Properties of the mutation over generated claims and policies (hypothesis)."""

from __future__ import annotations

import copy
import json
from types import MappingProxyType
from typing import Any

import jsonpatch
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draguard.schema.model.options import DEFAULT_OPTIONS
from draguard.schema.policy.model import Alternative, CatalogEntry, Limits, Policy
from draguard.schema.policy.mutation import apply_policy, make_patch, mutate

CLASSES = ("gpu.example.com", "nic.example.com", "fpga.example.com", "old.legacy.example.com")
# Keys no DRA type has, chosen to need JSON-pointer escaping (`~0`, `~1`) and unicode.
UNKNOWN_KEYS = ("x-ext", "a/b", "t~1", "~", "/", "ü", "0", "")
SETTINGS = settings(max_examples=examples(60), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=4,
)
unknown_fields = st.dictionaries(st.sampled_from(UNKNOWN_KEYS), json_values, max_size=2)


@st.composite
def exact_fields(draw: st.DrawFn) -> dict[str, Any]:
    """The fields of an exact request or subrequest, each maybe unset."""
    fields: dict[str, Any] = {"deviceClassName": draw(st.sampled_from(CLASSES))}
    optional = {
        "allocationMode": st.sampled_from(["", "ExactCount", "All"]),
        "count": st.integers(0, 3),
        "selectors": st.lists(st.just({"cel": {"expression": "true"}}), max_size=1),
        "tolerations": st.lists(st.fixed_dictionaries(
            {"key": st.just("k")}, optional={"operator": st.sampled_from(["", "Exists"])}),
            max_size=2),
    }
    for name, strategy in optional.items():
        if draw(st.booleans()):
            fields[name] = draw(strategy)
    return fields


@st.composite
def requests(draw: st.DrawFn, version: str) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(0, 5) | st.integers(1, 5))):
        request: dict[str, Any] = {"name": f"r{i}"}
        form = draw(st.sampled_from(["exact", "exact", "prioritized", "neither", "malformed"]))
        if form == "exact":
            fields = draw(exact_fields())
            if draw(st.integers(0, 9)) == 0:
                fields["adminAccess"] = draw(st.booleans())
            if version == "v1beta1":
                request.update(fields)
            else:
                request["exactly"] = {**fields, **draw(unknown_fields)}
        elif form == "prioritized":
            count = draw(st.integers(1, 9))
            request["firstAvailable"] = [{"name": f"s{j}", **draw(exact_fields())}
                                         for j in range(count)]
        elif form == "malformed":
            request["exactly" if version != "v1beta1" else "deviceClassName"] = 7
        request.update(draw(unknown_fields))
        out.append(request)
    return out


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    version = draw(st.sampled_from(["v1", "v1beta2", "v1beta1"]))
    kind = draw(st.sampled_from(["ResourceClaim", "ResourceClaimTemplate"]))
    reqs = draw(requests(version))
    parents = [r["name"] for r in reqs] or ["r0"]
    children = [f"{parent}/s{j}" for parent in parents for j in range(2)]
    # Mostly parent names, so that the config rewrite has work to do.
    refs = st.lists(st.sampled_from(parents) | st.sampled_from(parents + children), max_size=4)
    devices: dict[str, Any] = {"requests": reqs, **draw(unknown_fields)}
    if draw(st.integers(0, 3)):
        devices["config"] = [{"requests": draw(refs), "opaque": {"driver": "d.example.com",
                                                                  "parameters": {}},
                              **draw(unknown_fields)} for _ in range(draw(st.integers(1, 2)))]
    if draw(st.booleans()):
        devices["constraints"] = [{"requests": draw(refs), "matchAttribute": "example.com/m"}]
    spec: dict[str, Any] = {"devices": devices, **draw(unknown_fields)}
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": kind,
        "metadata": {"name": "c", "namespace": "ns", "annotations": {"a.example.com/k": "v"}},
        "spec": spec if kind == "ResourceClaim" else {"spec": spec,
                                                       "metadata": {"labels": {"l": "v"}}},
        "status": {"keep": draw(json_values)},
        **draw(unknown_fields),
    }


@st.composite
def catalog_entries(draw: st.DrawFn, device_class: str) -> CatalogEntry:
    original = draw(st.sampled_from(["first", "last", "replace"]))
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4,
                          unique=True))
    alternatives = tuple(
        Alternative(name, draw(st.sampled_from(CLASSES[:3])),
                    count=draw(st.none() | st.integers(1, 2)))
        for name in names)
    return CatalogEntry(device_class, alternatives, original, "orig")


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    classes = draw(st.lists(st.sampled_from(CLASSES), unique=True, max_size=3))
    catalog = {c: draw(catalog_entries(c)) for c in classes}
    return Policy(
        catalog=MappingProxyType(catalog),
        limits=Limits(max_alternatives=draw(st.none() | st.integers(1, 8)),
                      forbidden_classes=draw(st.sampled_from([(), ("*.legacy.example.com",)]))),
        defaults=draw(st.booleans()),
        config_names_parent=draw(st.sampled_from(["rewrite", "rewrite", "keep"])),
    )


def devices_prefix(obj: dict[str, Any]) -> str:
    return "/spec/devices" if obj["kind"] == "ResourceClaim" else "/spec/spec/devices"


def without_edited_lists(obj: dict[str, Any]) -> dict[str, Any]:
    """The object minus the two lists the policy may edit."""
    out = copy.deepcopy(obj)
    spec = out["spec"] if out["kind"] == "ResourceClaim" else out["spec"]["spec"]
    spec["devices"].pop("requests", None)
    spec["devices"].pop("config", None)
    return out


@SETTINGS
@given(documents(), policies())
def test_patch_applied_to_original_equals_mutated(obj: dict[str, Any], policy: Policy) -> None:
    """Applying the generated patch to the original gives exactly the mutated object."""
    mutated = apply_policy(obj, policy).mutated
    assert jsonpatch.apply_patch(obj, make_patch(obj, mutated)) == mutated


@SETTINGS
@given(documents(), policies())
def test_patch_touches_only_requests_and_config(obj: dict[str, Any], policy: Policy) -> None:
    """Every operation is under `devices.requests` or `devices.config`; nothing else differs."""
    mutated = apply_policy(obj, policy).mutated
    prefix = devices_prefix(obj)
    for op in make_patch(obj, mutated):
        for pointer in (op["path"], op.get("from", op["path"])):
            assert pointer.startswith((f"{prefix}/requests/", f"{prefix}/config/")), op
    assert without_edited_lists(mutated) == without_edited_lists(obj)


@SETTINGS
@given(documents(), policies())
def test_unknown_request_fields_survive_byte_for_byte(obj: dict[str, Any],
                                                      policy: Policy) -> None:
    """A request's fields draguard does not know are identical JSON after the patch."""
    text = json.dumps(obj, ensure_ascii=False)
    original = json.loads(text)
    result = jsonpatch.apply_patch(original, make_patch(original,
                                                        apply_policy(original, policy).mutated))
    spec = "/".join(devices_prefix(obj).split("/")[1:-1])
    before = jsonpatch.JsonPointer(f"/{spec}/devices/requests").resolve(json.loads(text))
    after = jsonpatch.JsonPointer(f"/{spec}/devices/requests").resolve(result)
    for old, new in zip(before, after, strict=True):
        for key in UNKNOWN_KEYS:
            if key in old:
                assert json.dumps(new[key], ensure_ascii=False) == json.dumps(
                    old[key], ensure_ascii=False)


@SETTINGS
@given(documents(), policies())
def test_policy_is_idempotent(obj: dict[str, Any], policy: Policy) -> None:
    """A second pass changes nothing (the apiserver may re-invoke a mutating webhook)."""
    once = apply_policy(obj, policy).mutated
    assert make_patch(once, apply_policy(once, policy).mutated) == []


@SETTINGS
@given(documents(), policies())
def test_input_is_never_modified(obj: dict[str, Any], policy: Policy) -> None:
    """The policy works on a copy; the caller's object is unchanged."""
    before = copy.deepcopy(obj)
    apply_policy(obj, policy)
    assert obj == before


@SETTINGS
@given(documents(), policies())
def test_cap_bounds_every_alternative_list(obj: dict[str, Any], policy: Policy) -> None:
    """With maxAlternatives set, no firstAvailable list in the result is longer."""
    mutated = apply_policy(obj, policy).mutated
    spec = mutated["spec"] if mutated["kind"] == "ResourceClaim" else mutated["spec"]["spec"]
    cap = policy.limits.max_alternatives
    for request in spec["devices"]["requests"]:
        alternatives = request.get("firstAvailable")
        if cap is not None and isinstance(alternatives, list):
            assert len(alternatives) <= cap


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), policies())
def test_mutate_answers_every_object(obj: dict[str, Any], policy: Policy) -> None:
    """mutate() never raises; an allowed answer's patch applies cleanly, a denial has none."""
    mutation = mutate(obj, policy=policy, options=DEFAULT_OPTIONS)
    if mutation.errors:
        assert mutation.patch == []
    else:
        jsonpatch.apply_patch(obj, mutation.patch)
