"""Benchmark: the webhook over TLS against a no-op Flask app on the same gunicorn settings.

    .venv/bin/python bench/webhook.py [--seconds 4] [--rounds 3] [--concurrency 4]
                                      [--rate 1000] [--rate-clients 4]
                                      [--workers 2] [--threads 4] [--repeat]
                                      [--tool python|hey] [--json] [--ceiling]
    .venv/bin/python bench/webhook.py --gc-pauses 10000

Starts, in this run, `draguard serve` (2 gevent workers, cached TLS context) and a
no-op Flask app served by the same `gunicorn_settings` (same workers, threads,
keep-alive, TLS hook, certificate) whose `/validate` reads the body and returns a
constant allowed review: the ceiling. For each server and each connection mode —
`keep-alive` (one TLS connection per client, reused) and `new` (a new TCP + TLS
connection per request, `Connection: close`) — it measures:

- `max`: closed loop, `--concurrency` client processes sending back to back:
  requests/s and p50/p99 latency;
- `rate`: open loop at `--rate` requests/s in total, latency measured from each
  request's scheduled start (so a stall is not hidden by coordinated omission).

The request is an AdmissionReview for a typical prioritized GPU claim (three
alternatives with CEL selectors plus an exact NIC request). By default every request
carries a claim of its own (`distinct_template`: the claim's and its requests' names
carry a unique id, and so does the uid), so that no memo — the rule set's spec memo,
the cluster checks' verdicts — answers it, as for claims a real cluster sends;
`--repeat` sends the same claim every time (each worker judges it once, then the memo
answers). The CEL expressions repeat, as real selectors do. Each measurement runs
`--rounds` times, alternating no-op and draguard so that load from other processes
hits both alike; the median round is reported. The default load generator is plain
Python (raw sockets verifying the certificate for the service name, request bytes
made from a template, one process per client); `--tool hey` uses the Go `hey`
(apt-get install hey: Go's TLS client, as the apiserver's; no certificate
verification; at a fixed rate it measures from the actual send, not the schedule; one
body for every request, so only with `--repeat`). Client and servers share the
machine's cores, so absolute figures are lower bounds; the ratio to the no-op app in
the same run is the figure to compare. Targets (issue 21, distinct claims, kept-alive
connections): p99 at 1,000 requests/s within 2× the no-op app's, and throughput (the
closed loop's saturation) ≥ 75 % of the no-op app's; with a new connection per
request (issue 4) ≥ 80 % of the no-op throughput.

Two things to know when reading the figures. The no-op app runs on the same server as
draguard (the same `gunicorn_settings`), so the ratio measures what judging costs, not a
difference in the HTTP stack. And with keep-alive a round's throughput depends on how
the `--concurrency` connections happen to spread over the two workers (4+0, 3+1 or 2+2:
one GIL busy or both), for either server, so single rounds differ by up to 2.5×; use
`--rounds 9` or more for a ratio worth quoting.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import os
import secrets
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SERVICE_DNS = "draguard.draguard-system.svc"

CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "training-job-gpu", "namespace": "ml-team",
                 "labels": {"app": "trainer"}},
    "spec": {"devices": {
        "requests": [
            {"name": "gpu", "firstAvailable": [
                {"name": "h100", "deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {
                    "expression": 'device.attributes["gpu.nvidia.com"].productName == '
                                  '"NVIDIA H100 80GB HBM3"'}}]},
                {"name": "a100", "deviceClassName": "gpu.nvidia.com", "count": 2,
                 "selectors": [{"cel": {"expression": 'device.attributes["gpu.nvidia.com"]'
                                                      '.productName == "NVIDIA A100-SXM4-40GB"'}}]},
                {"name": "t4", "deviceClassName": "gpu.nvidia.com", "count": 4},
            ]},
            {"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}},
        ],
        "constraints": [{"requests": ["gpu", "nic"],
                         "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
    }},
}


def review_of(claim: dict[str, Any], namespace: str, uid: str) -> dict[str, Any]:
    """The AdmissionReview of a CREATE of `claim` in `namespace`."""
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": "CREATE", "namespace": namespace,
                        "kind": {"group": "resource.k8s.io", "version": "v1",
                                 "kind": "ResourceClaim"},
                        "resource": {"group": "resource.k8s.io", "version": "v1",
                                     "resource": "resourceclaims"},
                        "object": claim}}


REVIEW = review_of(CLAIM, "ml-team", "bench-0000")

# --- distinct claims ------------------------------------------------------------------------

ID = "@ID@"  # in a template: replaced by a unique id in each request


def distinct_template(claim: dict[str, Any], namespace: str) -> bytes:
    """The AdmissionReview of `claim` as JSON, with `ID` in its uid, its name and its
    requests' names (constraints follow the renamed requests): each request made from it
    (`fill`) is a claim of its own, so that no memo answers it."""
    claim = json.loads(json.dumps(claim))
    claim["metadata"]["name"] = f"claim-{ID}"
    requests = claim["spec"]["devices"]["requests"]
    renamed = {r["name"]: f"{r['name']}-{ID}" for r in requests}
    for request in requests:
        request["name"] = renamed[request["name"]]
    for constraint in claim["spec"]["devices"].get("constraints", []):
        constraint["requests"] = [renamed[name] for name in constraint["requests"]]
    return json.dumps(review_of(claim, namespace, ID)).encode()


def fill(template: bytes, unique: str) -> bytes:
    """A request body from a template: `ID` replaced by `unique` (a body without `ID`
    is sent as it is)."""
    return template.replace(ID.encode(), unique.encode())


DISTINCT = distinct_template(CLAIM, "ml-team")
REPEATED = json.dumps(REVIEW).encode()


# --- the no-op server (run as a child process) ------------------------------------------


def serve_noop(port: int, state_dir: Path, workers: int, threads: int) -> None:
    """gunicorn with draguard's settings, serving a Flask app that judges nothing."""
    from flask import Flask, Response, request
    from gunicorn.app.base import BaseApplication

    from draguard.webhook.config import Config
    from draguard.webhook.serving.server import gunicorn_settings

    config = Config(host="127.0.0.1", port=port, state_dir=state_dir, workers=workers,
                    threads=threads, log_level="warning")
    answer = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "response": {"uid": "bench-0000", "allowed": True}})

    def noop_app() -> Flask:
        here = str(Path(__file__).resolve().parent)
        app = Flask("noop", root_path=here, instance_path=here)

        @app.post("/validate")
        def validate() -> Response:
            request.get_data()
            return Response(answer, mimetype="application/json")

        @app.get("/readyz")
        def readyz() -> Response:
            return Response("ok\n", mimetype="text/plain")

        return app

    class Noop(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            for name, value in gunicorn_settings(config).items():
                self.cfg.set(name, value)

        def load(self) -> Flask:
            return noop_app()

    Noop().run()


def serve_unjudged(argv: list[str]) -> int:
    """`draguard serve argv` with every review on /validate allowed unjudged: draguard's
    own HTTP path (parsing, deadline runner, metrics, decision log, answer) without the
    rule set. Its throughput against the no-op app's is the ceiling that any rule set
    served this way can reach (`--ceiling`)."""
    from draguard.webhook import routes
    from draguard.webhook.cli.main import main as draguard_main
    from draguard.webhook.review import API_VERSION, Answer, Review

    def unjudged(review: Review, **_: Any) -> Answer:
        document = {"apiVersion": API_VERSION, "kind": "AdmissionReview",
                    "response": {"uid": review.uid, "allowed": True}}
        obj = review.object or {}
        return Answer(document, review, "allowed", str(obj.get("kind", "")),
                      str(obj.get("apiVersion", "")))

    routes.ANSWERERS["validate"] = unjudged  # inherited by the forked workers
    return draguard_main(["serve", *argv])


# --- servers ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start(argv: list[str], port: int, ca: Path, log: Path,
          ready_seconds: float = 30) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAGUARD_")}
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + ready_seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"server exited: {log.read_text()}")
        try:
            if ca.exists() and _get(port, ca, "/readyz") == 200:
                return process
        except OSError:
            pass
        time.sleep(0.1)
    process.kill()
    sys.exit(f"server not ready: {log.read_text()}")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()


# --- the load generator -------------------------------------------------------------------


def _context(ca: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca))


def _connect(port: int, context: ssl.SSLContext) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return context.wrap_socket(raw, server_hostname=SERVICE_DNS)


def _request_bytes(path: str, body: bytes, *, close: bool) -> bytes:
    head = (f"POST {path} HTTP/1.1\r\nHost: {SERVICE_DNS}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n")
    return head.encode() + body


def _read_response(sock: ssl.SSLSocket) -> int:
    """Read one response with a Content-Length body; return its status code."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the response headers")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the response body")
        rest += chunk
    return status


def _get(port: int, ca: Path, path: str) -> int:
    sock = _connect(port, _context(ca))
    try:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        return _read_response(sock)
    finally:
        sock.close()


@dataclass(frozen=True)
class Job:
    port: int
    ca: str
    mode: str  # keep-alive | new
    start_at: float
    seconds: float
    interval: float  # 0 = closed loop; else seconds between this client's requests
    offset: float
    body: bytes = REPEATED  # a template: `ID` replaced in each request (`fill`)
    tag: str = ""  # unique per client, server and round: `ID` becomes f"{tag}-{n}"


def paced(start_at: float, seconds: float, interval: float, offset: float) -> Iterator[float]:
    """When a client sends, from `start_at` for `seconds`: every `interval` seconds from
    `offset` (open loop, so a slow answer does not hide the queueing behind it), or as soon
    as the previous answer came (closed loop, `interval` 0). Latency counts from these."""
    while time.time() < start_at:
        time.sleep(0.001)
    begin = time.perf_counter()
    end = begin + seconds
    n = 0
    while True:
        if interval:
            scheduled = begin + offset + n * interval
            n += 1
            if scheduled >= end:
                return
            delay = scheduled - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        else:
            scheduled = time.perf_counter()
            if scheduled >= end:
                return
        yield scheduled


def client(job: Job) -> tuple[list[float], int]:
    """One client process: latencies (s) of successful requests and the error count."""
    context = _context(Path(job.ca))
    close = job.mode == "new"
    distinct = ID.encode() in job.body
    same = _request_bytes("/validate", job.body, close=close)
    latencies: list[float] = []
    errors = 0
    sock: ssl.SSLSocket | None = None
    for n, scheduled in enumerate(paced(job.start_at, job.seconds, job.interval, job.offset)):
        try:
            if sock is None:
                sock = _connect(job.port, context)
            sock.sendall(_request_bytes("/validate", fill(job.body, f"{job.tag}-{n}"),
                                        close=close) if distinct else same)
            status = _read_response(sock)
            if job.mode == "new":
                sock.close()
                sock = None
            if status != 200:
                errors += 1
                continue
            latencies.append(time.perf_counter() - scheduled)
        except OSError:
            errors += 1
            if sock is not None:
                sock.close()
            sock = None
    if sock is not None:
        sock.close()
    return latencies, errors


@dataclass(frozen=True)
class Result:
    server: str
    mode: str
    load: str
    requests: int
    errors: int
    rps: float
    p50_ms: float
    p99_ms: float
    # With `master`: how the kept-alive connections split over the workers (the most
    # seen at once, e.g. "3+1"), and the server's CPU time (master and workers, user +
    # system) per answered request, from /proc (Linux).
    split: str = ""
    cpu_us: float = float("nan")
    # The workers' CPU per request split by thread: each worker's main thread (TLS, HTTP,
    # Flask, the gevent hub) and its other threads (draguard's review and decision-log
    # threads), and the workers' context switches (voluntary and not) per request.
    main_cpu_us: float = float("nan")
    threads_cpu_us: float = float("nan")
    switches: float = float("nan")


# --- what the server did: connection split and CPU time, from /proc ----------------------


def worker_pids(master: int) -> list[str]:
    """The gunicorn workers: the master's children."""
    return Path(f"/proc/{master}/task/{master}/children").read_text().split()


def cpu_seconds(pids: list[str]) -> float:
    """CPU time (user + system) used so far by these processes."""
    return sum(cpu_seconds_of(f"/proc/{pid}/stat") for pid in pids)


def thread_usage(pids: list[str]) -> tuple[float, float, int]:
    """CPU time of these processes' main threads, of their other threads, and their
    threads' context switches so far (/proc/PID/task; threads that ended are not counted)."""
    main = other = 0.0
    switches = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError):
                    base = f"/proc/{pid}/task/{task}"
                    used = cpu_seconds_of(f"{base}/stat")
                    if task == pid:
                        main += used
                    else:
                        other += used
                    for line in Path(f"{base}/status").read_text().splitlines():
                        if "ctxt_switches:" in line:
                            switches += int(line.split()[1])
    return main, other, switches


def cpu_seconds_of(stat: str) -> float:
    """user + system CPU time from one /proc stat file."""
    fields = Path(stat).read_text().rpartition(")")[2].split()
    # utime, stime: fields 14 and 15 of stat
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def connections(port: int, pids: list[str]) -> list[int]:
    """Established TCP connections to `port` held by each process (/proc/net/tcp, fds)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and int(fields[1].rpartition(":")[2], 16) == port:
            inodes.add(f"socket:[{fields[9]}]")
    counts = []
    for pid in pids:
        held = 0
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    held += os.readlink(f"/proc/{pid}/fd/{fd}") in inodes
        counts.append(held)
    return counts


class Observer:
    """Samples a server's connection split while a measurement runs; CPU before and after.

    The split decides a round with kept-alive connections: 4+0 loads one worker's GIL
    with every request while the other idles, for the no-op app and draguard alike.
    """

    def __init__(self, master: int, port: int) -> None:
        self.port = port
        self.pids = worker_pids(master)
        self.procs = [str(master), *self.pids]
        self.best: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._cpu = cpu_seconds(self.procs)
        self._threads = thread_usage(self.pids)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            with contextlib.suppress(OSError, ValueError):
                seen = connections(self.port, self.pids)
                if sum(seen) > sum(self.best):
                    self.best = seen

    def finish(self, requests: int) -> tuple[str, float, tuple[float, float, float]]:
        """The split ("3+1", larger first), the server CPU µs per request, and the
        workers' main-thread and other-thread CPU µs and context switches per request."""
        self._stop.set()
        self._thread.join()
        used = cpu_seconds(self.procs) - self._cpu
        split = "+".join(str(n) for n in sorted(self.best, reverse=True))
        after = thread_usage(self.pids)
        if not requests:
            nan = float("nan")
            return split, nan, (nan, nan, nan)
        main, other, switches = (b - a for a, b in zip(self._threads, after, strict=True))
        return split, round(used / requests * 1e6), (
            round(main / requests * 1e6), round(other / requests * 1e6),
            round(switches / requests, 2))


def measure(server: str, port: int, ca: Path, *, tool: str, mode: str, load: str,
            clients: int, seconds: float, rate: float, body: bytes = REPEATED,
            master: int | None = None) -> Result:
    """One measurement; `body` a request or a template (`distinct_template`); with the
    gunicorn `master`'s pid also the connection split and the server's CPU per request."""
    observer = Observer(master, port) if master is not None else None
    if tool == "hey":
        if ID.encode() in body:
            raise ValueError("hey sends one body: distinct claims need the python tool")
        latencies, errors = _run_hey(port, ca, mode=mode, load=load, clients=clients,
                                     seconds=seconds, rate=rate)
    else:
        latencies, errors = _run_python(port, ca, mode=mode, load=load, clients=clients,
                                        seconds=seconds, rate=rate, body=body)
    latencies.sort()
    nan = float("nan")
    split, cpu_us, (main_us, threads_us, switches) = (
        observer.finish(len(latencies)) if observer else ("", nan, (nan, nan, nan)))
    per_thread = {"main_cpu_us": main_us, "threads_cpu_us": threads_us, "switches": switches}
    if len(latencies) < 2:
        return Result(server, mode, load, len(latencies), errors, 0.0, nan, nan, split,
                      cpu_us, **per_thread)
    quantiles = statistics.quantiles(latencies, n=100, method="inclusive")
    return Result(server, mode, load, len(latencies), errors,
                  round(len(latencies) / seconds, 1),
                  round(quantiles[49] * 1000, 2), round(quantiles[98] * 1000, 2), split, cpu_us,
                  **per_thread)


def _run_python(port: int, ca: Path, *, mode: str, load: str, clients: int, seconds: float,
                rate: float, body: bytes = REPEATED) -> tuple[list[float], int]:
    interval = clients / rate if load == "rate" else 0.0
    start_at = time.time() + 0.5
    run = secrets.token_hex(4)  # claims of this run differ from every earlier run's
    jobs = [Job(port, str(ca), mode, start_at, seconds, interval,
                offset=(i * interval / clients) if interval else 0.0, body=body,
                tag=f"{run}c{i}") for i in range(clients)]
    with multiprocessing.get_context("spawn").Pool(clients) as pool:
        outcomes = pool.map(client, jobs)
    return [x for lat, _ in outcomes for x in lat], sum(e for _, e in outcomes)


def _run_hey(port: int, ca: Path, *, mode: str, load: str, clients: int, seconds: float,
             rate: float) -> tuple[list[float], int]:
    with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as body:
        body.write(REPEATED)
    argv = ["hey", "-z", f"{seconds}s", "-c", str(clients), "-m", "POST",
            "-T", "application/json", "-D", body.name, "-o", "csv", "-host", SERVICE_DNS]
    if mode == "new":
        argv.append("-disable-keepalive")
    if load == "rate":
        argv += ["-q", f"{rate / clients:g}"]
    out = subprocess.run([*argv, f"https://127.0.0.1:{port}/validate"], capture_output=True,
                         text=True, check=True).stdout
    os.unlink(body.name)
    latencies, errors = [], 0
    for line in out.splitlines()[1:]:  # response-time,DNS+dialup,…,status-code,offset
        fields = line.split(",")
        if len(fields) < 8:
            continue
        if fields[6] == "200":
            latencies.append(float(fields[0]))
        else:
            errors += 1
    return latencies, errors


# --- GC pauses in process (no HTTP) ----------------------------------------------------------


def gc_pauses(reviews: int, *, freeze: bool) -> list[str]:
    """Judge `reviews` distinct claims in this process as a worker does (`routes.judge`,
    decision log to /dev/null) and report the cyclic collector's passes by generation:
    how many per 1,000 reviews and each one's CPU time (thread time, so that a loaded
    machine's waiting is not counted). `freeze` as the workers do after loading the app."""
    import gc

    from draguard.webhook import routes
    from draguard.webhook.app import create_app
    from draguard.webhook.config import Config

    # The decision log's handler keeps the stream it is made with: /dev/null here.
    with open(os.devnull, "w") as null, contextlib.redirect_stderr(null):
        app = create_app(Config(log_level="warning"), tls=False)
        state = app.extensions["draguard"]
        if freeze:
            gc.collect()
            gc.freeze()
        passes: dict[int, list[float]] = {0: [], 1: [], 2: []}
        started = [0.0]

        def timed(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                started[0] = time.thread_time()
            else:
                passes[info["generation"]].append(time.thread_time() - started[0])

        run = secrets.token_hex(4)
        gc.callbacks.append(timed)
        try:
            cpu = time.process_time()
            for n in range(reviews):
                routes.judge(state, "validate", fill(DISTINCT, f"{run}-{n}"),
                             time.perf_counter())
            cpu = time.process_time() - cpu
        finally:
            gc.callbacks.remove(timed)
    lines = [f"{'frozen' if freeze else 'default'}: {cpu / reviews * 1e6:.0f} µs CPU per review"]
    for generation, times in passes.items():
        if times:
            times.sort()
            lines.append(f"  gen{generation}: {len(times) / reviews * 1000:5.1f} per 1,000 reviews, "
                         f"median {times[len(times) // 2] * 1e3:6.2f} ms, max "
                         f"{times[-1] * 1e3:6.2f} ms, {sum(times) / reviews * 1e6:5.1f} µs per review")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tool", choices=("python", "hey"), default="python")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--rate-clients", type=int, default=4,
                        help="clients sharing --rate (each must finish a request, TLS "
                             "handshake included, within clients/rate seconds)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeat", action="store_true",
                        help="send the same claim every time (the memo answers it) instead "
                             "of a distinct claim per request")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--gc-pauses", type=int, metavar="REVIEWS",
                        help="no HTTP: judge this many distinct claims in process, with the "
                             "start-up heap frozen (as the workers do) and without, and report "
                             "the garbage collector's passes")
    parser.add_argument("--ceiling", action="store_true",
                        help="also serve draguard with the rule set taken out (every review "
                             "allowed unjudged) and measure its keep-alive throughput: the "
                             "share of the no-op's that no rule set served this way can pass")
    parser.add_argument("--gc-freeze", choices=("0", "1"), help=argparse.SUPPRESS)
    parser.add_argument("--serve-unjudged", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.add_argument("--serve-noop", nargs=2, metavar=("PORT", "STATE_DIR"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_unjudged is not None:
        return serve_unjudged(args.serve_unjudged)
    if args.serve_noop:
        serve_noop(int(args.serve_noop[0]), Path(args.serve_noop[1]), args.workers, args.threads)
        return 0

    if args.gc_pauses and args.gc_freeze is not None:
        print("\n".join(gc_pauses(args.gc_pauses, freeze=args.gc_freeze == "1")), flush=True)
        return 0
    if args.gc_pauses:  # a fresh process each, alternated: drift hits both alike
        for freeze in "0101":
            subprocess.run([sys.executable, __file__, "--gc-pauses", str(args.gc_pauses),
                            "--gc-freeze", freeze], check=True)
        return 0

    folder = Path(tempfile.mkdtemp(prefix="draguard-bench-"))
    state = folder / "state"
    ca = state / "ca.crt"
    names = ("noop", "draguard", "unjudged") if args.ceiling else ("noop", "draguard")
    ports = {name: free_port() for name in names}
    serve = ["--host", "127.0.0.1", "--state-dir", str(state), "--workers", str(args.workers),
             "--threads", str(args.threads), "--log-level", "warning"]
    servers = {"draguard": start([sys.executable, "-m", "draguard.webhook.cli.main", "serve",
                                  "--port", str(ports["draguard"]), *serve],
                                 ports["draguard"], ca, folder / "draguard.log")}
    servers["noop"] = start([sys.executable, __file__, "--serve-noop", str(ports["noop"]),
                             str(state), "--workers", str(args.workers),
                             "--threads", str(args.threads)],
                            ports["noop"], ca, folder / "noop.log")
    if args.ceiling:
        servers["unjudged"] = start([sys.executable, __file__, "--serve-unjudged",
                                     "--port", str(ports["unjudged"]), *serve],
                                    ports["unjudged"], ca, folder / "unjudged.log")
    if args.tool == "hey" and shutil.which("hey") is None:
        sys.exit("hey is not installed (apt-get install hey)")
    if args.tool == "hey" and not args.repeat:
        sys.exit("hey sends one body for every request: use it with --repeat")
    body = REPEATED if args.repeat else DISTINCT
    results: list[Result] = []
    try:
        for mode in ("keep-alive", "new"):
            for load in ("max", "rate"):
                clients = args.concurrency if load == "max" else args.rate_clients
                rounds: dict[str, list[Result]] = {name: [] for name in names}
                for _ in range(args.rounds):
                    for server in names:
                        rounds[server].append(measure(
                            server, ports[server], ca, tool=args.tool, mode=mode, load=load,
                            clients=clients, seconds=args.seconds, rate=args.rate,
                            body=body, master=servers[server].pid))
                for server in names:
                    result = _median(rounds[server], by_rps=load == "max")
                    results.append(result)
                    if not args.json:
                        print(_row(result) + _rounds(rounds[server]), flush=True)
    finally:
        for process in servers.values():
            stop(process)
    summary = _summary(results, args.rate)
    if args.json:
        print(json.dumps({"results": [asdict(r) for r in results], "summary": summary},
                         indent=2))
    else:
        print()
        for line in summary["lines"]:
            print(line)
    return 0 if summary["met"] else 1


def _median(rounds: list[Result], *, by_rps: bool) -> Result:
    """The median round: by throughput for closed-loop runs, by p99 at a fixed rate."""
    ordered = sorted(rounds, key=lambda r: r.rps if by_rps else r.p99_ms)
    return ordered[len(ordered) // 2]


def _row(r: Result) -> str:
    row = (f"{r.server:9} {r.mode:10} {r.load:4}  {r.rps:8.1f} req/s  p50 {r.p50_ms:6.2f} ms"
           f"  p99 {r.p99_ms:6.2f} ms  ({r.requests} ok, {r.errors} errors)")
    if math.isnan(r.cpu_us):  # a caller that does not read the server (serve_compare)
        return row
    return (f"{row}  split {r.split or '?'}, server CPU {r.cpu_us:.0f} µs/request"
            f" (workers' main threads {r.main_cpu_us:.0f}, other threads {r.threads_cpu_us:.0f};"
            f" {r.switches:.2f} context switches)")


def _rounds(rounds: list[Result]) -> str:
    """Every round in short: throughput or p99, with its connection split."""
    return "\n" + "\n".join(f"    round: {r.rps:8.1f} req/s  p99 {r.p99_ms:7.2f} ms  split "
                            f"{r.split or '?'}  {r.cpu_us:.0f} µs/request (main "
                            f"{r.main_cpu_us:.0f}, threads {r.threads_cpu_us:.0f}, "
                            f"{r.switches:.2f} switches)" for r in rounds)


def _summary(results: list[Result], rate: float) -> dict[str, Any]:
    """The targets: with keep-alive (issue 21) throughput ≥ 75 % of the no-op app's and p99
    at `rate` within 2× the no-op's; with a new connection per request (issue 4) ≥ 80 %."""
    by = {(r.server, r.mode, r.load): r for r in results}
    lines, met = [], True
    for mode, floor in (("keep-alive", 0.75), ("new", 0.8)):
        ceiling, ours = by[("noop", mode, "max")], by[("draguard", mode, "max")]
        share = ours.rps / ceiling.rps if ceiling.rps else 0.0
        p99, noop_p99 = by[("draguard", mode, "rate")].p99_ms, by[("noop", mode, "rate")].p99_ms
        ok = share >= floor and ours.errors == 0
        if mode == "keep-alive":
            ok = ok and p99 <= 2 * noop_p99
        met &= ok
        lines.append(f"{mode:10}: draguard {share:.0%} of no-op throughput (target ≥ "
                     f"{floor:.0%}), p99 {p99:.2f} ms at {rate:g} req/s, no-op {noop_p99:.2f} ms"
                     f"{' (target ≤ 2×)' if mode == 'keep-alive' else ''}: "
                     f"{'met' if ok else 'NOT met'}")
        unjudged = by.get(("unjudged", mode, "max"))
        if unjudged is not None and ceiling.rps:
            lines.append(f"{'':10}  draguard without its rule set (every review allowed "
                         f"unjudged): {unjudged.rps / ceiling.rps:.0%} of no-op throughput, "
                         f"server CPU {unjudged.cpu_us:.0f} µs/request against the no-op's "
                         f"{ceiling.cpu_us:.0f} and draguard's {ours.cpu_us:.0f}")
    return {"lines": lines, "met": met}


if __name__ == "__main__":
    sys.exit(main())
