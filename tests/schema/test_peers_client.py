"""Cross-check with the official `kubernetes` Python client: field names and types.

The client's models are generated from upstream's OpenAPI for release 1.37. Every valid
corpus document in an upstream shape must deserialize into the model of its version and
kind and serialize back to the same document: a field the model does not know would be
dropped and a wrong JSON type rejected, so equality proves the corpus (and hence what
draguard accepts) agrees with upstream's schema.
"""

from __future__ import annotations

import json
from typing import Any

import corpus
import pytest
from kubernetes.client import ApiClient

UPSTREAM = [c for c in corpus.load_cases() if not c.parallel]
VALID = [c for c in UPSTREAM if c.valid]
# Documents whose expected findings are decoding findings (contract §3): the client's
# models must not carry them through, which shows the check below can fail.
# Only findings of the client's own release: a field an older release does not know yet
# (derivedAttributes before 1.37) is one the 1.37 models rightly carry.
CLIENT_RELEASE = "1.37"
DECODING = [c for c in UPSTREAM if any(f.type in ("Unknown", "Malformed") for f in c.errors)
            and c.kubernetes_version in (None, CLIENT_RELEASE)]

# The 1.37 client names the v1 claim model after its group (it clashes with core/v1's).
MODELS = {
    ("v1", "ResourceClaim"): "ResourceV1ResourceClaim",
    ("v1", "ResourceClaimTemplate"): "V1ResourceClaimTemplate",
    ("v1beta2", "ResourceClaim"): "V1beta2ResourceClaim",
    ("v1beta2", "ResourceClaimTemplate"): "V1beta2ResourceClaimTemplate",
    ("v1beta1", "ResourceClaim"): "V1beta1ResourceClaim",
    ("v1beta1", "ResourceClaimTemplate"): "V1beta1ResourceClaimTemplate",
}


def without_nulls(value: Any) -> Any:
    """Drop null members, which the client omits on output (e.g. `creationTimestamp: null`)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def round_trip(document: Any, version: str, kind: str) -> Any:
    """Deserialize through the client's public entry point, then serialize back to JSON data."""
    client = ApiClient()
    model = client.deserialize(json.dumps(document), MODELS[(version, kind)], "application/json")
    return client.sanitize_for_serialization(model)


def test_corpus_has_valid_documents_of_every_model() -> None:
    """Every (version, kind) model is exercised by at least one valid document."""
    assert {(c.version, c.kind) for c in VALID} == set(MODELS)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in VALID])
def test_valid_document_round_trips_through_client_model(case: Any) -> None:
    """A valid document survives the client's model unchanged (names and types agree)."""
    assert round_trip(case.document, case.version, case.kind) == without_nulls(case.document)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in DECODING])
def test_decoding_finding_does_not_survive_client_model(case: Any) -> None:
    """A document with an Unknown or Malformed field is rejected or altered by the client."""
    try:
        back = round_trip(case.document, case.version, case.kind)
    except (ValueError, TypeError):
        return  # pydantic's ValidationError is a ValueError: a wrong JSON type
    assert back != without_nulls(case.document)
