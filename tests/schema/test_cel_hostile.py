"""Hostile selector expressions: `check_selector` answers every string and never takes
the process down (the checker is C++; a crash there would kill an admission webhook).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draguard.schema.cel.check import check_selector
from draguard.schema.model.errors import ErrorType
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import EXPRESSION_MAX, RELEASES

PATH = FieldPath.root("spec").child("devices", "requests").index(0).child(
    "exactly", "selectors").index(0).child("cel", "expression")
NEWEST = RELEASES["1.37"]
LIMIT = EXPRESSION_MAX

INVALID, TOO_LONG = ErrorType.INVALID, ErrorType.TOO_LONG

HOSTILE = [
    pytest.param("(" * LIMIT, [INVALID], id="open-parens"),
    pytest.param("(" * 5000 + "true" + ")" * 5000, [INVALID], id="balanced-parens"),
    pytest.param("[" * 5000 + "]" * 5000, [INVALID], id="nested-lists"),
    pytest.param("{1:" * 2000 + "1" + "}" * 2000, [INVALID], id="nested-maps"),
    pytest.param("f(" * 3000 + ")" * 3000, [INVALID], id="nested-calls"),
    pytest.param("device" + ".a" * 5000, [INVALID], id="select-chain"),
    pytest.param("1" + " + 1" * 2500 + " > 0", [INVALID], id="long-sum"),
    pytest.param("-" * LIMIT + "1 > 0", [TOO_LONG], id="over-limit-negations"),
    pytest.param("!" * 9000 + "true", [], id="negations"),
    pytest.param(" && ".join(["true"] * 1200), [], id="long-conjunction"),
    pytest.param("x" * 100_000, [TOO_LONG], id="100KB"),
    pytest.param('"' + "a" * (LIMIT - 2) + '"', [INVALID], id="one-big-string"),
    pytest.param("device.driver == '\x00'", [], id="nul-in-string"),
    pytest.param("\x00\x01\x02", [INVALID], id="control-characters"),
    pytest.param("device.driver == '\ud800'", [], id="lone-surrogate"),
    pytest.param("'''" + "\n" * 5000, [INVALID], id="unterminated-triple-quote"),
    pytest.param("\\" * LIMIT, [INVALID], id="backslashes"),
]


@pytest.mark.parametrize(("expression", "expected"), HOSTILE)
def test_hostile_expression_gets_the_expected_finding(
        expression: str, expected: list[ErrorType]) -> None:
    """Each hostile input is answered with the finding upstream would give, never a crash."""
    assert [e.type for e in check_selector(expression, PATH, release=NEWEST)] == expected


def test_hostile_inputs_do_not_crash_the_interpreter() -> None:
    """A separate interpreter survives all hostile inputs (a C++ crash would kill it)."""
    script = textwrap.dedent("""
        import sys
        sys.setrecursionlimit(2000)
        from draguard.schema.cel.check import check_selector
        from draguard.schema.model.paths import FieldPath
        from draguard.schema.model.releases import RELEASES
        inputs = [
            "(" * 10240, "[" * 10240, "{" * 10240, "f(" * 5000, "!" * 10240, "-" * 10239 + "1",
            "a." * 5000 + "b", "1" + "+1" * 5000, "a[" * 5000, "a.b(" * 2000,
            "[1" + ",1" * 5000 + "]", "{" + ",".join(f"{i}:{i}" for i in range(2000)) + "}",
            "x ? " * 2500 + "y", "true || " * 1250 + "true",
        ]
        for text in inputs:
            check_selector(text, FieldPath.root("e"), release=RELEASES["1.37"])
        print("survived", len(inputs))
    """)
    # The timeout only guards against a hang; speed is measured in bench/, not here.
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "survived 14"


TOKENS = st.sampled_from([
    "device", ".", "driver", "attributes", "capacity", "[", "]", "(", ")", "{", "}", ",", ":",
    '"d"', "'x'", "1", "2u", "1.5", "true", "null", "==", "!=", "<", "&&", "||", "!", "-",
    "+", "?", "in", "has", "all", "exists", "map", "cel.bind", "quantity", "semver",
    "compareTo", "isGreaterThan", "size", "x", " ", "\n", "b'y'", "'''", "\\",
])


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOKENS, max_size=40).map("".join))
def test_token_soup_never_raises(expression: str) -> None:
    """Any sequence of CEL-ish tokens yields at most one finding, and never an exception."""
    errors = check_selector(expression, PATH, release=NEWEST)
    assert len(errors) <= 1
    assert all(e.type is not ErrorType.INTERNAL for e in errors), errors


@settings(max_examples=examples(100), deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(expression: str) -> None:
    """Arbitrary text (including control and non-BMP characters) is answered, never raised."""
    errors = check_selector(expression, PATH, release=NEWEST)
    assert len(errors) <= 1
    assert all(e.type is not ErrorType.INTERNAL for e in errors), errors
