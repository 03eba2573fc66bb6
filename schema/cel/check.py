"""CEL selector checking: `selectors[k].cel.expression` (`upstream-rules.md` §3.3 rule 14).

`check_selector` gives the apiserver's verdict on one expression, in upstream's order:
TooLong (no compilation) → compile and type-check in the DRA environment (`cel_env`)
→ result type must be bool or the unknown type → estimated cost ≤ 1,000,000. The
compiler is the CEL C++ checker (`cel-expr-python`); its issues are re-rendered in
cel-go's text. What is exact and what is approximate is listed in docs/cel.md.

Verdicts are cached per (expression, flags) in this process, bounded by their bytes
(issue 15 §2–3): the same expensive selector is compiled once per worker, even when
several threads ask for it at once, and clients choosing long expressions cannot grow
the cache beyond `CACHE_BYTES`. A compilation itself is bounded as upstream bounds it:
the expression's length (`EXPRESSION_MAX`, before compiling), the parser's recursion
limit, and the cost limit (after type-checking); in time, by the caller's deadline
(the webhook stops a review between two compilations).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from draguard.schema.cel.cost import COST_LIMIT, estimate_max_cost
from draguard.schema.cel.depth import nesting_depth
from draguard.schema.cel.environment import EnvFlags, environment
from draguard.schema.cel.syntax import decode_checked
from draguard.schema.cel.validators import validate
from draguard.schema.model.bounded import ByteBudgetCache, CacheInfo, text_bytes
from draguard.schema.model.errors import FieldError, forbidden, internal_error, invalid, too_long
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import EXPRESSION_MAX, Release

RECURSION_LIMIT = 250  # cel-go parser default maxRecursionDepth (cel_depth.py)
# About 2,000 verdicts on 10 KiB expressions, tens of thousands on typical ones.
CACHE_BYTES = 8 * 1024 * 1024
# A verdict whose rendered issues are larger than this is not kept (recomputed instead).
CACHE_MAX_ENTRY = 256 * 1024
_VERDICT_OVERHEAD = 120  # the verdict object and the (expression, flag) key tuple

Outcome = Literal["ok", "invalid", "forbidden", "internal", "unchecked"]


@dataclass(frozen=True, slots=True)
class SelectorVerdict:
    """The outcome for one expression, independent of where it sits in a document.

    `unchecked` means the C++ parser's own nesting limit (32) stopped it while cel-go's
    (250) would not: nothing can be said, so nothing is reported (docs/cel.md).
    """

    outcome: Outcome
    detail: str = ""
    cost: int | None = None

    def errors(self, path: FieldPath, expression: str) -> list[FieldError]:
        if self.outcome == "invalid":
            return [invalid(path, expression, self.detail)]
        if self.outcome == "forbidden":
            return [forbidden(path, self.detail)]
        if self.outcome == "internal":
            return [internal_error(path, self.detail)]
        return []


def check_selector(expression: str, path: FieldPath, *, release: Release) -> list[FieldError]:
    """Upstream's findings for one selector expression at `path`; never raises."""
    # ≤ 4 bytes a character: short expressions need no encoding to know they fit.
    if len(expression) * 4 > EXPRESSION_MAX and (
        len(expression.encode("utf-8", "surrogatepass")) > EXPRESSION_MAX
    ):
        return [too_long(path, EXPRESSION_MAX)]
    try:
        verdict = analyse_selector(expression, consumable_capacity=release.consumable_capacity)
    except Exception as exc:  # a library failure must never take the caller down
        return [internal_error(path, f"CEL checking failed: {exc}")]
    return verdict.errors(path, expression)


def selector_passes(expression: str, *, release: Release) -> bool:
    """True when `check_selector` finds nothing, answered without a path (the common case).

    Only a short expression whose cached verdict is clean qualifies; anything else goes
    through `check_selector`, which then owns every detail of the finding.
    """
    if len(expression) * 4 > EXPRESSION_MAX:
        return False
    try:
        verdict = _analyse(expression, release.consumable_capacity)
    except Exception:  # reported by check_selector
        return False
    return verdict.outcome in ("ok", "unchecked")


def _without_surrogates(expression: str) -> str:
    """Lone surrogates (possible from JSON escapes) become U+FFFD, as Go's decoder does."""
    if not any("\ud800" <= ch <= "\udfff" for ch in expression):
        return expression
    return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in expression)


def analyse_selector(expression: str, *, consumable_capacity: bool) -> SelectorVerdict:
    """The verdict for one expression, compiled once per (expression, flags)."""
    return _analyse(expression, consumable_capacity)


def cache_info() -> CacheInfo:
    """Hits, misses, entries and estimated bytes of this process's verdict cache."""
    return _VERDICTS.info()


def clear_cache() -> None:
    _VERDICTS.clear()


def uncached_chars(document: Any, *, consumable_capacity: bool, limit: int) -> int:
    """Characters of the CEL expressions in `document` with no cached verdict, counted
    until they pass `limit`: how much compiling judging it would take (issue 15 §2).

    Every string under a key `expression`, wherever it sits (claims, templates, every
    version): a cheap over-estimate that needs no knowledge of the shapes.
    """
    total = 0
    pending = [document]
    while pending and total <= limit:
        item = pending.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "expression" and isinstance(value, str):
                    if (value, consumable_capacity) not in _VERDICTS:
                        total += len(value)
                elif isinstance(value, dict | list):
                    pending.append(value)
        elif isinstance(item, list):
            pending.extend(value for value in item if isinstance(value, dict | list))
    return total


_VERDICTS: ByteBudgetCache[tuple[str, bool], SelectorVerdict] = ByteBudgetCache(
    CACHE_BYTES, max_entry=CACHE_MAX_ENTRY)
_in_flight: dict[tuple[str, bool], threading.Event] = {}
_in_flight_lock = threading.Lock()
_WAIT_LIMIT = 2.0  # seconds; a compilation of 10 KiB takes a small fraction of that


def _analyse(expression: str, consumable_capacity: bool) -> SelectorVerdict:
    """The cached verdict; a thread asking for one being compiled waits for it."""
    key = (expression, consumable_capacity)
    verdict = _VERDICTS.get(key)
    if verdict is not None:
        return verdict
    done: threading.Event | None = None
    try:
        with _in_flight_lock:
            pending = _in_flight.get(key)
            if pending is None:
                done = _in_flight[key] = threading.Event()
        if pending is not None:
            return _await(key, pending)
        verdict = _compile_verdict(expression, consumable_capacity)
        _VERDICTS.put(key, verdict, text_bytes(expression, verdict.detail) + _VERDICT_OVERHEAD)
        return verdict
    finally:
        if done is not None:
            with _in_flight_lock:
                _in_flight.pop(key, None)
            done.set()


def _await(key: tuple[str, bool], pending: threading.Event) -> SelectorVerdict:
    """The verdict another thread is compiling, or compiled here if it does not come.

    Short waits, so that a review's deadline can stop this thread between them; a
    compiling thread stopped before it could clear its mark is given up on after
    `_WAIT_LIMIT` (its mark removed).
    """
    for _ in range(int(_WAIT_LIMIT / 0.05)):
        if pending.wait(0.05):
            break
    else:
        with _in_flight_lock:
            if _in_flight.get(key) is pending:
                del _in_flight[key]
    return _VERDICTS.get(key) or _compile_verdict(*key)


def check_derived_expression(
    expression: str, path: FieldPath, *, release: Release
) -> tuple[list[FieldError], int]:
    """A derived attribute's expression as kube-apiserver judges it, and the estimated
    cost it adds to its claim's total (0 when it does not compile).

    pkg/apis/resource/validation/validation.go `validateCELExpression(…, derivedAttribute:
    true)`: TooLong without compiling; compiled in the same environment as a selector;
    dynamic-resource-allocation cel/compile.go `validateOutputType` wants a primitive
    scalar (lists only with DRAListTypeAttributes, which draguard leaves off); a cost over
    min(CELSelectorExpressionMaxCost, DeviceClaimDerivedAttributeCELMaxCost) (both
    1,000,000) is Forbidden, and every compiled expression's cost is summed per claim.
    """
    if len(expression) * 4 > EXPRESSION_MAX and (
        len(expression.encode("utf-8", "surrogatepass")) > EXPRESSION_MAX
    ):
        return [too_long(path, EXPRESSION_MAX)], 0
    try:
        verdict = _derived_verdict(expression, release.consumable_capacity)
    except Exception as exc:  # a library failure must never take the caller down
        return [internal_error(path, f"CEL checking failed: {exc}")], 0
    cost = verdict.cost if verdict.outcome in ("ok", "forbidden") and verdict.cost else 0
    return verdict.errors(path, expression), cost


# Derived attributes are alpha and rare: a small count-bounded cache is enough.
@lru_cache(maxsize=256)
def _derived_verdict(expression: str, consumable_capacity: bool) -> SelectorVerdict:
    return _compile_verdict(expression, consumable_capacity, derived=True)


# cel/compile.go `isAllowedDerivedAttributeElementType`: bool, int, string, the unknown
# types (any, dyn) and semver.
_DERIVED_KINDS = ("bool", "int", "string", "any", "dyn")
DERIVED_TYPE = "must evaluate to a primitive scalar (string, integer, boolean, semver), not "


def _compile_verdict(
    expression: str, consumable_capacity: bool, derived: bool = False
) -> SelectorVerdict:
    expression = _without_surrogates(expression)  # inside the cache: scanned once per expression
    if nesting_depth(expression, limit=RECURSION_LIMIT) > RECURSION_LIMIT:
        # cel-go's parser gives up here; the C++ one stops far earlier (at 32) anyway.
        text = render_issues(expression, [Issue(-1, -1, recursion_message())])
        return SelectorVerdict("invalid", "compilation failed: " + text)
    env = environment(EnvFlags(consumable_capacity=consumable_capacity))
    try:
        compiled = env.compile(expression)
    except RuntimeError as exc:
        return _compile_failure(expression, str(exc))
    ast = decode_checked(compiled.serialize())
    issues = [Issue(*_location(expression, found.offset), found.message)
              for found in validate(ast)]
    if issues:
        return SelectorVerdict("invalid", "compilation failed: " + render_issues(expression, issues))
    result = ast.type_of(ast.root)
    if derived:
        if result.kind not in _DERIVED_KINDS and result.name != "kubernetes.Semver":
            return SelectorVerdict("invalid", DERIVED_TYPE + result.render())
    elif result.kind not in ("bool", "any"):
        detail = f"must evaluate to bool or the unknown type, not {result.render()}"
        return SelectorVerdict("invalid", detail)
    cost = estimate_max_cost(ast)
    if cost > COST_LIMIT:
        return SelectorVerdict("forbidden", "too complex, exceeds cost limit", cost)
    return SelectorVerdict("ok", cost=cost)


def recursion_message() -> str:
    return f"expression recursion limit exceeded: {RECURSION_LIMIT}"


# --- issues: parsing the C++ checker's text, rendering cel-go's --------------------------


@dataclass(frozen=True, slots=True)
class Issue:
    """One compile issue at a 1-based line and 0-based code-point column (-1: unknown)."""

    line: int
    column: int
    message: str


_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")
_ISSUE_LINE = re.compile(r"^ERROR: <input>:(-?\d+):(-?\d+): (.*)$")
_CPP_DEPTH_LIMIT = ("Exceeded max recursion depth", "Expression recursion limit exceeded")

# cel-cpp wording → cel-go wording (checker/errors.go), for the messages that differ.
_REWRITES = (
    (re.compile(r"^undefined field '(.*)' not found in struct '.*'$"), r"undefined field '\1'"),
    (re.compile(r"^expression of type '(.*)' cannot be the operand of a select operation$"),
     r"type '\1' does not support field selection"),
)


def _compile_failure(expression: str, text: str) -> SelectorVerdict:
    if any(marker in text for marker in _CPP_DEPTH_LIMIT):
        return SelectorVerdict("unchecked", text)
    issues = parse_cpp_issues(text)
    if not issues:
        return SelectorVerdict("internal", f"unexpected compilation error: {text}")
    return SelectorVerdict("invalid", "compilation failed: " + render_issues(expression, issues))


def parse_cpp_issues(text: str) -> list[Issue]:
    """Split the C++ status text into issues, dropping its snippets (they are re-rendered)."""
    body = _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text.strip()))
    issues: list[Issue] = []
    for line in body.split("\n"):
        match = _ISSUE_LINE.match(line)
        if match:
            column = int(match[2])
            issues.append(Issue(int(match[1]), column - 1 if column > 0 else -1,
                                _rewrite(match[3])))
        elif issues and not line.startswith(" | "):
            last = issues.pop()
            issues.append(Issue(last.line, last.column, last.message + "\n" + line))
    return issues


def _rewrite(message: str) -> str:
    for pattern, replacement in _REWRITES:
        if pattern.match(message):
            return pattern.sub(replacement, message)
    return message


def render_issues(expression: str, issues: list[Issue]) -> str:
    """cel-go's `Issues.String()`: sorted by position, one `ERROR: …` block per issue."""
    ordered = sorted(issues, key=lambda i: (i.line, i.column))
    return "\n".join(_render_issue(expression, issue) for issue in ordered)


def _render_issue(expression: str, issue: Issue) -> str:
    text = f"ERROR: <input>:{issue.line}:{issue.column + 1}: {issue.message}"
    lines = expression.split("\n")
    if not 1 <= issue.line <= len(lines):
        return text
    snippet = lines[issue.line - 1].replace("\t", " ")
    marker = []
    for ch in snippet[: max(issue.column, 0)]:
        marker.append("\uff0e" if len(ch.encode("utf-8", "surrogatepass")) > 1 else ".")
    at = snippet[issue.column] if 0 <= issue.column < len(snippet) else ""
    marker.append("\uff3e" if at and len(at.encode("utf-8", "surrogatepass")) > 1 else "^")
    return f"{text}\n | {snippet}\n | {''.join(marker)}"


def _location(expression: str, offset: int | None) -> tuple[int, int]:
    """cel-go's `locationByID`: (1-based line, 0-based column) of a code point offset.

    Lines are counted over the starts of lines 2, 3, … with a strict `<`, so a node at
    the very start of a line is placed at the end of the previous one — as upstream does.
    """
    if offset is None:
        return -1, -1
    line, column = 1, offset
    start = 0
    for index, ch in enumerate(expression):
        if ch != "\n":
            continue
        start = index + 1
        if start < offset:
            line, column = line + 1, offset - start
        else:
            break
    return line, column
