"""Prometheus metrics that add up across gunicorn workers, through prometheus_client's
documented multiprocess mode.

With `PROMETHEUS_MULTIPROC_DIR` set (by `draguard serve` in the master, before anything
imports prometheus_client: `draguard.webhook.serving.metricsdir`) every worker's
Counters and Histograms write to files there, and `/metrics` in any worker sums them
with `MultiProcessCollector`. Without it (the Flask test client) one in-process
registry per app is used. Labels taken from the request are clamped to known values
so that hostile input cannot create unbounded series.

A worker whose metrics folder is unusable (missing, full, read-only) is started with
`enabled=False`: it keeps serving, counts nothing, and `/metrics` says so (issue 15:
metrics degrade, serving does not).
"""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from draguard.schema.model.releases import API_VERSIONS, GROUP, KINDS
from draguard.webhook.serving.metricsdir import multiprocess_dir

# The rule set answers in well under the first bucket; the apiserver's webhook timeout
# (10 s default, 1–3 s in practice) bounds the top.
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
VERSIONS = frozenset(f"{GROUP}/{v}" for v in API_VERSIONS)
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
DISABLED = b"# metrics disabled in this worker: its metrics folder is unusable\n"


class Series:
    """The counters and the histogram, registered in `registry`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ("endpoint", "kind", "version", "operation", "decision")
        self.requests = Counter(
            "draguard_admission_requests", "Admission requests answered, by outcome.",
            labels, registry=registry)
        self.findings = Counter(
            "draguard_admission_findings", "Field errors reported in denials.",
            ("endpoint", "kind"), registry=registry)
        self.latency = Histogram(
            "draguard_admission_duration_seconds", "Time from request to response in the app.",
            ("endpoint", "decision"), buckets=LATENCY_BUCKETS, registry=registry)
        self.policy_failures = Counter(
            "draguard_policy_load_failures",
            "Policy files refused (unreadable or invalid); the last good policy stays in force.",
            registry=registry)
        self.tls_failures = Counter(
            "draguard_tls_load_failures",
            "Certificate files refused (unreadable, mismatched, expired, a service name "
            "dropped); the last good pair stays in use.", registry=registry)
        self.heavy_reviews = Counter(
            "draguard_admission_heavy_reviews",
            "Reviews sent to the worker's single heavy thread (a large body, or much CEL not "
            "compiled yet in this worker), answered in time or not.", registry=registry)
        # The cluster view (issue 20), per watched kind. Gauges across workers: the
        # oldest view of any live worker, and loaded only when every worker has listed.
        self.view_age = Gauge(
            "draguard_cluster_view_age_seconds",
            "Seconds since the cluster view of this kind was last known current (0 while "
            "its watch is open; since start while its first list is loading).",
            ("kind",), registry=registry, multiprocess_mode="livemax")
        self.view_loaded = Gauge(
            "draguard_cluster_view_loaded",
            "1 once the first list of this kind has loaded (in every live worker).",
            ("kind",), registry=registry, multiprocess_mode="livemin")
        self.view_relists = Counter(
            "draguard_cluster_view_relists",
            "Lists after the first (410 Gone, or a watch that could not resume).",
            ("kind",), registry=registry)
        self.view_restarts = Counter(
            "draguard_cluster_view_watch_restarts",
            "Watches started again, by why the previous one ended (timeout: the server "
            "ended it on time; dropped, expired, error, garbage).",
            ("kind", "reason"), registry=registry)
        self.view_bad_events = Counter(
            "draguard_cluster_view_bad_events",
            "Watch lines that were not watch events (each ends its watch; it resumes).",
            ("kind",), registry=registry)


class Metrics:
    """Request counter and latency histogram by endpoint, kind, version, operation, decision.

    Disabled, it makes no series at all: in multiprocess mode even an unlabelled
    counter writes to a file as it is made.
    """

    def __init__(self, *, enabled: bool = True) -> None:
        self.registry = CollectorRegistry()
        self.series = Series(self.registry) if enabled else None
        # The request counter's and the histogram's children per (clamped) label set:
        # `labels()` checks, converts and locks on every call. Bounded: the labels are
        # clamped to known values first.
        self._children: dict[Labels, tuple[Counter, Histogram]] = {}

    @property
    def enabled(self) -> bool:
        return self.series is not None

    def observe(self, *, endpoint: str, kind: str = "", version: str = "", operation: str = "",
                decision: str, seconds: float, findings: int = 0) -> None:
        """Count one answered request."""
        series = self.series
        if series is None:
            return
        labels = _clamp((endpoint, kind, version, operation, decision))
        children = self._children.get(labels)
        if children is None:
            children = (series.requests.labels(*labels),
                        series.latency.labels(labels[0], labels[4]))
            self._children[labels] = children
        children[0].inc()
        children[1].observe(seconds)
        if findings:
            series.findings.labels(labels[0], labels[1]).inc(findings)

    def policy_failed(self) -> None:
        """Count a refused policy file."""
        if self.series is not None:
            self.series.policy_failures.inc()

    def heavy_review(self) -> None:
        """Count a review sent to the heavy thread (webhook/serving/deadline.py)."""
        if self.series is not None:
            self.series.heavy_reviews.inc()

    def tls_failed(self) -> None:
        """Count a refused certificate pair."""
        if self.series is not None:
            self.series.tls_failures.inc()

    # The cluster view's observer (`draguard.webhook.serving.clusterview.Observer`).

    def view_relisted(self, kind: str) -> None:
        if self.series is not None:
            self.series.view_relists.labels(kind).inc()

    def view_restarted(self, kind: str, reason: str) -> None:
        if self.series is not None:
            self.series.view_restarts.labels(kind, reason).inc()

    def view_bad_event(self, kind: str) -> None:
        if self.series is not None:
            self.series.view_bad_events.labels(kind).inc()

    def view_age(self, kind: str, seconds: float, loaded: bool) -> None:
        if self.series is not None:
            self.series.view_age.labels(kind).set(seconds)
            self.series.view_loaded.labels(kind).set(1 if loaded else 0)

    def render(self) -> tuple[bytes, str]:
        """The exposition text: all workers' samples in multiprocess mode, else this app's."""
        if multiprocess_dir() is None:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        registry = CollectorRegistry()
        try:
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            body = generate_latest(registry)
        except (OSError, ValueError) as exc:  # the folder went away: metrics degrade, serving does not
            body = f"# metrics folder unreadable: {exc}\n".encode()
        if not self.enabled:
            body = DISABLED + body
        return body, CONTENT_TYPE_LATEST


Labels = tuple[str, str, str, str, str]  # endpoint, kind, version, operation, decision


def _clamp(labels: Labels) -> Labels:
    endpoint, kind, version, operation, decision = labels
    return (
        endpoint,
        kind if kind in KINDS else ("other" if kind else ""),
        version if version in VERSIONS else ("other" if version else ""),
        operation if operation in OPERATIONS else ("other" if operation else ""),
        decision,
    )

