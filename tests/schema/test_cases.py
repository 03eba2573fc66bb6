"""The example corpus (tests/cases/) against its hand-written expected findings.

The `# expect:` blocks were written from upstream-rules.md, not from draguard's output, so a
difference here is either a rule-set bug or a disagreement about the spec — both worth
a look. One parameter per document, id `file:index`.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import corpus
import pytest

from draguard.schema.validate import Verdict, validate_object

CASES = corpus.load_cases()
PINNED = [case for case in CASES if any(f.message is not None for f in case.errors)]


def param(case: corpus.Case) -> Any:
    """One parameter per document; a disputed one must fail until the question is settled."""
    marks = [pytest.mark.xfail(strict=True, reason=case.disputed)] if case.disputed else []
    return pytest.param(case, id=case.id, marks=marks)


def verdict_of(case: corpus.Case) -> Verdict:
    return validate_object(case.document, options=case.options)


@pytest.mark.parametrize("case", [param(c) for c in CASES])
def test_findings_match_expected(case: corpus.Case) -> None:
    """draguard reports exactly the expected (type, field) pairs, in upstream's order."""
    verdict = verdict_of(case)
    got = [(e.type.value, e.field) for e in verdict.errors]
    want = [(f.type, f.field) for f in case.errors]
    assert got == want, case.rule
    assert verdict.valid is case.valid
    assert not verdict.skipped


@pytest.mark.parametrize("case", [param(c) for c in PINNED])
def test_pinned_messages(case: corpus.Case) -> None:
    """Where an expectation pins a message, draguard renders that body word for word."""
    got = [(e.field, e.message) for e in verdict_of(case).errors]
    want = [(f.field, f.message) for f in case.errors]
    assert len(got) == len(want)
    for (field, message), (want_field, want_message) in zip(got, want, strict=True):
        if want_message is not None:
            assert (field, message) == (want_field, want_message)


WARNED = [case for case in CASES if case.raw.get("warnings")]


@pytest.mark.parametrize("case", [param(c) for c in WARNED])
def test_expected_warnings(case: corpus.Case) -> None:
    """`warnings: {code: [field, ...]}` lists every warning of each named code ([] = none)."""
    verdict = verdict_of(case)
    for code, fields in case.raw["warnings"].items():
        got = [w.field for w in verdict.warnings if w.code == code]
        assert got == list(fields), (case.rule, code)


def test_corpus_is_big_enough() -> None:
    """The corpus holds at least 70 documents, a third of them or fewer valid."""
    assert len(CASES) >= 70
    assert 0 < sum(c.valid for c in CASES) <= len(CASES) // 2


@pytest.mark.parametrize("version", corpus.UPSTREAM_VERSIONS)
@pytest.mark.parametrize("kind", corpus.KINDS)
def test_corpus_covers_version_and_kind(version: str, kind: str) -> None:
    """Every apiVersion and kind has valid and invalid documents in the upstream shape."""
    outcomes = Counter(
        c.valid for c in CASES if c.version == version and c.kind == kind and not c.parallel
    )
    assert outcomes[True] >= 1 and outcomes[False] >= 1


def test_corpus_covers_parallel_shape() -> None:
    """The parallel shape has valid and invalid documents of both kinds."""
    parallel = [c for c in CASES if c.parallel]
    assert {c.kind for c in parallel} == set(corpus.KINDS)
    assert {c.valid for c in parallel} == {True, False}


# Rule 13 (adminAccess value, capacity) has nothing that can fail: upstream validates neither.
@pytest.mark.parametrize("rule", [r for r in range(1, 22) if r != 13])
def test_corpus_covers_rule(rule: int) -> None:
    """Every rule of upstream-rules.md §3.3 (1–21) has at least one failing document."""
    failing = [c for c in CASES if not c.valid and str(rule) in re.findall(r"\brule (\d+)", c.rule)]
    assert failing, f"no failing document tagged 'rule {rule}'"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_expectation_is_consistent(case: corpus.Case) -> None:
    """An expectation is valid exactly when it lists no errors, and names a known type."""
    assert case.valid is (not case.errors)
    known = {
        "Required",
        "Invalid",
        "Duplicate",
        "TooMany",
        "TooLong",
        "Forbidden",
        "NotSupported",
        "InternalError",
        "Unknown",
        "Malformed",
    }
    assert {f.type for f in case.errors} <= known


@pytest.mark.parametrize(
    "error_type",
    ["Required", "Invalid", "Duplicate", "TooMany", "TooLong", "Forbidden", "NotSupported"],
)
def test_corpus_pins_every_upstream_error_type(error_type: str) -> None:
    """Each upstream error type has at least one pinned message in the corpus (§3.1)."""
    assert any(
        f.type == error_type and f.message is not None for case in CASES for f in case.errors
    )


# --- the expectations live inside their documents --------------------------------------

CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}}}
spec: {{devices: {{requests: []}}}}
"""
VALID = "# expect: {{valid: true, rule: {rule}}}\n"
INVALID = "# expect:\n#   valid: false\n#   rule: {rule}\n#   errors:\n#   - [Invalid, metadata.name]\n"


def _stream(*documents: str) -> str:
    return "---\n".join(documents)


def _rules(tmp_path: Path, text: str) -> list[tuple[int, str, bool]]:
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return [(c.index, c.rule, c.valid) for c in corpus.load_file(path)]


def test_inserting_a_document_keeps_every_expectation(tmp_path: Path) -> None:
    """A document inserted first moves the others down with their own expectations."""
    a = "# prose\n" + VALID.format(rule="a") + CLAIM.format(name="a")
    b = INVALID.format(rule="b") + CLAIM.format(name="b")
    new = VALID.format(rule="new") + CLAIM.format(name="new")
    assert _rules(tmp_path, _stream(a, b)) == [(0, "a", True), (1, "b", False)]
    assert _rules(tmp_path, _stream(new, a, b)) == [(0, "new", True), (1, "a", True), (2, "b", False)]


@pytest.mark.parametrize(
    ("expectations", "problem"),
    [
        pytest.param("", "0 `# expect:` blocks", id="missing"),
        pytest.param(VALID.format(rule="x") * 2, "2 `# expect:` blocks", id="twice"),
        pytest.param("# expect: [true]\n", "must be a mapping with `valid`", id="not-a-mapping"),
    ],
)
def test_a_document_without_one_expectation_is_refused(tmp_path: Path, expectations: str, problem: str) -> None:
    """The loader refuses a document with no `# expect:` block, two, or one without `valid`."""
    text = _stream(VALID.format(rule="ok") + CLAIM.format(name="ok"), expectations + CLAIM.format(name="x"))
    with pytest.raises(ValueError, match=re.escape("c.yaml document 1: ") + ".*" + re.escape(problem)):
        _rules(tmp_path, text)


def test_every_corpus_file_is_read() -> None:
    """Every tests/cases/*.yaml file contributes its documents to the corpus."""
    files = {c.file for c in CASES}
    assert files == {p.name for p in corpus.corpus_files()}
    assert len(files) >= 15
