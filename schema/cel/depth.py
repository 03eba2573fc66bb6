"""A cheap imitation of cel-go's parser recursion limit, for selector expressions.

cel-go's parser counts, per grammar rule, how many contexts of that rule are open and
gives up when one exceeds 250 ("expression recursion limit exceeded: 250"). The CEL
C++ parser used here stops much earlier (32), so draguard decides the 250 case itself,
from tokens, before compiling:

* every `(`, `[` or `{` opens one more `expr` … `member` chain: +1 for every rule;
* left-recursive chains add one context per operator while they last: selections,
  indexes and member calls (`member`), `+ - * / %` (`calc`), comparisons and `in`
  (`relation`); a chain ends where its operator class ends (`&&`, `||`, `?`, `:`, `,`
  end them all, a comparison ends an arithmetic chain, any operator ends a member chain).

It is an estimate: cel-go's second, visitor-side limit ("max recursion depth exceeded")
is not imitated, and exotic token sequences may count differently (docs/cel.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

RULES = ("member", "calc", "relation")
_RELATION_OPS = ("==", "!=", "<=", ">=", "<", ">")
_ENDS_ALL = ("&&", "||", "?", ":", ",")


@dataclass(slots=True)
class _Level:
    """Operator counts of the chains open at one bracket level."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(RULES, 0))


class _Tracker:
    """Running per-rule totals over the bracket stack, so each step is O(1)."""

    def __init__(self) -> None:
        self.stack = [_Level()]
        self.totals = dict.fromkeys(RULES, 1)
        self.deepest = 1

    def push(self) -> None:
        self.stack.append(_Level())
        for rule in RULES:
            self.totals[rule] += 1
        self._record()

    def pop(self) -> None:
        if len(self.stack) == 1:
            return
        level = self.stack.pop()
        for rule in RULES:
            self.totals[rule] -= level.counts[rule] + 1

    def add(self, rule: str) -> None:
        self.stack[-1].counts[rule] += 1
        self.totals[rule] += 1
        self._record()

    def end(self, *rules: str) -> None:
        counts = self.stack[-1].counts
        for rule in rules:
            self.totals[rule] -= counts[rule]
            counts[rule] = 0

    def _record(self) -> None:
        self.deepest = max(self.deepest, *self.totals.values())


_COUNTED = "([{.+-*/%<>=!"


def nesting_depth(expression: str, *, limit: int | None = None) -> int:
    """The estimated deepest count of open contexts of one grammar rule.

    With `limit`, a cheap upper bound answers first, and the scan only runs when the
    bound exceeds the limit. Every counted token adds at most one, but `[` adds two
    (an index after an operand extends the member chain and opens a bracket level),
    so it is counted twice.
    """
    if limit is not None:
        bound = (1 + sum(map(expression.count, _COUNTED)) + expression.count("[")
                 + expression.count("in"))
        if bound <= limit:
            return bound
    tracker = _Tracker()
    operand = False  # the previous token ended an operand (so `-`/`[` are binary/index)
    i, n = 0, len(expression)
    while i < n:
        ch = expression[i]
        if ch.isspace():
            i += 1
            continue
        if ch in "'\"":
            i, operand = _skip_string(expression, i), True
            continue
        if ch.isalnum() or ch == "_":
            i, word = _skip_word(expression, i)
            if word == "in":
                _operator(tracker, "relation")
                operand = False
            else:
                operand = True
            continue
        two = expression[i : i + 2]
        if two in _ENDS_ALL or ch in _ENDS_ALL:
            tracker.end(*RULES)
            i += 2 if two in _ENDS_ALL else 1
            operand = False
            continue
        if two in _RELATION_OPS or ch in _RELATION_OPS:
            _operator(tracker, "relation")
            i += 2 if two in _RELATION_OPS else 1
            operand = False
            continue
        operand = _punctuation(tracker, ch, operand)
        i += 1
    return tracker.deepest


def _operator(tracker: _Tracker, rule: str) -> None:
    """A binary operator ends the tighter chains and extends its own."""
    tighter = RULES[: RULES.index(rule)]
    tracker.end(*tighter)
    tracker.add(rule)


def _punctuation(tracker: _Tracker, ch: str, operand: bool) -> bool:
    """Handle one single-character token; return whether it ends an operand."""
    if ch == ".":
        tracker.add("member")
        return False
    if ch in "([{":
        if ch == "[" and operand:
            tracker.add("member")
        tracker.push()
        return False
    if ch in ")]}":
        tracker.pop()
        return True
    if ch in "+*/%" or (ch == "-" and operand):
        _operator(tracker, "calc")
    return False


def _skip_word(text: str, start: int) -> tuple[int, str]:
    """An identifier or a number (digits, `.5`, exponents, hex and `u` suffixes included)."""
    i = start
    numeric = text[start].isdigit()
    while i < len(text) and (text[i].isalnum() or text[i] == "_" or
                             (numeric and text[i] == "." and i + 1 < len(text)
                              and text[i + 1].isdigit())):
        i += 1
    return i, text[start:i]


def _skip_string(text: str, start: int) -> int:
    """Index after the string literal opening at `start` (a raw prefix disables escapes)."""
    quote = text[start] * 3 if text.startswith(text[start] * 3, start) else text[start]
    raw = start > 0 and text[start - 1] in "rR"
    i = start + len(quote)
    while i < len(text):
        if text.startswith(quote, i):
            return i + len(quote)
        if text[i] == "\\" and not raw:
            i += 2
            continue
        if text[i] == "\n" and len(quote) == 1:
            return i
        i += 1
    return i
