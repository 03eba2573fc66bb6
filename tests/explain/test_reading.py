"""Reading the cluster for explain: one decode per JSON file, equal devices shared, no cycles left."""

from __future__ import annotations

import gc
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from draguard.schema.cli import explain as explain_cli
from draguard.schema.cluster.inventory import Inventory, add_objects, read_inventory
from draguard.schema.cluster.objects import NOWHERE, read_slice
from draguard.schema.explain import explain
from draguard.schema.model.releases import release

CLUSTER = Path(__file__).resolve().parent / "cluster"
RELEASE = release("1.36")


def _objects() -> list[dict[str, Any]]:
    return [doc for path in sorted(CLUSTER.glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc]


def _run_json(*argv: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    code = explain_cli.main([*argv, "-o", "json", "--kubernetes-version", "1.36"],
                            stdout=out, stderr=err)
    return code, json.loads(out.getvalue()), err.getvalue()


def _padded(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with an annotation longer than the batches a List is decoded by."""
    meta = obj.get("metadata") or {}
    return {**obj, "metadata": {**meta, "annotations": {"pad": "x" * 20_000}}}


@pytest.mark.parametrize("layout", [
    pytest.param(lambda objs: json.dumps({"apiVersion": "v1", "kind": "List", "items": objs},
                                         indent=4), id="one-list"),
    pytest.param(lambda objs: "\n".join(json.dumps(o) for o in objs), id="a-stream-of-values"),
    pytest.param(lambda objs: "\ufeff \n" + json.dumps(objs[0]) + "\n" + json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": objs[1:]}), id="bom-and-two-values"),
    pytest.param(lambda objs: "\ufeff\n" + json.dumps({"apiVersion": "v1", "kind": "List",
                                                        "items": objs}), id="bom-and-one-list"),
    pytest.param(lambda objs: "\ufeff\n" + json.dumps({"apiVersion": "v1", "kind": "List",
                                                        "items": objs}, indent=2),
                 id="bom-and-one-list-item-by-item"),
    pytest.param(lambda objs: json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        *map(_padded, objs), {"kind": "ConfigMap", "data": {"a": "\ud800"}}]}, indent=4),
                 id="one-list-an-item-read-whole"),  # a lone surrogate: items undone, read whole
])
def test_json_files_explain_as_the_yaml_does(tmp_path: Path, layout: Any) -> None:
    """A JSON file read in one decode (one value) or value by value gives the same answer."""
    path = tmp_path / "cluster.json"
    path.write_text(layout(_objects()), encoding="utf-8")
    expected = _run_json(str(CLUSTER))
    assert _run_json(str(path)) == expected


def test_an_empty_json_file_adds_nothing(tmp_path: Path) -> None:
    """A file that cannot be mapped (empty) is read instead, as any other is."""
    path = tmp_path / "empty.json"
    path.write_bytes(b"")
    assert _run_json(str(CLUSTER), str(path)) == _run_json(str(CLUSTER))


def test_broken_json_is_a_finding_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"apiVersion": "v1",\n "kind": "Node",\n "metadata": {"name": }}\n')
    inventory = read_inventory([str(CLUSTER), str(path)], release=RELEASE)
    assert [(f.line, f.message[:17]) for f in inventory.findings] == [(3, "cannot parse JSON")]


def _slice(name: str, driver: str, *devices: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": list(devices)}}


GPU = {"name": "gpu-0", "attributes": {"model": {"string": "h100"}},
       "capacity": {"memory": {"value": "80Gi"}}}


def _read(*objects: dict[str, Any]) -> Inventory:
    inventory = Inventory()
    add_objects(inventory, objects, source="test", release=RELEASE, namespace="default")
    return inventory


def test_equal_devices_are_one_object() -> None:
    """Devices written alike by one driver are read once; another driver's are its own."""
    inventory = _read(_slice("a", "d.example.com", GPU), _slice("b", "d.example.com", GPU),
                      _slice("c", "e.example.com", GPU),
                      _slice("e", "d.example.com", {**GPU, "name": "gpu-1"}))
    a, b, c, e = (s.devices[0] for s in inventory.slices)
    assert a is b
    assert c is not a and c.signature("e.example.com") != a.signature("d.example.com")
    assert e is not a and e.name == "gpu-1"


def test_a_device_with_a_problem_is_reported_in_every_slice() -> None:
    """Problems name the device's place, so such a device is read again each time."""
    bad = {"name": "gpu-9", "capacity": {"memory": {"value": "lots"}}}
    inventory = _read(_slice("a", "d.example.com", GPU, bad), _slice("b", "d.example.com", bad))
    assert [f.message for f in inventory.findings] == [
        "spec.devices.1.capacity.memory.value: not a quantity",
        "spec.devices.0.capacity.memory.value: not a quantity"]


def _plain(**spec: Any) -> dict[str, Any]:
    base = {"driver": "d.example.com", "nodeName": "node-1",
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "devices": [GPU, {**GPU, "name": "gpu-1"}]}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "s"}, "spec": {**base, **spec}}


@pytest.mark.parametrize("obj", [
    pytest.param(_plain(), id="plain"),
    pytest.param(_plain(devices=[GPU, GPU]), id="duplicate-name"),
    pytest.param(_plain(devices=[GPU, {"name": "x", "capacity": {"m": {"value": "lots"}}}]),
                 id="device-with-a-problem"),
    pytest.param(_plain(pool={"name": "p", "generation": True, "resourceSliceCount": 1}),
                 id="bool-generation"),
    pytest.param(_plain(nodeName=""), id="empty-node-name"),
    pytest.param(_plain(allNodes=False), id="other-selection-key"),
    pytest.param(_plain(devices=[{**GPU, "name": f"g{i}"} for i in range(65)]), id="65-devices"),
    pytest.param(_plain(devices=[]), id="no-devices"),
])
def test_the_usual_slice_reads_as_the_general_path(obj: dict[str, Any]) -> None:
    """`read_slice` with a device table (its fast path for the usual slice) gives what
    the general path gives: the same slice, or the same problems."""
    fast, fast_problems = read_slice(obj, NOWHERE, {})
    general, problems = read_slice(obj, NOWHERE)
    assert fast_problems == problems
    assert (fast is None) == (general is None)
    if fast is not None and general is not None:
        assert fast == general


def test_explain_leaves_no_cyclic_garbage() -> None:
    """Per-node pools are freed as each node is done, not left for the collector."""
    inventory = read_inventory([str(CLUSTER)], release=RELEASE)
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        result = explain(inventory, release=RELEASE)
        gc.disable()  # explain switches it back on at its end
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
    assert result.pods


def test_json_list_findings_are_at_the_documents_start(tmp_path: Path) -> None:
    """Read in one decode, a JSON document has no positions: its objects are placed where it starts."""
    bad = _slice("a", "d.example.com", {"name": "gpu-9", "capacity": {"memory": {"value": "lots"}}})
    path = tmp_path / "cluster.json"
    path.write_bytes(b"\xef\xbb\xbf\r\n\n  " + json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": [bad]}).encode())
    inventory = read_inventory([str(path)], release=RELEASE)
    assert [(f.file, f.line, f.column) for f in inventory.findings] == [(str(path), 3, 3)]
    assert inventory.slices[0].origin.line == 3


def test_json_that_is_not_utf8_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    path.write_bytes(b'{"kind": "\xff"}')
    inventory = read_inventory([str(path)], release=RELEASE)
    assert [u.reason[:12] for u in inventory.unreadable] == ["not UTF-8 te"]


def test_named_slices_keep_the_newest_generation_per_pool() -> None:
    """Gathering a node's own slices (the inlined path) keeps upstream's addSlice rule."""
    from draguard.schema.cluster.objects import Node
    from draguard.schema.cluster.pools import Features, SliceIndex, gather_pools

    def sliced(name: str, generation: int, count: int) -> dict[str, Any]:
        obj = _slice(name, "d.example.com", {**GPU, "name": name})
        obj["spec"].update(nodeName="n", pool={"name": "p", "generation": generation,
                                              "resourceSliceCount": count})
        return obj

    inventory = _read(sliced("old", 1, 1), sliced("new-a", 2, 2), sliced("new-b", 2, 2),
                      sliced("older", 0, 1))
    [pool] = gather_pools(SliceIndex(inventory.slices), Node("n", {}), Features.of(RELEASE))
    assert [s.name for s in pool.slices] == ["new-a", "new-b"]
    assert not pool.incomplete and pool.invalid is None


def test_objects_of_a_yaml_list_are_placed_at_their_lines(tmp_path: Path) -> None:
    """Each object's line, found only when asked, is where its item starts in the List."""
    objects = [_plain(), {**_plain(), "metadata": {"name": "t"}}, *_objects()]
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}, sort_keys=False)
    path = tmp_path / "list.yaml"
    path.write_text(text)
    inventory = read_inventory([str(path)], release=RELEASE)
    starts = [n + 1 for n, line in enumerate(text.splitlines()) if line.startswith("- ")]
    placed = [*(s.origin.line for s in inventory.slices), *(n.origin.line for n in inventory.nodes)]
    assert sorted(placed) == [line for line, obj in zip(starts, objects, strict=True)
                              if obj["kind"] in ("ResourceSlice", "Node")]


@pytest.mark.parametrize("name, text", [
    ("kind.json", '{"kind": 5, "items": []}'),
    ("kind.yaml", "kind: 5\nitems: []\n"),
    ("list.json", '{"kind": ["List"], "items": [{"kind": "Node"}]}'),
])
def test_a_kind_that_is_not_a_string_is_no_list(tmp_path: Path, name: str, text: str) -> None:
    """A document whose `kind` is not text is read as one object (no List), not a crash."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert _run_json(str(CLUSTER), str(path)) == _run_json(str(CLUSTER))
