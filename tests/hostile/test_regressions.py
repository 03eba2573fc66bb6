"""Regressions found by the hostile-input work (issue 6), pinned at the pure-function level."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from draguard.schema.options import DEFAULT_OPTIONS
from draguard.schema.validate import validate_object
from draguard.webhook.mutation import mutate
from draguard.webhook.policy import load_policy

POLICY = Path(__file__).resolve().parents[2] / "examples" / "policy.yaml"


def claim(requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "huge", "namespace": "default"},
            "spec": {"devices": {"requests": requests}}}


def prioritized(n: int, alternatives: int) -> list[dict[str, Any]]:
    return [{"name": f"r{i}", "firstAvailable": [
        {"name": f"s{j}", "deviceClassName": "gpu.example.com"} for j in range(alternatives)]}
        for i in range(n)]


@pytest.mark.parametrize(("requests", "alternatives"), [
    pytest.param(10_000, 3, id="3^10000-combinations"),
    pytest.param(33, 8, id="8^33-combinations"),
])
def test_combination_advice_survives_huge_products(requests: int, alternatives: int) -> None:
    """Thousands of prioritized requests give TooMany, not an int-to-str ValueError."""
    verdict = validate_object(claim(prioritized(requests, alternatives)), options=DEFAULT_OPTIONS)
    assert ("TooMany", "spec.devices.requests") in {
        (e.type.value, e.field) for e in verdict.errors}


def test_mutate_leaves_an_over_limit_claim_alone_quickly() -> None:
    """/mutate does not expand 10,000 catalogued requests (seconds of work, then an error)."""
    requests = [{"name": f"r{i}", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
                for i in range(10_000)]
    started = time.perf_counter()
    result = mutate(claim(requests), policy=load_policy(POLICY), options=DEFAULT_OPTIONS)
    assert (result.patch, time.perf_counter() - started < 1.0) == ([], True)


def test_mutate_still_expands_at_the_limit() -> None:
    """32 catalogued requests (upstream's maximum) are still expanded."""
    requests = [{"name": f"r{i}", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
                for i in range(32)]
    result = mutate(claim(requests), policy=load_policy(POLICY), options=DEFAULT_OPTIONS)
    assert result.patch
