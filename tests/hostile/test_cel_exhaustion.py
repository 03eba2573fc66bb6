"""Selectors built to exhaust the CEL compiler, through the webhook and lint (issue 6 §2).

tests/schema/test_cel_hostile.py pins the finding each hostile expression gets from
`check_selector`; here the same expressions, plus ones that blow the cost estimate,
travel inside claims through the real server and `draguard lint`: each is denied
with that finding (or allowed when it is harmless) and answered within a bound that
would catch a hang (the speed figure itself is bench/run.py's, not a unit test's).
"""

from __future__ import annotations

import copy
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from draguard.schema.cli import lint as lint_cli
from draguard.schema.model.errors import ErrorType

from .conftest import ROOT, _load, review

cel_hostile = _load("draguard_tests_cel_hostile", ROOT / "tests" / "schema" / "test_cel_hostile.py")
# Seconds that would mean a hang: far above any real answer even on a loaded machine,
# below the client's 60 s socket timeout. Not a speed check (bench/ measures that).
HANG_BOUND = 30.0
NESTED_ALL = ('device.attributes["a"].all(x, device.attributes["b"].all(y, '
              'device.attributes["c"].all(z, device.attributes["d"].all(w, true))))')
NESTED_MAP = ('cel.bind(a, [1,2,3,4,5,6,7,8,9,10], a.map(x, a.map(y, a.map(z, a.map(w, '
              'a.map(v, 1)))))).size() > 0')
COSTLY = [
    pytest.param(NESTED_ALL, [ErrorType.FORBIDDEN], id="nested-all-over-cost"),
    pytest.param(NESTED_MAP, [ErrorType.FORBIDDEN], id="nested-map-over-cost"),
    pytest.param("device.attributes.all(d, device.attributes[d].all(k, device.attributes"
                 ".all(e, device.attributes[e].all(j, k == j))))", [ErrorType.FORBIDDEN],
                 id="attribute-cross-product"),
    pytest.param('device.driver.matches("' + "(a*)*" * 50 + 'b")', [], id="regex-blowup-shape"),
]
CASES = [*cel_hostile.HOSTILE, *COSTLY]


def claim_with(expression: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "cel", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com",
                "selectors": [{"cel": {"expression": expression}}]}}]}}}


def expected_reasons(expected: list[ErrorType]) -> list[str]:
    return [e.cause_type for e in expected]


@pytest.mark.parametrize(("expression", "expected"), CASES)
def test_webhook_denies_hostile_selectors_in_time(api: Any, expression: str,
                                                  expected: list[ErrorType]) -> None:
    """/validate answers each hostile selector with its finding, well within a timeout."""
    body = json.dumps(review(claim_with(expression))).encode()
    started = time.perf_counter()
    reply = api.request("POST", "/validate", body)
    assert time.perf_counter() - started < HANG_BOUND
    response = reply.json()["response"]
    causes = response.get("status", {}).get("details", {}).get("causes", [])
    assert response["allowed"] is (not expected)
    assert [c["reason"] for c in causes] == expected_reasons(expected)
    assert all(c["field"].endswith("selectors[0].cel.expression") for c in causes)


def test_lint_reports_every_hostile_selector(tmp_path: Path) -> None:
    """One file with every hostile selector: lint names each document's finding in one run."""
    # A lone surrogate cannot live in a UTF-8 file (lint calls it Malformed): leave it out.
    usable = [p for p in CASES if str(p.values[0]).encode("utf-8", "replace").decode()
              == p.values[0]]
    expressions = [p.values[0] for p in usable]
    expected = [p.values[1] for p in usable]
    path = tmp_path / "cel.yaml"
    path.write_text(yaml.safe_dump_all([claim_with(e) for e in expressions]), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    started = time.thread_time()  # this thread's CPU time: other processes do not count
    code = lint_cli.main(["--output", "json", str(path)], stdout=out, stderr=err)
    assert time.thread_time() - started < HANG_BOUND
    assert code == 1, err.getvalue()
    results = sorted(json.loads(out.getvalue())["results"], key=lambda r: r["document"])
    got = [[e["type"] for e in r["errors"]] for r in results]
    assert got == [[t.value for t in types] for types in expected]


def test_same_expression_twice_in_one_claim(api: Any) -> None:
    """A claim repeating one costly selector 32 times gets 32 findings and no hang."""
    claim = claim_with(NESTED_MAP)
    selectors = claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
    selectors.extend(copy.deepcopy(selectors[0]) for _ in range(31))
    started = time.perf_counter()
    response = api.request("POST", "/validate",
                           json.dumps(review(claim)).encode()).json()["response"]
    assert time.perf_counter() - started < HANG_BOUND
    assert len(response["status"]["details"]["causes"]) == 32
