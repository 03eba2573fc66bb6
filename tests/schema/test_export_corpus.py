"""The exported schemas against the example corpus `tests/cases/` and its oracle.

Every valid example must pass its shape's schema. An invalid example must fail it
unless all its expected findings are of the kinds a schema leaves to the rule set
(each schema's description lists them): duplicates, request references, CEL,
byte sizes, the admin-access namespace check and the kubectl-filled namespace.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import corpus
import jsonschema
import pytest

from draguard.schema.export import Variant, build_schema
from draguard.schema.model.releases import DEFAULT_RELEASE, RELEASES
from draguard.schema.model.shapes import identify

CASES = Path(__file__).resolve().parents[1] / "cases"

# (type, field pattern) of findings that no JSON Schema can express (§3.3 rules named).
LEFT_TO_RULES = (
    ("Duplicate", r".*"),  # rules 4, 9, 17: uniqueness by name
    ("Invalid", r".*\.(constraints|config)\[\d+\]\.requests\[\d+\]"),  # rule 19: lookup
    ("Invalid", r".*\.cel\.expression"),  # rule 14: compilation
    ("Forbidden", r".*\.cel\.expression"),  # rule 14: cost
    ("Forbidden", r"spec\.devices\.requests\[\d+\]\.adminAccess"),  # §3.7: namespace label
    ("TooLong", r".*\.opaque\.parameters"),  # rule 21: bytes of raw JSON
    ("Required", r"metadata\.namespace"),  # kubectl fills it (contract §4)
)


def _left_to_rules(finding: Any) -> bool:
    return any(
        finding.type == kind and re.fullmatch(pattern, finding.field)
        for kind, pattern in LEFT_TO_RULES
    )


CORPUS = [pytest.param(c, id=c.id) for c in corpus.load_cases() if not c.disputed]


@cache
def _validator(kind: str, version: str, parallel: bool, release: str) -> Any:
    schema = build_schema(Variant(kind, version, parallel), RELEASES[release])
    return jsonschema.Draft202012Validator(schema)


def _schema_errors(case: Any) -> list[str] | None:
    """Messages of the schema for the document's shape, or None when it has none."""
    doc = case.document
    shape = identify(doc)
    release = case.kubernetes_version or DEFAULT_RELEASE.name
    if shape is None or not RELEASES[release].has_api_version(shape.version):
        return None
    if case.feature_gates:  # the schemas encode the gate defaults (`draguard schema`)
        return None
    check = _validator(shape.kind, shape.version, shape.parallel, release)
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in check.iter_errors(doc)]


@pytest.mark.parametrize("case", CORPUS)
def test_schema_agrees_with_the_oracle(case: Any):
    """A valid example passes its schema; an invalid one fails it unless only rules can tell."""
    errors = _schema_errors(case)
    if errors is None:
        pytest.skip("no schema for this document's kind/version in its release")
    if case.valid:
        assert errors == []
        return
    if case.errors and all(_left_to_rules(f) for f in case.errors):
        return  # the schema cannot see these; lint does
    assert errors, f"schema accepts a document with {case.errors}"


def test_corpus_is_large_enough_to_mean_something():
    """The oracle covers valid examples of both kinds in every version and shape."""
    seen = set()
    for case in corpus.load_cases():
        shape = identify(case.document)
        if case.valid and shape is not None:
            seen.add((shape.kind, shape.shape))
    shapes = ("v1", "v1beta2", "v1beta1", "parallel")
    assert {(k, s) for k in ("ResourceClaim", "ResourceClaimTemplate") for s in shapes} <= seen
