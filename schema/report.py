"""Lint results as values, one accumulator, and the reporters chosen by name.

The JSON shape is a contract other tools parse (`contract.md` §4): keys, their order
and their meaning are kept exactly; optional parts (`item`, `warnings`) appear only
when they carry something. Skipped documents (other kinds) are counted in the summary
but are not results.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import KINDS


class Finding(NamedTuple):
    """One upstream error in a document, located in the user's own file (`contract.md` §3).

    A named tuple rather than a frozen dataclass, as `LintWarning`: lint makes one or
    two per document, and a frozen dataclass sets each field through `object.__setattr__`.
    `field` is rendered (`str`) only by the reporters, at the edge.
    """

    field: FieldPath
    type: str
    message: str
    line: int
    column: int


class LintWarning(NamedTuple):
    """A finding beyond upstream's rules: a stable kebab-case `code`; exit 0 unless asked."""

    field: FieldPath
    code: str
    message: str
    line: int
    column: int


class DocumentResult(NamedTuple):
    """The outcome for one object: a document, or one item of a `kind: List` document.

    `document` is the position of the document in its file (`sources.Chunk.index`);
    a list's items share it and carry `item`, their position in `items`.
    `line` is where the object starts, for reporters that place the whole object.
    """

    file: str
    document: int
    api_version: str | None
    kind: str | None
    name: str | None
    namespace: str | None
    errors: tuple[Finding, ...] = ()
    warnings: tuple[LintWarning, ...] = ()
    item: int | None = None
    skipped: bool = False
    skip_reason: str = ""
    line: int = 1
    column: int = 1
    templated: bool = False  # a template, not checked: `skip_reason` says so (issue 17)

    @property
    def valid(self) -> bool:
        return not self.skipped and not self.errors


@dataclass(frozen=True, slots=True)
class Summary:
    documents: int
    valid: int
    invalid: int
    skipped: int
    templated: int = 0  # counted apart from `skipped`


@dataclass(slots=True)
class Report:
    """Accumulates the results of one run; warnings with a disabled code are dropped here.

    `parts` holds results' parts of the report rendered ahead, as they came in
    (`parts_for`); a result without one is rendered when the report is.
    """

    disabled: frozenset[str] = frozenset()
    results: list[DocumentResult] = field(default_factory=list)
    parts: Parts | None = None

    def add(self, result: DocumentResult) -> None:
        self.results.append(without_codes(result, self.disabled))

    def parts_for(self, output: str) -> Parts | None:
        """Where results' parts in the `output` format are kept when they are rendered
        as the results come in (`lint.run` from its workers), for the formats rendered
        result by result (`PARTS`); None for the others."""
        if output not in PARTS:
            return None
        self.parts = Parts(output, self.disabled)
        return self.parts

    def part(self, result: DocumentResult, output: str) -> str:
        """`result`'s part of the report in `output` (one of `PARTS`): the one rendered
        ahead from this very result, else rendered now."""
        parts = self.parts
        if parts is not None and parts.output == output:
            made = parts.made.get(id(result))
            if made is not None and made[0] is result:
                return made[1]
        return PARTS[output](result)

    def extend(self, results: Iterable[DocumentResult]) -> None:
        for result in results:
            self.add(result)

    @property
    def checked(self) -> list[DocumentResult]:
        """The results reporters show: every object that was not skipped."""
        return [r for r in self.results if not r.skipped]

    @property
    def templated(self) -> list[DocumentResult]:
        return [r for r in self.results if r.templated]

    def summary(self) -> Summary:
        # One pass (lint renders this once per run, over every document). A result is
        # valid when neither skipped nor erroneous; `_not_validated` adds the kinds that
        # are not claims or templates, so a valid one is counted only if it is a claim.
        skipped = valid = templated = 0
        for r in self.results:
            templated += r.templated
            if r.skipped:
                skipped += 1
            elif not r.errors:
                if r.kind in KINDS:
                    valid += 1
                else:
                    skipped += 1
        return Summary(len(self.results), valid, len(self.results) - skipped - valid,
                       skipped - templated, templated)

    def has_findings(self, *, fail_on_warning: bool = False) -> bool:
        if any(r.errors for r in self.results):
            return True
        return fail_on_warning and any(r.warnings for r in self.results)


def without_codes(result: DocumentResult, disabled: frozenset[str]) -> DocumentResult:
    """`result` without its warnings of a `disabled` code; the same object when it has none."""
    if not disabled or not result.warnings:
        return result
    kept = tuple(w for w in result.warnings if w.code not in disabled)
    return result if len(kept) == len(result.warnings) else result._replace(warnings=kept)


class Parts:
    """Results' parts of the report in one format, rendered before the report is
    (issue 21): as the pool's workers' results come in, while the workers still run,
    instead of all of them after the workers end, on one core with the other idle.

    (Rendered in the workers themselves, the parts cost the workers more CPU than the
    main process had spent on them, and the pipe carried four times the bytes:
    bench/RESULTS.md.) Each part is kept with the very result object it was made from
    (so its `id` cannot be reused meanwhile): a result replaced since (cross-checked,
    given cluster findings) is a new object, and is rendered again from what it holds.
    """

    __slots__ = ("disabled", "made", "output")

    def __init__(self, output: str, disabled: frozenset[str] = frozenset()) -> None:
        self.output = output  # one of `PARTS`
        self.disabled = disabled  # the codes `Report.add` drops, dropped first here
        self.made: dict[int, tuple[DocumentResult, str]] = {}

    def made_from(self, result: DocumentResult) -> DocumentResult:
        """`result` as the report keeps it, its part rendered and kept."""
        result = without_codes(result, self.disabled)
        if not result.skipped:
            self.made[id(result)] = (result, PARTS[self.output](result))
        return result


def _not_validated(result: DocumentResult) -> bool:
    """Skipped in the summary: any document that is not a claim or template.

    A Pod or workload controller is only cross-checked against the claims beside it and
    shown when that warns; it counts as skipped either way, so that the same Deployment
    is counted alike alone and next to its claims.
    """
    return result.skipped or (not result.errors and result.kind not in KINDS)


# --- text --------------------------------------------------------------------------

_NO_PATH = FieldPath()  # a line about the whole document (a template)

def render_text(report: Report) -> str:
    """`file:line:col: field: message`, one finding a line, then a summary line."""
    lines = [part for part in (report.part(r, "text") for r in report.checked) if part]
    lines.extend(_text_line(r.file, r.line, r.column, _NO_PATH, r.skip_reason)
                 for r in report.templated)
    s = report.summary()
    noun = "document" if s.documents == 1 else "documents"
    lines.append(f"{s.documents} {noun}: {s.valid} valid, {s.invalid} invalid, "
                 f"{s.skipped} skipped" + (f", {s.templated} templated" if s.templated else ""))
    lines.append("")  # the last line's break, without copying the whole text to add it
    return "\n".join(lines)


def text_part(result: DocumentResult) -> str:
    """A result's lines of the text report (no line break after the last; empty for none)."""
    lines = [_text_line(result.file, err.line, err.column, err.field, err.message)
             for err in result.errors]
    lines.extend(_warning_line(result.file, warn) for warn in result.warnings)
    return "\n".join(lines)


def _text_line(file: str, line: int, column: int, path: FieldPath, message: str) -> str:
    where = f"{file}:{line}:{column}:"
    return f"{where} {path}: {message}" if path else f"{where} {message}"


def _warning_line(file: str, warn: LintWarning) -> str:
    return _text_line(file, warn.line, warn.column, warn.field,
                      f"warning {warn.code}: {warn.message}")


# --- json --------------------------------------------------------------------------

def render_json(report: Report) -> str:
    """The object of `contract.md` §4: `results` and `summary`."""
    s = report.summary()
    summary: dict[str, int] = {"documents": s.documents, "valid": s.valid,
                               "invalid": s.invalid, "skipped": s.skipped}
    tail = ""
    if s.templated:  # only then, so that the usual output stays as contract §4 shows it
        summary["templated"] = s.templated
        tail = ', "templated": ' + json.dumps([
            {"file": r.file, "document": r.document, "line": r.line, "column": r.column,
             "message": r.skip_reason}
            for r in report.templated
        ])
    # The text `json.dumps` gives for the whole object (default separators, no indent:
    # tools are the readers), each result's part encoded on its own (`json_part`), so
    # that it can be rendered as the result comes in. Joined once: the report can be
    # tens of megabytes, and each concatenation would copy it all.
    pieces = ['{"results": [']
    for result in report.checked:
        pieces += (report.part(result, "json"), ", ")
    if len(pieces) > 1:
        pieces.pop()  # the last separator
    pieces.append(f'], "summary": {json.dumps(summary)}{tail}}}\n')
    return "".join(pieces)


def json_part(result: DocumentResult) -> str:
    """A result's object in `results` of the JSON report, as `json.dumps` encodes it
    (default separators, ASCII), with its keys in contract §4's order: `item` and
    `warnings` only when the result has them.

    Written out key by key rather than built as dicts for `json.dumps`: every value
    is encoded by the same encoder (`_encode`) and the numbers are `int`s, so the text
    is the same, in about two thirds of the time (bench/RESULTS.md); tests/schema/test_report.py
    checks it against `json.dumps` of the contract's object on generated results.
    """
    q = _encode
    item = "" if result.item is None else f'"item": {result.item}, '
    errors = ", ".join([
        f'{{"field": {q(str(e.field))}, "type": {q(e.type)}, "message": {q(e.message)}, '
        f'"line": {e.line}, "column": {e.column}}}'
        for e in result.errors
    ])
    warnings = ", ".join([
        f'{{"field": {q(str(w.field))}, "code": {q(w.code)}, "message": {q(w.message)}, '
        f'"line": {w.line}, "column": {w.column}}}'
        for w in result.warnings
    ])
    return (f'{{"file": {q(result.file)}, "document": {result.document}, {item}'
            f'"apiVersion": {q(result.api_version)}, "kind": {q(result.kind)}, '
            f'"name": {q(result.name)}, "namespace": {q(result.namespace)}, '
            f'"valid": {"true" if result.valid else "false"}, "errors": [{errors}]'
            + (f', "warnings": [{warnings}]}}' if result.warnings else "}"))


_encode = json.JSONEncoder().encode
"""`json.dumps` of one value: `dumps` with its default arguments is this encoder's
`encode` (a string straight to the C escaper), without `dumps`' check of its arguments."""


# --- junit -------------------------------------------------------------------------

def render_junit(report: Report) -> str:
    """One `<testsuite>` per file, one `<testcase>` per object; errors are `<failure>`s."""
    import xml.etree.ElementTree as ET  # loaded for this format only: it costs a start

    root = ET.Element("testsuites", name="draguard lint")
    suites: dict[str, ET.Element] = {}
    for result in report.results:
        suite = suites.get(result.file)
        if suite is None:
            suite = suites[result.file] = ET.SubElement(root, "testsuite", name=_xml(result.file))
        _junit_case(suite, result)
    for suite in [root, *suites.values()]:
        _junit_counts(suite, list(suite.iter("testcase")))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _junit_case(suite: ET.Element, result: DocumentResult) -> None:
    import xml.etree.ElementTree as ET  # as in render_junit

    case = ET.SubElement(suite, "testcase", classname=_xml(result.file),
                         name=_xml(_object_label(result)), file=_xml(result.file),
                         line=str(result.line))
    if result.skipped:
        ET.SubElement(case, "skipped", message=_xml(result.skip_reason))
        return
    for err in result.errors:
        failure = ET.SubElement(case, "failure", type=err.type,
                                message=_xml(f"{err.field}: {err.message}"))
        failure.text = _xml(_text_line(result.file, err.line, err.column, err.field, err.message))
    if result.warnings:
        out = ET.SubElement(case, "system-out")
        out.text = _xml("\n".join(
            _warning_line(result.file, w) for w in result.warnings
        ))


def _junit_counts(suite: ET.Element, cases: list[ET.Element]) -> None:
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", "0")
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))


def _object_label(result: DocumentResult) -> str:
    where = f"document {result.document}"
    if result.item is not None:
        where += f" item {result.item}"
    kind = result.kind or "(unknown kind)"
    name = result.name or "(no name)"
    if result.namespace:
        name = f"{result.namespace}/{name}"
    return f"{where}: {kind} {name}"


# XML 1.0 cannot carry most control characters, even escaped: every code point outside
# its Char production (#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
# [#x10000-#x10FFFF]), written as the few ranges it leaves out, which compile in a tenth
# of the time of the negated class (tests/schema/test_report.py checks every code point).
# Compiled on first use, by the JUnit output only: not at every start.
@functools.cache
def _not_xml() -> re.Pattern[str]:
    return re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    return _not_xml().sub("\ufffd", text)


# --- sarif -------------------------------------------------------------------------

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render_sarif(report: Report) -> str:
    """SARIF 2.1.0: one run, a rule per error type and warning code, a result per finding."""
    rule_ids: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    for result in report.checked:
        for err in result.errors:
            results.append(_sarif_result(rule_ids, err.type, "error", result, err))
        for warn in result.warnings:
            results.append(_sarif_result(rule_ids, warn.code, "warning", result, warn))
    driver = {
        "name": "draguard",
        "version": _version(),
        "informationUri": "https://github.com/kubernetes/enhancements/issues/4816",
        "rules": [{"id": rule, "name": rule, "shortDescription": {"text": _rule_text(rule)}}
                  for rule in rule_ids],
    }
    out = {"$schema": SARIF_SCHEMA, "version": "2.1.0",
           "runs": [{"tool": {"driver": driver}, "results": results}]}
    return json.dumps(out, indent=2) + "\n"


def _sarif_result(rule_ids: dict[str, int], rule: str, level: str, result: DocumentResult,
                  finding: Finding | LintWarning) -> dict[str, Any]:
    index = rule_ids.setdefault(rule, len(rule_ids))
    text = f"{finding.field}: {finding.message}" if finding.field else finding.message
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(result.file)},
            "region": {"startLine": finding.line, "startColumn": finding.column},
        },
    }
    if finding.field:
        location["logicalLocations"] = [{"fullyQualifiedName": str(finding.field),
                                          "kind": "member"}]
    return {"ruleId": rule, "ruleIndex": index, "level": level, "message": {"text": text},
            "locations": [location]}


def _rule_text(rule: str) -> str:
    if rule[:1].isupper():
        return f"upstream Kubernetes validation error of type {rule}"
    return f"draguard warning {rule}"


def _uri(file: str) -> str:
    from urllib.parse import quote  # loaded for SARIF only

    return quote(file.replace("\\", "/"))


def _version() -> str:
    from importlib import metadata  # loaded for SARIF only: it costs a start

    try:
        return metadata.version("draguard")
    except metadata.PackageNotFoundError:
        return "0"


# --- by name -----------------------------------------------------------------------

Reporter = Callable[[Report], str]

REPORTERS: dict[str, Reporter] = {
    "text": render_text,
    "json": render_json,
    "junit": render_junit,
    "sarif": render_sarif,
}


PARTS: dict[str, Callable[[DocumentResult], str]] = {"text": text_part, "json": json_part}
"""The formats whose report is each checked result's part, in input order, inside what
the whole report adds (`render_text`: templates and the summary line after them;
`render_json`: the object around them)."""


def render(report: Report, output: str) -> str:
    """Render with the reporter named `output` (one of `REPORTERS`)."""
    return REPORTERS[output](report)
