"""`draguard explain` at cluster scale: a Pod with 2 claims of 3 alternatives each.

Run: `.venv/bin/python bench/explain.py [--nodes 500,5000,50000] [--devices 8] [--rounds 3]`.
Each node has one pool of `--devices` devices published as 8 slices (one pool, 8 slices,
as drivers that split pools do); a tenth of the nodes have H100s, a fifth A100s, the
rest T4s. Each claim asks for one H100, else two A100s, else four T4s, so every node
runs the search through all three alternatives somewhere. Prints, per size, the median
time to read the objects into the cluster model and to explain the Pod (allocator on
every node, reasons, scoring). Target (issue 19): 5,000 nodes × 8 devices under 1 s,
50,000 under 10 s.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from draguard.schema.cluster.inventory import Inventory, add_objects, check_references
from draguard.schema.explain import explain
from draguard.schema.model.releases import release

DRIVER = "gpu.example.com"
SLICES_PER_POOL = 8


def _model(index: int) -> str:
    if index % 10 == 0:
        return "h100"
    return "a100" if index % 5 == 1 else "t4"


def cluster(nodes: int, devices: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [{
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}]
    per_slice = max(1, devices // SLICES_PER_POOL)
    for n in range(nodes):
        name, model = f"node-{n:05d}", _model(n)
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        count = -(-devices // per_slice)
        for s in range(count):
            objects.append({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-{s}"},
                "spec": {"driver": DRIVER, "nodeName": name,
                         "pool": {"name": name, "generation": 1, "resourceSliceCount": count},
                         "devices": [{"name": f"gpu-{d}", "attributes": {"model": {"string": model}},
                                      "capacity": {"memory": {"value": "80Gi" if model == "h100" else "40Gi"}}}
                                     for d in range(s * per_slice, min(devices, (s + 1) * per_slice))]}})
    for claim in ("a", "b"):
        objects.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": claim, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
                _alternative("h100", 1), _alternative("a100", 2), _alternative("t4", 4)]}]}}})
    objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                    "spec": {"containers": [{"name": "c"}], "resourceClaims": [
                        {"name": c, "resourceClaimName": c} for c in ("a", "b")]}})
    return objects


def _alternative(model: str, count: int) -> dict[str, Any]:
    return {"name": model, "deviceClassName": "gpu", "count": count, "selectors": [
        {"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]}


def measure(nodes: int, devices: int, rounds: int) -> tuple[float, float, float, float, str]:
    chosen = release("1.36")
    objects = cluster(nodes, devices)
    reads, read_cpu, explains, cpu, summary = [], [], [], [], ""
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        inventory = Inventory()
        add_objects(inventory, objects, source="bench", release=chosen, namespace="default")
        check_references(inventory)
        reads.append(time.perf_counter() - start)
        read_cpu.append(time.process_time() - start_cpu)
        start, start_cpu = time.perf_counter(), time.process_time()
        result = explain(inventory, release=chosen)
        explains.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        [pod] = result.pods
        feasible = sum(n.feasible for n in pod.nodes)
        summary = f"{feasible}/{len(pod.nodes)} feasible, error {pod.error}"
    return (statistics.median(reads), statistics.median(read_cpu), statistics.median(explains),
            statistics.median(cpu), summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,5000,50000")
    parser.add_argument("--devices", default="8")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("| nodes | devices/node | read (s) | read CPU (s) | explain (s) | explain CPU (s) | outcome |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for devices in (int(d) for d in args.devices.split(",")):
        for nodes in (int(n) for n in args.nodes.split(",")):
            rounds = args.rounds if nodes <= 5000 else 1
            read, read_cpu, explained, cpu, summary = measure(nodes, devices, rounds)
            print(f"| {nodes:,} | {devices} | {read:.2f} | {read_cpu:.2f} | {explained:.2f} "
                  f"| {cpu:.2f} | {summary} |", flush=True)


if __name__ == "__main__":
    main()
