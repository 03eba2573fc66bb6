"""Prometheus metrics that add up across gunicorn workers.

With `PROMETHEUS_MULTIPROC_DIR` set (by `draguard serve`, before any worker imports
prometheus_client) every worker writes its samples to files there, and `/metrics`
in any worker sums them all. Without it (the Flask test client) one in-process
registry per app is used. Labels taken from the request are clamped to known values
so that hostile input cannot create unbounded series.
"""

from __future__ import annotations

import os
import shutil
import tempfile
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

from draguard.schema.releases import API_VERSIONS, GROUP

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Buckets from 0.5 ms: the rule set answers in well under a millisecond, and the
# apiserver's webhook timeout (10 s default, 1–3 s in practice) bounds the top.
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate"})
VERSIONS = frozenset(f"{GROUP}/{v}" for v in API_VERSIONS)
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


class Metrics:
    """Request counter and latency histogram by endpoint, kind, version, operation, decision."""

    def __init__(self) -> None:
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
        # The labelled children by label values: `labels()` takes a lock and checks the
        # values on every call; clamped labels keep this dict small.
        self._children: dict[tuple[str, ...], tuple[Any, Any]] = {}

    def observe(self, *, endpoint: str, kind: str = "", version: str = "", operation: str = "",
                decision: str, seconds: float, findings: int = 0) -> None:
        kind = kind if kind in KINDS else ("other" if kind else "")
        version = version if version in VERSIONS else ("other" if version else "")
        operation = operation if operation in OPERATIONS else ("other" if operation else "")
        key = (endpoint, kind, version, operation, decision)
        children = self._children.get(key)
        if children is None:
            children = self._children.setdefault(key, (
                self.requests.labels(*key), self.latency.labels(endpoint, decision)))
        children[0].inc()
        children[1].observe(seconds)
        if findings:
            self.findings.labels(endpoint, kind).inc(findings)

    def render(self) -> tuple[bytes, str]:
        """The exposition text: all workers' samples in multiprocess mode, else this app's."""
        if multiprocess_dir() is None:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST


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
