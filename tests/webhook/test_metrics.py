"""Metrics queued per request and written in batches read the same as observed one by one."""

from __future__ import annotations

import math
import threading
import time

from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from draguard.webhook.serving.metrics import LATENCY_BUCKETS, Metrics

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]

LABELS = st.tuples(
    st.sampled_from(["validate", "mutate"]),
    st.sampled_from(["ResourceClaim", "ResourceClaimTemplate", "", "Evil"]),
    st.sampled_from(["resource.k8s.io/v1", "resource.k8s.io/v1beta1", "", "evil/v9"]),
    st.sampled_from(["CREATE", "UPDATE", "", "PATCH"]),
    st.sampled_from(["allowed", "denied", "skipped"]),
)
# Bucket bounds exactly (`le` is inclusive), values between them, and past the last.
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
    """The same samples observed one by one with prometheus_client's public API."""
    registry = CollectorRegistry()
    requests = Counter("draguard_admission_requests", "", ("endpoint", "kind", "version",
                       "operation", "decision"), registry=registry)
    findings = Counter("draguard_admission_findings", "", ("endpoint", "kind"),
                       registry=registry)
    latency = Histogram("draguard_admission_duration_seconds", "", ("endpoint", "decision"),
                        buckets=LATENCY_BUCKETS, registry=registry)
    Counter("draguard_policy_load_failures", "", registry=registry)
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


def observe_all(metrics: Metrics, samples: list[tuple[tuple[str, ...], float, int]]) -> None:
    for (endpoint, kind, version, operation, decision), seconds, found in samples:
        metrics.observe(endpoint=endpoint, kind=kind, version=version, operation=operation,
                        decision=decision, seconds=seconds, findings=found)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(SAMPLE, max_size=60), st.integers(min_value=0, max_value=60))
def test_batched_exposition_equals_observed(
    samples: list[tuple[tuple[str, ...], float, int]], split: int
) -> None:
    """Counts, buckets (bounds inclusive), sums and findings equal observe's, however batched."""
    metrics = Metrics(flush_interval=3600)
    observe_all(metrics, samples[:split])
    metrics.flush()  # two batches: a flush in the middle must not change the result
    observe_all(metrics, samples[split:])
    got = parsed(metrics.render()[0])
    want = reference(samples)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert math.isclose(got[key], value, rel_tol=1e-9, abs_tol=1e-12), key


def test_no_sample_lost_while_threads_queue_and_flush() -> None:
    """Requests on four threads and a concurrent writer: every request counted once."""
    metrics = Metrics(flush_interval=3600)
    stop = threading.Event()

    def flush_often() -> None:
        while not stop.is_set():
            metrics.flush()

    def answer(n: int) -> None:
        for _ in range(n):
            metrics.observe(endpoint="validate", kind="ResourceClaim",
                            version="resource.k8s.io/v1", operation="CREATE",
                            decision="allowed", seconds=0.0003)

    writer = threading.Thread(target=flush_often)
    writer.start()
    workers = [threading.Thread(target=answer, args=(5000,)) for _ in range(4)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    stop.set()
    writer.join()
    metrics.flush()
    text = generate_latest(metrics.registry).decode()
    assert 'draguard_admission_requests_total{decision="allowed",endpoint="validate",' \
           'kind="ResourceClaim",operation="CREATE",version="resource.k8s.io/v1"} 20000.0' in text
    assert 'draguard_admission_duration_seconds_count{decision="allowed",' \
           'endpoint="validate"} 20000.0' in text


def test_writer_thread_writes_without_a_scrape() -> None:
    """Queued samples reach the metrics within the interval though nobody renders."""
    metrics = Metrics(flush_interval=0.05)
    metrics.observe(endpoint="mutate", decision="ignored", operation="DELETE", seconds=0.001)
    deadline = time.monotonic() + 30  # a bound on polling, not a speed check
    while time.monotonic() < deadline:
        text = generate_latest(metrics.registry).decode()  # the registry, not render()
        if 'decision="ignored"' in text:
            break
        time.sleep(0.02)
    assert 'operation="DELETE"' in text and "} 1.0" in text
