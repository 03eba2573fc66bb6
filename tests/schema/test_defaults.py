"""Upstream defaulting (§4.1, §4.2) has one implementation, and every caller uses it.

`model.defaults` defaults a versioned claim spec in place. `validate.prepare` applies it
to the clean copy it reads, the round trip to the hub shape, the mutating policy to the
raw admission object: each must give exactly what the function gives, key order included.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import corpus
import pytest
import strategies
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draguard.schema import roundtrip, validate
from draguard.schema.model import defaults
from draguard.schema.model.defaults import default_claim_spec, default_devices
from draguard.schema.model.fieldmap import FLAT_FIELDS
from draguard.schema.model.gates import drop_disabled_fields
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import RELEASES
from draguard.schema.model.shapes import document_node, identify, read
from draguard.schema.policy import mutation
from draguard.schema.policy.model import Policy

REQUEST_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.just(0.0),
    st.just(2**64),
    st.sampled_from(["", "All", "ExactCount", "gpu.example.com", "x"]),
    st.lists(st.dictionaries(st.sampled_from(["key", "operator", "cel"]),
                             st.one_of(st.none(), st.text(max_size=3))), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
REQUEST_KEYS = st.sampled_from(["name", *FLAT_FIELDS, "firstAvailable", "extra"])
RELEASES_CHECKED = (RELEASES["1.33"], RELEASES["1.34"], RELEASES["1.37"])


class _Text(str):
    """A string of a YAML library's own type, as a library user may pass one."""

    __slots__ = ()


def _rendered(value: Any) -> str:
    """The value with its key order and JSON types (1 and True differ)."""
    return json.dumps(value, default=repr)


def test_every_caller_uses_the_one_implementation() -> None:
    """The pipeline, the round trip and the policy import the function itself, not a copy."""
    assert validate.default_claim_spec is defaults.default_claim_spec
    assert roundtrip.default_claim_spec is defaults.default_claim_spec
    assert mutation.default_devices is defaults.default_devices


def _read_then_default(document: dict[str, Any], release: Any) -> Any:
    """What `prepare` must make of a v1 or v1beta2 document: read, default, drop gated fields."""
    doc_type = identify(document)
    assert doc_type is not None
    node = document_node(doc_type.kind, doc_type.version, release, doc_type.parallel)
    value = read(document, node, FieldPath(), doc_type.api_version).value
    holder = value.setdefault("spec", {}) if doc_type.kind == "ResourceClaimTemplate" else value
    spec = holder.setdefault("spec", {})
    default_claim_spec(spec, doc_type.version)
    path = FieldPath.root(*(["spec", "spec"] if doc_type.kind == "ResourceClaimTemplate" else ["spec"]))
    drop_disabled_fields(spec, path, release)
    return spec


def _check_prepare(document: dict[str, Any]) -> None:
    doc_type = identify(document)
    if doc_type is None or doc_type.parallel or doc_type.version == "v1beta1":
        return  # conversion follows defaulting there; the shapes no longer compare
    for release in RELEASES_CHECKED:
        prepared = validate.prepare(document, doc_type, Options(release=release))
        assert _rendered(prepared.claim_spec) == _rendered(_read_then_default(document, release))


def test_prepare_defaults_the_corpus_with_it() -> None:
    """On every corpus document, `prepare` gives reading followed by `default_claim_spec`."""
    for case in corpus.load_cases():
        _check_prepare(case.document)


# 100 generated documents in CI, each compared under every checked release (the corpus
# test above covers the hand-written cases); the `deep` profile scales it (budget.py).
@settings(max_examples=examples(100), suppress_health_check=list(HealthCheck), deadline=None)
@given(strategies.documents(flaws=True))
def test_prepare_defaults_generated_documents_with_it(document: dict[str, Any]) -> None:
    """On generated documents (flaws included), `prepare` gives reading then `default_claim_spec`."""
    _check_prepare(document)


def _raw_claim(version: str, requests: list[Any]) -> dict[str, Any]:
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"devices": {"requests": requests}}}


@settings(max_examples=examples(150), suppress_health_check=list(HealthCheck), deadline=None)
@given(
    st.sampled_from(["v1", "v1beta2", "v1beta1"]),
    st.lists(st.dictionaries(REQUEST_KEYS, REQUEST_VALUES, max_size=6), max_size=3),
    st.lists(st.dictionaries(REQUEST_KEYS, REQUEST_VALUES, max_size=6), max_size=3),
)
def test_policy_defaults_raw_objects_with_it(
    version: str, exact: list[dict[str, Any]], subs: list[dict[str, Any]]
) -> None:
    """The mutating policy's defaults on any raw object are `default_devices`, key order included."""
    if version == "v1beta1":
        requests: list[Any] = [{"name": "r", **e} for e in exact]
    else:
        requests = [{"name": "r", "exactly": e} for e in exact]
    requests.append({"name": "s", "firstAvailable": subs})
    obj = _raw_claim(version, requests)
    expected = copy.deepcopy(obj)
    default_devices(expected["spec"]["devices"], version)
    applied = mutation.apply_policy(obj, Policy())
    assert _rendered(applied.mutated) == _rendered(expected)


@pytest.mark.parametrize(
    ("version", "request_", "expected"),
    [
        pytest.param("v1", {"exactly": {"deviceClassName": "c", "count": 2}},
                     {"exactly": {"deviceClassName": "c", "allocationMode": "ExactCount",
                                  "count": 2}}, id="mode-goes-before-count"),
        pytest.param("v1", {"exactly": {"allocationMode": None, "count": None}},
                     {"exactly": {"allocationMode": "ExactCount", "count": 1}},
                     id="null-is-unset"),
        pytest.param("v1", {"exactly": {"allocationMode": 0, "count": False}},
                     {"exactly": {"allocationMode": 0, "count": False}},
                     id="wrong-types-are-left-as-written"),
        pytest.param("v1", {"exactly": {"allocationMode": "ExactCount", "count": 0.0}},
                     {"exactly": {"allocationMode": "ExactCount", "count": 0.0}},
                     id="a-float-zero-is-not-an-unset-count"),
        pytest.param("v1beta1", {"deviceClassName": 5, "tolerations": [{"operator": None}]},
                     {"deviceClassName": 5, "tolerations": [{"operator": "Equal"}]},
                     id="flat-class-not-a-string-gets-only-tolerations"),
        pytest.param("v1beta1", {"deviceClassName": "", "tolerations": [{"key": "k"}]},
                     {"deviceClassName": "", "tolerations": [{"key": "k", "operator": "Equal"}]},
                     id="flat-without-class-gets-only-tolerations"),
        pytest.param("v1", {"exactly": {"allocationMode": "All"}},
                     {"exactly": {"allocationMode": "All"}}, id="all-gets-no-count"),
        pytest.param("v1", {"exactly": {"allocationMode": _Text(""), "count": 0}},
                     {"exactly": {"allocationMode": "ExactCount", "count": 1}},
                     id="a-str-subclass-counts-as-a-string"),
    ],
)
def test_only_unset_fields_change(version: str, request_: dict[str, Any],
                                  expected: dict[str, Any]) -> None:
    """Absent, null and the zero value of the right type are unset; anything else stays."""
    devices = {"requests": [request_]}
    default_devices(devices, version)
    assert _rendered(devices["requests"][0]) == _rendered(expected)


def test_parallel_options_default_like_subrequests() -> None:
    """Contract §2: the parallel shape's options get the subrequest defaults."""
    devices = {"prioritizedRequests": [{"name": "p", "options": [{"deviceClassName": "c"}]}]}
    default_devices(devices, "v1")
    assert devices["prioritizedRequests"][0]["options"] == [
        {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}]
