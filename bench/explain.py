"""`draguard explain` at cluster scale: a Pod with 2 claims of 3 alternatives each.

Run: `.venv/bin/python bench/explain.py [--nodes 500,5000,50000] [--devices 8] [--rounds 3]
[--format json|yaml] [--check]`.
Each node has one pool of `--devices` devices published as 8 slices (one pool, 8 slices,
as drivers that split pools do); a tenth of the nodes have H100s, a fifth A100s, the
rest T4s. Each claim asks for one H100, else two A100s, else four T4s, so every node
runs the search through all three alternatives somewhere.

Prints, per size, the median of `--rounds` (1 above 5,000 nodes) of:
- the whole command as a user runs it: `draguard explain FILE` in a new process on the
  objects written as one List (`kubectl get -o json` or `-o yaml`, `--format`), start-up,
  imports, parsing, the model, the explanation, the text output and the exit included;
  CPU is the child's user + system time (the system part, its peak resident MiB and
  minor page faults shown too: what memory costs), wall its elapsed time; the child's
  bytecode is cached (in a temporary folder, written by one unmeasured run), as an
  installed draguard's is;
- in this process, for where the time goes: building the cluster model from the
  objects already parsed ("read") and explaining the Pod ("explain": allocator on every
  node, reasons, scoring).
Target (issue 19): 5,000 nodes × 8 devices under 1 s, 50,000 under 10 s, for the whole
command. `--check` exits 1 when the command's CPU time misses it: the command runs on one
core, so on an idle machine its wall time is its CPU time plus reading the file; on the
shared machine wall time mostly measures the other work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # `bench/explain.py` as a script: make `bench.*` importable
    sys.path.insert(0, ROOT)

from bench.installed import INSTALLED_ENV  # noqa: E402
from draguard.schema.cluster.inventory import Inventory, add_objects, check_references  # noqa: E402
from draguard.schema.explain import explain  # noqa: E402
from draguard.schema.model.releases import release  # noqa: E402

DRIVER = "gpu.example.com"
SLICES_PER_POOL = 8
TARGETS = {5000: 1.0, 50000: 10.0}  # nodes → seconds for the whole command (issue 19)


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


@dataclass(frozen=True)
class Row:
    """One size's medians, in seconds."""

    command: float
    command_cpu: float
    command_system: float
    peak_mib: float
    faults: int
    read: float
    read_cpu: float
    explain: float
    explain_cpu: float
    summary: str


def write_input(objects: list[dict[str, Any]], folder: str, form: str) -> str:
    """The objects as one List file, as `kubectl get -o json` (or `-o yaml`) writes it."""
    listed = {"apiVersion": "v1", "kind": "List", "items": objects}
    path = os.path.join(folder, f"cluster.{form}")
    with open(path, "w", encoding="utf-8") as handle:
        if form == "json":
            json.dump(listed, handle, indent=4)
        else:
            yaml.safe_dump(listed, handle, sort_keys=False)
    return path


def warm_up(version: str) -> None:
    """One unmeasured run on a small cluster, which writes the bytecode cache."""
    with tempfile.TemporaryDirectory(prefix="draguard-bench-explain-") as folder:
        run_command(write_input(cluster(20, 8), folder, "json"), version)


@dataclass(frozen=True)
class Run:
    """One run of the command: wall and CPU seconds, system CPU, peak MiB, minor faults."""

    wall: float
    cpu: float
    system: float
    peak_mib: float
    faults: int


def run_command(path: str, version: str) -> Run:
    """`draguard explain PATH` in a new process, measured by its own rusage (`wait4`):
    the system time and page faults show what memory costs (issue 19's spread)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "draguard.webhook.cli.main", "explain",
                                  "--kubernetes-version", version, path], env=INSTALLED_ENV,
                                 stdout=subprocess.DEVNULL, stderr=err)
        _, status, used = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            raise SystemExit(f"draguard explain exited {child.returncode}: {err.read().decode()}")
    return Run(wall, used.ru_utime + used.ru_stime, used.ru_stime, used.ru_maxrss / 1024,
               used.ru_minflt)


def measure(nodes: int, devices: int, rounds: int, form: str) -> Row:
    version = "1.36"
    chosen = release(version)
    objects = cluster(nodes, devices)
    runs: list[Run] = []
    reads, read_cpu, explains, cpu, summary = [], [], [], [], ""
    with tempfile.TemporaryDirectory(prefix="draguard-bench-explain-") as folder:
        path = write_input(objects, folder, form)
        runs = [run_command(path, version) for _ in range(rounds)]
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
    m = statistics.median
    return Row(m(r.wall for r in runs), m(r.cpu for r in runs), m(r.system for r in runs),
               m(r.peak_mib for r in runs), int(m(r.faults for r in runs)),
               m(reads), m(read_cpu), m(explains), m(cpu), summary)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,5000,50000")
    parser.add_argument("--devices", default="8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--format", choices=("json", "yaml"), default="json",
                        help="the input file of the whole command (default: %(default)s)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the whole command's CPU time misses issue 19's target")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| nodes | devices/node | command (s) | command CPU (s) | of it system (s) | peak MiB "
          "| page faults | read (s) | read CPU (s) | explain (s) | explain CPU (s) | target | met "
          "| outcome |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
    missed = []
    warm_up("1.36")
    for devices in (int(d) for d in args.devices.split(",")):
        for nodes in (int(n) for n in args.nodes.split(",")):
            rounds = args.rounds if nodes <= 5000 else 1
            row = measure(nodes, devices, rounds, args.format)
            target = TARGETS.get(nodes) if devices == 8 else None
            met = "" if target is None else ("yes" if row.command_cpu < target else "**no**")
            if target is not None and row.command_cpu >= target:
                missed.append(f"{nodes:,} nodes: {row.command_cpu:.2f} s CPU, target < {target:g} s")
            print(f"| {nodes:,} | {devices} | {row.command:.2f} | {row.command_cpu:.2f} "
                  f"| {row.command_system:.2f} | {row.peak_mib:.0f} | {row.faults:,} "
                  f"| {row.read:.2f} | {row.read_cpu:.2f} | {row.explain:.2f} | {row.explain_cpu:.2f} "
                  f"| {'' if target is None else f'< {target:g} s'} | {met} | {row.summary} |",
                  flush=True)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for line in missed:
        print(f"target missed: {line}", file=sys.stderr)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
