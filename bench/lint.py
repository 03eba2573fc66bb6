"""Benchmark: `draguard lint` documents/s against kubernetes-validate's, same documents, same run.

    .venv/bin/python bench/lint.py [--documents 2000] [--jobs 2] [--peer-documents N]
    .venv/bin/python bench/lint.py --styles [--scale 1.0]

`--styles` measures the whole process (`draguard lint -o json FILE` as a subprocess:
interpreter start, imports, reading, rules, rendering) on one generated corpus per input
style of issue 21, each carrying warnings: block YAML, flow YAML, a stream of JSON
objects, `kubectl get -o yaml` output (a `kind: List` with managedFields and status), a
repository where 97 % of documents are not DRA, a `kind: List` of 50,000 claims and a
stream of 100,000 JSON objects (time and peak memory), and the start on one small file.
Each process runs with compiled bytecode, as an installed draguard does (a warm-up run
writes it to a cache folder of its own).

Generates DRA claims and templates (v1, v1beta2, v1beta1; about one in five invalid, so
that positions are computed too) into 20 files in a temporary folder, then times:

- draguard: the whole `draguard lint --output json FOLDER` in-process (reading,
  splitting, parsing, rules, positions, rendering), with one process and with
  `--jobs N`, best of `--repeat` runs; interpreter start-up is excluded, pool start-up
  is included;
- kubernetes-validate: its Python API (`kubernetes_validate.validate(obj, "1.37",
  strict=True)`) on each document after `yaml.safe_load_all` of the same files, as its
  CLI does. `--peer-documents` limits it to the first N documents (it manages about 50
  documents/s, so all 2,000 take some 40 s); the rate is per document either way.

Rates are printed per wall-clock second and per second of CPU time (steadier when other
work shares the machine; for `--jobs` the workers' CPU time is counted too). Targets (issue 2): draguard
≥ 100× kubernetes-validate's rate in the same run, and with `--jobs 2` ≥ 7,500
documents/s (wall). Exit status 0 when both are met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # `bench/lint.py` as a script: make `bench.*` importable
    sys.path.insert(0, ROOT)

from bench.installed import INSTALLED_ENV  # noqa: E402
from draguard.schema.cli import lint as lint_cli  # noqa: E402

FILES = 20
RATIO_TARGET = 100.0
JOBS_TARGET = 7_500.0
VERSIONS = ("v1", "v1beta2", "v1beta1")


def make_request(
    rng: random.Random, version: str, name: str, *, bad: bool, n: int
) -> dict[str, Any]:
    """A prioritized request (or an exact one) in the shape of `version`.

    Class names carry the document number `n`, so that no two documents share a spec:
    in a repository each document is different, and the rule set remembers the
    verdicts of repeated specs (claims made from one template), which would flatter it.
    Selectors repeat, as they do in practice (one per device class).
    """
    if rng.random() < 0.3:
        exact = {"deviceClassName": f"{name}.c{n}.example.com", "count": rng.randint(1, 4)}
        return {"name": name, **exact} if version == "v1beta1" else {"name": name, "exactly": exact}
    count = 9 if bad and rng.random() < 0.5 else rng.randint(1, 4)
    subs = [
        {"name": f"opt-{j}", "deviceClassName": f"gpu-{j}.c{n}.example.com", "count": j + 1,
         "selectors": [{"cel": {"expression": f'device.driver == "gpu-{j}.example.com"'}}]}
        for j in range(count)
    ]
    if bad and count < 9:
        subs[-1]["name"] = subs[0]["name"]  # a duplicate subrequest name
    return {"name": name, "firstAvailable": subs}


def make_document(rng: random.Random, n: int) -> dict[str, Any]:
    version = VERSIONS[n % len(VERSIONS)]
    bad = rng.random() < 0.2
    requests = [make_request(rng, version, f"req-{i}", bad=bad and i == 0, n=n)
                for i in range(rng.randint(1, 3))]
    devices: dict[str, Any] = {"requests": requests}
    if len(requests) > 1:
        devices["constraints"] = [{"requests": [r["name"] for r in requests],
                                   "matchAttribute": "example.com/numa"}]
    spec = {"devices": devices}
    meta = {"name": f"claim-{n}", "namespace": "team-a", "labels": {"app": "trainer"}}
    api_version = f"resource.k8s.io/{version}"
    if n % 2:
        return {"apiVersion": api_version, "kind": "ResourceClaimTemplate", "metadata": meta,
                "spec": {"metadata": {"labels": {"app": "trainer"}}, "spec": spec}}
    return {"apiVersion": api_version, "kind": "ResourceClaim", "metadata": meta, "spec": spec}


def write_corpus(folder: str, documents: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    docs = [make_document(rng, n) for n in range(documents)]
    paths = []
    for f in range(FILES):
        path = os.path.join(folder, f"claims-{f:02d}.yaml")
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump_all(docs[f::FILES], handle, sort_keys=False)
        paths.append(path)
    return paths


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float  # this process and the worker processes it reaped
    code: int
    results: int


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def time_draguard(folder: str, jobs: int, repeat: int) -> Timing:
    """The fastest of `repeat` in-process `draguard lint --output json` runs over the folder.

    The machine may be shared, so the best run is the one least disturbed by others.
    """
    best: Timing | None = None
    for _ in range(repeat):
        out, err = io.StringIO(), io.StringIO()
        wall, cpu = time.perf_counter(), _cpu()
        code = lint_cli.main(["--output", "json", "--jobs", str(jobs), folder],
                             stdout=out, stderr=err)
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
        if code == 2:
            raise SystemExit(f"draguard lint failed: {err.getvalue()}")
        results = len(json.loads(out.getvalue())["results"])
        if best is None or wall < best.wall:
            best = Timing(wall, cpu, code, results)
    assert best is not None
    return best


def time_peer(paths: list[str], limit: int) -> tuple[Timing, int]:
    """kubernetes-validate on the first `limit` documents: timing and rejections."""
    import kubernetes_validate

    done = rejected = 0
    wall, cpu = time.perf_counter(), _cpu()
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for doc in yaml.safe_load_all(handle):
                if done >= limit:
                    break
                try:
                    kubernetes_validate.validate(doc, "1.37", strict=True)
                except kubernetes_validate.ValidationError:
                    rejected += 1
                done += 1
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    return Timing(wall, cpu, 0, done), rejected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--peer-documents", type=int, default=None,
                        help="how many of the documents kubernetes-validate checks (default: all)")
    parser.add_argument("--seed", type=int, default=4816)
    parser.add_argument("--repeat", type=int, default=3, help="draguard runs; the best counts")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="draguard-bench-") as folder:
        paths = write_corpus(folder, args.documents, args.seed)
        size = sum(os.path.getsize(p) for p in paths) / args.documents
        time_draguard(folder, 1, 1)  # warm-up: imports, CEL compile cache
        one = time_draguard(folder, 1, args.repeat)
        many = time_draguard(folder, args.jobs, args.repeat)
        peer, rejected = time_peer(paths, args.peer_documents or args.documents)

    n = args.documents
    one_rate, one_cpu_rate, many_rate = n / one.wall, n / one.cpu, n / many.wall
    peer_rate, peer_cpu_rate = peer.results / peer.wall, peer.results / peer.cpu
    ratio, cpu_ratio = one_rate / peer_rate, one_cpu_rate / peer_cpu_rate
    print(f"documents: {n} generated in {FILES} files, {size:.0f} bytes each on average; "
          f"draguard: {one.results} results, exit {one.code}; best of {args.repeat} runs; "
          f"cores: {os.cpu_count()}")
    print(f"draguard, 1 process:       {one_rate:8.0f} documents/s wall "
          f"({one.wall:.3f} s), {one_cpu_rate:8.0f}/s of CPU time")
    print(f"draguard, --jobs {args.jobs}:        {many_rate:8.0f} documents/s wall "
          f"({many.wall:.3f} s; {many.cpu:.3f} s CPU in all processes)   "
          f"target >= {JOBS_TARGET:.0f}")
    print(f"kubernetes-validate 1.37:  {peer_rate:8.1f} documents/s wall "
          f"({peer.results} documents, {rejected} rejected, {peer.wall:.2f} s), "
          f"{peer_cpu_rate:.1f}/s of CPU time")
    print(f"ratio draguard/kubernetes-validate, 1 process: {ratio:.0f}x wall, "
          f"{cpu_ratio:.0f}x CPU   target >= {RATIO_TARGET:.0f}x")
    met = ratio >= RATIO_TARGET and many_rate >= JOBS_TARGET
    print("targets met" if met else "targets NOT met")
    return 0 if met else 1


# --- one corpus per input style (issue 21), the whole process timed ---------------------

STYLE_TARGET = 7_500.0  # documents/s, whole process, each style
NON_DRA_TARGET = 20_000.0
START_TARGET = 0.150  # s, one small file
LIST_TARGET = (10.0, 500.0)  # s, MiB for a 50,000-claim List
STREAM_TARGET = 15.0  # s for a 100,000-object JSON stream


def warned_claim(n: int) -> dict[str, Any]:
    """A v1 claim with two warnings (an `All` alternative, alternatives of different
    counts), and every tenth one an error too; class names carry `n` (no memo hit)."""
    small: dict[str, Any] = {"name": "small", "deviceClassName": f"gpu.c{n}.example.com",
                             "count": 9 if n % 10 == 0 else 2,
                             "selectors": [{"cel": {"expression":
                                                    'device.driver == "gpu.example.com"'}}]}
    if n % 10 == 0:
        small["count"] = 0  # Invalid: count must be positive
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": f"claim-{n}", "namespace": "team-a", "labels": {"app": "train"}},
        "spec": {"devices": {"requests": [
            {"name": "gpu", "firstAvailable": [
                {"name": "big", "deviceClassName": f"gpu.c{n}.example.com",
                 "allocationMode": "All"},
                small]},
            {"name": "nic", "exactly": {"deviceClassName": f"nic.c{n}.example.com"}},
        ]}},
    }


def served_claim(n: int) -> dict[str, Any]:
    """`warned_claim` as the apiserver returns it: uid, resourceVersion, managedFields, status."""
    claim = warned_claim(n)
    claim["metadata"].update({
        "creationTimestamp": "2026-12-03T06:17:00Z", "resourceVersion": str(100_000 + n),
        "uid": f"{n:08x}-5f3c-4e8f-a7b6-0123456789ab",
        "managedFields": [{
            "apiVersion": "resource.k8s.io/v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                         "f:spec": {"f:devices": {".": {}, "f:requests": {}}}},
            "manager": "kubectl-client-side-apply", "operation": "Update",
            "time": "2026-12-03T06:17:00Z"}],
    })
    claim["status"] = {"reservedFor": [{"name": f"pod-{n}", "resource": "pods",
                                        "uid": f"{n:08x}-0000-4000-8000-000000000000"}]}
    return claim


def other_object(n: int) -> dict[str, Any]:
    """A Deployment, Service or ConfigMap, as a repository holds them."""
    meta = {"name": f"app-{n}", "namespace": "team-a", "labels": {"app": f"app-{n}"}}
    if n % 3 == 0:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                "data": {"LOG_LEVEL": "info", "MODE": "serve"}}
    if n % 3 == 1:
        return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
                "spec": {"selector": {"app": f"app-{n}"},
                         "ports": [{"port": 80, "targetPort": 8080}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": f"app-{n}"}},
        "template": {"metadata": {"labels": {"app": f"app-{n}"}}, "spec": {"containers": [
            {"name": "app", "image": "registry.example.com/app:1.0",
             "ports": [{"containerPort": 8080}], "env": [{"name": "MODE", "value": "serve"}]},
        ]}}}}


def _kubectl_list(items: list[dict[str, Any]]) -> str:
    """`kubectl get -o yaml`: a List, keys sorted, lists at their key's indentation."""
    return yaml.safe_dump({"apiVersion": "v1", "items": items, "kind": "List",
                           "metadata": {"resourceVersion": ""}}, sort_keys=True)


def write_style(folder: str, style: str, n: int) -> str:
    """The corpus of one style in one file; returns its path."""
    path = os.path.join(folder, f"{style}.{'json' if 'json' in style else 'yaml'}")
    if style == "block":
        text = yaml.safe_dump_all([warned_claim(k) for k in range(n)], sort_keys=False)
    elif style == "flow":
        text = yaml.safe_dump_all([warned_claim(k) for k in range(n)], sort_keys=False,
                                  default_flow_style=None, width=1000)
    elif style in ("json-stream", "json-stream-100k"):
        text = "".join(json.dumps(warned_claim(k), indent=2) + "\n" for k in range(n))
    elif style in ("kubectl", "list-50k"):
        text = _kubectl_list([served_claim(k) for k in range(n)])
    elif style == "non-dra":
        docs = [warned_claim(k) if k % 33 == 0 else other_object(k) for k in range(n)]
        text = yaml.safe_dump_all(docs, sort_keys=False)
    else:
        raise ValueError(style)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    peak_mib: float
    code: int


def run_process(path: str) -> Run:
    """`draguard lint -o json PATH` as a process of its own: wall, CPU and peak memory."""
    command = [sys.executable, "-c", _CHILD, "lint", "-o", "json", path]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=INSTALLED_ENV)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    assert process.stderr is not None
    err = process.stderr.read().decode()
    if code == 2:
        raise SystemExit(f"draguard lint {path} failed: {err}")
    peak_kib = int(err.rpartition("VmHWM:")[2].split()[0])
    return Run(wall, usage.ru_utime + usage.ru_stime, peak_kib / 1024, code)


# The command, then its peak memory on stderr: VmHWM is the process's own high-water
# mark since exec (rusage's maxrss would include this process's size at fork).
_CHILD = (
    "import sys\n"
    "from draguard.webhook.cli.main import main\n"
    "code = main()\n"
    "with open('/proc/self/status') as status:\n"
    "    sys.stderr.write(next(line for line in status if line.startswith('VmHWM:')))\n"
    "sys.exit(code)\n"
)


def best_run(path: str, repeat: int) -> Run:
    runs = [run_process(path) for _ in range(repeat)]
    return min(runs, key=lambda r: r.wall)


STYLES = (  # name, documents at scale 1, what it stands for
    ("block", 15_000, "block YAML, claims with 2-3 findings each"),
    ("flow", 15_000, "YAML with flow collections"),
    ("json-stream", 15_000, "a stream of JSON objects in one file"),
    ("kubectl", 15_000, "`kubectl get -o yaml` output (List, managedFields, status)"),
    ("non-dra", 30_000, "a repository where 97 % of documents are not DRA"),
)


@dataclass(frozen=True)
class StyleFigure:
    """One figure of `--styles`: what, its value, the target and whether it is met."""

    name: str
    value: float
    unit: str
    target: str
    met: bool
    note: str


def style_figures(scale: float, repeat: int) -> list[StyleFigure]:
    """Every figure of issue 21's lint styles, each from whole `draguard lint` processes."""
    figures: list[StyleFigure] = []
    # The start as a user has it (bench/start.py): installed, bytecode compiled. Imported
    # here: bench.start imports this module.
    from bench.start import measure as measure_start

    start = measure_start(5, source=False)["cel"]
    figures.append(StyleFigure(
        "lint start, one small file", start.wall * 1000, "ms", f"< {START_TARGET * 1000:.0f} ms",
        start.wall < START_TARGET,
        f"min of 5, installed, bytecode cached (bench/start.py); CPU {start.cpu * 1000:.0f} ms"))
    with tempfile.TemporaryDirectory(prefix="draguard-bench-styles-") as folder:
        run_process(write_style(folder, "block", 3))  # writes the bytecode the runs read
        for style, count, what in STYLES:
            n = max(1, int(count * scale))
            path = write_style(folder, style, n)
            run = best_run(path, repeat)
            rate, target = n / run.wall, NON_DRA_TARGET if style == "non-dra" else STYLE_TARGET
            figures.append(StyleFigure(
                f"lint {style}", rate, "documents/s", f"≥ {target:,.0f} documents/s",
                rate >= target,
                f"{what}: {n} documents in {run.wall:.2f} s wall, {n / run.cpu:,.0f} per CPU "
                f"second (workers included), peak {run.peak_mib:.0f} MiB, exit {run.code}, "
                f"best of {repeat}"))
            os.remove(path)
        for style, count, limits in (("list-50k", 50_000, LIST_TARGET),
                                     ("json-stream-100k", 100_000, (STREAM_TARGET, None))):
            n = max(1, int(count * scale))
            path = write_style(folder, style, n)
            run = run_process(path)
            seconds, mib = limits
            # Scaled down (`--quick`), the time limit scales with the documents.
            limit = seconds * n / count
            met = run.wall < limit and (mib is None or run.peak_mib < mib)
            figures.append(StyleFigure(
                f"lint {style}", run.wall, "s", f"< {limit:.1f} s"
                + (f", < {mib:.0f} MiB" if mib else ""), met,
                f"{n} documents; {run.cpu:.2f} s CPU (workers included), peak "
                f"{run.peak_mib:.0f} MiB"))
            os.remove(path)
    return figures


def styles_main(scale: float, repeat: int) -> int:
    figures = style_figures(scale, repeat)
    print(f"cores: {os.cpu_count()}; load average: {os.getloadavg()}; whole process, "
          f"default jobs; best of {repeat} runs per style")
    for f in figures:
        print(f"{f.name:<34} {f.value:12,.2f} {f.unit:<12} target {f.target:<24} "
              f"{'met' if f.met else 'NOT met'}   {f.note}")
    met_all = all(f.met for f in figures)
    print("targets met" if met_all else "targets NOT met")
    return 0 if met_all else 1


if __name__ == "__main__":
    if "--styles" in sys.argv[1:]:
        styles_parser = argparse.ArgumentParser(description="lint per input style")
        styles_parser.add_argument("--styles", action="store_true")
        styles_parser.add_argument("--scale", type=float, default=1.0)
        styles_parser.add_argument("--repeat", type=int, default=2)
        styles_args = styles_parser.parse_args()
        sys.exit(styles_main(styles_args.scale, styles_args.repeat))
    sys.exit(main())
