"""Corpus documents moved to another version or kind keep their expected findings.

Two facts of upstream-rules.md turn each corpus document into a second test:
- v1 and v1beta2 are field-for-field identical to the internal type (§2.1, §5.1), so a
  v1 document relabelled v1beta2 (and back) must get the same findings;
- a template validates its `spec.spec` with the claim rules (§2.6, §3.3 rule 2), so a
  claim's spec wrapped into a template gets the same findings under `spec.spec.`,
  except the admin-access error, whose path never has that prefix (§3.7 quirk).
The expected findings come from each document's `# expect:` block, never from
draguard's answer for the original document.
"""

from __future__ import annotations

import copy
from typing import Any

import corpus
import pytest

from draguard.schema.validate import validate_object

CASES = corpus.load_cases()
OTHER_NESTED = {"v1": "v1beta2", "v1beta2": "v1"}
# v1 does not exist before 1.34 (§1.2), so relabelling is meaningful only from 1.34 on.
OLD_RELEASES = {"1.33"}


def param(case: Any) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=case.disputed)] if case.disputed else []
    return pytest.param(case, id=case.id, marks=marks)


def relabelled(document: dict[str, Any], version: str) -> dict[str, Any]:
    moved = copy.deepcopy(document)
    moved["apiVersion"] = f"resource.k8s.io/{version}"
    return moved


def as_template(claim: dict[str, Any]) -> dict[str, Any]:
    """The claim's spec inside a template with the claim's metadata."""
    return {
        "apiVersion": claim["apiVersion"],
        "kind": "ResourceClaimTemplate",
        "metadata": copy.deepcopy(claim.get("metadata")),
        "spec": {"spec": copy.deepcopy(claim.get("spec"))},
    }


def template_field(field: str, type_: str) -> str:
    """Where a claim's finding appears once its spec sits in a template."""
    admin_access = type_ in ("Forbidden", "InternalError") and field.endswith(".adminAccess")
    if field.startswith("spec.") and not admin_access:
        return "spec.spec." + field.removeprefix("spec.")
    return field


def findings(document: Any, case: Any) -> list[tuple[str, str]]:
    verdict = validate_object(document, options=case.options)
    return [(e.type.value, e.field) for e in verdict.errors]


RELABEL = [
    c for c in CASES if c.version in OTHER_NESTED and c.kubernetes_version not in OLD_RELEASES
]
WRAP = [c for c in CASES if c.kind == "ResourceClaim" and isinstance(c.document.get("spec"), dict)]


def test_derivations_cover_many_documents() -> None:
    """Both derivations apply to a large share of the corpus."""
    assert len(RELABEL) >= 50 and len(WRAP) >= 50


@pytest.mark.parametrize("case", [param(c) for c in RELABEL])
def test_v1_and_v1beta2_agree(case: Any) -> None:
    """The same document under the other nested apiVersion gets the expected findings."""
    moved = relabelled(case.document, OTHER_NESTED[case.version])
    assert findings(moved, case) == [(f.type, f.field) for f in case.errors]


@pytest.mark.parametrize("case", [param(c) for c in WRAP])
def test_claim_spec_in_template_keeps_findings(case: Any) -> None:
    """A claim's spec inside a template gets the expected findings under spec.spec."""
    want = [(f.type, template_field(f.field, f.type)) for f in case.errors]
    assert findings(as_template(case.document), case) == want
