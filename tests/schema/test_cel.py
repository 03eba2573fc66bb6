"""CEL selector checking (`upstream-rules.md` §3.3 rule 14) through `check_selector`.

Tables compare `(type, field)` pairs; a few dedicated tests pin the rendered text.
The expressions are the styles the Kubernetes DRA documentation and GPU drivers use.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from draguard.schema.cel import check
from draguard.schema.cel.check import (
    SelectorVerdict,
    analyse_selector,
    cache_info,
    check_selector,
    nesting_depth,
)
from draguard.schema.model.bounded import ByteBudgetCache
from draguard.schema.model.errors import ErrorType
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import EXPRESSION_MAX, RELEASES

PATH = FieldPath.root("spec").child("devices", "requests").index(0).child(
    "exactly", "selectors").index(0).child("cel", "expression")
FIELD = str(PATH)
NEWEST = RELEASES["1.37"]
BEFORE_CONSUMABLE_CAPACITY = RELEASES["1.35"]


def findings(expression: str, release: object = NEWEST) -> list[tuple[ErrorType, str]]:
    errors = check_selector(expression, PATH, release=release)  # type: ignore[arg-type]
    return [(e.type, e.field) for e in errors]


VALID = [
    pytest.param('device.driver == "gpu.nvidia.com"', id="driver"),
    pytest.param('device.driver == "gpu.nvidia.com" && '
                 'device.attributes["gpu.nvidia.com"].productName == "H100"', id="nvidia-product"),
    pytest.param('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
                 id="capacity-compareTo"),
    pytest.param('device.capacity["dra.example.com"].memory.isGreaterThan(quantity("1Gi"))',
                 id="capacity-isGreaterThan"),
    pytest.param('device.capacity["dra.example.com"].memory.add(quantity("1Gi"))'
                 '.sub(1).asApproximateFloat() > 0.5', id="quantity-arithmetic"),
    pytest.param('device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("1.0.0"))',
                 id="semver-isGreaterThan"),
    pytest.param('semver("1.2.3").major() == 1 && isSemver("v1.0", true)', id="semver-parts"),
    pytest.param('cel.bind(dra, device.attributes["dra.example.com"], dra.model == "a" && dra.ok)',
                 id="cel-bind"),
    pytest.param('device.attributes["dra.example.com"].model == 1', id="attribute-any-vs-int"),
    pytest.param('device.attributes["dra.example.com"].ready', id="bare-attribute-result"),
    pytest.param('"gpu.nvidia.com" in device.attributes', id="domain-present"),
    pytest.param('has(device.attributes.x)', id="has-macro"),
    pytest.param('device.attributes["gpu.nvidia.com"].exists(k, k.startsWith("mig"))',
                 id="exists-over-ids"),
    pytest.param('device.attributes.all(d, device.attributes[d].size() < 32)', id="all-domains"),
    pytest.param('device.attributes["dra.example.com"].uuid.matches("^GPU-[0-9a-f-]+$")',
                 id="matches"),
    pytest.param('device.driver.lowerAscii().split(".").size() == 3', id="strings-extension"),
    pytest.param('device.attributes["dra.example.com"].index < 2.5', id="cross-type-compare"),
    pytest.param('[1, 2, 3].isSorted() && [1, 2].sum() == 3', id="lists-library"),
    pytest.param('sets.contains(["a", "b"], ["a"])', id="sets-extension"),
    pytest.param('[1, 2].all(i, v, v > i)', id="two-variable-comprehension"),
    pytest.param('cidr("10.0.0.0/8").containsIP(ip("10.1.2.3")) && isURL("https://x")',
                 id="network-libraries"),
    pytest.param('device.allowMultipleAllocations', id="allow-multiple-allocations"),
    pytest.param('device.driver ==\n  "gpu.nvidia.com"', id="multi-line"),
]


@pytest.mark.parametrize("expression", VALID)
def test_valid_selector_has_no_findings(expression: str) -> None:
    """Selectors that the apiserver accepts produce no finding."""
    assert findings(expression) == []


INVALID = [
    pytest.param('device.drivr == "x"', id="unknown-device-field"),
    pytest.param("device.driver == 1", id="string-vs-int"),
    pytest.param('device.capacity["d"].memory == 1', id="quantity-vs-int"),
    pytest.param('device.capacity["d"].memory.compareTo("40Gi") >= 0', id="compareTo-string"),
    pytest.param("device.driver", id="string-result"),
    pytest.param("1 + 1", id="int-result"),
    pytest.param('device.capacity["d"]', id="map-result"),
    pytest.param("device.driver ==", id="syntax-error"),
    pytest.param("", id="empty"),
    pytest.param("nodeName == 'x'", id="undeclared-variable"),
    pytest.param('[1, "a"].size() > 0', id="mixed-list-literal"),
    pytest.param('device.attributes["d"].x.includes(1)', id="includes-without-list-gate"),
    pytest.param("(" * 300 + "true" + ")" * 300, id="nesting-over-cel-go-limit"),
    pytest.param("device" + ".a" * 300 + " == 1", id="selection-chain-over-cel-go-limit"),
]


@pytest.mark.parametrize("expression", INVALID)
def test_invalid_selector_is_invalid_at_the_expression(expression: str) -> None:
    """Compile errors and wrong result types are one Invalid at the expression's path."""
    assert findings(expression) == [(ErrorType.INVALID, FIELD)]


def test_allow_multiple_allocations_needs_consumable_capacity() -> None:
    """Before DRAConsumableCapacity is on, `device.allowMultipleAllocations` is an unknown field."""
    expression = "device.allowMultipleAllocations"
    assert findings(expression, NEWEST) == []
    assert findings(expression, BEFORE_CONSUMABLE_CAPACITY) == [(ErrorType.INVALID, FIELD)]


def test_too_long_is_reported_without_compiling() -> None:
    """Over 10240 bytes is TooLong even when the text would not compile."""
    expression = "?" * (EXPRESSION_MAX + 1)
    assert findings(expression) == [(ErrorType.TOO_LONG, FIELD)]


def test_length_counts_bytes_not_characters() -> None:
    """Multi-byte characters count by their UTF-8 length (Go's `len`)."""
    body = 'device.driver == ""'
    fill = "é" * ((EXPRESSION_MAX - len(body)) // 2 + 1)
    expression = f'device.driver == "{fill}"'
    assert len(expression) <= EXPRESSION_MAX < len(expression.encode())
    assert findings(expression) == [(ErrorType.TOO_LONG, FIELD)]


def test_exactly_the_limit_is_accepted() -> None:
    """An expression of exactly 10240 bytes is compiled, not rejected."""
    head = 'device.driver == "'
    expression = head + "a" * (EXPRESSION_MAX - len(head) - 1) + '"'
    assert len(expression.encode()) == EXPRESSION_MAX
    assert findings(expression) == []


EXPENSIVE = [
    pytest.param(
        "device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, "
        "device.attributes[e].all(l, device.attributes[d][k] == device.attributes[e][l]))))",
        id="four-nested-attribute-loops"),
    pytest.param(
        "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10]"
        ".all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, "
        "[1,2,3,4,5,6,7,8,9,10].all(f, a + b + c + d + e + f > 0))))))",
        id="six-nested-literal-loops"),
    pytest.param('device.driver.split("").all(a, device.driver.split("").all(b, '
                 'device.driver.split("").all(c, a + b + c != "")))', id="unbounded-split"),
]


@pytest.mark.parametrize("expression", EXPENSIVE)
def test_expensive_selector_is_forbidden(expression: str) -> None:
    """An estimated worst case over 1,000,000 is Forbidden, after a clean compile."""
    assert findings(expression) == [(ErrorType.FORBIDDEN, FIELD)]


def test_typical_selectors_cost_far_below_the_limit() -> None:
    """Every valid example estimates under 1% of the limit."""
    for param in VALID:
        expression = str(param.values[0])
        verdict = analyse_selector(expression, consumable_capacity=True)
        assert verdict.cost is not None and verdict.cost < 10_000, expression


# --- pinned messages, one per kind ------------------------------------------------------


def test_message_unknown_field() -> None:
    """A compile error renders cel-go's issue text with the source line and caret."""
    [error] = check_selector('device.drivr == "x"', PATH, release=NEWEST)
    assert str(error) == (
        f'{FIELD}: Invalid value: "device.drivr == \\"x\\"": compilation failed: '
        "ERROR: <input>:1:7: undefined field 'drivr'\n"
        ' | device.drivr == "x"\n'
        " | ......^")


def test_message_no_matching_overload() -> None:
    """Wrong operand types name cel-go's overload and argument types."""
    [error] = check_selector("device.driver == 1", PATH, release=NEWEST)
    assert error.detail == (
        "compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' "
        "applied to '(string, int)'\n | device.driver == 1\n | ..............^")


def test_message_several_issues_are_sorted_and_joined() -> None:
    """Several issues are listed in source order, one block each, separated by a newline."""
    [error] = check_selector("b == 1 && a == 1", PATH, release=NEWEST)
    assert error.detail == (
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'b' (in container '')\n"
        " | b == 1 && a == 1\n | ^\n"
        "ERROR: <input>:1:11: undeclared reference to 'a' (in container '')\n"
        " | b == 1 && a == 1\n | ..........^")


def test_message_caret_on_second_line_with_wide_characters() -> None:
    """The caret line uses wide dots for multi-byte characters, on the issue's own line."""
    [error] = check_selector('device.driver == "x" &&\n"é" + 1 == 2', PATH, release=NEWEST)
    assert error.detail.endswith(
        "ERROR: <input>:2:5: found no matching overload for '_+_' applied to '(string, int)'\n"
        ' | "é" + 1 == 2\n | .\uff0e..^')


def test_message_wrong_result_type() -> None:
    """A non-bool result names cel-go's type."""
    [error] = check_selector('device.capacity["d"]', PATH, release=NEWEST)
    assert error.message == (
        'Invalid value: "device.capacity[\\"d\\"]": must evaluate to bool or the unknown type, '
        "not map(string, kubernetes.Quantity)")


def test_message_mixed_literal() -> None:
    """Mixed-type literals get the homogeneous-literal validator's text at the element."""
    [error] = check_selector('[1, "a"].size() > 0', PATH, release=NEWEST)
    assert error.detail == (
        "compilation failed: ERROR: <input>:1:5: expected type 'int' but found 'string'\n"
        ' | [1, "a"].size() > 0\n | ....^')


def test_message_too_long() -> None:
    """TooLong names the byte limit and does not echo the value."""
    [error] = check_selector("x" * 20_000, PATH, release=NEWEST)
    assert str(error) == f"{FIELD}: Too long: may not be more than 10240 bytes"


def test_message_cost() -> None:
    """Forbidden says the expression is too complex."""
    [error] = check_selector(str(EXPENSIVE[0].values[0]), PATH, release=NEWEST)
    assert str(error) == f"{FIELD}: Forbidden: too complex, exceeds cost limit"


def test_message_recursion_limit() -> None:
    """Nesting beyond cel-go's parser limit gets its location-less issue."""
    [error] = check_selector("[" * 300 + "]" * 300 + " == []", PATH, release=NEWEST)
    assert error.detail == (
        "compilation failed: ERROR: <input>:-1:0: expression recursion limit exceeded: 250")


# --- the cache -----------------------------------------------------------------------------


def test_repeated_expression_is_compiled_once() -> None:
    """A second check of the same expression and flags is a cache hit."""
    expression = 'device.attributes["cache.example.com"].hit == true'
    check_selector(expression, PATH, release=NEWEST)
    before = cache_info()
    other_path = FieldPath.root("spec", "spec", "devices")
    assert check_selector(expression, other_path, release=NEWEST) == []
    after = cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)


def test_cache_separates_feature_flags() -> None:
    """The same text under different gates is compiled separately, with its own verdict."""
    expression = "device.allowMultipleAllocations == true"
    before = cache_info()
    check_selector(expression, PATH, release=NEWEST)
    check_selector(expression, PATH, release=BEFORE_CONSUMABLE_CAPACITY)
    assert cache_info().misses == before.misses + 2


# --- nesting ---------------------------------------------------------------------------------


NESTING = [
    pytest.param("a", 1, id="flat"),
    pytest.param("(a)", 2, id="one-paren"),
    pytest.param("a.b.c.d", 4, id="member-chain"),
    pytest.param("a.b.c && d.e.f", 3, id="chains-end-at-and"),
    pytest.param("1 + 2 + 3", 3, id="arithmetic-chain"),
    pytest.param("1 + 2 == 3", 2, id="comparison-ends-arithmetic"),
    pytest.param("f(a[1])", 4, id="call-and-index"),
    pytest.param('"((((" + (a)', 3, id="brackets-in-strings-ignored"),
    pytest.param(r'"\"(((" + (b)', 3, id="escaped-quote"),
    pytest.param("'''(((\n''' + (c)", 3, id="triple-quoted"),
]


@pytest.mark.parametrize(("expression", "depth"), NESTING)
def test_nesting_depth(expression: str, depth: int) -> None:
    """Open grammar contexts are estimated from brackets and left-recursive chains."""
    assert nesting_depth(expression) == depth


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet="()[]{}.+-*/<=!&|?:, ab1'\"\\\n", max_size=600),
       st.integers(min_value=1, max_value=300))
def test_bounded_depth_agrees_with_the_scan_about_the_limit(expression: str, limit: int) -> None:
    """The cheap bound never hides an expression that the full scan puts over the limit."""
    exact = nesting_depth(expression)
    assert (nesting_depth(expression, limit=limit) > limit) == (exact > limit)


@pytest.mark.parametrize(("expression", "limit"), [("1[", 2), ("a[" * 200 + "1", 250)])
def test_bounded_depth_counts_an_index_twice(expression: str, limit: int) -> None:
    """An index after an operand adds a member context and a bracket level (found by
    the property above: the bound once counted it as one and hid `a[a[…` at 250)."""
    assert nesting_depth(expression) > limit
    assert nesting_depth(expression, limit=limit) > limit


def test_nesting_between_the_two_parsers_limits_is_not_reported() -> None:
    """Depth 33–249 passes cel-go but not the C++ parser: draguard reports nothing then."""
    expression = "(" * 40 + "device.driver == 1" + ")" * 40
    assert analyse_selector(expression, consumable_capacity=True).outcome == "unchecked"
    assert findings(expression) == []


# --- compiled once per process, within a byte budget (issue 15 §2–3) ------------------------


def _expensive(seed: int) -> str:
    """A valid selector of about 3.9 KB: 80 comparisons, tens of milliseconds to check."""
    return " || ".join(f'device.attributes["d{seed}.example.com"].a{j} == {j}' for j in range(80))


class _CountingEnv:
    def __init__(self, env: Any, calls: list[str]) -> None:
        self._env, self._calls = env, calls

    def compile(self, expression: str) -> Any:
        self._calls.append(expression)
        return self._env.compile(expression)


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every expression handed to the CEL compiler from now on."""
    calls: list[str] = []
    real = check.environment
    monkeypatch.setattr(check, "environment", lambda flags: _CountingEnv(real(flags), calls))
    return calls


def test_same_expensive_selector_is_compiled_once(compiles: list[str]) -> None:
    """The same expensive selector in 20 claims' checks reaches the compiler once."""
    expression = _expensive(9001)
    for index in range(20):
        path = FieldPath.root("spec").index(index)
        assert check_selector(expression, path, release=NEWEST) == []
    assert compiles == [expression]


def test_concurrent_checks_of_one_selector_compile_it_once(compiles: list[str]) -> None:
    """Threads asking for the same uncached selector at once share one compilation."""
    expression = _expensive(9002)
    barrier = threading.Barrier(4)

    def ask() -> list[Any]:
        barrier.wait()
        return check_selector(expression, PATH, release=NEWEST)

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda _: ask(), range(4))) == [[]] * 4
    assert compiles == [expression]


EXPRESSIONS = st.one_of(
    st.integers(0, 30).map(lambda n: f'device.attributes["a.example.com"].n{n} == {n}'),
    st.integers(0, 30).map(_expensive),
    st.integers(0, 30).map(lambda n: f"device.driver == {n} &&" * (n + 1)),  # invalid, long detail
)


@settings(max_examples=examples(20), deadline=None)
@given(st.lists(EXPRESSIONS, min_size=1, max_size=40))
def test_verdict_cache_stays_within_its_byte_budget(expressions: list[str]) -> None:
    """Whatever expressions arrive, the verdict cache never holds more than its budget."""
    small: ByteBudgetCache[tuple[str, bool], SelectorVerdict] = ByteBudgetCache(20_000)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(check, "_VERDICTS", small)
        for expression in expressions:
            check_selector(expression, PATH, release=NEWEST)
            assert small.info().bytes <= 20_000
        assert small.info().entries >= 1


def test_uncached_chars_counts_only_expressions_not_yet_compiled() -> None:
    """Every `expression` string anywhere counts until its verdict is cached."""
    new, seen = _expensive(9101), 'device.driver == "counted.example.com"'
    check_selector(seen, PATH, release=NEWEST)
    flags = NEWEST.consumable_capacity
    document = {"spec": {"devices": {"requests": [
        {"exactly": {"selectors": [{"cel": {"expression": new}}, {"cel": {"expression": seen}}]}},
        {"firstAvailable": [{"selectors": [{"cel": {"expression": new}}]}]}]}}}
    assert check.uncached_chars(document, consumable_capacity=flags, limit=10**6) == 2 * len(new)
    assert check.uncached_chars(document, consumable_capacity=flags, limit=10) == len(new)
    check_selector(new, PATH, release=NEWEST)
    assert check.uncached_chars(document, consumable_capacity=flags, limit=10**6) == 0
