"""Benchmark: two real `draguard serve` side by side over TLS, distinct claims, interleaved rounds.

    .venv/bin/python -m bench.serve_compare view   [--nodes 5000] [--devices 8] [--memory-only]
                                                   [common]
    .venv/bin/python -m bench.serve_compare worker [--gthread-switch-interval S] [common]

    common: [--seconds 4] [--rounds 5] [--concurrency 4] [--rate 100] [--rate-clients 4]
            [--workers 2] [--threads 4] [--json]

`view` (issue 20): `draguard serve` without the cluster view, and `draguard serve
--cluster-view --kubeconfig K` where K points at a fake API server in this process
(tests/support/fakeapi.py) holding `--nodes` ResourceSlices of `--devices` GPUs each
(bench/cluster_view.py's objects), the DeviceClasses, Namespace and ResourceQuota the
claim meets. The claim is bench/cluster_view.py's (two alternatives with CEL selectors
against that driver's attributes and capacity). Also each worker's resident memory
(VmRSS) once the view has loaded in every worker, before any review: the difference
between the two servers is the view's memory (each worker holds its own view); a third
server, started and stopped before the rounds, with the view on a cluster of no
ResourceSlices, gives the fixed part (the `kubernetes` client and the view's threads),
so that the rest divided by `--nodes` is the memory per node; VmHWM gives each worker's
peak (the first list). `--memory-only` stops there, without the rounds. Each round also
records the workers' CPU (utime + stime) per answered request (`worker_cpu_ms_per_request`):
counted work, less moved by other load than latency. `--view-policy FILE` serves the view
with that policy (every `clusterChecks:` code off: the view's presence without its checks).
Target: with the view, p50 and p99 within 10 % of without, throughput ≥ 90 %.

`worker` (issue 15): today's serving design, `draguard serve` (gunicorn's gevent worker
with deadlines, reviews on native threads), against the design it replaced, gunicorn's
`gthread` worker (commit 3c7ab08 replaced it), started here by `--serve-gthread`: the
same app, `gunicorn_settings` and certificate, with only `worker_class = "gthread"`
and the TLS hook returning the worker's cached certificate context as before (the gevent
hook's handshake deadline needs gevent's hub). Not the old code: the app is today's, so
a review still goes through today's runner, which outside gevent is a thread pool
(`ThreadRunner`), one hand-off more than the old inline review. The claim is
bench/webhook.py's. Target: the gevent design ≥ 90 % of gthread's throughput.
`--gthread-switch-interval 0.0002` gives the gthread server the gevent design's GIL
switch interval (deadline.py), to tell that part's cost from the rest.

Every request carries a claim of its own (bench/webhook.py's `distinct_template`: its
request names carry a unique id, so that no memo — the spec memo, the cluster checks'
per-template verdicts — answers it); the CEL
expressions repeat, as real selectors do, so each worker compiles them once. Loads, on
kept-alive TLS connections as the apiserver's: `max` (closed loop, `--concurrency`
clients back to back) and `rate` (open loop, `--rate` requests/s in total, latency from
each request's scheduled start). Each round measures both servers, in alternating order;
the median round is reported (by throughput for `max`, by p99 for `rate`). Clients and
servers share the machine's cores: compare the two servers of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import ssl
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import cluster_view
from bench import webhook as bench_webhook

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024


# --- distinct claims (bench/webhook.py's generator and load) ---------------------------------


def template(kind: str) -> bytes:
    """The AdmissionReview of `kind`'s claim as a template of distinct claims."""
    if kind == "view":
        return bench_webhook.distinct_template(cluster_view.CLAIM, "team-a")
    return bench_webhook.DISTINCT


def measure(server: str, port: int, ca: Path, body: bytes, *, load: str, clients: int,
            seconds: float, rate: float) -> bench_webhook.Result:
    return bench_webhook.measure(server, port, ca, tool="python", mode="keep-alive", load=load,
                                 clients=clients, seconds=seconds, rate=rate, body=body)


# --- servers -------------------------------------------------------------------------------


def serve_argv(port: int, state: Path, args: argparse.Namespace, *extra: str) -> list[str]:
    return [sys.executable, "-m", "draguard.webhook.cli.main", "serve", "--host", "127.0.0.1",
            "--port", str(port), "--state-dir", str(state), "--workers", str(args.workers),
            "--threads", str(args.threads), "--log-level", "warning", *extra]


def serve_gthread(port: int, state: Path, workers: int, threads: int,
                  switch_interval: float | None) -> None:
    """The app on gunicorn's gthread worker, as served before commit 3c7ab08 (bench only)."""
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)  # interpreter state: the forked workers keep it
    from draguard.webhook.serving.metricsdir import prepare_multiprocess_dir

    prepare_multiprocess_dir(None)  # before prometheus_client is imported, as serve does
    from draguard.webhook.cli.serve import worker_app
    from draguard.webhook.config import Config
    from draguard.webhook.serving import laststate
    from draguard.webhook.serving.server import WebhookServer, gunicorn_settings

    config = Config(host="127.0.0.1", port=port, state_dir=state, workers=workers,
                    threads=threads, log_level="warning")

    def ssl_context(conf: Any, default_factory: Any) -> ssl.SSLContext:
        # Per connection, as gthread asks: the worker's cached context (reloaded on change).
        context: ssl.SSLContext = laststate.tls_cache(config).context()
        return context

    settings = gunicorn_settings(config)
    settings.update(worker_class="gthread", threads=threads, ssl_context=ssl_context)
    WebhookServer(config, app_factory=worker_app, settings=settings).run()


def fetch(port: int, ca: Path, path: str) -> str:
    """GET `path`; the body (Connection: close, read to the end)."""
    sock = bench_webhook._connect(port, ssl.create_default_context(cafile=str(ca)))
    try:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    except (OSError, ssl.SSLError):
        pass
    finally:
        sock.close()
    return data.partition(b"\r\n\r\n")[2].decode(errors="replace")


def wait_view_loaded(port: int, ca: Path, seconds: float = 600) -> None:
    """Until every worker's view has listed ResourceSlices (the livemin gauge is 1)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if 'draguard_cluster_view_loaded{kind="ResourceSlice"} 1.0' in fetch(port, ca, "/metrics"):
            return
        time.sleep(0.5)
    sys.exit("the cluster view did not load in every worker")


def workers_rss(master: int, field: str = "VmRSS") -> list[int]:
    """VmRSS (or another /proc status field: VmHWM, the peak) in bytes of each worker."""
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    sizes = []
    for pid in children:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                sizes.append(int(line.split()[1]) * 1024)
    return sizes


def empty_view_rss(folder: Path, state: Path, ca: Path, args: argparse.Namespace) -> list[float]:
    """Workers' VmRSS (MiB) with the view on a cluster of no ResourceSlices: what the view
    costs before any node (the `kubernetes` client, its threads), to subtract."""
    api = fake_cluster(0, args.devices)
    port = bench_webhook.free_port()
    (folder / "empty").mkdir(exist_ok=True)
    flags = ("--cluster-view", "--kubeconfig", str(api.kubeconfig(folder / "empty")))
    process = bench_webhook.start(serve_argv(port, state, args, *flags), port, ca,
                                  folder / "view-no-slices.log", ready_seconds=600)
    try:
        wait_view_loaded(port, ca)
        return [round(s / MIB, 1) for s in workers_rss(process.pid)]
    finally:
        bench_webhook.stop(process)
        api.stop()


def fake_cluster(nodes: int, devices: int) -> Any:
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from fakeapi import FakeApi

    api = FakeApi()
    for obj in cluster_view.device_classes():
        api.add("deviceclasses", obj)
    for node in range(nodes):
        api.add("resourceslices", cluster_view.slice_for(node, devices))
    api.add("namespaces", {"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": "team-a", "labels": {
                               "kubernetes.io/metadata.name": "team-a"}}})
    api.add("resourcequotas", {"apiVersion": "v1", "kind": "ResourceQuota",
                               "metadata": {"name": "q", "namespace": "team-a"},
                               "spec": {"hard": {"big.gpu.example.com.deviceclass.resource"
                                                 ".k8s.io/devices": "16"}}})
    return api.start()


# --- the run -------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="draguard-compare-"))
    state = folder / "state"
    ca = state / "ca.crt"
    body = template(args.compare)
    ports = {}
    started: dict[str, Any] = {}
    api = None
    extra: dict[str, Any] = {}
    try:
        if args.compare == "view":
            names = ("without", "with-view")
            api = fake_cluster(args.nodes, args.devices)
            kubeconfig = api.kubeconfig(folder)
            for name, flags in (("without", ()),
                                ("with-view", ("--cluster-view", "--kubeconfig", str(kubeconfig),
                                               *(("--policy", args.view_policy)
                                                 if args.view_policy else ())))):
                ports[name] = bench_webhook.free_port()
                # /readyz waits for the view's first list: minutes for 50,000 nodes.
                started[name] = bench_webhook.start(serve_argv(ports[name], state, args, *flags),
                                                    ports[name], ca, folder / f"{name}.log",
                                                    ready_seconds=600)
            wait_view_loaded(ports["with-view"], ca)
            extra["rss_mib_before_load"] = {
                name: [round(s / MIB, 1) for s in workers_rss(started[name].pid)]
                for name in names}
            extra["rss_mib_before_load"]["view-no-slices"] = empty_view_rss(folder, state, ca,
                                                                            args)
            extra["peak_rss_mib_before_load"] = {
                name: [round(s / MIB, 1) for s in workers_rss(started[name].pid, "VmHWM")]
                for name in names}
            if args.memory_only:
                return memory_summary(args, extra)
        else:
            names = ("gthread", "gevent")
            ports["gevent"] = bench_webhook.free_port()
            started["gevent"] = bench_webhook.start(serve_argv(ports["gevent"], state, args),
                                                    ports["gevent"], ca, folder / "gevent.log")
            ports["gthread"] = bench_webhook.free_port()
            started["gthread"] = bench_webhook.start(
                [sys.executable, "-m", "bench.serve_compare", "worker", "--serve-gthread",
                 str(ports["gthread"]), str(state), "--workers", str(args.workers),
                 "--threads", str(args.threads),
                 *(["--gthread-switch-interval", str(args.gthread_switch_interval)]
                   if args.gthread_switch_interval is not None else [])],
                ports["gthread"], ca, folder / "gthread.log")
        cpu: dict[str, list[float]] = {}
        results = rounds(args, names, ports, ca, body,
                         masters={name: process.pid for name, process in started.items()},
                         cpu=cpu)
        # Counted work, less sensitive to other load than wall time: the servers' workers'
        # CPU (user + system) per answered request, median over the rounds.
        extra["worker_cpu_ms_per_request"] = {key: round(statistics.median(v), 3)
                                              for key, v in cpu.items()}
        if args.compare == "view":
            extra["rss_mib_after_load"] = {
                name: [round(s / MIB, 1) for s in workers_rss(started[name].pid)]
                for name in names}
    finally:
        for process in started.values():
            bench_webhook.stop(process)
        if api is not None:
            api.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return summarize(args, names, results, extra)


def memory_summary(args: argparse.Namespace, extra: dict[str, Any]) -> dict[str, Any]:
    """`--memory-only`: the view's resident memory per worker, no rounds."""
    summary: dict[str, Any] = {"compare": args.compare, "nodes": args.nodes, **extra}
    summary.update(view_memory(args, extra))
    return summary


def view_memory(args: argparse.Namespace, extra: dict[str, Any]) -> dict[str, Any]:
    before = extra["rss_mib_before_load"]
    loaded, empty = statistics.mean(before["with-view"]), statistics.mean(before["view-no-slices"])
    return {
        "view_rss_mib_per_worker": round(loaded - statistics.mean(before["without"]), 1),
        "view_rss_mib_fixed_per_worker": round(empty - statistics.mean(before["without"]), 1),
        "view_rss_mib_per_1000_nodes": round((loaded - empty) / (args.nodes / 1000), 2),
    }


def workers_cpu(master: int) -> float:
    """CPU seconds (user + system) the master's children have used so far."""
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    ticks = 0
    for pid in children:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime (stat fields 14, 15)
    return ticks / os.sysconf("SC_CLK_TCK")


def rounds(args: argparse.Namespace, names: tuple[str, str], ports: dict[str, int], ca: Path,
           body: bytes, *, masters: dict[str, int] | None = None,
           cpu: dict[str, list[float]] | None = None) -> list[bench_webhook.Result]:
    """The interleaved rounds; with `masters`, each server's workers' CPU ms per request
    of each round goes into `cpu` under "server/load"."""
    results = []
    for load in ("max", "rate"):
        clients = args.concurrency if load == "max" else args.rate_clients
        by: dict[str, list[bench_webhook.Result]] = {name: [] for name in names}
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for name in order:
                before = workers_cpu(masters[name]) if masters else 0.0
                result = measure(name, ports[name], ca, body, load=load, clients=clients,
                                 seconds=args.seconds, rate=args.rate)
                by[name].append(result)
                if masters and cpu is not None and result.requests:
                    used = workers_cpu(masters[name]) - before
                    cpu.setdefault(f"{name}/{load}", []).append(1000 * used / result.requests)
        for name in names:
            result = bench_webhook._median(by[name], by_rps=load == "max")
            results.append(result)
            if not args.json:
                print(bench_webhook._row(result), flush=True)
    return results


def summarize(args: argparse.Namespace, names: tuple[str, str],
              results: list[bench_webhook.Result], extra: dict[str, Any]) -> dict[str, Any]:
    base, other = names
    by = {(r.server, r.load): r for r in results}
    summary: dict[str, Any] = {"compare": args.compare, "results": [asdict(r) for r in results],
                               **extra}
    rps = by[(other, "max")].rps / by[(base, "max")].rps if by[(base, "max")].rps else 0.0
    summary["throughput_ratio"] = round(rps, 3)
    summary["rate_p50_ratio"] = round(by[(other, "rate")].p50_ms / by[(base, "rate")].p50_ms, 3)
    summary["rate_p99_ratio"] = round(by[(other, "rate")].p99_ms / by[(base, "rate")].p99_ms, 3)
    summary["max_p50_ratio"] = round(by[(other, "max")].p50_ms / by[(base, "max")].p50_ms, 3)
    if args.compare == "view":
        summary.update(view_memory(args, extra))
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("compare", choices=("view", "worker"))
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--rate-clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--view-policy", metavar="FILE",
                        help="`view`: serve the view with this policy (e.g. every "
                             "clusterChecks: code off, to tell the view's presence from its checks)")
    parser.add_argument("--memory-only", action="store_true",
                        help="`view`: only the workers' resident memory once loaded, no rounds")
    parser.add_argument("--gthread-switch-interval", type=float,
                        help="`worker`: give the gthread server this sys.setswitchinterval "
                             "(the gevent design sets 0.0002 s), to see what that part costs")
    parser.add_argument("--serve-gthread", nargs=2, metavar=("PORT", "STATE_DIR"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_gthread:
        serve_gthread(int(args.serve_gthread[0]), Path(args.serve_gthread[1]), args.workers,
                      args.threads, args.gthread_switch_interval)
        return 0
    summary = run(args)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for key, value in summary.items():
            if key != "results":
                print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
