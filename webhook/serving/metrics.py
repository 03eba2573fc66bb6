"""Prometheus metrics that add up across gunicorn workers.

With `PROMETHEUS_MULTIPROC_DIR` set (by `draguard serve`, before any worker imports
prometheus_client) every worker writes its samples to files there, and `/metrics`
in any worker sums them all. Without it (the Flask test client) one in-process
registry per app is used. Labels taken from the request are clamped to known values
so that hostile input cannot create unbounded series.

A request only queues its sample; a thread per worker adds the queued samples up
and writes them every `flush_interval` seconds (and `/metrics` first writes its own
worker's). Writing each sample at once cost a fifth of the webhook's own time per
request under load: a lock and an mmap write for the counter, the sum and the bucket.
So another worker's requests reach `/metrics` within `flush_interval` (0.25 s
against Prometheus's scrape intervals of 15 s and more); a worker that exits writes
what it has queued, one killed outright loses at most that interval.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import time
import traceback
import weakref
from bisect import bisect_left
from collections import deque
from pathlib import Path
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)

from draguard.schema.model.releases import API_VERSIONS, GROUP, KINDS

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Buckets from 0.5 ms: the rule set answers in well under a millisecond, and the
# apiserver's webhook timeout (10 s default, 1–3 s in practice) bounds the top.
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
VERSIONS = frozenset(f"{GROUP}/{v}" for v in API_VERSIONS)
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


Labels = tuple[str, str, str, str, str]  # endpoint, kind, version, operation, decision


class Metrics:
    """Request counter and latency histogram by endpoint, kind, version, operation, decision."""

    def __init__(self, *, flush_interval: float = 0.25) -> None:
        _use_multiprocess_values()
        self.registry = CollectorRegistry()
        labels = ("endpoint", "kind", "version", "operation", "decision")
        self.requests = Counter(
            "draguard_admission_requests", "Admission requests answered, by outcome.",
            labels, registry=self.registry)
        self.findings = Counter(
            "draguard_admission_findings", "Field errors reported in denials.",
            ("endpoint", "kind"), registry=self.registry)
        self.latency = Histogram(
            "draguard_admission_duration_seconds", "Time from request to response in the app.",
            ("endpoint", "decision"), buckets=LATENCY_BUCKETS, registry=self.registry)
        self.policy_failures = Counter(
            "draguard_policy_load_failures",
            "Policy files refused (unreadable or invalid); the last good policy stays in force.",
            registry=self.registry)
        self.flush_interval = flush_interval
        # deque.append and popleft are atomic: requests queue without a lock, and the
        # writer takes exactly what it counted, so no sample is lost or counted twice.
        self._queue: deque[tuple[Labels, float, int]] = deque()
        self._writing = threading.Lock()
        self._writer_pid: int | None = None
        # The labelled children by label values: `labels()` takes a lock and checks the
        # values on every call; clamped labels keep this dict small.
        self._children: dict[Labels, tuple[Any, Any]] = {}

    def observe(self, *, endpoint: str, kind: str = "", version: str = "", operation: str = "",
                decision: str, seconds: float, findings: int = 0) -> None:
        """Queue one answered request; it is counted at the next `flush`."""
        self._queue.append(((endpoint, kind, version, operation, decision), seconds, findings))
        if self._writer_pid != os.getpid():
            self._start_writer()

    def flush(self) -> None:
        """Add the queued samples to the metrics (in multiprocess mode: to this worker's files)."""
        with self._writing:
            totals: dict[Labels, list[Any]] = {}
            queue = self._queue
            for _ in range(len(queue)):
                labels, seconds, findings = queue.popleft()
                key = _clamp(labels)
                total = totals.get(key)
                if total is None:
                    total = totals[key] = [0, 0.0, [0] * (len(LATENCY_BUCKETS) + 1), 0]
                total[0] += 1
                total[1] += seconds
                total[2][bisect_left(LATENCY_BUCKETS, seconds)] += 1  # le: the first bound >= it
                total[3] += findings
            for key, (count, seconds_sum, buckets, findings) in totals.items():
                self._write(key, count, seconds_sum, buckets, findings)

    def _write(self, key: Labels, count: int, seconds_sum: float, buckets: list[int],
               findings: int) -> None:
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (
                self.requests.labels(*key), self.latency.labels(key[0], key[4]))
        requests, latency = children
        requests.inc(count)
        # What `Histogram.observe` does per sample (its sum, then the one bucket the
        # value falls in), once per batch; tests/webhook/test_metrics.py compares the
        # exposition with observe's.
        latency._sum.inc(seconds_sum)
        for index, bucket_count in enumerate(buckets):
            if bucket_count:
                latency._buckets[index].inc(bucket_count)
        if findings:
            self.findings.labels(key[0], key[1]).inc(findings)

    def render(self) -> tuple[bytes, str]:
        """The exposition text: all workers' samples in multiprocess mode, else this app's."""
        self.flush()
        if multiprocess_dir() is None:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST

    def _start_writer(self) -> None:
        # Per process: a thread does not survive fork, so a forked worker starts its own.
        self._writer_pid = os.getpid()
        threading.Thread(target=_write_periodically, args=(weakref.ref(self), os.getpid()),
                         name="metrics", daemon=True).start()
        atexit.register(_flush_at_exit, weakref.ref(self))  # graceful exit, max-requests


def _write_periodically(ref: weakref.ref[Metrics], pid: int) -> None:
    """The writer thread; it ends with its `Metrics` (apps come and go in tests)."""
    while True:
        metrics = ref()
        if metrics is None or metrics._writer_pid != pid:
            return
        interval = metrics.flush_interval
        try:
            metrics.flush()
        except Exception:  # e.g. a full disk: said on stderr, the next batch tries again
            traceback.print_exc()
        del metrics  # not kept alive by the sleeping thread
        time.sleep(interval)


def _flush_at_exit(ref: weakref.ref[Metrics]) -> None:
    metrics = ref()
    if metrics is not None:
        metrics.flush()


def _clamp(labels: Labels) -> Labels:
    endpoint, kind, version, operation, decision = labels
    return (
        endpoint,
        kind if kind in KINDS else ("other" if kind else ""),
        version if version in VERSIONS else ("other" if version else ""),
        operation if operation in OPERATIONS else ("other" if operation else ""),
        decision,
    )


def _use_multiprocess_values() -> None:
    # prometheus_client chooses its value store once, at import. If it was imported
    # before `prepare_multiprocess_dir` exported the folder (the master imports this
    # module first), choose again so that this worker's samples reach the files.
    if multiprocess_dir() is not None and values.ValueClass is values.MutexValue:
        values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


def prepare_multiprocess_dir(path: Path | None) -> Path:
    """Create (or empty) the folder for multiprocess samples and export it to the workers.

    Must run in the master before the workers start: prometheus_client picks its
    value store when it is first imported. Old files are removed because samples of
    a previous run would otherwise be added to this one's.
    """
    if path is None:
        path = Path(tempfile.mkdtemp(prefix="draguard-metrics-"))
    path.mkdir(parents=True, exist_ok=True)
    for entry in path.iterdir():
        if entry.suffix == ".db":
            entry.unlink()
    os.environ[MULTIPROC_ENV] = str(path)
    return path


def remove_multiprocess_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def child_exit(server: Any, worker: Any) -> None:
    """gunicorn `child_exit` hook: retire a dead worker's live gauges."""
    if multiprocess_dir() is not None:
        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]
