"""The benchmark harness: every figure of the project, each beside its peer, in one run.

    .venv/bin/python -m bench [--quick] [--check] [--out bench/RESULTS.md]
    .venv/bin/python bench/run.py …            (the same)

Runs, on this machine and in this one run (machines are noisy: each figure is the
median of repeated runs, and each ratio is taken against a peer measured in the same
run, never against a figure from another day):

- lint: documents/s of `draguard lint` (one process, and `--jobs 2`) against
  kubernetes-validate on the same generated documents (bench/lint.py's corpus and
  timers);
- conversion: objects per CPU second of `convert_document` for every source × target of
  bench/convert.py's typical claim, and documents/s of the whole `draguard convert`
  command (ruamel, comments kept) on lint's generated files;
- webhook: `draguard serve` and a no-op Flask app on the same gunicorn settings
  (bench/webhook.py's servers and load generator), over TLS, a distinct claim per
  request (no memo answers it): closed-loop throughput (saturation) with keep-alive and
  with a new connection per request, and with keep-alive also the repeated claim; then
  an open-loop sweep at fixed rates up to 1,000/s (latency measured from each request's
  scheduled start, so overload shows) with p50/p95/p99; then the RSS of each gunicorn
  worker of both servers;
- lint styles (issue 21): whole `draguard lint` processes on one generated corpus per
  input style (bench/lint.py `--styles`), with their peak memory;
- for information, the outputs of bench/cel.py, bench/mutation.py and bench/certs.py.

Writes a Markdown report (machine, command, figures, ratios, targets) and prints it.
`--check` exits 1 when a figure misses a target written in the issues, naming it:
lint ≥ 100× kubernetes-validate and ≥ 7,500 documents/s with 2 jobs (issue 2),
lint's input styles (issue 21: whole process ≥ 7,500 documents/s on block, flow, JSON
stream and kubectl -o yaml, ≥ 20,000/s on a mostly-not-DRA repository, a 50,000-claim
List < 10 s and < 500 MiB, 100,000 JSON objects < 15 s, one small file < 150 ms),
conversion ≥ 5,000 objects/s for a typical claim (issue 3), webhook on distinct
claims over kept-alive connections (issue 21): p99 at 1,000 requests/s within 2× the
no-op app's and throughput ≥ 75 % of the no-op app's; webhook ≥ 80 % of the no-op
app's throughput with a new connection per request and with keep-alive on the
repeated claim, and p99 < 10 ms at 200 requests/s (issue 4). A full run takes about 7 minutes on 2 cores, plus the lint styles (13 minutes
at load average 6, corpus generation included; not timed on an idle machine); `--quick`
about 1, plus 2.5 for the lint styles at that load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `bench/run.py` as a script: make `bench.*` importable,
    sys.path.insert(0, str(ROOT))  # also for the load generator's spawned processes

from bench import convert as bench_convert  # noqa: E402
from bench import lint as bench_lint  # noqa: E402
from bench import webhook as bench_webhook  # noqa: E402

RATES = (100.0, 200.0, 400.0, 800.0, 1000.0)
P99_RATE = 200.0  # issue 4: p99 < 10 ms here
P99_RATIO_RATE = 1000.0  # issue 21: p99 within 2× the no-op app's here


@dataclass(frozen=True)
class Settings:
    """How much to measure: the full run or `--quick`."""

    repeats: int  # runs per figure; the median counts
    documents: int  # lint corpus size
    peer_documents: int  # documents kubernetes-validate checks per run (~50/s)
    convert_seconds: float  # CPU seconds per conversion figure and run
    seconds: float  # per webhook measurement
    # Keep-alive throughput rounds, shorter and more of them: a round's figure depends on
    # how the 4 connections happen to split over the 2 workers (4+0, 3+1, 2+2), for
    # either server, so the median needs many rounds to be the typical split's.
    keepalive_rounds: int
    keepalive_seconds: float
    rates: tuple[float, ...]
    extras: bool  # run bench/cel.py, mutation.py, certs.py and the convert CLI
    style_scale: float  # size of issue 21's lint style corpora (1.0: 15,000 documents)
    style_repeats: int  # runs per lint style; the best counts

    @classmethod
    def pick(cls, quick: bool) -> Settings:
        if quick:
            return cls(1, 600, 60, 0.2, 2.0, 3, 1.0, (200.0, 1000.0), False, 0.2, 1)
        return cls(5, 2000, 250, 0.3, 4.0, 15, 2.0, RATES, True, 1.0, 2)


@dataclass(frozen=True)
class Figure:
    """One measured figure, its peer in the same run, and the target it must meet."""

    name: str
    value: float
    unit: str
    peer_name: str = ""
    peer: float | None = None
    target: str = ""
    met: bool | None = None  # None: informational, no target
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.value / self.peer if self.peer else None


@dataclass
class Report:
    figures: list[Figure] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)  # extra Markdown sections
    started: float = field(default_factory=time.monotonic)

    def add(self, figure: Figure) -> None:
        self.figures.append(figure)
        shown = f"{figure.value:,.2f} {figure.unit}"
        if figure.peer is not None:
            shown += f" vs {figure.peer_name} {figure.peer:,.2f}"
        if figure.target:
            shown += f" (target {figure.target}: {'met' if figure.met else 'NOT met'})"
        print(f"  {figure.name}: {shown}", flush=True)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


# --- lint ---------------------------------------------------------------------------------


def bench_lint_figures(report: Report, s: Settings) -> None:
    """draguard lint vs kubernetes-validate on bench/lint.py's generated corpus."""
    print("lint …", flush=True)
    with tempfile.TemporaryDirectory(prefix="draguard-bench-lint-") as folder:
        paths = bench_lint.write_corpus(folder, s.documents, 4816)
        bench_lint.time_draguard(folder, 1, 1)  # warm-up: imports, CEL compile cache
        one, two, peer = [], [], []
        for _ in range(s.repeats):  # interleaved, so drift hits all three alike
            one.append(bench_lint.time_draguard(folder, 1, 1))
            two.append(bench_lint.time_draguard(folder, 2, 1))
            peer.append(bench_lint.time_peer(paths, s.peer_documents)[0])
    one_rate = median([s.documents / t.wall for t in one])
    two_rate = median([s.documents / t.wall for t in two])
    peer_rate = median([t.results / t.wall for t in peer])
    # Per CPU second as well: steadier than wall time when others share the machine.
    one_cpu = median([s.documents / t.cpu for t in one])
    two_cpu = median([s.documents / t.cpu for t in two])
    peer_cpu = median([t.results / t.cpu for t in peer])
    report.add(Figure("lint, 1 process", one_rate, "documents/s", "kubernetes-validate 1.37",
                      peer_rate, "≥ 100× kubernetes-validate", one_rate >= 100 * peer_rate,
                      f"{s.documents} documents, the peer on {s.peer_documents} of them; per "
                      f"CPU second {one_cpu:,.0f} vs {peer_cpu:,.1f} ({one_cpu / peer_cpu:,.0f}×)"))
    report.add(Figure("lint, --jobs 2", two_rate, "documents/s", "kubeconform (published)",
                      7500.0, "≥ 7,500 documents/s", two_rate >= 7500,
                      "kubeconform's figure is its published one, not measured here; "
                      f"{two_cpu:,.0f} documents per CPU second (workers included), pool "
                      "start-up included"))


def bench_lint_style_figures(report: Report, s: Settings) -> None:
    """Issue 21: whole `draguard lint` processes on one corpus per input style."""
    print("lint styles …", flush=True)
    for f in bench_lint.style_figures(s.style_scale, s.style_repeats):
        report.add(Figure(f.name, f.value, f.unit, target=f.target, met=f.met, note=f.note))


# --- conversion ---------------------------------------------------------------------------


def cpu_rate(measured: float | tuple[float, ...]) -> float:
    """bench/convert.py's `rate`: per CPU second (now first of (CPU, wall), once alone)."""
    return measured[0] if isinstance(measured, tuple) else measured


def bench_convert_figures(report: Report, s: Settings) -> None:
    """bench/convert.py's typical claim, every source × target (CPU time, one core)."""
    from draguard.schema.convert import convert_document

    print("conversion …", flush=True)
    rates: dict[tuple[str, str], float] = {}
    for source in bench_convert.SOURCES:
        document = bench_convert.in_shape(source)
        for target in bench_convert.TARGETS:
            def call(d: Any = document, t: str = target) -> object:
                return convert_document(d, t)
            rates[(source, target)] = median(
                [cpu_rate(bench_convert.rate(call, s.convert_seconds))
                 for _ in range(s.repeats)])
    slowest = min(rates, key=lambda pair: rates[pair])
    rows = ["| from \\ to | " + " | ".join(bench_convert.TARGETS) + " |",
            "|---|" + "---:|" * len(bench_convert.TARGETS)]
    for source in bench_convert.SOURCES:
        rows.append(f"| {source} | " + " | ".join(
            f"{rates[(source, t)]:,.0f}" for t in bench_convert.TARGETS) + " |")
    report.tables.append("### Conversions of bench/convert.py's typical claim, objects per CPU "
                         f"second (median of {s.repeats})\n\n" + "\n".join(rows))
    report.add(Figure(f"convert, slowest ({slowest[0]} → {slowest[1]})", rates[slowest],
                      "objects/s", "target", 5000.0, "≥ 5,000 objects/s",
                      rates[slowest] >= 5000, "per CPU second on one core; every source × "
                      "target in the table below"))
    if s.extras:
        bench_convert_cli(report, s)


def bench_convert_cli(report: Report, s: Settings) -> None:
    """`draguard convert` (ruamel round trip) on the lint corpus, against lint on it."""
    from draguard.schema.cli import convert as convert_cli

    documents = min(s.documents, 500)
    with tempfile.TemporaryDirectory(prefix="draguard-bench-convert-") as folder:
        bench_lint.write_corpus(folder, documents, 4816)
        start = time.perf_counter()
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            code = convert_cli.main(["--to", "v1", folder])
        seconds = time.perf_counter() - start
        lint_s = bench_lint.time_draguard(folder, 1, 1).wall
    report.add(Figure("convert CLI (files, comments kept)", documents / seconds, "documents/s",
                      "lint on the same files", documents / lint_s,
                      note=f"{documents} documents, exit {code}; no target (information)"))


# --- webhook ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """One measurement's outcome."""

    rps: float
    p50: float
    p95: float
    p99: float
    errors: int
    requests: int


def run_load(port: int, ca: Path, *, mode: str, load: str, clients: int, seconds: float,
             rate: float, body: bytes = bench_webhook.DISTINCT) -> Load:
    """One measurement with bench/webhook.py's load generator; by default a distinct
    claim per request (`bench_webhook.REPEATED`: the same claim every time)."""
    latencies, errors = bench_webhook._run_python(
        port, ca, mode=mode, load=load, clients=clients, seconds=seconds, rate=rate, body=body)
    latencies.sort()
    if len(latencies) < 2:
        nan = float("nan")
        return Load(0.0, nan, nan, nan, errors, len(latencies))
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    return Load(len(latencies) / seconds, q[49] * 1000, q[94] * 1000, q[98] * 1000, errors,
                len(latencies))


def middle(loads: list[Load], key: Callable[[Load], float]) -> Load:
    """The median run by `key` (a whole run, so its percentiles belong together)."""
    return sorted(loads, key=key)[len(loads) // 2]


def worker_rss_mib(master: int) -> list[float]:
    """RSS of each gunicorn worker, in MiB."""
    sizes = []
    for pid in bench_webhook.worker_pids(master):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                sizes.append(int(line.split()[1]) / 1024)
    return sizes


def server_cpu_seconds(master: int) -> float:
    """CPU time (user + system) used so far by a gunicorn master and its workers."""
    return bench_webhook.cpu_seconds([str(master), *bench_webhook.worker_pids(master)])


def start_servers(folder: Path) -> tuple[dict[str, subprocess.Popen[bytes]], dict[str, int], Path]:
    """`draguard serve` and the no-op app, same gunicorn settings, same certificate."""
    state = folder / "state"
    ca = state / "ca.crt"
    ports = {"draguard": bench_webhook.free_port(), "noop": bench_webhook.free_port()}
    servers = {"draguard": bench_webhook.start(
        [sys.executable, "-m", "draguard.webhook.cli.main", "serve", "--host", "127.0.0.1",
         "--port", str(ports["draguard"]), "--state-dir", str(state), "--workers", "2",
         "--threads", "4", "--log-level", "warning"],
        ports["draguard"], ca, folder / "draguard.log")}
    servers["noop"] = bench_webhook.start(
        [sys.executable, bench_webhook.__file__, "--serve-noop", str(ports["noop"]), str(state),
         "--workers", "2", "--threads", "4"], ports["noop"], ca, folder / "noop.log")
    return servers, ports, ca


def bench_webhook_figures(report: Report, s: Settings) -> None:
    print("webhook …", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="draguard-bench-webhook-"))
    servers, ports, ca = start_servers(folder)
    try:
        _throughput(report, s, ports, ca, {name: proc.pid for name, proc in servers.items()})
        _sweep(report, s, ports, ca)
        rss = {name: worker_rss_mib(proc.pid) for name, proc in servers.items()}
    finally:
        for proc in servers.values():
            bench_webhook.stop(proc)
    ours, noop = rss["draguard"], rss["noop"]
    report.add(Figure("memory per worker (RSS, after the load)", max(ours), "MiB",
                      "no-op app's worker", max(noop),
                      note="draguard workers: " + ", ".join(f"{m:.0f}" for m in ours)
                      + " MiB; no-op: " + ", ".join(f"{m:.0f}" for m in noop) + " MiB"))


def _throughput(report: Report, s: Settings, ports: dict[str, int], ca: Path,
                masters: dict[str, int]) -> None:
    """Closed loop, 4 clients back to back: draguard's share of the no-op ceiling.

    Distinct claims (issue 21: ≥ 75 % with keep-alive; issue 4: ≥ 80 % with a new
    connection per request); with keep-alive also the repeated claim that the spec memo
    answers (issue 4: ≥ 80 %), against the same no-op rounds. With keep-alive, also the
    servers' own CPU time per request: unlike throughput it does not depend on how the
    connections split over the workers in a round.
    """
    for mode in ("keep-alive", "new"):
        kept = mode == "keep-alive"
        claims = {"distinct": bench_webhook.DISTINCT}
        if kept:
            claims["repeated"] = bench_webhook.REPEATED
        names = ["noop", *(f"draguard {claim}" for claim in claims)]
        runs: dict[str, list[Load]] = {name: [] for name in names}
        cpu: dict[str, list[float]] = {name: [] for name in names}
        rounds = s.keepalive_rounds if kept else s.repeats
        seconds = s.keepalive_seconds if kept else s.seconds
        for _ in range(rounds):  # alternate, so drift hits all alike
            for name in names:
                server = name.split()[0]
                body = claims.get(name.partition(" ")[2], bench_webhook.DISTINCT)
                before = server_cpu_seconds(masters[server])
                load = run_load(ports[server], ca, mode=mode, load="max", clients=4,
                                seconds=seconds, rate=0.0, body=body)
                runs[name].append(load)
                if load.requests:
                    used = server_cpu_seconds(masters[server]) - before
                    cpu[name].append(used / load.requests * 1e6)
        noop = middle(runs["noop"], lambda r: r.rps)
        for claim in claims:
            ours = middle(runs[f"draguard {claim}"], lambda r: r.rps)
            share = ours.rps / noop.rps if noop.rps else 0.0
            floor = 0.75 if kept and claim == "distinct" else 0.8
            report.add(Figure(f"webhook throughput, {mode}, {claim} claims", ours.rps,
                              "requests/s", "no-op Flask app", noop.rps,
                              f"≥ {floor:.0%} of no-op", share >= floor and ours.errors == 0,
                              f"p99 {ours.p99:.1f} ms vs {noop.p99:.1f} ms; {ours.errors} "
                              f"errors; median of {rounds} rounds of {seconds:g} s"))
            if kept and cpu[f"draguard {claim}"] and cpu["noop"]:
                ours_cpu = statistics.median(cpu[f"draguard {claim}"])
                noop_cpu = statistics.median(cpu["noop"])
                report.add(Figure(
                    f"webhook server CPU per request, keep-alive, {claim} claims", ours_cpu,
                    "µs", "no-op Flask app", noop_cpu,
                    note=f"master and workers, user + system, median of {rounds} rounds; "
                         f"the no-op's share of draguard's: {noop_cpu / ours_cpu:.0%}"))


def _sweep(report: Report, s: Settings, ports: dict[str, int], ca: Path) -> None:
    """Open loop at fixed rates with keep-alive, distinct claims: p50/p95/p99 of both."""
    rows = ["| rate (req/s) | server | achieved req/s | p50 ms | p95 ms | p99 ms | errors |",
            "|---:|---|---:|---:|---:|---:|---:|"]
    for rate in s.rates:
        runs: dict[str, list[Load]] = {"noop": [], "draguard": []}
        for _ in range(s.repeats):
            for server in ("noop", "draguard"):
                runs[server].append(run_load(ports[server], ca, mode="keep-alive", load="rate",
                                             clients=4, seconds=s.seconds, rate=rate))
        chosen = {name: middle(loads, lambda r: r.p99) for name, loads in runs.items()}
        for name in ("noop", "draguard"):
            r = chosen[name]
            rows.append(f"| {rate:g} | {name} | {r.rps:,.0f} | {r.p50:.2f} | {r.p95:.2f} | "
                        f"{r.p99:.2f} | {r.errors} |")
        ours, noop = chosen["draguard"], chosen["noop"]
        target, met = "", None
        if rate == P99_RATE:
            target, met = "< 10 ms", ours.p99 < 10 and ours.errors == 0
        elif rate == P99_RATIO_RATE:
            target, met = "≤ 2× no-op", ours.p99 <= 2 * noop.p99 and ours.errors == 0
        report.add(Figure(f"webhook p99 at {rate:g} req/s (keep-alive, distinct claims)",
                          ours.p99, "ms", "no-op app's p99", noop.p99, target, met,
                          f"p50 {ours.p50:.2f}, p95 {ours.p95:.2f} ms; "
                          f"{ours.rps:,.0f} req/s achieved"))
    report.tables.append("### Open-loop sweep over TLS with keep-alive, a distinct claim per "
                         f"request (4 client processes, median run of {s.repeats} by p99, "
                         f"{s.seconds:g} s each)\n\n" + "\n".join(rows))


# --- the other scripts, for information -----------------------------------------------------


def bench_extras(report: Report) -> None:
    print("cel, mutation, certs …", flush=True)
    for script, argv in (("cel.py", ["--rounds", "100"]), ("mutation.py", []),
                         ("certs.py", ["--rounds", "10", "--handshakes", "200"])):
        done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *argv],
                              capture_output=True, text=True, timeout=300, check=False,
                              cwd=ROOT)
        text = (done.stdout + done.stderr).strip()
        report.tables.append(f"### bench/{script} {' '.join(argv)} (exit {done.returncode})"
                             f"\n\n```\n{text}\n```")


# --- the report -----------------------------------------------------------------------------


def machine() -> list[str]:
    mem = next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
               if line.startswith("MemTotal:"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT, check=False).stdout.strip()
    return [f"- cores: {os.cpu_count()}; memory: {int(mem) / 1024 / 1024:.1f} GiB; "
            f"{platform.platform()}",
            f"- Python {platform.python_version()}; commit {commit or 'unknown'}",
            "- load average at start: " + " ".join(f"{x:.2f}" for x in os.getloadavg())]


def render(report: Report, argv: list[str], head: list[str]) -> str:
    minutes = (time.monotonic() - report.started) / 60
    lines = ["# draguard benchmark results", "",
             f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {minutes:.1f} minutes, "
             "by `" + " ".join([".venv/bin/python -m bench", *argv]) + "`.", "", *head,
             "- load average at end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()), "",
             "Each figure is the median of repeated runs; each peer was measured in the same "
             "run on the same machine, so the ratio is the figure to compare across machines. "
             "The load generator runs on the same 2 cores as the servers: absolute webhook "
             "figures are lower bounds.", "",
             "| figure | draguard | peer | peer value | ratio | target | met |",
             "|---|---:|---|---:|---:|---|---|"]
    for f in report.figures:
        peer = f"{f.peer:,.2f}" if f.peer is not None else ""
        ratio = f"{f.ratio:,.2f}×" if f.ratio is not None else ""
        met = "" if f.met is None else ("yes" if f.met else "**NO**")
        lines.append(f"| {f.name} | {f.value:,.2f} {f.unit} | {f.peer_name} | {peer} | "
                     f"{ratio} | {f.target} | {met} |")
    notes = [f"- {f.name}: {f.note}" for f in report.figures if f.note]
    lines += ["", "Notes:", "", *notes, ""]
    for table in report.tables:
        lines += [table, ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about 1 minute)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a figure misses its issue's target")
    parser.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"),
                        help="where to write the Markdown report (default: %(default)s)")
    parser.add_argument("--only", choices=("lint", "lint-styles", "convert", "webhook"),
                        action="append",
                        help="run only these parts (repeatable)")
    args = parser.parse_args(argv)
    given = list(sys.argv[1:] if argv is None else argv)
    settings = Settings.pick(args.quick)
    head = machine()
    report = Report()
    parts = args.only or ["lint", "lint-styles", "convert", "webhook"]
    runners = {"lint": bench_lint_figures, "lint-styles": bench_lint_style_figures,
               "convert": bench_convert_figures,
               "webhook": bench_webhook_figures}
    for part in parts:
        try:
            runners[part](report, settings)
        except Exception as exc:  # one broken part must not lose the others' figures
            traceback.print_exc()
            report.add(Figure(f"{part}: the benchmark failed", 0.0, "", target="runs",
                              met=False, note=f"{type(exc).__name__}: {exc}"))
    if settings.extras and not args.only:
        bench_extras(report)
    text = render(report, given, head)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"\nwritten to {args.out}")
    missed = [f for f in report.figures if f.met is False]
    for f in missed:
        print(f"target missed: {f.name}: {f.value:,.2f} {f.unit}, target {f.target}",
              file=sys.stderr)
    if not missed:
        print("all targets met")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
