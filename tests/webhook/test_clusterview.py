"""The cluster view's list + watch through the real `kubernetes` client against a fake API server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fakeapi import FakeApi, bookmark, device_class, expired, namespace
from kubernetes import client

from draguard.webhook.serving.clusterview import ClusterView, RestartReason, Tuning

FAST = Tuning(backoff_initial=0.01, backoff_max=0.05, report_every=0.05, page=2)


@dataclass(frozen=True)
class Kind:
    kind: str
    group: str
    version: str
    plural: str


CLASSES = Kind("DeviceClass", "resource.k8s.io", "v1", "deviceclasses")
NAMESPACES = Kind("Namespace", "", "v1", "namespaces")


class Pages:
    """A staged list: each page as handed over; the commit recorded as one `replace`."""

    def __init__(self, recorder: Recorder, kind: str) -> None:
        self.recorder, self.kind = recorder, kind
        self.pages: list[list[str]] = []

    def add(self, objects: Any) -> None:
        self.pages.append([o["metadata"]["name"] for o in objects])

    def commit(self) -> None:
        self.recorder._add("pages", self.kind, self.pages)
        self.recorder._add("replace", self.kind, [n for page in self.pages for n in page])


class Recorder:
    """A sink and observer that remembers every call, for tests to wait on."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.changed = threading.Condition()

    def _add(self, *call: Any) -> None:
        with self.changed:
            self.calls.append(call)
            self.changed.notify_all()

    def stage(self, kind: str) -> Pages:
        return Pages(self, kind)

    def apply(self, kind: str, event: str, obj: Any) -> None:
        self._add("apply", kind, event, obj["metadata"]["name"])

    def view_relisted(self, kind: str) -> None:
        self._add("relisted", kind)

    def view_restarted(self, kind: str, reason: RestartReason) -> None:
        self._add("restarted", kind, reason)

    def view_bad_event(self, kind: str) -> None:
        self._add("bad", kind)

    def view_age(self, kind: str, seconds: float, loaded: bool) -> None:
        pass

    def of(self, name: str) -> list[tuple[Any, ...]]:
        return [c for c in list(self.calls) if c[0] == name]

    def wait(self, name: str, count: int = 1, timeout: float = 30.0) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: len(self.of(name)) >= count, timeout)


@pytest.fixture
def api() -> Iterator[FakeApi]:
    fake = FakeApi().start()
    for name in ("a.example.com", "b.example.com", "c.example.com"):
        fake.add("deviceclasses", device_class(name))
    fake.add("namespaces", namespace("default"))
    yield fake
    fake.stop()


def view_of(api: FakeApi, recorder: Recorder, *kinds: Kind) -> ClusterView:
    def connect() -> Any:
        configuration = client.Configuration()
        configuration.host = api.url
        return client.ApiClient(configuration)

    return ClusterView(kinds or (CLASSES,), recorder, connect=connect, observer=recorder,
                       tuning=FAST)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def view(api: FakeApi, recorder: Recorder) -> Iterator[ClusterView]:
    running = view_of(api, recorder)
    running.start()
    yield running
    running.stop()


def test_paged_list_is_replaced_whole_then_watched_from_its_version(
        api: FakeApi, view: ClusterView, recorder: Recorder) -> None:
    """Each page goes to the staged list as it comes, committed once as the whole list,
    and the watch starts at the list's resourceVersion."""
    assert api.wait_for(lambda _: len(api.watches("deviceclasses")) >= 1)
    assert recorder.of("pages") == [
        ("pages", "DeviceClass", [["a.example.com", "b.example.com"], ["c.example.com"]])]
    assert recorder.of("replace") == [
        ("replace", "DeviceClass", ["a.example.com", "b.example.com", "c.example.com"])]
    assert [q.get("continue") for q in api.lists("deviceclasses")] == [None, "2"]
    (watch,) = api.watches("deviceclasses")
    assert watch["resourceVersion"] == "100"
    assert watch["allowWatchBookmarks"] == "true"
    assert FAST.watch_seconds <= int(watch["timeoutSeconds"]) <= 2 * FAST.watch_seconds
    assert view.not_ready() is None


def test_events_reach_the_sink(api: FakeApi, view: ClusterView, recorder: Recorder) -> None:
    """ADDED, MODIFIED and DELETED events are applied in order."""
    api.script("deviceclasses", ("event", "ADDED", device_class("d.example.com", "101")),
               ("event", "MODIFIED", device_class("d.example.com", "102")),
               ("event", "DELETED", device_class("a.example.com", "103")),
               ("wait", threading.Event()))
    assert recorder.wait("apply", 3)
    assert recorder.of("apply") == [("apply", "DeviceClass", "ADDED", "d.example.com"),
                                    ("apply", "DeviceClass", "MODIFIED", "d.example.com"),
                                    ("apply", "DeviceClass", "DELETED", "a.example.com")]


def test_dropped_connection_resumes_from_the_last_version(
        api: FakeApi, view: ClusterView, recorder: Recorder) -> None:
    """After the server drops the stream, the watch resumes at the last event's version, no relist."""
    api.script("deviceclasses", ("event", "ADDED", device_class("d.example.com", "107")),
               ("drop",))
    assert api.wait_for(lambda _: len(api.watches("deviceclasses")) >= 2)
    assert [w["resourceVersion"] for w in api.watches("deviceclasses")] == ["100", "107"]
    assert len(recorder.of("replace")) == 1
    assert ("restarted", "DeviceClass", "dropped") in recorder.calls


def test_bookmarks_move_the_resource_version(
        api: FakeApi, view: ClusterView, recorder: Recorder) -> None:
    """A BOOKMARK changes no object but the next watch starts from its version."""
    api.script("deviceclasses", ("event", "BOOKMARK", bookmark("DeviceClass", "150")))
    assert api.wait_for(lambda _: len(api.watches("deviceclasses")) >= 2)
    assert [w["resourceVersion"] for w in api.watches("deviceclasses")] == ["100", "150"]
    assert recorder.of("apply") == []
    assert ("restarted", "DeviceClass", "timeout") in recorder.calls


@pytest.mark.parametrize("gone", [
    pytest.param(("event", "ERROR", expired()), id="error-event"),
    pytest.param(("http",), id="http-status"),
])
def test_410_gone_relists_and_replaces(api: FakeApi, view: ClusterView, recorder: Recorder,
                                       gone: tuple[Any, ...]) -> None:
    """410 Gone, as an ERROR event or an HTTP status, lists again and replaces the kind."""
    assert api.wait_for(lambda _: len(api.watches("deviceclasses")) >= 1)
    api.resource_version = 200
    api.objects["deviceclasses"] = [device_class("z.example.com", "199")]
    if gone[0] == "http":  # the next watch request is refused; the open one ends
        api.refuse["deviceclasses"] = 410
        api.script("deviceclasses")
    else:
        api.script("deviceclasses", gone)
    assert recorder.wait("relisted")
    assert recorder.of("replace")[-1] == ("replace", "DeviceClass", ["z.example.com"])
    assert api.wait_for(lambda _: api.watches("deviceclasses")[-1]["resourceVersion"] == "200")
    assert ("restarted", "DeviceClass", "expired") in recorder.calls


def test_slow_first_list_keeps_the_view_not_ready(api: FakeApi, recorder: Recorder) -> None:
    """Until every kind is listed the view says which one it waits for; then it is ready."""
    gate = api.list_gate["namespaces"] = threading.Event()
    view = view_of(api, recorder, CLASSES, NAMESPACES)
    view.start()
    try:
        assert api.wait_for(lambda _: len(api.watches("deviceclasses")) >= 1)
        assert api.wait_for(lambda _: len(api.lists("namespaces")) >= 1)
        reason = view.not_ready()
        assert reason is not None and "Namespace" in reason and "DeviceClass" not in reason
        assert view.oldest_age() is None
        gate.set()
        assert view.wait_loaded(30)
        assert view.not_ready() is None and view.oldest_age() is not None
    finally:
        view.stop()


@pytest.mark.parametrize("garbage", [
    pytest.param(b"this is not json\n", id="text"),
    pytest.param(b'{"type": "ADDED"}\n', id="no-object"),
    pytest.param(b'{"type": "EXPLODED", "object": {}}\n', id="unknown-type"),
    pytest.param(b"[1, 2, 3]\n", id="array"),
])
def test_garbage_is_counted_and_the_watch_reconnects(
        api: FakeApi, view: ClusterView, recorder: Recorder, garbage: bytes) -> None:
    """A line that is no watch event is counted, the watch resumes, and events flow again."""
    api.script("deviceclasses", ("event", "ADDED", device_class("d.example.com", "105")),
               ("raw", garbage), ("event", "ADDED", device_class("never.example.com", "106")))
    api.script("deviceclasses", ("event", "ADDED", device_class("e.example.com", "108")),
               ("wait", threading.Event()))
    assert recorder.wait("apply", 2)
    assert [c[3] for c in recorder.of("apply")] == ["d.example.com", "e.example.com"]
    assert recorder.of("bad") == [("bad", "DeviceClass")]
    assert [w["resourceVersion"] for w in api.watches("deviceclasses")] == ["100", "105"]
    assert ("restarted", "DeviceClass", "garbage") in recorder.calls


def test_an_endless_line_is_garbage_not_memory(api: FakeApi, recorder: Recorder) -> None:
    """A stream that never sends a newline is cut at the line limit and reconnected."""
    view = ClusterView((CLASSES,), recorder, connect=view_of(api, recorder)._connect,
                       observer=recorder, tuning=Tuning(backoff_initial=0.01, backoff_max=0.05,
                                                        max_line_bytes=1000))
    view.start()
    try:
        api.script("deviceclasses", *[("raw", b"x" * 600)] * 4)
        assert api.wait_for(lambda _: len(api.watches("deviceclasses")) >= 2)
        assert ("restarted", "DeviceClass", "garbage") in recorder.calls
    finally:
        view.stop()


def test_unreachable_server_is_retried_and_reported(recorder: Recorder) -> None:
    """With the API server down the view is not ready and names the error; the thread lives."""
    configuration = client.Configuration()
    configuration.host = "http://127.0.0.1:9"  # discard port: connection refused

    view = ClusterView((CLASSES,), recorder, connect=lambda: client.ApiClient(configuration),
                       observer=recorder, tuning=FAST)
    view.start()
    try:
        deadline = threading.Event()
        for _ in range(300):
            reason = view.not_ready()
            if reason and "(" in reason:
                break
            deadline.wait(0.05)
        assert reason is not None and "DeviceClass" in reason
        assert all(thread.is_alive() for thread in view._threads)
    finally:
        view.stop()


def test_age_grows_only_while_no_watch_is_open(api: FakeApi, recorder: Recorder) -> None:
    """An open watch is current (age 0); once the server is gone the age counts from then."""
    now = [1000.0]
    view = ClusterView((CLASSES,), recorder, connect=view_of(api, recorder)._connect,
                       observer=recorder, tuning=FAST, clock=lambda: now[0])
    view.start()
    try:
        assert api.wait_for(lambda _: len(api.watches("deviceclasses")) >= 1)
        assert view.wait_loaded(30)
        api.stop()  # the open watch ends without its final chunk; reconnecting fails
        assert recorder.wait("restarted")
        now[0] += 400
        age = view.oldest_age()
        assert age is not None and age >= 400
        assert view.status()["DeviceClass"].watching is False
    finally:
        view.stop()


def test_a_slice_with_100000_devices_is_a_problem_not_a_dead_view(api: FakeApi) -> None:
    """A watched ResourceSlice far beyond upstream's limits reaches the facts as a problem
    (not a bad event), and the view's threads stay up."""
    from draguard.schema.cluster.facts import ClusterFacts

    huge = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "huge", "resourceVersion": "101"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                     "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"d{i}", "attributes": {"i": {"int": i}}}
                                 for i in range(100_000)]}}
    facts = ClusterFacts()
    slices = Kind("ResourceSlice", "resource.k8s.io", "v1", "resourceslices")
    recorder = Recorder()
    view = ClusterView((CLASSES, slices), facts, connect=view_of(api, recorder)._connect,
                       observer=recorder, tuning=FAST)
    view.start()
    try:
        assert view.wait_loaded(30)
        api.script("resourceslices", ("event", "ADDED", huge), ("wait", threading.Event()))
        for _ in range(600):  # a guard against a hang, not a timing check
            if facts.problems():
                break
            threading.Event().wait(0.05)
        assert any("huge" in problem.render() for problem in facts.problems())
        assert all(thread.is_alive() for thread in view._threads)
        assert recorder.of("bad") == []
    finally:
        view.stop()


def test_backoff_doubles_to_its_cap_and_starts_over_after_a_quiet_spell() -> None:
    """Delays double up to the cap (with jitter up to the delay again) and reset after 2 min."""
    from draguard.webhook.serving.clusterview import Backoff

    now = [0.0]
    backoff = Backoff(0.8, 30.0, clock=lambda: now[0])
    floors = []
    for _ in range(8):
        delay = backoff.next()
        floors.append(min(0.8 * 2 ** len(floors), 30.0))
        assert floors[-1] <= delay <= 2 * floors[-1]
    now[0] += 121
    assert 0.8 <= backoff.next() <= 1.6


def test_an_expired_continue_token_starts_the_staged_list_over() -> None:
    """410 on a continue token: the pages staged so far are dropped, the list starts over,
    and only the complete second list is committed."""
    recorder = Recorder()
    view = ClusterView((CLASSES,), recorder, connect=lambda: None, observer=recorder)
    calls: list[str | None] = []

    class Expired(Exception):
        status = 410

    def call(**kwargs: Any) -> Any:
        token = kwargs.get("_continue")
        calls.append(token)
        if calls == [None, "2"]:
            raise Expired("continue token expired")
        names = ["y"] if token else ["a", "b"] if len(calls) == 1 else ["x"]
        body = {"metadata": {"resourceVersion": "7", "continue": "2" if token is None else ""},
                "items": [{"metadata": {"name": n}} for n in names]}

        class Response:
            data = json.dumps(body).encode()
        return Response()

    assert view._relist(CLASSES, call) == "7"
    assert calls == [None, "2", None, "2"]
    assert recorder.of("replace") == [("replace", "DeviceClass", ["x", "y"])]
