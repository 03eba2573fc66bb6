"""Hostile variations of the corpus: validation answers every document with findings.

Hypothesis takes a valid corpus document and replaces, deletes or adds one node
anywhere in it with an arbitrary JSON value. Whatever comes out, `validate_object`
must not raise (issue 2: "neither ever raises"), and each finding must carry one of the closed set of types (contract §3) and a message,
and every rule finding must name a field of the document's metadata or spec.
"""

from __future__ import annotations

import copy
from typing import Any

import corpus
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draguard.schema.model.errors import ErrorType, FieldError
from draguard.schema.validate import validate_object

VALID = [c for c in corpus.load_cases() if c.valid]

Path_ = tuple[str | int, ...]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.sampled_from(["", "gpu", "Bad_Name", "a/b/c", "All", "Exists"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


def node_paths(value: Any, path: Path_ = ()) -> list[Path_]:
    """Every path to a node below the root, parents before children."""
    out: list[Path_] = []
    if isinstance(value, dict):
        for key, child in value.items():
            out.append((*path, key))
            out.extend(node_paths(child, (*path, key)))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out.append((*path, i))
            out.extend(node_paths(child, (*path, i)))
    return out


@st.composite
def mutated_documents(draw: st.DrawFn) -> tuple[Any, Any]:
    case = draw(st.sampled_from(VALID))
    document = copy.deepcopy(case.document)
    path = draw(st.sampled_from(node_paths(document)))
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    action = draw(st.sampled_from(["replace", "delete", "add"]))
    if action == "delete" and isinstance(parent, dict):
        del parent[path[-1]]
    elif action == "add" and isinstance(parent, dict):
        parent[draw(st.text(min_size=1, max_size=12))] = draw(json_values)
    else:
        parent[path[-1]] = draw(json_values)
    return case, document


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_documents())
def test_mutated_document_gets_well_formed_findings(drawn: tuple[Any, Any]) -> None:
    """A corpus document with one node changed is answered with findings, never an exception."""
    case, document = drawn
    verdict = validate_object(document, options=case.options)
    assert verdict.valid is (not verdict.errors and not verdict.skipped)
    for error in verdict.errors:
        assert isinstance(error, FieldError) and isinstance(error.type, ErrorType)
        if error.type not in (ErrorType.UNKNOWN, ErrorType.MALFORMED):
            # Decoding findings may name any top-level field; rules only these two.
            assert error.field.split(".")[0] in ("metadata", "spec"), error.field
        assert isinstance(error.message, str) and error.message
