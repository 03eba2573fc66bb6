"""The cluster view of issue 20 (`ClusterFacts`): memory per 1,000 nodes and the cost of updates.

Run: `.venv/bin/python bench/cluster_facts.py [--nodes 1000,5000] [--devices 8] [--unique]`.
Each node has one ResourceSlice of `--devices` GPUs (a tenth H100, a fifth A100, the rest
T4, as in bench/explain.py) and two DeviceClasses select them. `--unique` gives every
device its own `uuid` attribute, the worst case for deduplication by `Device.signature`
(every device its own kind, every node its own profile).

Prints, per size: the facts' memory (tracemalloc, what stays allocated after the build,
the input objects excluded) in total and per 1,000 nodes; CPU time to build them
(`facts_from_objects`, a second build without tracemalloc), per slice event (`apply` MODIFIED of one slice, median of 50) and
per `check_object` of a claim with two alternatives and a selector (median of 200).
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from typing import Any

from draguard.schema.cluster.checks import CheckSettings, check_object
from draguard.schema.cluster.facts import facts_from_objects
from draguard.schema.model.options import Options

DRIVER = "gpu.example.com"


def _model(index: int) -> str:
    if index % 10 == 0:
        return "h100"
    return "a100" if index % 5 == 1 else "t4"


def node_slice(n: int, devices: int, unique: bool, generation: int = 1) -> dict[str, Any]:
    name, model = f"node-{n:05d}", _model(n)
    listed = []
    for d in range(devices):
        attributes: dict[str, Any] = {"model": {"string": model}, "index": {"int": d % 2}}
        if unique:
            attributes["uuid"] = {"string": f"GPU-{n:05d}-{d:02d}"}
        listed.append({"name": f"gpu-{d}", "attributes": attributes,
                       "capacity": {"memory": {"value": "80Gi" if model == "h100" else "40Gi"}}})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": name,
                     "pool": {"name": name, "generation": generation, "resourceSliceCount": 1},
                     "devices": listed}}


def cluster(nodes: int, devices: int, unique: bool) -> list[dict[str, Any]]:
    classes = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": expression}}]}}
               for name, expression in (("gpu", f'device.driver == "{DRIVER}"'),
                                        ("h100", f'device.attributes["{DRIVER}"].model == "h100"'))]
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{i}"}}
                  for i in range(100)]
    return classes + namespaces + [node_slice(n, devices, unique) for n in range(nodes)]


CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "c", "namespace": "ns-1"},
         "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
             {"name": "h100", "deviceClassName": "h100", "count": 2},
             {"name": "a100", "deviceClassName": "gpu", "count": 4, "selectors": [
                 {"cel": {"expression": f'device.attributes["{DRIVER}"].model == "a100"'}}]}]}]}}}


def _cpu(call: Any) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


def measure(nodes: int, devices: int, unique: bool) -> dict[str, float]:
    facts_from_objects(cluster(1, devices, unique))  # compile the selectors once, untimed
    objects = cluster(nodes, devices, unique)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    facts = facts_from_objects(objects)
    size = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del facts
    start = time.process_time()  # timed again untraced: tracemalloc slows every allocation
    facts = facts_from_objects(objects)
    build = time.process_time() - start
    events = [_cpu(lambda k=k: facts.apply(  # type: ignore[misc]
        "ResourceSlice", "MODIFIED", node_slice(k, devices, unique, generation=2)))
        for k in range(50)]
    reviews = []
    options = Options()
    for k in range(200):
        if k % 20 == 0:  # a new snapshot now and then, as watch events make
            facts.apply("Namespace", "ADDED", {"metadata": {"name": f"new-{k}"}})
        reviews.append(_cpu(lambda: check_object(CLAIM, facts, CheckSettings(), options=options)))
    return {"bytes": size, "build": build, "event": statistics.median(events),
            "review": statistics.median(reviews)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,5000")
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--unique", action="store_true")
    args = parser.parse_args()
    print("| nodes | devices/node | unique | facts (MiB) | per 1,000 nodes (MiB) | build CPU (s) "
          "| slice event CPU (ms) | check_object CPU (ms) |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for nodes in (int(n) for n in args.nodes.split(",")):
        found = measure(nodes, args.devices, args.unique)
        mib = found["bytes"] / 2**20
        print(f"| {nodes:,} | {args.devices} | {'yes' if args.unique else 'no'} | {mib:.2f} "
              f"| {mib * 1000 / nodes:.2f} | {found['build']:.2f} | {found['event'] * 1000:.2f} "
              f"| {found['review'] * 1000:.2f} |")


if __name__ == "__main__":
    main()
