"""Upstream's allocator test scenarios, ported as YAML (tests/explain/scenarios/).

Each file's first document says which `allocator_testing.go` case it is, the release,
the node and the expectation; the other documents are the cluster and the claims, so
`draguard explain FILE` reads the file as it is.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml

from draguard.schema.cluster.allocator import Result
from draguard.schema.cluster.inventory import read_inventory
from draguard.schema.cluster.quantity import format_quantity
from draguard.schema.explain import explain
from draguard.schema.model.releases import release

SCENARIOS = sorted((pathlib.Path(__file__).parent / "scenarios").glob("*.yaml"))


def _header(path: pathlib.Path) -> dict[str, Any]:
    with path.open() as handle:
        header: dict[str, Any] = next(yaml.safe_load_all(handle))
    return header


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_upstream_scenario(path: pathlib.Path) -> None:
    """The allocator gives upstream's expected result for the ported test case."""
    header = _header(path)
    chosen = release(header["release"])
    inventory = read_inventory([str(path)], release=chosen)
    messages = [f.message for f in inventory.findings]
    expected = header.get("findings", [])
    assert len(messages) == len(expected), messages
    assert all(e in m for e, m in zip(expected, messages, strict=True)), messages
    result = explain(inventory, release=chosen, node_name=header["node"])
    [pod] = result.pods
    expect = header["expect"]
    if "error" in expect:
        assert pod.error is not None and expect["error"] in pod.error
        return
    assert pod.error is None
    [node] = pod.nodes
    if "results" in expect:
        assert node.feasible, node.reason
        got = {c.name: [_result(r) for r in c.results or ()] for c in node.claims}
        assert got == expect["results"]
    else:
        assert node.feasible is expect["feasible"]
        if "reason" in expect:
            assert node.reason is not None and expect["reason"] in node.reason


def _result(result: Result) -> str:
    """`req driver/pool/device`, then ` admin`, or ` shared` and each `capacity=amount`."""
    text = f"{result.request} {result.driver}/{result.pool}/{result.device}"
    text += " admin" * result.admin_access + " shared" * result.shared
    return text + "".join(f" {name}={format_quantity(v)}" for name, v in result.consumed)
