"""Upstream's post-check AST validators, which the Kubernetes base environment enables.

cel-go runs these after a clean type-check (`cel/validator.go`; the Kubernetes base
environment adds them from 1.29): duration, timestamp and regex *literals* must be
valid, and list and map literals must be homogeneous. Each finding is an issue at the
offending literal, rendered like any other compile issue.

The literal checks use Python's parsers in place of Go's, so they are approximations
(docs/cel.md): Go's duration syntax and RFC 3339 are small enough to match closely;
RE2 and Python's `re` differ, so a regex is rejected only when `re` rejects it and it
uses no RE2-only syntax, or when it uses syntax RE2 never accepts (look-around,
back-references).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from draguard.schema.cel.syntax import CheckedAst, Node

# cel-go `locationByID` counts lines from SourceInfo.line_offsets (starts of lines 2…).


@dataclass(frozen=True, slots=True)
class LiteralIssue:
    """A validator finding at a code point offset (the renderer turns it into line:col)."""

    offset: int | None
    message: str


def validate(ast: CheckedAst) -> list[LiteralIssue]:
    """All validator findings, in cel-go's validator order."""
    found: list[tuple[Node, str]] = []
    for call, literal in _literal_calls(ast.root):
        if not _LITERAL_CHECKS[call.name](literal):
            found.append((call.args[0], f"invalid {call.name} argument"))
    found.extend(_homogeneity(ast))
    if not found:
        return []
    positions = ast.positions  # decoded only when there is something to place
    return [LiteralIssue(positions.get(node.id), message) for node, message in found]


# --- duration, timestamp and regex literals ------------------------------------------------


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children():
        yield from _walk(child)


def _literal_calls(root: Node) -> Iterator[tuple[Node, str]]:
    """Checked calls whose first argument is a string constant (cel-go: argNum 0)."""
    for node in _walk(root):
        if node.kind == "call" and node.name in _LITERAL_CHECKS and node.args:
            first = node.args[0]
            if first.kind == "const" and isinstance(first.const, str):
                yield node, first.const


_DURATION = re.compile(r"[-+]?(?:0|(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)")
_UNIT_NANOS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000,
               "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_MAX_NANOS = (1 << 63) - 1  # Go's time.Duration


def valid_duration(text: str) -> bool:
    """Go's `time.ParseDuration` syntax, within time.Duration's range."""
    if not _DURATION.fullmatch(text):
        return False
    total = sum(float(number) * _UNIT_NANOS[unit] for number, unit in _DURATION_PART.findall(text))
    return total <= _MAX_NANOS


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?"
                      r"([Zz]|[+-]\d{2}:\d{2})")


def valid_timestamp(text: str) -> bool:
    """RFC 3339 as Go's `time.RFC3339` layout parses it, years 0001–9999."""
    match = _RFC3339.fullmatch(text)
    if not match:
        return False
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    zone = match[8]
    return zone in "Zz" or (int(zone[1:3]) < 24 and int(zone[4:6]) < 60)


_RE2_ONLY = re.compile(r"\\[pPzQEC]|\(\?<[A-Za-z_]|\(\?[imsU-]*U|\[\[:")
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_NEVER_RE2 = re.compile(r"\(\?<?[=!]|\(\?>|[*+?}]\+")  # look-around, atomic, possessive


def valid_regex(pattern: str) -> bool:
    """An approximation of Go's `regexp.Compile` (RE2 syntax)."""
    if any(ch in "123456789" for ch in _ESCAPE.findall(pattern)):
        return False  # back-references
    if _NEVER_RE2.search(_ESCAPE.sub("", pattern)):
        return False
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError):
        return bool(_RE2_ONLY.search(pattern))
    return True


_LITERAL_CHECKS: dict[str, Callable[[str], bool]] = {
    "duration": valid_duration,
    "timestamp": valid_timestamp,
    "matches": valid_regex,
}


# --- homogeneous aggregate literals -------------------------------------------------------


def _homogeneity(ast: CheckedAst) -> Iterator[tuple[Node, str]]:
    """cel-go's homogeneous-literal validator.

    A list stops at its first mismatch; a map reports every key and every value that
    differs from the first entry's. Literals whose parent is a `format` call (directly or
    through enclosing literals) are exempt, because `format` takes mixed lists.
    """
    for node, exempt in _literals(ast.root, exempt=False):
        if exempt:
            continue
        if node.kind == "list":
            yield from itertools.islice(_mismatches(ast, node.args), 1)
        else:
            keys, values = node.args[0::2], node.args[1::2]
            yield from _mismatches(ast, keys)
            yield from _mismatches(ast, values)


def _literals(node: Node, *, exempt: bool) -> Iterator[tuple[Node, bool]]:
    is_literal = node.kind in ("list", "map")
    if is_literal:
        yield node, exempt
    for child in node.children():
        if node.kind == "call":
            child_exempt = node.name == "format"
        elif is_literal:
            child_exempt = exempt
        else:
            child_exempt = False
        yield from _literals(child, exempt=child_exempt)


def _mismatch(expected: str, found: str) -> str:
    return f"expected type '{expected}' but found '{found}'"


def _mismatches(ast: CheckedAst, nodes: tuple[Node, ...]) -> Iterator[tuple[Node, str]]:
    """Each node whose type differs from the first node's."""
    if not nodes:
        return
    expected = ast.type_of(nodes[0])
    for node in nodes[1:]:
        found = ast.type_of(node)
        if found != expected:
            yield node, _mismatch(expected.render(), found.render())
