"""Scoring as the scheduler's DynamicResources plugin computes it, cases worked by hand.

Each expected figure follows kubernetes pkg/scheduler/framework/plugins/dynamicresources/
dynamicresources.go: `computeScore` adds FirstAvailableDeviceRequestMaxSize (8) minus the
index of every subrequest some result names, over all the Pod's claims; `NormalizeScore`
is `helper.DefaultNormalizeScore(100, false, …)`: 100 × raw // max, all 0 when max is 0.
"""

from __future__ import annotations

from typing import Any

import pytest
from explaining import explain_pod
from explaining import pod as _pod

from draguard.schema.explain import PodOutcome

DRIVER = "d.example.com"
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def _node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def _slice(node: str, *models: str) -> dict[str, Any]:
    """A node's pool with one device per model, named d0, d1, …"""
    devices = [{"name": f"d{i}", "attributes": {"model": {"string": m}}} for i, m in enumerate(models)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-slice"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def _sub(name: str, model: str | None = None, count: int = 1) -> dict[str, Any]:
    sub: dict[str, Any] = {"name": name, "deviceClassName": "gpu", "count": count}
    if model is not None:
        sub["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]
    return sub


def _first(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def _exact(name: str, model: str | None = None) -> dict[str, Any]:
    exactly = _sub("", model)
    del exactly["name"]
    return {"name": name, "exactly": exactly}


def _claim(name: str, *requests: dict[str, Any],
           allocated: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    claim: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                             "metadata": {"name": name, "namespace": "default"},
                             "spec": {"devices": {"requests": list(requests)}}}
    if allocated is not None:  # (request, pool/device); no node selector: reachable everywhere
        claim["status"] = {"allocation": {"devices": {"results": [
            {"request": request, "driver": DRIVER, "pool": where.split("/")[0],
             "device": where.split("/")[1]} for request, where in allocated]}}}
    return claim


def _explain(objects: list[dict[str, Any]], version: str = "1.37",
             patch: int | None = None) -> PodOutcome:
    pod = explain_pod(objects, version, patch)
    assert pod.error is None, pod.error
    return pod


def _scores(pod: PodOutcome) -> dict[str, tuple[int | None, int | None]]:
    return {n.node: (n.raw_score, n.score) for n in pod.nodes if n.feasible}


NODES = [CLASS, _node("n1"), _node("n2")]
H100_OR_ANY = _first("r", _sub("h100", "h100"), _sub("any"))


CASES = [
    pytest.param(
        [_slice("n1", "h100", "t4", "t4"), _slice("n2", "a100", "t4", "t4"),
         _claim("c", _first("x", _sub("h100", "h100"), _sub("a100", "a100"), _sub("t4", "t4")),
                _first("y", _sub("a100", "a100"), _sub("t4", "t4")), _exact("z", "t4")),
         _pod("c")],
        # n1: x/h100 (8) + y/t4 (8 - 1 = 7) = 15; n2: x/a100 (7), the one a100 taken so
        # y/t4 (7) = 14; z (exactly) scores nothing. 100 × 14 // 15 = 93.
        {"n1": (15, 100), "n2": (14, 93)},
        id="two-requests-one-claim-exactly-does-not-score",
    ),
    pytest.param(
        [_slice("n1", "h100"), _slice("n2", "t4"),
         _claim("c", _first("r", *[_sub(f"s{i}", "h100") for i in range(7)], _sub("s7", "t4"))),
         _pod("c")],
        # n1: s0 (8); n2: only the eighth alternative, s7 (8 - 7 = 1); 100 × 1 // 8 = 12.
        {"n1": (8, 100), "n2": (1, 12)},
        id="eighth-alternative-scores-one-floor-division",
    ),
    pytest.param(
        [_slice("n1", "h100", "h100"), _slice("n2", "t4", "t4"),
         _claim("c", _first("r", _sub("h100", "h100", count=2), _sub("t4", "t4", count=2))),
         _pod("c")],
        # Two results name r/h100 on n1: a set, so 8 once, not 16; n2: r/t4, 7.
        {"n1": (8, 100), "n2": (7, 87)},
        id="subrequest-with-two-devices-counts-once",
    ),
    pytest.param(
        [_slice("n1", "h100"), _slice("n2", "t4"),
         _claim("c", _exact("r")), _pod("c")],
        # No firstAvailable request: 0 everywhere, and DefaultNormalizeScore leaves 0s.
        {"n1": (0, 0), "n2": (0, 0)},
        id="no-firstavailable-all-zero",
    ),
    pytest.param(
        [_slice("n1", "h100", "a100"), _slice("n2", "t4", "t4"),
         _claim("old", _first("r", _sub("h100", "h100"), _sub("a100", "a100")),
                allocated=[("r/a100", "n1/d1")]),
         _claim("new", H100_OR_ANY), _pod("old", "new")],
        # Since #139017 an allocated claim counts from its status: old r/a100 = 7 on
        # every node; new: n1 r/h100 (8), n2 r/any (7): 15 and 14.
        {"n1": (15, 100), "n2": (14, 93)},
        id="allocated-claim-counts-from-its-status",
    ),
    pytest.param(
        [_slice("n1", "h100"), _slice("n2", "t4"),
         _claim("old", H100_OR_ANY, allocated=[("r/h100", "n1/d0")]), _pod("old")],
        # No claim left to allocate: Filter keeps no allocation, Score is 0 everywhere.
        {"n1": (0, 0), "n2": (0, 0)},
        id="only-allocated-claims-score-zero",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), CASES)
def test_scores_computed_by_hand(objects: list[dict[str, Any]],
                                 expected: dict[str, tuple[int, int]]) -> None:
    """Raw and normalised scores are upstream's for each hand-worked case."""
    assert _scores(_explain([*NODES, *objects])) == expected


def test_one_feasible_node_is_not_scored() -> None:
    """With a single feasible node the scheduler skips scoring (`schedulePod`)."""
    pod = _explain([*NODES, _slice("n1", "h100"), _claim("c", _first("r", _sub("h", "h100"))),
                            _pod("c")])
    assert _scores(pod) == {"n1": (None, None)}


def test_no_score_in_1_34() -> None:
    """1.34's plugin has no Score."""
    pod = _explain([*NODES, _slice("n1", "h100"), _slice("n2", "t4"),
                            _claim("c", H100_OR_ANY), _pod("c")], "1.34")
    assert _scores(pod) == {"n1": (None, None), "n2": (None, None)}
