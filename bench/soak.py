"""Soak: the webhook at a sustainable rate for minutes, renewing its certificate every minute.

    .venv/bin/python bench/soak.py [--minutes 10] [--rate 200] [--rotate-every 60]
                                   [--window 60] [--new-connection-clients 1]

Starts `draguard serve` (2 gevent workers, TLS) and sends AdmissionReviews for the
typical claim of bench/webhook.py in an open loop at `--rate` requests/s in total
(latency from each request's scheduled start), from four client processes: most on
one kept-alive connection each, `--new-connection-clients` of them with a new TLS
connection per request (those are the ones that see each renewed certificate). A
thread renews the serving certificate (`draguard.certs.files.renew`, same CA) every
`--rotate-every` seconds. Load runs in windows of `--window` seconds; each window
prints its requests, errors, p50/p95/p99. The summary gives the total errors (target
0), the renewals seen by new connections, whether the same workers are still alive,
their RSS at the start and the end, and the latency drift: last window minus first
window, for p50 and p99. Not part of CI (README, "Soak run"). Exit 0 when there were no
errors and every renewal was served, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import socket
import ssl
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import webhook as bench_webhook  # noqa: E402
from bench.run import worker_rss_mib  # noqa: E402


@dataclass(frozen=True)
class Window:
    index: int
    requests: int
    errors: int
    p50: float
    p95: float
    p99: float


def served_fingerprint(port: int, ca: Path) -> str:
    """SHA-256 of the certificate a new verified connection is served."""
    context = ssl.create_default_context(cafile=str(ca))
    with (socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
          context.wrap_socket(raw, server_hostname=bench_webhook.SERVICE_DNS) as conn):
        der = conn.getpeercert(binary_form=True)
    assert der is not None
    return hashlib.sha256(der).hexdigest()


def file_fingerprint(state: Path) -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    cert = x509.load_pem_x509_certificate((state / "tls.crt").read_bytes())
    return hashlib.sha256(cert.public_bytes(Encoding.DER)).hexdigest()


class Rotator(threading.Thread):
    """Renews the serving certificate every `every` seconds; checks new connections see it."""

    def __init__(self, state: Path, port: int, ca: Path, every: float) -> None:
        super().__init__(daemon=True)
        self.state, self.port, self.ca, self.every = state, port, ca, every
        self.halt = threading.Event()
        self.renewals = 0
        self.seen = 0  # renewals that a new connection was served within 5 s
        self.problems: list[str] = []

    def run(self) -> None:
        from draguard.certs.files import renew

        while not self.halt.wait(self.every):
            try:
                renew(self.state)
                self.renewals += 1
                expected = file_fingerprint(self.state)
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    if served_fingerprint(self.port, self.ca) == expected:
                        self.seen += 1
                        break
                    time.sleep(0.1)
                else:
                    self.problems.append(f"renewal {self.renewals} not served within 5 s")
            except Exception as exc:  # report, keep soaking
                self.problems.append(f"renewal {self.renewals + 1}: {exc!r}")


def window(index: int, port: int, ca: Path, *, rate: float, seconds: float,
           modes: list[str]) -> Window:
    clients = len(modes)
    interval = clients / rate
    start_at = time.time() + 0.5
    jobs = [bench_webhook.Job(port, str(ca), mode, start_at, seconds, interval,
                              offset=i * interval / clients) for i, mode in enumerate(modes)]
    with multiprocessing.get_context("spawn").Pool(clients) as pool:
        outcomes = pool.map(bench_webhook.client, jobs)
    latencies = sorted(x for lat, _ in outcomes for x in lat)
    errors = sum(e for _, e in outcomes)
    if len(latencies) < 2:
        nan = float("nan")
        return Window(index, len(latencies), errors, nan, nan, nan)
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    return Window(index, len(latencies), errors, q[49] * 1000, q[94] * 1000, q[98] * 1000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--rotate-every", type=float, default=60.0)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--new-connection-clients", type=int, default=1, choices=(0, 1, 2, 3, 4))
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="draguard-soak-"))
    state, port = folder / "state", bench_webhook.free_port()
    ca = state / "ca.crt"
    server = bench_webhook.start(
        [sys.executable, "-m", "draguard.webhook.cli.main", "serve", "--host", "127.0.0.1",
         "--port", str(port), "--state-dir", str(state), "--workers", "2", "--threads", "4",
         "--log-level", "warning"], port, ca, folder / "server.log")
    modes = ["new"] * args.new_connection_clients + ["keep-alive"] * (
        4 - args.new_connection_clients)
    workers_before = set(Path(f"/proc/{server.pid}/task/{server.pid}/children")
                         .read_text().split())
    rss_before = worker_rss_mib(server.pid)
    rotator = Rotator(state, port, ca, args.rotate_every)
    rotator.start()
    windows: list[Window] = []
    count = max(1, round(args.minutes * 60 / args.window))
    print(f"soak: {count} × {args.window:g} s at {args.rate:g} req/s, renewal every "
          f"{args.rotate_every:g} s, clients {modes}; log {folder / 'server.log'}", flush=True)
    try:
        for i in range(count):
            w = window(i, port, ca, rate=args.rate, seconds=args.window, modes=modes)
            windows.append(w)
            print(f"window {i + 1:2}: {w.requests:6} ok {w.errors:3} errors  p50 {w.p50:6.2f}  "
                  f"p95 {w.p95:6.2f}  p99 {w.p99:6.2f} ms  renewals {rotator.renewals}",
                  flush=True)
    finally:
        rotator.halt.set()
        rotator.join(timeout=30)
        workers_after = set(Path(f"/proc/{server.pid}/task/{server.pid}/children")
                            .read_text().split())
        rss_after = worker_rss_mib(server.pid)
        bench_webhook.stop(server)
    errors = sum(w.errors for w in windows)
    first, last = windows[0], windows[-1]
    print(f"\nrequests {sum(w.requests for w in windows)}, errors {errors} (target 0)")
    print(f"renewals {rotator.renewals}, served to new connections {rotator.seen}; "
          f"problems: {rotator.problems or 'none'}")
    print(f"latency drift (last window − first): p50 {last.p50 - first.p50:+.2f} ms, "
          f"p99 {last.p99 - first.p99:+.2f} ms")
    print(f"workers unchanged: {workers_before == workers_after}; RSS MiB before "
          f"{[round(m) for m in rss_before]}, after {[round(m) for m in rss_after]}")
    ok = errors == 0 and rotator.seen == rotator.renewals and not rotator.problems
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
