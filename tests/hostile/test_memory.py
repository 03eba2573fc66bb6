"""Memory per worker stays within the deployment's limit under large distinct claims (issue 15 §3).

A real `draguard serve` (2 workers, as deployed) is fed 200 distinct large claims (from
just under the spec memo's per-entry limit to beyond it) and the 32×32 CEL attack claim
a few times; then each worker's resident memory (`VmRSS` in /proc/PID/status) must stay
under the deployment's memory limit divided among the workers, with a margin, and all
processes together under the limit. Before the byte budgets one worker reached 1.3 GiB.
Counts, not timings: the only clock is the server's own review deadline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from draguard.webhook.config import REVIEW_TIMEOUT
from draguard.webhook.serving.deadline import HEAVY_NICE

from .conftest import ROOT, is_admission_review, review, start_server
from .test_slow_clients import expensive_claim

WORKERS = 2
CLAIMS = 200
CEL_ATTACKS = 3
MARGIN = 0.8  # each worker must stay under 80 % of its share of the limit
MIB = 1024 * 1024


def memory_limit() -> int:
    """The draguard container's memory limit in deploy/base/deployment.yaml, in bytes."""
    for doc in yaml.safe_load_all((ROOT / "deploy" / "base" / "deployment.yaml").read_text()):
        if doc and doc.get("kind") == "Deployment":
            containers = doc["spec"]["template"]["spec"]["containers"]
            limit = containers[0]["resources"]["limits"]["memory"]  # the webhook container
            assert limit.endswith("Mi")
            return int(limit[:-2]) * MIB
    raise AssertionError("no Deployment in deploy/base/deployment.yaml")


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def workers_of(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(pid) for pid in children]


def large_claim(n: int, requests: int, parameter_bytes: int) -> dict[str, Any]:
    """A valid claim of `requests` requests, each with its own opaque configuration."""
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": f"large-{n}", "namespace": "default"},
        "spec": {"devices": {
            "requests": [{"name": f"r{r}", "exactly": {
                "deviceClassName": "gpu.example.com",
                "selectors": [{"cel": {"expression":
                                       f'device.attributes["d{n % 50}.example.com"].r == {r}'}}]}}
                for r in range(requests)],
            "config": [{"requests": [f"r{r}"], "opaque": {
                "driver": "gpu.example.com",
                "parameters": {"claim": n, "request": r, "blob": f"{n}-{r}-" + "x" * parameter_bytes}}}
                for r in range(requests)],
        }},
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # As deployed: the default review deadline stops the CEL attack's reviews (its answers
    # are checked only for being AdmissionReviews, so a loaded machine changes no outcome).
    running = start_server(tmp_path_factory.mktemp("memory"), "--review-timeout",
                           str(REVIEW_TIMEOUT), workers=WORKERS)
    yield running
    running.stop()


def test_workers_stay_within_the_memory_limit(server: Any) -> None:
    """200 distinct large claims and the CEL attack claim leave every worker under its share."""
    api = server.client()
    for n in range(CLAIMS):
        # Alternately just under the memo's 256 KiB per-entry limit and well beyond it.
        claim = large_claim(n, 32, 7_000) if n % 2 else large_claim(n, 32, 12_000)
        reply = api.review(review(claim, uid=f"large-{n}"))
        assert reply.status == 200 and is_admission_review(reply.body, f"large-{n}")
    for n in range(CEL_ATTACKS):
        reply = api.review(review(expensive_claim(500 + n), uid=f"cel-{n}"))
        assert reply.status == 200 and is_admission_review(reply.body, f"cel-{n}")
    api.close()
    limit = memory_limit()
    workers = workers_of(server.process.pid)
    assert len(workers) == WORKERS
    sizes = {pid: rss(pid) for pid in workers}
    total = rss(server.process.pid) + sum(sizes.values())
    report = json.dumps({str(pid): f"{size / MIB:.0f} MiB" for pid, size in sizes.items()})
    assert all(size < MARGIN * limit / WORKERS for size in sizes.values()), report
    assert total < limit, f"{total / MIB:.0f} MiB in all, {report}"


def nice_values(pid: int) -> list[int]:
    """The nice value of each thread of `pid` (field 19 of /proc/PID/task/TID/stat)."""
    values = []
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        fields = stat.read_text().rsplit(")", 1)[1].split()
        values.append(int(fields[16]))  # fields after the command name start at field 3
    return values


def test_heavy_reviews_run_on_a_lower_priority_thread(server: Any) -> None:
    """After a large review, the worker that judged it has a thread with a higher nice value."""
    api = server.client()
    reply = api.review(review(large_claim(10_000, 32, 7_000), uid="nice"))
    assert reply.status == 200 and is_admission_review(reply.body, "nice")
    api.close()
    base = max(nice_values(server.process.pid))
    lowered = [pid for pid in workers_of(server.process.pid)
               if min(19, base + HEAVY_NICE) in nice_values(pid)]
    assert lowered
