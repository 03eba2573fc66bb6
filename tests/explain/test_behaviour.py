"""Allocator and scoring behaviour beyond upstream's table: CEL semantics, releases, bugs."""

from __future__ import annotations

from typing import Any

import pytest
from explaining import explain_pod as _explain
from explaining import pod as _pod


def _node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "d.example.com"'}}]}}


def _slice(node: str, *devices: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-slice"},
            "spec": {"driver": "d.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": list(devices)}}


def _device(name: str, **attributes: str) -> dict[str, Any]:
    return {"name": name, "attributes": {k: {"string": v} for k, v in attributes.items()}}


def _claim(name: str, requests: list[dict[str, Any]],
           allocated: list[str] | None = None) -> dict[str, Any]:
    claim: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                             "metadata": {"name": name, "namespace": "default"},
                             "spec": {"devices": {"requests": requests}}}
    if allocated is not None:
        claim["status"] = {"allocation": {"devices": {"results": [
            {"request": "r", "driver": "d.example.com", "pool": d.split("/")[0],
             "device": d.split("/")[1]} for d in allocated]}}}
    return claim


def _exact(name: str = "r", *selectors: str) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu", "selectors": [
        {"cel": {"expression": s}} for s in selectors]}}


def _two_nodes(*selectors: str) -> list[dict[str, Any]]:
    return [CLASS, _node("n1"), _node("n2"), _slice("n1", _device("a", model="a100")),
            _slice("n2", _device("a", model="h100")), _claim("c", [_exact("r", *selectors)])]


@pytest.mark.parametrize(("version", "message"), [
    pytest.param("1.36", "claim default/c: selector #0: CEL runtime error: no such key: memory",
                 id="1.36"),
    pytest.param("1.37", "claim default/c: selector #0 on device d.example.com/n1/a: CEL runtime "
                 "error: no such key: memory. consider using CEL optional chaining (.? followed "
                 "by orValue()) or guarding the check with has() for optional fields", id="1.37"),
])
def test_missing_attribute_aborts_the_pod(version: str, message: str) -> None:
    """A selector reading an attribute a device lacks is a CEL runtime error for the Pod."""
    pod = _explain(_two_nodes('device.attributes["d.example.com"].memory == "x"'), version)
    assert pod.error == message
    assert not pod.nodes


def test_unknown_domain_is_an_empty_map() -> None:
    """An attribute domain no device has is an empty map, not an error (cel-go's mapper)."""
    pod = _explain(_two_nodes('device.attributes["other.example.com"].size() == 0'))
    assert pod.error is None and all(n.feasible for n in pod.nodes)


def test_or_absorbs_an_error() -> None:
    """`||` with a true side hides the other side's error, as cel-go does."""
    pod = _explain(_two_nodes('device.attributes["d.example.com"].memory == "x" || true'))
    assert pod.error is None and all(n.feasible for n in pod.nodes)


def test_unqualified_attribute_is_the_drivers() -> None:
    """`model` is found under the driver's own domain."""
    pod = _explain(_two_nodes('device.attributes["d.example.com"].model == "h100"'))
    assert [n.node for n in pod.nodes if n.feasible] == ["n2"]


def test_missing_class_aborts_the_pod() -> None:
    """A missing DeviceClass in any alternative is upstream's error, even a later one."""
    request = {"name": "r", "firstAvailable": [
        {"name": "a", "deviceClassName": "gpu"}, {"name": "b", "deviceClassName": "nope"}]}
    pod = _explain([CLASS, _node("n1"), _slice("n1", _device("a")), _claim("c", [request])])
    assert pod.error == ('claim default/c, request b: could not retrieve device class nope: '
                         'deviceclass.resource.k8s.io "nope" not found')


@pytest.mark.parametrize(("version", "patch", "crashes"), [
    pytest.param("1.35", 3, True, id="1.35.3"),
    pytest.param("1.35", 6, False, id="1.35.6"),
    pytest.param("1.36", 1, True, id="1.36.1"),
    pytest.param("1.36", 2, False, id="1.36.2"),
    pytest.param("1.37", 0, False, id="1.37.0"),
    pytest.param("1.35", None, False, id="1.35-latest"),
])
def test_mixed_claims_score_fails(version: str, patch: int | None, crashes: bool) -> None:
    """Allocated plus unallocated claims fail Score in 1.35.0–1.35.5 and 1.36.0–1.36.1."""
    objects = [CLASS, _node("n1"), _node("n2"),
               _slice("n1", _device("a"), _device("b")), _slice("n2", _device("a")),
               _claim("done", [_exact("r")], allocated=["n1/b"]), _claim("new", [_exact("r")]),
               _pod("done", "new")]
    pod = _explain(objects, version, patch)
    assert (pod.error is not None and "failed with: number of allocations 1 is smaller than "
            "number of claims" in pod.error) is crashes


def test_allocated_claim_limits_nodes() -> None:
    """A Pod's allocated claim with a node selector keeps the Pod to those nodes."""
    done = _claim("done", [_exact("r")], allocated=["n1/b"])
    done["status"]["allocation"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}
    objects = [CLASS, _node("n1"), _node("n2"), _slice("n1", _device("a"), _device("b")),
               _slice("n2", _device("a")), done, _claim("new", [_exact("r")]), _pod("done", "new")]
    pod = _explain(objects)
    assert [n.node for n in pod.nodes if n.feasible] == ["n1"]


def _tainted() -> list[dict[str, Any]]:
    device = _device("a")
    device["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    return [CLASS, _node("n1"), _slice("n1", device), _claim("c", [_exact("r")])]


@pytest.mark.parametrize(("version", "feasible"), [("1.35", True), ("1.36", False)])
def test_taints_count_from_1_36(version: str, feasible: bool) -> None:
    """DRADeviceTaints is on by default from 1.36: a NoSchedule taint then blocks."""
    [node] = _explain(_tainted(), version).nodes
    assert node.feasible is feasible


def test_tainted_reason() -> None:
    [node] = _explain(_tainted(), "1.36").nodes
    assert node.reason == "claim c, request r: no device of class gpu on n1: 1 candidate, tainted"


def test_scores_sum_over_claims() -> None:
    """Raw scores add up over the Pod's firstAvailable requests (8 + 7 = 15 on n1)."""
    def first_available(name: str) -> dict[str, Any]:
        return {"name": "r", "firstAvailable": [
            {"name": "h100", "deviceClassName": "gpu", "selectors": [
                {"cel": {"expression": 'device.attributes["d.example.com"].model == "h100"'}}]},
            {"name": "any", "deviceClassName": "gpu"}]}
    objects = [CLASS, _node("n1"), _node("n2"),
               _slice("n1", _device("a", model="h100"), _device("b", model="a100")),
               _slice("n2", _device("a", model="a100"), _device("b", model="a100")),
               _claim("x", [first_available("x")]), _claim("y", [first_available("y")]),
               _pod("x", "y")]
    pod = _explain(objects)
    scores = {n.node: (n.raw_score, n.score) for n in pod.nodes}
    assert scores == {"n1": (15, 100), "n2": (14, 93)}


def _quota(hard: dict[str, str], used: dict[str, str] | None = None) -> dict[str, Any]:
    quota: dict[str, Any] = {"apiVersion": "v1", "kind": "ResourceQuota",
                             "metadata": {"name": "q", "namespace": "default"},
                             "spec": {"hard": hard}}
    if used is not None:
        quota["status"] = {"used": used}
    return quota


def test_quota_charges_largest_alternative_per_class() -> None:
    """A firstAvailable request charges, per class, its largest count: 3 here, over a hard 2."""
    request = {"name": "r", "firstAvailable": [
        {"name": "one", "deviceClassName": "gpu", "count": 1},
        {"name": "three", "deviceClassName": "gpu", "count": 3}]}
    objects = [CLASS, _node("n1"), _slice("n1", _device("a")), _claim("c", [request]),
               _quota({"gpu.deviceclass.resource.k8s.io/devices": "2", "resourceclaims": "10"})]
    pod = _explain(objects)
    assert pod.quota is not None
    verdicts = {v.resource: (v.charge, v.refused) for v in pod.quota}
    assert verdicts == {"gpu.deviceclass.resource.k8s.io/devices": (3, True),
                        "resourceclaims": (1, False)}
    assert pod.refused and not pod.schedulable


def test_quota_counts_all_as_32_and_used() -> None:
    """`All` charges 32; usage in status counts against the limit."""
    request = {"name": "r", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}
    objects = [CLASS, _node("n1"), _slice("n1", _device("a")), _claim("c", [request]),
               _quota({"gpu.deviceclass.resource.k8s.io/devices": "40"},
                      {"gpu.deviceclass.resource.k8s.io/devices": "8"})]
    [verdict] = _explain(objects).quota or []
    assert (verdict.charge, verdict.refused) == (32, False)


def test_no_quota_key_without_quotas() -> None:
    """Without ResourceQuotas in the input there is no quota verdict (JSON keys unchanged)."""
    assert _explain(_two_nodes()).quota is None


def _all_second() -> list[dict[str, Any]]:
    request = {"name": "r", "firstAvailable": [
        {"name": "four", "deviceClassName": "gpu", "count": 4},
        {"name": "every", "deviceClassName": "gpu", "allocationMode": "All"}]}
    return [CLASS, _node("n1"), _slice("n1", _device("a"), _device("b")), _claim("c", [request])]


def test_all_after_first_subrequest_fixed_in_1_36() -> None:
    """From 1.36 an All subrequest after the first takes every device."""
    [node] = _explain(_all_second(), "1.36").nodes
    assert [f"{r.request} {r.device}" for c in node.claims for r in c.results or ()] == [
        "r/every a", "r/every b"]


def test_all_after_first_subrequest_bug_before_1_36() -> None:
    """Before 1.36 it continues after one device with subrequest 0 (count 4): no fit."""
    [node] = _explain(_all_second(), "1.35").nodes
    assert not node.feasible


def _two_pools() -> list[dict[str, Any]]:
    second = _slice("n1", _device("a"))
    second["metadata"]["name"] = "n1-second"
    second["spec"]["pool"]["name"] = "n1-second"
    return [CLASS, _node("n1"), _slice("n1", _device("a")), second, _claim("c", [_exact("r")])]


def test_pool_order_note_before_1_36() -> None:
    """Before 1.36 a node whose answer depends on the pool order says so."""
    [node] = _explain(_two_pools(), "1.35").nodes
    assert node.order_note is not None and "d.example.com/n1-second/a" in node.order_note


def test_no_pool_order_note_from_1_36() -> None:
    """From 1.36 pools are sorted: the answer is fixed."""
    [node] = _explain(_two_pools(), "1.36").nodes
    assert node.order_note is None


def test_nodes_of_one_shape_keep_their_own_devices_and_names() -> None:
    """Nodes with equal content share one search: each still gets its own devices,
    its own name in the reasons, and its own allocation state."""
    first = {"name": "r", "firstAvailable": [
        {"name": "h100", "deviceClassName": "gpu", "selectors": [
            {"cel": {"expression": 'device.attributes["d.example.com"].model == "h100"'}}]},
        {"name": "any", "deviceClassName": "gpu"}]}
    objects = [CLASS, *[_node(n) for n in ("n1", "n2", "n3")],
               *[_slice(n, _device("a", model="a100"), _device("b", model="a100"))
                 for n in ("n1", "n2", "n3")],
               _claim("old", [_exact("r")], allocated=["n3/a"]), _claim("c", [first]), _pod("c")]
    nodes = {n.node: n for n in _explain(objects).nodes}
    for name, device in (("n1", "a"), ("n2", "a"), ("n3", "b")):
        [claim] = nodes[name].claims
        assert [(r.pool, r.device) for r in claim.results or ()] == [(name, device)]
        [alternative] = claim.alternatives
        assert alternative.chosen == "any"
        assert f" on {name}: 2 of the class, none matches" in alternative.rejected[0].reason
