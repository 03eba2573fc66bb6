"""The cluster view under hostile input, through a real `draguard serve` (issue 20, "Bad input").

A fake API server (tests/support/fakeapi.py) lists, and later sends on the watch, a
ResourceSlice of 10^5 distinct devices (attributes of every type: past the facts'
`MAX_KINDS` they are kept coarse) and watch lines that are not watch events (bytes that
are not JSON, JSON that is not an object, an unknown event type, an object that is not
one). The worker must keep answering reviews from the view, count each bad line in
`/metrics`, resume its watch, and never die (the same worker pid before and after).
Counts only: the waits are guards against a hang, not timing checks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeapi import (
    MISSING_CLASS_CLAIM,
    MISSING_FIELD,
    FakeApi,
    bookmark,
    device_class,
    namespace,
)

from .conftest import is_admission_review, review, start_server
from .test_memory import workers_of

DEVICES = 100_000
DRIVER = "gpu.example.com"
CLAIM = MISSING_CLASS_CLAIM
# Lines that are not watch events, each answered by counting it and watching again.
GARBAGE = (
    b"\x00\xffnot json{\n",
    b"[1, 2, 3]\n",
    b'{"type": "BOGUS", "object": {"metadata": {"resourceVersion": "7"}}}\n',
    b'{"type": "ADDED", "object": "a string"}\n',
)


def attribute(i: int) -> dict[str, Any]:
    """Device `i`'s attribute value, of each type in turn, distinct per device."""
    return ({"string": f"model-{i}"}, {"int": i}, {"bool": i % 2 == 0},
            {"version": f"1.{i}.0"})[i % 4]


def huge_slice(name: str, version: str) -> dict[str, Any]:
    devices = [{"name": f"d{i}", "attributes": {"a": attribute(i)},
                "capacity": {"memory": {"value": f"{i % 97 + 1}Gi"}}} for i in range(DEVICES)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name, "resourceVersion": version},
            "spec": {"driver": DRIVER, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


@pytest.fixture
def api() -> Iterator[FakeApi]:
    fake = FakeApi().start()
    fake.add("deviceclasses", device_class("gpu.example.com"))
    fake.add("namespaces", namespace("default"))
    fake.add("resourceslices", huge_slice("node-0", "100"))
    yield fake
    fake.stop()


def counter(metrics: str, name: str, **labels: str) -> float:
    shown = ",".join(f'{k}="{v}"' for k, v in labels.items())
    found = re.search(rf"^{name}\{{{re.escape(shown)}\}} (\S+)$", metrics, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_garbage_and_a_huge_slice_leave_the_worker_answering(api: FakeApi, tmp_path: Path) -> None:
    server = start_server(tmp_path / "serve", "--cluster-view", "--kubeconfig",
                          str(api.kubeconfig(tmp_path)), workers=1)
    client = server.client()
    try:
        (worker,) = workers_of(server.process.pid)
        answered = 0

        def answer() -> None:
            nonlocal answered
            uid = f"u-{answered}"
            reply = client.review(review(CLAIM, uid=uid))
            assert reply.status == 200 and is_admission_review(reply.body, uid)
            warnings = json.loads(reply.body)["response"].get("warnings", [])
            # Still judged from the view: the missing class is named.
            assert any(w.startswith(MISSING_FIELD) for w in warnings), warnings
            answered += 1

        answer()  # the listed 10^5-device slice is loaded (ready), reviews use the view
        watches = len(api.watches("resourceslices"))
        # A second huge slice arrives on the watch, then each garbage line ends a watch;
        # a clean end between them (a bookmark, then the server's timeout) resets the
        # client's backoff so that the test does not wait for it to grow.
        api.script("resourceslices", ("event", "ADDED", huge_slice("node-1", "101")),
                   ("raw", GARBAGE[0]))
        for n, line in enumerate(GARBAGE[1:], start=2):
            api.script("resourceslices",
                       ("event", "BOOKMARK", bookmark("ResourceSlice", str(100 + n))))
            api.script("resourceslices", ("raw", line))
        api.script("resourceslices", ("event", "DELETED", huge_slice("node-1", "110")))
        # Every script ends its watch; the view connects again after each: the last
        # connection is the one after the DELETED event's clean end.
        scripts = 2 * len(GARBAGE)
        while not api.wait_for(lambda _: len(api.watches("resourceslices")) >= watches + scripts,
                               timeout=0.5):
            answer()  # answered while the view decodes, applies and reconnects
            assert answered < 600, "the watch did not resume"
        answer()

        metrics = client.request("GET", "/metrics").body.decode()
        assert counter(metrics, "draguard_cluster_view_bad_events_total",
                       kind="ResourceSlice") == len(GARBAGE)
        assert counter(metrics, "draguard_cluster_view_watch_restarts_total",
                       kind="ResourceSlice", reason="garbage") == len(GARBAGE)
        assert counter(metrics, "draguard_cluster_view_loaded", kind="ResourceSlice") == 1
        assert workers_of(server.process.pid) == [worker]  # no worker death, no restart
        assert server.process.poll() is None
    finally:
        client.close()
        server.stop()
    log = server.log()
    assert "Traceback" not in log and "WORKER TIMEOUT" not in log
    assert log.count("not a watch event") + log.count("unknown watch event type") == len(GARBAGE)
