"""Cross-check with kubernetes-validate (strict): whatever it rejects, draguard rejects.

kubernetes-validate checks documents against upstream's OpenAPI converted to JSON Schema
(types, required fields, no unknown fields in strict mode) and knows none of the
handwritten rules, so it may accept what draguard rejects but never the other way
round. Each document is checked with the schemas of its case's release (newest, 1.37,
unless the case pins one), which ship v1, v1beta2 and v1beta1. The parallel shape is
draguard's own and is left out.
"""

from __future__ import annotations

from typing import Any

import corpus
import pytest
from kubernetes_validate.utils import ValidationError, latest_version, validate

from draguard.schema.validate import validate_object

UPSTREAM = [c for c in corpus.load_cases() if not c.parallel]
DECODING = [c for c in UPSTREAM if any(f.type in ("Unknown", "Malformed") for f in c.errors)]
NEWEST = "1.37"


def rejection(case: Any) -> str | None:
    """kubernetes-validate's complaint about the document, or None when it accepts it."""
    try:
        validate(case.document, case.kubernetes_version or NEWEST, strict=True)
    except ValidationError as err:
        return str(err.message)
    return None


def test_peer_ships_the_newest_schemas() -> None:
    """The installed kubernetes-validate has schemas for the newest release draguard imitates."""
    assert latest_version().startswith(NEWEST)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in UPSTREAM])
def test_draguard_rejects_what_peer_rejects(case: Any) -> None:
    """A document kubernetes-validate rejects is rejected by draguard as well."""
    complaint = rejection(case)
    if complaint is None:
        return
    verdict = validate_object(case.document, options=case.options)
    assert not verdict.valid, f"kubernetes-validate: {complaint}"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in DECODING])
def test_peer_rejects_decoding_findings(case: Any) -> None:
    """Every document expected to carry Unknown or Malformed is rejected by the peer too."""
    assert rejection(case) is not None


def test_peer_accepts_documents_that_break_several_rules() -> None:
    """The reason draguard exists: the peer accepts a corpus document with four or more findings."""
    assert any(len(c.errors) >= 4 and rejection(c) is None for c in UPSTREAM)
