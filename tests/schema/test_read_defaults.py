"""Reading with `defaulting=True` equals reading, then defaulting (§4.1, §4.2).

`prepare` lets the reader default the requests (exact, sub and flat) as it copies them,
writing a missing allocationMode where `default_allocation` would move it to. The
copy, key order included, and the findings must be those of the two separate steps.
"""

from __future__ import annotations

import json
from typing import Any

import corpus
import strategies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draguard.schema.model.defaults import default_claim_spec
from draguard.schema.model.fieldmap import FLAT_FIELDS
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import RELEASES
from draguard.schema.model.shapes import claim_spec_node, document_node, identify, read

REQUEST_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.just(2**64),
    st.sampled_from(["", "All", "ExactCount", "gpu.example.com", "x"]),
    st.lists(st.dictionaries(st.sampled_from(["key", "operator", "cel"]), st.text(max_size=3)), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
REQUEST_KEYS = st.sampled_from(["name", *FLAT_FIELDS, "firstAvailable", "extra"])


def _rendered(reading: Any) -> str:
    """The copy with its key order, and the findings."""
    return json.dumps([reading.value, [str(f) for f in reading.findings]], default=repr)


def _both(document: Any) -> tuple[str, str]:
    doc_type = identify(document)
    assert doc_type is not None
    for release in (RELEASES["1.33"], RELEASES["1.34"], RELEASES["1.37"]):
        node = document_node(doc_type.kind, doc_type.version, release, doc_type.parallel)
        fused = read(document, node, FieldPath(), doc_type.api_version, defaulting=True)
        apart = read(document, node, FieldPath(), doc_type.api_version)
        for reading, again in ((fused, False), (apart, True)):
            value = reading.value if isinstance(reading.value, dict) else {}
            spec = value.get("spec")
            if doc_type.kind == "ResourceClaimTemplate" and isinstance(spec, dict):
                spec = spec.get("spec")
            if again and isinstance(spec, dict):
                default_claim_spec(spec, doc_type.version)
        assert _rendered(fused) == _rendered(apart)
    return _rendered(fused), _rendered(apart)


def test_corpus_documents() -> None:
    for case in corpus.load_cases():
        if identify(case.document) is not None:
            _both(case.document)


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(strategies.documents(flaws=True))
def test_generated_documents(document: dict[str, Any]) -> None:
    _both(document)


@settings(max_examples=500, suppress_health_check=list(HealthCheck), deadline=None)
@given(
    st.sampled_from(["v1", "v1beta2", "v1beta1"]),
    st.lists(st.dictionaries(REQUEST_KEYS, REQUEST_VALUES, max_size=6), max_size=3),
    st.lists(st.dictionaries(REQUEST_KEYS, REQUEST_VALUES, max_size=6), max_size=3),
)
def test_any_request_fields(
    version: str, exact: list[dict[str, Any]], subs: list[dict[str, Any]]
) -> None:
    if version == "v1beta1":
        requests = [{"name": "r", **e} for e in exact] + [{"name": "s", "firstAvailable": subs}]
    else:
        requests = [{"name": "r", "exactly": e} for e in exact]
        requests.append({"name": "s", "firstAvailable": subs})
    node = claim_spec_node(version, RELEASES["1.37"], False)
    spec = {"devices": {"requests": requests}}
    fused = read(spec, node, FieldPath.root("spec"), f"resource.k8s.io/{version}", defaulting=True)
    apart = read(spec, node, FieldPath.root("spec"), f"resource.k8s.io/{version}")
    for reading, again in ((fused, False), (apart, True)):
        if again and isinstance(reading.value, dict):
            default_claim_spec(reading.value, version)
    assert _rendered(fused) == _rendered(apart)
