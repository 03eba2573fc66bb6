"""ClusterFacts: incremental updates equal a fresh build, bad objects are problems, readers see snapshots."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from draguard.schema.cluster.facts import (
    WATCHED,
    ClusterFacts,
    DeviceKind,
    Profile,
    facts_from_objects,
    offer,
)
from draguard.schema.cluster.objects import MAX_DEVICES

V1 = "resource.k8s.io/v1"


def device_class(name: str, *selectors: str) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in selectors]}}


def resource_slice(name: str, driver: str, node: str | None,
                   devices: list[dict[str, Any]]) -> dict[str, Any]:
    where: dict[str, Any] = {"nodeName": node} if node else {"allNodes": True}
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, **where, "devices": devices,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}}}


def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def quota(name: str, hard: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": "ns0"},
            "spec": {"hard": {"a.deviceclass.resource.k8s.io/devices": str(hard)}}}


# --- a canonical view of the facts, to compare two of them -----------------------------

def _kind_key(kind: DeviceKind) -> tuple[Any, ...]:
    return (kind.driver, repr(sorted(kind.attributes.items())),
            repr(sorted(kind.capacity.items())), kind.allow_multiple, tuple(sorted(kind.classes)))


def _profile(profile: Profile) -> tuple[Any, ...]:
    return tuple(sorted((_kind_key(k), n) for k, n in profile))


def view(facts: ClusterFacts) -> tuple[Any, ...]:
    s = facts.snapshot()
    return (
        sorted((name, tuple(c.selectors)) for name, c in s.classes.items()),
        sorted((d, sorted((dom, sorted(n.items())) for dom, n in p.attributes.items()),
                sorted((dom, sorted(n)) for dom, n in p.capacity.items()))
               for d, p in s.published.items()),
        sorted((_profile(p), n) for p, n in s.profiles.items()),
        _profile(s.anywhere),
        sorted((n, sorted(labels.items())) for n, labels in s.namespaces.items()),
        sorted((ns, repr(q)) for ns, q in s.quotas.items()),
        sorted(p.render() for p in facts.problems()),
    )


# --- the property -------------------------------------------------------------------------

devices = st.lists(st.fixed_dictionaries({
    "attributes": st.fixed_dictionaries({"m": st.fixed_dictionaries({"int": st.integers(0, 2)})},
                                        optional={"x.io/q": st.just({"string": "v"})}),
}, optional={"capacity": st.just({"mem": {"value": "1Gi"}})}), max_size=4).map(
    lambda ds: [{"name": f"dev{i}", **d} for i, d in enumerate(ds)])

objects = st.one_of(
    st.builds(device_class, st.sampled_from(["a", "b"]),
              st.sampled_from(['device.driver == "d1"', 'device.attributes["d1"].m == 1',
                               'device.attributes["x.io"].q == "v"', "true"])),
    st.builds(resource_slice, st.sampled_from(["s0", "s1", "s2", "s3"]),
              st.sampled_from(["d1", "d2"]), st.sampled_from(["n0", "n1", None]), devices),
    st.builds(namespace, st.sampled_from(["ns0", "ns1"]),
              st.dictionaries(st.sampled_from(["k", "resource.kubernetes.io/admin-access"]),
                              st.sampled_from(["true", "x"]), max_size=2)),
    st.builds(quota, st.sampled_from(["q0", "q1"]), st.integers(0, 9)),
    # A slice the apiserver would refuse: a problem, and no devices.
    st.builds(lambda name: {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name},
                            "spec": {"driver": "d1"}}, st.sampled_from(["s0", "s1"])),
)
events = st.lists(st.tuples(st.sampled_from(["ADDED", "MODIFIED", "DELETED", "replace"]),
                            objects), max_size=25)


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


@settings(max_examples=examples(200))
@given(events)
def test_incremental_equals_fresh(sequence: list[tuple[str, dict[str, Any]]]) -> None:
    """Any sequence of watch events and relists leaves what a fresh build of the final set gives."""
    facts = ClusterFacts()
    for w in WATCHED:
        facts.replace(w.kind, [])
    state: dict[tuple[str, str, str], dict[str, Any]] = {}
    for event, obj in sequence:
        kind = obj["kind"]
        if event == "replace":
            kept = [o for k, o in state.items() if k[0] == kind and k != _key(obj)] + [obj]
            state = {k: o for k, o in state.items() if k[0] != kind}
            state.update({_key(o): o for o in kept})
            facts.replace(kind, kept)
        elif event == "DELETED":
            state.pop(_key(obj), None)
            facts.apply(kind, event, obj)
        else:
            state[_key(obj)] = obj
            facts.apply(kind, event, obj)
    assert view(facts) == view(facts_from_objects(state.values()))


def _built(sequence: list[tuple[str, dict[str, Any]]]
           ) -> tuple[ClusterFacts, dict[tuple[str, str, str], dict[str, Any]]]:
    """Facts after `sequence` (events, relists), and the objects they should hold."""
    facts = ClusterFacts()
    for w in WATCHED:
        facts.replace(w.kind, [])
    state: dict[tuple[str, str, str], dict[str, Any]] = {}
    for event, obj in sequence:
        if event == "DELETED":
            state.pop(_key(obj), None)
        else:
            state[_key(obj)] = obj
        facts.apply(obj["kind"], "ADDED" if event == "replace" else event, obj)
    return facts, state


@settings(max_examples=examples(200))
@given(events, st.sampled_from([w.kind for w in WATCHED]), st.lists(objects, max_size=12),
       st.lists(st.integers(0, 12), max_size=4),
       st.lists(st.tuples(st.integers(0, 12), st.sampled_from(["ADDED", "DELETED"]),
                          st.builds(device_class, st.sampled_from(["a", "b"]),
                                    st.sampled_from(['device.driver == "d2"', "true"]))),
                max_size=2))
def test_staged_relist_equals_fresh_build(
        sequence: list[tuple[str, dict[str, Any]]], kind: str, listed: list[dict[str, Any]],
        cuts: list[int], meanwhile: list[tuple[int, str, dict[str, Any]]]) -> None:
    """A relist taken page by page (`stage`, `add` per page, `commit`) over any earlier
    state leaves what a fresh build of the final objects gives; DeviceClass events from
    another watch between pages count; until `commit` readers see the old list."""
    facts, state = _built(sequence)
    listed = [o for o in listed if o["kind"] == kind]
    if kind == "DeviceClass":
        meanwhile = []  # one thread per kind: no class event within a class relist
    before = view(facts)
    staged = facts.stage(kind)
    bounds = sorted({0, len(listed), *(c for c in cuts if c < len(listed))})
    pages = [listed[a:b] for a, b in pairwise(bounds)]
    for n, page in enumerate(pages or [[]]):
        for _, event, obj in [m for m in meanwhile if m[0] == n]:
            facts.apply("DeviceClass", event, obj)
            if event == "DELETED":
                state.pop(_key(obj), None)
            else:
                state[_key(obj)] = obj
        staged.add(page)
        if not meanwhile:
            assert view(facts) == before
    staged.commit()
    state = {k: o for k, o in state.items() if k[0] != kind}
    state.update({_key(o): o for o in listed})
    assert view(facts) == view(facts_from_objects(state.values()))
    assert facts.snapshot().inexact_classes == frozenset()


# --- bad input ------------------------------------------------------------------------------

EVERY_TYPE = {"s": {"string": "x"}, "i": {"int": 1}, "b": {"bool": True},
              "v": {"version": "1.2.3"}, "bad": {"string": "x", "int": 1}, "none": {}}


def test_huge_slice_is_a_problem() -> None:
    """A slice with 10^5 devices (every attribute type) is one problem, not an exception."""
    many = [{"name": f"d{i}", "attributes": EVERY_TYPE} for i in range(100_000)]
    facts = facts_from_objects([resource_slice("huge", "d1", "n0", many)])
    (problem,) = facts.problems()
    assert problem.render() == ("ResourceSlice huge: spec.devices: Too many: 100000: "
                                f"must have at most {MAX_DEVICES} items")
    assert not facts.snapshot().profiles


def test_bad_attributes_are_problems_the_rest_kept() -> None:
    """Malformed attributes are named problems; the good ones are published."""
    facts = facts_from_objects([resource_slice(
        "s", "d1", "n0", [{"name": f"d{i}", "attributes": EVERY_TYPE} for i in range(MAX_DEVICES)])])
    published = facts.snapshot().published["d1"]
    assert dict(published.attributes["d1"]) == {"s": "string", "i": "int", "b": "bool",
                                               "v": "version"}
    assert {p.path.parts[-1] for p in facts.problems()} == {"bad", "none"}


def test_garbage_never_raises() -> None:
    """Objects of the wrong shape become problems; the watch goes on."""
    facts = ClusterFacts()
    for kind in ("DeviceClass", "ResourceSlice", "Namespace", "ResourceQuota"):
        for garbage in ([], "x", {"metadata": "x"}, {"spec": []}, {"metadata": {"name": 3}}):
            facts.apply(kind, "ADDED", garbage)  # type: ignore[arg-type]
        facts.apply(kind, "BOOKMARK", {"metadata": {"name": "x"}})
        facts.replace(kind, [None, 1])  # type: ignore[list-item]
    assert facts.problems()


def test_readers_keep_their_snapshot() -> None:
    """An update publishes a new snapshot; a reader's old one is unchanged."""
    facts = facts_from_objects([device_class("a", "true"),
                                resource_slice("s", "d1", "n0", [{"name": "x"}])])
    before = facts.snapshot()
    facts.apply("ResourceSlice", "DELETED", resource_slice("s", "d1", "n0", []))
    assert offer(before, None, "a").total == 1
    assert offer(facts.snapshot(), None, "a").total == 0


def test_equal_devices_are_one_kind() -> None:
    """Devices with equal attributes share one kind; equal nodes share one profile."""
    same = [{"name": f"d{i}", "attributes": {"m": {"int": 1}}} for i in range(8)]
    facts = facts_from_objects([device_class("a", "true")] + [
        resource_slice(f"s{n}", "d1", f"n{n}", same) for n in range(50)])
    snapshot = facts.snapshot()
    assert list(snapshot.profiles.values()) == [50]
    assert offer(snapshot, None, "a").total == 400
    assert offer(snapshot, None, "a").per_node == 8


def test_past_max_kinds_counts_stay_selectors_do_not_guess(monkeypatch: Any) -> None:
    """Past MAX_KINDS devices keep names and classes: class counts stay right, request
    selectors on them are not evaluated (an inexact offer), and a problem says so."""
    from draguard.schema.cluster import facts as module
    from draguard.schema.cluster.checks import _cached_offer

    monkeypatch.setattr(module, "MAX_KINDS", 4)
    unique = [resource_slice(f"s{n}", "d1", f"n{n}", [
        {"name": f"d{i}", "attributes": {"uuid": {"string": f"{n}-{i}"}}} for i in range(4)])
        for n in range(10)]
    facts = facts_from_objects([device_class("a", 'device.driver == "d1"'), *unique])
    snapshot = facts.snapshot()
    assert offer(snapshot, None, "a").total == 40
    assert offer(snapshot, None, "a").per_node == 4
    assert not _cached_offer(snapshot, "a", ('device.attributes["d1"].uuid == "0-0"',)).exact
    assert any("more than 4 distinct devices" in p.message for p in facts.problems())
    assert dict(snapshot.published["d1"].attributes["d1"]) == {"uuid": "string"}
    for n in range(10):
        facts.apply("ResourceSlice", "DELETED", unique[n])
    assert not facts.problems() and offer(facts.snapshot(), None, "a").total == 0


def test_readers_never_see_half_an_update() -> None:
    """While another thread replaces a slice again and again, readers see the old or the new
    devices, never the moment between taking the old out and putting the new in."""
    import threading

    small = resource_slice("s", "d1", "n0", [{"name": f"x{i}"} for i in range(4)])
    large = resource_slice("s", "d1", "n0", [{"name": f"x{i}"} for i in range(8)])
    facts = facts_from_objects([device_class("a", "true"), small])
    stop = threading.Event()

    def write() -> None:
        k = 0
        while not stop.is_set():
            facts.apply("ResourceSlice", "MODIFIED", large if k % 2 else small)
            k += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        seen = {offer(facts.snapshot(), None, "a").total for _ in range(2000)}
    finally:
        stop.set()
        writer.join()
    assert seen <= {4, 8}


def test_per_node_state_is_out_of_the_collectors_sight() -> None:
    """What the facts keep per node and per slice is plain tuples and dicts of strings and
    ints, which the cyclic collector stops tracking: a full collection in a webhook worker
    does not walk two objects per node of a 50,000-node view (issue 20)."""
    import gc

    facts = ClusterFacts()
    facts.replace("ResourceSlice", [resource_slice(f"s{n}", "gpu.example.com", f"node-{n}",
                                                   [{"name": "g", "attributes": {}}])
                                    for n in range(50)])
    facts.apply("ResourceSlice", "MODIFIED", resource_slice(
        "s0", "gpu.example.com", "node-0", [{"name": "g", "attributes": {}},
                                            {"name": "h", "attributes": {}}]))
    for _ in range(4):  # a nested tuple is let go once its items are: a pass per level
        gc.collect()
    assert len(facts._slices) == 50 and len(facts._nodes) == 50
    assert not any(gc.is_tracked(share) for share in facts._slices.values())
    assert not any(gc.is_tracked(counts) for counts in facts._nodes.values())
