"""Metrics: clamped labels, the same exposition as prometheus_client's own observe, and a
worker whose metrics folder is unusable keeps serving with metrics off."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from draguard.webhook.serving import metricsdir
from draguard.webhook.serving.metrics import DISABLED, LATENCY_BUCKETS, Metrics

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]

LABELS = st.tuples(
    st.sampled_from(["validate", "mutate"]),
    st.sampled_from(["ResourceClaim", "ResourceClaimTemplate", "", "Evil"]),
    st.sampled_from(["resource.k8s.io/v1", "resource.k8s.io/v1beta1", "", "evil/v9"]),
    st.sampled_from(["CREATE", "UPDATE", "", "PATCH"]),
    st.sampled_from(["allowed", "denied", "skipped"]),
)
SECONDS = st.one_of(st.sampled_from(LATENCY_BUCKETS),
                    st.floats(min_value=0, max_value=20, allow_nan=False))
SAMPLE = st.tuples(LABELS, SECONDS, st.integers(min_value=0, max_value=40))


def parsed(text: bytes) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue  # creation times differ between two registries
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def reference(samples: list[tuple[tuple[str, ...], float, int]]) -> Samples:
    """The same samples observed with prometheus_client directly, labels clamped by hand."""
    registry = CollectorRegistry()
    requests = Counter("draguard_admission_requests", "", ("endpoint", "kind", "version",
                       "operation", "decision"), registry=registry)
    findings = Counter("draguard_admission_findings", "", ("endpoint", "kind"),
                       registry=registry)
    latency = Histogram("draguard_admission_duration_seconds", "", ("endpoint", "decision"),
                        buckets=LATENCY_BUCKETS, registry=registry)
    Counter("draguard_policy_load_failures", "", registry=registry)
    Counter("draguard_tls_load_failures", "", registry=registry)
    Counter("draguard_admission_heavy_reviews", "", registry=registry)
    known = {"ResourceClaim", "ResourceClaimTemplate", "resource.k8s.io/v1",
             "resource.k8s.io/v1beta1", "CREATE", "UPDATE"}
    for (endpoint, kind, version, operation, decision), seconds, found in samples:
        kind, version, operation = (v if v in known else ("other" if v else "")
                                    for v in (kind, version, operation))
        requests.labels(endpoint, kind, version, operation, decision).inc()
        latency.labels(endpoint, decision).observe(seconds)
        if found:
            findings.labels(endpoint, kind).inc(found)
    return parsed(generate_latest(registry))


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(SAMPLE, max_size=40))
def test_exposition_with_clamped_labels(samples: list[tuple[tuple[str, ...], float, int]]) -> None:
    """Counts, buckets, sums and findings as observed; unknown label values become "other"."""
    metrics = Metrics()
    for (endpoint, kind, version, operation, decision), seconds, found in samples:
        metrics.observe(endpoint=endpoint, kind=kind, version=version, operation=operation,
                        decision=decision, seconds=seconds, findings=found)
    got = parsed(generate_latest(metrics.registry))
    want = reference(samples)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert math.isclose(got[key], value, rel_tol=1e-9, abs_tol=1e-12), key


def test_disabled_metrics_count_nothing_and_say_so(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setenv(metricsdir.MULTIPROC_ENV, str(tmp_path / "gone"))
    metrics = Metrics(enabled=False)
    metrics.observe(endpoint="validate", decision="allowed", seconds=0.001)
    metrics.policy_failed()
    body, _ = metrics.render()  # the folder is missing: a comment, not an exception
    assert body.startswith(DISABLED)
    assert list(tmp_path.iterdir()) == []


def test_usable_folder(tmp_path: Path) -> None:
    assert metricsdir.usable(str(tmp_path)) is None
    assert list(tmp_path.iterdir()) == []  # the probe is removed
    problem = metricsdir.usable(str(tmp_path / "missing"))
    assert problem is not None and "missing" in problem


def test_full_volume_is_unusable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A volume without room for the files is refused up front (not SIGBUS on first write)."""
    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(28, os.strerror(28))

    monkeypatch.setattr(os, "posix_fallocate", full)
    problem = metricsdir.usable(str(tmp_path))
    assert problem is not None and "No space left" in problem
    assert list(tmp_path.iterdir()) == []


def test_master_does_not_import_prometheus_client() -> None:
    """The folder must be exported before prometheus_client is imported: it chooses its
    value store (files or memory) at import, and the workers inherit the master's modules."""
    import subprocess
    import sys

    code = ("import sys, draguard.webhook.cli.serve, draguard.webhook.serving.server, "
            "draguard.webhook.serving.metricsdir; "
            "sys.exit('prometheus_client' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_cluster_view_series_per_kind() -> None:
    """The view's age, loaded flag, relists, restarts by reason and bad events, by kind."""
    metrics = Metrics()
    metrics.view_age("ResourceSlice", 12.5, False)
    metrics.view_relisted("ResourceSlice")
    metrics.view_restarted("ResourceSlice", "expired")
    metrics.view_bad_event("ResourceSlice")
    got = parsed(generate_latest(metrics.registry))
    kind = (("kind", "ResourceSlice"),)
    assert got[("draguard_cluster_view_age_seconds", kind)] == 12.5
    assert got[("draguard_cluster_view_loaded", kind)] == 0
    assert got[("draguard_cluster_view_relists_total", kind)] == 1
    assert got[("draguard_cluster_view_watch_restarts_total",
                (("kind", "ResourceSlice"), ("reason", "expired")))] == 1
    assert got[("draguard_cluster_view_bad_events_total", kind)] == 1
