"""Regressions found by the hostile-input work (issue 6), pinned at the pure-function level."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from draguard.schema.model.options import DEFAULT_OPTIONS
from draguard.schema.policy.file import load_policy
from draguard.schema.policy.mutation import mutate
from draguard.schema.validate import validate_object
from draguard.webhook.review import MAX_NESTING, BadReview, parse_review

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
    policy = load_policy(POLICY)
    started = time.thread_time()  # CPU time of this thread, not the wall clock
    result = mutate(claim(requests), policy=policy, options=DEFAULT_OPTIONS)
    assert (result.patch, time.thread_time() - started < 1.0) == ([], True)


def test_mutate_still_expands_at_the_limit() -> None:
    """32 catalogued requests (upstream's maximum) are still expanded."""
    requests = [{"name": f"r{i}", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
                for i in range(32)]
    result = mutate(claim(requests), policy=load_policy(POLICY), options=DEFAULT_OPTIONS)
    assert result.patch


def deep_review(depth: int) -> bytes:
    """A review whose claim carries opaque parameters nested `depth` objects deep."""
    params = '{"a":' * depth + "1" + "}" * depth
    claim_json = ('{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",'
                  '"metadata":{"name":"x","namespace":"d"},"spec":{"devices":{"requests":'
                  '[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com"}}],'
                  '"config":[{"requests":["gpu"],"opaque":{"driver":"gpu.nvidia.com",'
                  '"parameters":' + params + "}}]}}}")
    return ('{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":'
            '{"uid":"u","operation":"CREATE","object":' + claim_json + "}}").encode()


def test_review_nested_past_the_limit_is_a_bad_review() -> None:
    """A body nested deeper than MAX_NESTING is refused as a 400, before any recursive step."""
    with pytest.raises(BadReview, match="deeper than"):
        parse_review(deep_review(MAX_NESTING))


def test_deepest_accepted_review_mutates_without_recursion_error() -> None:
    """Parameters as deep as the parser accepts are expanded by /mutate, not an internal error."""
    depth = MAX_NESTING - 12  # review, request, object, spec, devices, config, … parameters
    review = parse_review(deep_review(depth))
    assert review.object is not None
    result = mutate(review.object, policy=load_policy(POLICY), options=DEFAULT_OPTIONS)
    assert result.patch and not result.errors


@pytest.mark.parametrize("config", [True, 1.5, 7, "x", {"requests": ["gpu"]}])
def test_mutate_with_config_of_a_wrong_type_is_answered(config: Any) -> None:
    """`spec.devices.config` of a wrong JSON type is not an internal error in /mutate."""
    obj = claim([{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}])
    obj["spec"]["devices"]["config"] = config
    result = mutate(obj, policy=load_policy(POLICY), options=DEFAULT_OPTIONS)
    assert any(e.field == "spec.devices.config" for e in result.errors)
