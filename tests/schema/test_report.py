"""Reporters: the contract's JSON shape, text lines, JUnit and SARIF; the accumulator's counts."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from lint_fakes import parse_path

from draguard.schema.model.paths import FieldPath, MapKey
from draguard.schema.report import (
    PARTS,
    REPORTERS,
    DocumentResult,
    Finding,
    LintWarning,
    Report,
    render,
    without_codes,
)

DUP = Finding(parse_path("spec.devices.requests[0].firstAvailable[1]"), "Duplicate", 'Duplicate value: "a"', 12, 9)
REF = Finding(parse_path("spec.devices.constraints[0].requests[0]"), "Invalid",
              'Invalid value: "gpu/x": must be the name of a request', 16, 18)
WARN = LintWarning(parse_path("spec.devices.config[0].requests[0]"), "parent-reference", "names a parent", 20, 9)


def _report(disabled: frozenset[str] = frozenset()) -> Report:
    report = Report(disabled=disabled)
    report.add(DocumentResult("a.yaml", 0, "resource.k8s.io/v1", "ResourceClaim", "c", "ns",
                              (DUP, REF)))
    report.add(DocumentResult("a.yaml", 1, "resource.k8s.io/v1", "ResourceClaim", "ok", "ns",
                              warnings=(WARN,), line=30))
    report.add(DocumentResult("b.yaml", 0, "v1", "ConfigMap", "cm", "ns", skipped=True,
                              skip_reason="not a DRA claim"))
    report.add(DocumentResult("b.yaml", 1, "resource.k8s.io/v1", "ResourceClaim", "li", "ns",
                              item=2))
    return report


def test_json_matches_the_contract_shape() -> None:
    """`--output json` is one object with `results` and `summary` exactly as contract.md §4 shows."""
    out = json.loads(render(_report(), "json"))
    assert list(out) == ["results", "summary"]
    first = out["results"][0]
    assert list(first) == ["file", "document", "apiVersion", "kind", "name", "namespace",
                           "valid", "errors"]
    assert first["errors"][0] == {"field": "spec.devices.requests[0].firstAvailable[1]",
                                  "type": "Duplicate", "message": 'Duplicate value: "a"',
                                  "line": 12, "column": 9}
    assert (first["file"], first["document"], first["valid"]) == ("a.yaml", 0, False)
    assert out["summary"] == {"documents": 4, "valid": 2, "invalid": 1, "skipped": 1}


def _contract_object(result: DocumentResult) -> dict[str, object]:
    """A result's object in `results`, as contract.md §4 shows it (the reference the
    reporter's text is checked against)."""
    out: dict[str, object] = {"file": result.file, "document": result.document}
    if result.item is not None:
        out["item"] = result.item
    out.update({
        "apiVersion": result.api_version, "kind": result.kind, "name": result.name,
        "namespace": result.namespace, "valid": result.valid,
        "errors": [{"field": str(e.field), "type": e.type, "message": e.message,
                    "line": e.line, "column": e.column} for e in result.errors],
    })
    if result.warnings:
        out["warnings"] = [{"field": str(w.field), "code": w.code, "message": w.message,
                            "line": w.line, "column": w.column} for w in result.warnings]
    return out


_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
_PATHS = st.lists(st.one_of(st.text(max_size=6), st.integers(0, 99),
                            st.text(max_size=6).map(MapKey)), max_size=4).map(FieldPath)
_LINES = st.integers(0, 10**6)


@st.composite
def _results(draw: st.DrawFn) -> DocumentResult:
    maybe = st.none() | _TEXT
    errors = draw(st.lists(st.builds(Finding, _PATHS, _TEXT, _TEXT, _LINES, _LINES), max_size=3))
    warnings = draw(st.lists(st.builds(LintWarning, _PATHS, _TEXT, _TEXT, _LINES, _LINES),
                             max_size=3))
    return DocumentResult(draw(_TEXT), draw(_LINES), draw(maybe), draw(maybe), draw(maybe),
                          draw(maybe), tuple(errors), tuple(warnings),
                          item=draw(st.none() | _LINES), skipped=draw(st.booleans()))


@settings(max_examples=examples(300), deadline=None)
@given(_results())
def test_json_part_is_json_dumps_of_the_contract_object(result: DocumentResult) -> None:
    """Each result's part is the text `json.dumps` gives for its contract object, for any
    text (control characters, lone surrogates, non-ASCII), missing names and items."""
    assert PARTS["json"](result) == json.dumps(_contract_object(result))


def _whole_json(report: Report) -> str:
    """The JSON report as one `json.dumps` of the whole object (how it was made before
    results' parts were rendered apart)."""
    s = report.summary()
    summary = {"documents": s.documents, "valid": s.valid, "invalid": s.invalid,
               "skipped": s.skipped}
    whole: dict[str, object] = {"results": [_contract_object(r) for r in report.checked],
                                "summary": summary}
    if s.templated:
        summary["templated"] = s.templated
        whole["templated"] = [{"file": r.file, "document": r.document, "line": r.line,
                               "column": r.column, "message": r.skip_reason}
                              for r in report.templated]
    return json.dumps(whole) + "\n"


def test_json_is_the_whole_object_encoded_at_once() -> None:
    """The JSON report joins each result's part, byte for byte what `json.dumps` gives for
    the whole object (contract.md §4 is parsed by tools; compared as bytes here)."""
    report = _report()
    assert render(report, "json") == _whole_json(report)
    report.add(DocumentResult("c.yaml", 0, None, None, None, None, skipped=True,
                              skip_reason='a template: "{{ x }}" \u00e9', line=3, column=7,
                              templated=True))
    assert render(report, "json") == _whole_json(report)
    assert render(Report(), "json") == _whole_json(Report())


@pytest.mark.parametrize("output", sorted(PARTS))
def test_a_part_rendered_ahead_is_used_only_for_its_own_result(output: str) -> None:
    """A part made where the result was checked is joined as it is; a result replaced since
    (cross-checked, given cluster findings) is rendered again from what it now holds."""
    report = _report()
    parts = report.parts_for(output)
    assert parts is not None
    first, second = report.results[0], report.results[1]
    parts.made[id(first)] = (first, "MADE AHEAD")
    replaced = second._replace(warnings=())
    parts.made[id(second)] = (second, "STALE")
    report.results[1] = replaced
    out = render(report, output)
    assert "MADE AHEAD" in out and "STALE" not in out
    assert report.part(replaced, output) == PARTS[output](replaced)
    assert report.parts_for("junit") is None  # rendered whole, from the results


def test_a_part_is_made_of_what_the_report_keeps() -> None:
    """Disabled codes are dropped before the part is rendered, as `Report.add` drops
    them; a result that loses none stays the same object (so its part stays its own)."""
    report = _report(disabled=frozenset({"parent-reference"}))
    parts = report.parts_for("text")
    assert parts is not None
    with_warning = DocumentResult("a.yaml", 1, None, "ResourceClaim", "ok", "ns", warnings=(WARN,))
    kept = parts.made_from(with_warning)
    assert kept.warnings == () and parts.made[id(kept)] == (kept, "")
    assert without_codes(with_warning, frozenset({"other"})) is with_warning
    skipped = DocumentResult("b.yaml", 0, "v1", "ConfigMap", "cm", "ns", skipped=True)
    assert parts.made_from(skipped) is skipped and id(skipped) not in parts.made


def test_json_optional_keys_appear_only_when_used() -> None:
    """`warnings` and `item` are present only on results that have them; skipped ones are absent."""
    results = json.loads(render(_report(), "json"))["results"]
    assert [("warnings" in r, "item" in r) for r in results] == [
        (False, False), (True, False), (False, True)]
    assert results[1]["warnings"] == [{"field": str(WARN.field), "code": "parent-reference",
                                       "message": "names a parent", "line": 20, "column": 9}]
    assert results[2]["item"] == 2 and list(results[2])[:3] == ["file", "document", "item"]


def test_text_lines() -> None:
    """Text output is `file:line:col: field: message` per finding, then a summary line."""
    lines = render(_report(), "text").splitlines()
    assert lines == [
        'a.yaml:12:9: spec.devices.requests[0].firstAvailable[1]: Duplicate value: "a"',
        'a.yaml:16:18: spec.devices.constraints[0].requests[0]: Invalid value: "gpu/x": '
        "must be the name of a request",
        "a.yaml:20:9: spec.devices.config[0].requests[0]: warning parent-reference: "
        "names a parent",
        "4 documents: 2 valid, 1 invalid, 1 skipped",
    ]


def test_text_without_field() -> None:
    """A document-level finding (empty field) prints without an empty field column."""
    report = Report()
    report.add(DocumentResult("a.yaml", 0, None, None, None, None,
                              (Finding(parse_path(""), "Malformed", "Malformed value: x", 3, 1),)))
    assert render(report, "text").splitlines()[0] == "a.yaml:3:1: Malformed value: x"


def test_junit_counts_and_failures() -> None:
    """JUnit has a suite per file, a case per object, failures per error and skipped cases."""
    root = ET.fromstring(render(_report(), "junit"))
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "skipped")} == {
        "tests": "4", "failures": "1", "skipped": "1"}
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["a.yaml", "b.yaml"]
    failures = suites[0].findall("testcase/failure")
    assert [f.get("type") for f in failures] == ["Duplicate", "Invalid"]
    assert failures[0].text == ('a.yaml:12:9: spec.devices.requests[0].firstAvailable[1]: '
                                'Duplicate value: "a"')
    names = [c.get("name") for c in root.iter("testcase")]
    assert names[0] == "document 0: ResourceClaim ns/c"
    assert names[3] == "document 1 item 2: ResourceClaim ns/li"


def test_junit_survives_control_characters() -> None:
    """Characters XML cannot carry are replaced, so the output always parses."""
    report = Report()
    report.add(DocumentResult("a\x01.yaml", 0, None, None, "n\x07", None,
                              (Finding(parse_path(""), "Malformed", "Malformed value: \x1b[0m", 1, 1),)))
    root = ET.fromstring(render(report, "junit"))
    assert root.find("testsuite").get("name") == "a\ufffd.yaml"  # type: ignore[union-attr]


def test_xml_replaces_exactly_the_code_points_xml_cannot_carry() -> None:
    """Every code point outside XML 1.0's Char production becomes U+FFFD, and only those."""
    from draguard.schema.report import _xml

    def allowed(c: int) -> bool:
        return (c in (0x9, 0xA, 0xD) or 0x20 <= c <= 0xD7FF or 0xE000 <= c <= 0xFFFD
                or 0x10000 <= c <= 0x10FFFF)

    text = "".join(map(chr, range(0x110000)))
    expected = "".join(chr(c) if allowed(c) else "\ufffd" for c in range(0x110000))
    assert _xml(text) == expected


def test_summary_counts_every_combination_of_what_it_reads() -> None:
    """The summary's counts follow their definitions for any mix of kinds, errors, skips and templates."""
    import itertools

    variants = [
        DocumentResult("a.yaml", 0, None, kind, None, None, errors, skipped=skipped,
                       templated=templated)
        for kind, errors, skipped, templated in itertools.product(
            (None, "ResourceClaim", "ResourceClaimTemplate", "Pod"), ((), (DUP,)),
            (False, True), (False, True))
    ]
    for results in itertools.product(variants, repeat=3):
        report = Report()
        report.extend(results)
        # Not validated: skipped, or an error-free object of a kind lint does not check.
        unchecked = [r for r in results if r.skipped or (not r.errors and r.kind not in
                                                           ("ResourceClaim", "ResourceClaimTemplate"))]
        valid = [r for r in results if r.valid and r not in unchecked]
        templated = [r for r in results if r.templated]
        summary = report.summary()
        assert (summary.documents, summary.valid, summary.invalid, summary.skipped,
                summary.templated) == (3, len(valid), 3 - len(unchecked) - len(valid),
                                       len(unchecked) - len(templated), len(templated))


def test_sarif_results_and_rules() -> None:
    """SARIF 2.1.0: one run, a rule per error type or warning code, located results."""
    out = json.loads(render(_report(), "sarif"))
    assert out["version"] == "2.1.0"
    (run,) = out["runs"]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert rules == ["Duplicate", "Invalid", "parent-reference"]
    results = run["results"]
    assert [(r["ruleId"], r["ruleIndex"], r["level"]) for r in results] == [
        ("Duplicate", 0, "error"), ("Invalid", 1, "error"), ("parent-reference", 2, "warning")]
    location = results[0]["locations"][0]
    assert location["physicalLocation"] == {"artifactLocation": {"uri": "a.yaml"},
                                            "region": {"startLine": 12, "startColumn": 9}}
    assert results[0]["message"]["text"] == f"{DUP.field}: {DUP.message}"


def test_disabled_warning_codes_are_dropped() -> None:
    """`--disable CODE` removes those warnings before any reporter sees them."""
    report = _report(disabled=frozenset({"parent-reference"}))
    assert all(not r.warnings for r in report.results)
    assert "warnings" not in render(report, "json")


@pytest.mark.parametrize(
    ("results", "fail_on_warning", "expected"),
    [
        pytest.param([], False, False, id="nothing"),
        pytest.param([DocumentResult("a", 0, None, None, None, None, (DUP,))], False, True,
                     id="error"),
        pytest.param([DocumentResult("a", 0, None, None, None, None, warnings=(WARN,))], False,
                     False, id="warning-only"),
        pytest.param([DocumentResult("a", 0, None, None, None, None, warnings=(WARN,))], True,
                     True, id="warning-with-fail-on-warning"),
    ],
)
def test_has_findings(results: list[DocumentResult], fail_on_warning: bool, expected: bool) -> None:
    """Errors always count as findings; warnings only with `--fail-on-warning`."""
    report = Report()
    report.extend(results)
    assert report.has_findings(fail_on_warning=fail_on_warning) is expected


def test_reporters_by_name() -> None:
    """The four contract outputs are available by name."""
    assert sorted(REPORTERS) == ["json", "junit", "sarif", "text"]
