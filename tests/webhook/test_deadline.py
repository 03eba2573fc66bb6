"""The review deadline: an answer by the failure mode in time, and the review stopped."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import pytest

from draguard.schema.model.options import Options
from draguard.schema.validate import Verdict, validate_object
from draguard.webhook.app import create_app
from draguard.webhook.config import Config, ConfigError, parse_config
from draguard.webhook.review import RuleSet
from draguard.webhook.serving.deadline import (
    HEAVY_BODY_BYTES,
    HEAVY_CEL_CHARS,
    HEAVY_NICE,
    ThreadRunner,
)

STOP_BOUND = 30.0  # only ends a loop that would otherwise hang the suite


def spin(ended: threading.Event) -> None:
    """Pure Python work that never finishes on its own."""
    try:
        while True:
            pass
    finally:
        ended.set()


def test_result_within_the_deadline() -> None:
    assert ThreadRunner(1).run(lambda: 42, STOP_BOUND) == (True, 42)


def test_review_past_the_deadline_is_stopped() -> None:
    ended = threading.Event()
    assert ThreadRunner(1).run(lambda: spin(ended), 0.05) == (False, None)
    assert ended.wait(STOP_BOUND)


def test_a_queued_review_past_its_deadline_never_starts() -> None:
    runner = ThreadRunner(1)
    first_ended, started = threading.Event(), threading.Event()
    holder = threading.Thread(target=runner.run, args=(lambda: spin(first_ended), 0.5))
    holder.start()
    assert runner.run(started.set, 0.01) == (False, None)  # queued behind the spinning one
    holder.join()
    assert first_ended.wait(STOP_BOUND)
    assert runner.run(lambda: "next", STOP_BOUND) == (True, "next")  # the thread is free again
    assert not started.is_set()


SLOW = "slow-claim"


def slow_create(obj: Any, *, options: Options) -> Verdict:
    """The real rule set, except for the claim named `SLOW`, which never finishes."""
    if obj.get("metadata", {}).get("name") == SLOW:
        while True:
            time.sleep(0.001)
    return validate_object(obj, options=options)


def admission(name: str) -> bytes:
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": name, "namespace": "default"},
             "spec": {"devices": {"requests": [
                 {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": f"uid-{name}", "operation": "CREATE",
                                   "object": claim}}).encode()


@pytest.mark.parametrize(("mode", "allowed"), [("open", True), ("closed", False)])
def test_slow_review_answered_by_failure_mode(mode: Any, allowed: bool,
                                              caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(Config(failure_mode=mode, review_timeout=0.1, threads=1),
                     rules=RuleSet(create=slow_create), tls=False)
    client = app.test_client()
    logger = logging.getLogger("draguard.webhook")
    logger.addHandler(caplog.handler)
    try:
        slow = client.post("/validate", data=admission(SLOW), content_type="application/json")
    finally:
        logger.removeHandler(caplog.handler)
    response = slow.get_json()["response"]
    assert response["uid"] == f"uid-{SLOW}"
    assert response["allowed"] is allowed
    if allowed:
        assert response["warnings"] == ["draguard did not finish checking within 0.1 s and "
                                        "allowed the object unchecked (failure mode open)"]
    else:
        assert response["status"]["code"] == 504 and response["status"]["reason"] == "Timeout"
    assert any("not finished within 0.1 s" in r.getMessage() for r in caplog.records)
    # The one review thread was freed: the next review is judged, not timed out.
    fine = client.post("/validate", data=admission("fine"), content_type="application/json")
    assert fine.get_json()["response"] == {"uid": "uid-fine", "allowed": True}
    metrics = client.get("/metrics").text
    assert 'decision="timeout"' in metrics


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_review_timeout_must_be_positive_seconds(value: str) -> None:
    with pytest.raises(ConfigError):
        parse_config(["--review-timeout", value], environ={})


def test_timeouts_from_flags_and_environment() -> None:
    config = parse_config(["--review-timeout", "0.5"], environ={"DRAGUARD_READ_TIMEOUT": "3"})
    assert (config.review_timeout, config.read_timeout) == (0.5, 3.0)
    assert (Config().review_timeout, Config().read_timeout) == (1.0, 10.0)


# --- heavy reviews: one thread of lower priority per worker (issue 15 §2) -------------------


def test_heavy_reviews_run_one_at_a_time_beside_light_ones() -> None:
    """While one heavy review runs, another heavy one waits (and past its deadline never
    starts), and a light one runs at once on the other threads."""
    runner = ThreadRunner(2)
    release, running, second = threading.Event(), threading.Event(), threading.Event()

    def first() -> str:
        running.set()
        release.wait(STOP_BOUND)
        return "first"

    holder = threading.Thread(target=runner.run, args=(first, STOP_BOUND), kwargs={"heavy": True})
    holder.start()
    assert running.wait(STOP_BOUND)
    assert runner.run(second.set, 0.05, heavy=True) == (False, None)
    assert runner.run(lambda: "light", STOP_BOUND) == (True, "light")
    release.set()
    holder.join()
    assert runner.run(lambda: "again", STOP_BOUND, heavy=True) == (True, "again")
    assert not second.is_set()


def test_heavy_reviews_run_at_a_lower_cpu_priority() -> None:
    """The heavy thread's nice value is above that of the light threads."""
    import os

    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    runner = ThreadRunner(1)
    light = runner.run(niceness, STOP_BOUND)[1]
    heavy = runner.run(niceness, STOP_BOUND, heavy=True)[1]
    assert light is not None and heavy is not None
    assert heavy == min(19, light + HEAVY_NICE)


class RecordingRunner(ThreadRunner):
    """A ThreadRunner that remembers whether each call was heavy."""

    def __init__(self) -> None:
        super().__init__(1)
        self.heavy: list[bool] = []

    def run(self, call: Any, seconds: float, *, heavy: bool = False) -> Any:
        self.heavy.append(heavy)
        return super().run(call, seconds, heavy=heavy)


def test_reviews_with_large_bodies_are_heavy() -> None:
    """A review whose body is larger than HEAVY_BODY_BYTES runs as heavy, a small one not."""
    app = create_app(Config(), tls=False)
    runner = RecordingRunner()
    app.extensions["draguard"].runner = runner
    client = app.test_client()
    small = admission("small")
    large = json.loads(small)
    large["request"]["object"]["metadata"]["annotations"] = {"pad": "x" * HEAVY_BODY_BYTES}
    for body in (small, json.dumps(large).encode()):
        reply = client.post("/validate", data=body, content_type="application/json")
        assert reply.status_code == 200
    assert runner.heavy == [False, True]


def test_reviews_with_much_new_cel_are_heavy_until_compiled() -> None:
    """A small review with more uncompiled CEL than HEAVY_CEL_CHARS is heavy; once its
    selectors are compiled (cached) the same review is light."""
    app = create_app(Config(), tls=False)
    runner = RecordingRunner()
    app.extensions["draguard"].runner = runner
    client = app.test_client()
    doc = json.loads(admission("cel"))
    expression = " || ".join(f'device.attributes["heavy.example.com"].a{j} == {j}'
                             for j in range(60))
    assert len(expression) > HEAVY_CEL_CHARS
    doc["request"]["object"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": expression}}]
    body = json.dumps(doc).encode()
    assert len(body) < HEAVY_BODY_BYTES
    for _ in range(2):
        reply = client.post("/validate", data=body, content_type="application/json")
        assert reply.get_json()["response"]["allowed"] is True
    assert runner.heavy == [True, False]


def test_escaped_expression_keys_still_count() -> None:
    """A key spelled with JSON escapes is the same key: its CEL still makes the review heavy."""
    app = create_app(Config(), tls=False)
    runner = RecordingRunner()
    app.extensions["draguard"].runner = runner
    doc = json.loads(admission("escaped"))
    expression = " || ".join(f'device.attributes["escaped.example.com"].a{j} == {j}'
                             for j in range(60))
    doc["request"]["object"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"EXPRESSION_KEY": expression}}]
    body = json.dumps(doc).encode().replace(b"EXPRESSION_KEY", b"\\u0065xpression")
    reply = app.test_client().post("/validate", data=body, content_type="application/json")
    assert reply.status_code == 200
    assert runner.heavy == [True]


# --- the gevent runner, in a process of its own (monkey-patching would change this one) ----

# Run by each script with its `runner`: the call's exception reaches the caller.
RAISES = r'''
def boom():
    raise KeyError("boom")
try:
    runner.run(boom, 30)
except KeyError:
    pass
else:
    raise AssertionError("the call's exception was not raised where it was asked for")
'''


def run_script(script: str) -> None:
    """Run `script` in a Python process of its own; it prints "ok" when all went well."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr


GEVENT_SCRIPT = r'''
from gevent import monkey
monkey.patch_all(thread=False)
import os, threading, gevent
from draguard.webhook.serving.deadline import GeventRunner, HEAVY_NICE

runner = GeventRunner(2, inline=None)  # the threads alone (the inline slice: below)
assert runner.run(lambda: 42, 30) == (True, 42)

''' + RAISES + r'''
ended = threading.Event()
def spin():
    try:
        while True:
            pass
    finally:
        ended.set()
assert runner.run(spin, 0.05) == (False, None)
assert ended.wait(30)

# Many greenlets at once: each gets its own answer.
results = gevent.joinall([gevent.spawn(runner.run, (lambda n=n: n * n), 30) for n in range(50)])
assert [g.value for g in results] == [(True, n * n) for n in range(50)]

# A heavy review past its deadline while the heavy thread is busy never starts.
release, running, second = threading.Event(), threading.Event(), threading.Event()
def first():
    running.set()
    release.wait(30)
    return "first"
holder = gevent.spawn(runner.run, first, 30, heavy=True)
while not running.is_set():
    gevent.sleep(0.01)
assert runner.run(second.set, 0.05, heavy=True) == (False, None)
assert runner.run(lambda: "light", 30) == (True, "light")
release.set()
assert holder.get() == (True, "first")
assert not second.is_set()

niceness = lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
light, heavy = runner.run(niceness, 30)[1], runner.run(niceness, 30, heavy=True)[1]
assert heavy == min(19, light + HEAVY_NICE), (light, heavy)
print("ok")
'''


def test_gevent_runner_answers_raises_stops_and_queues() -> None:
    """`GeventRunner` (gunicorn's gevent workers) keeps ThreadRunner's promises: results,
    the call's exception, a review stopped past its deadline, many waiting greenlets, the
    heavy thread one at a time and of lower priority."""
    run_script(GEVENT_SCRIPT)


# --- the inline slice: light reviews on the worker's main thread first ----------------------

INLINE_SCRIPT = r'''
from gevent import monkey
monkey.patch_all(thread=False)
import os, signal, threading, time
from draguard.webhook.serving.deadline import GeventRunner

main = threading.get_ident()
LONG = 30  # a slice that a short call never outlasts, however loaded the machine

# Something else in the process handles SIGALRM: the slice is off, reviews go to threads.
signal.signal(signal.SIGALRM, lambda signum, frame: None)
ok, ident = GeventRunner(1, inline=LONG).run(threading.get_ident, 30)
assert ok and ident != main, "ran inline beside a foreign SIGALRM handler"
signal.signal(signal.SIGALRM, signal.SIG_DFL)

runner = GeventRunner(2, inline=LONG)
assert runner.run(threading.get_ident, 30) == (True, main), "a light review not run inline"
ok, ident = runner.run(threading.get_ident, 30, heavy=True)
assert ok and ident != main, "a heavy review ran inline"

''' + RAISES + r'''
# Never finishing: stopped inline at the deadline (the slice is longer), then answered
# past it; the next review runs inline again.
stopped = []
def spin():
    try:
        while True:
            pass
    finally:
        stopped.append(threading.get_ident())
assert runner.run(spin, 0.05) == (False, None)
assert stopped[0] == main, stopped
assert runner.run(threading.get_ident, 30) == (True, main)

# Still running at the end of a short slice: stopped there, run again on a review thread.
short = GeventRunner(2, inline=0.02)
attempts = []
def slow_on_main():
    attempts.append(threading.get_ident())
    while threading.get_ident() == main:
        time.sleep(0.001)
    return "finished"
assert short.run(slow_on_main, 30) == (True, "finished")
assert len(attempts) == 2 and attempts[0] == main and attempts[1] != main, attempts

# An alarm once no review runs is ignored (one may land just after a review returned).
assert runner.run(lambda: 7, 30) == (True, 7)
os.kill(os.getpid(), signal.SIGALRM)
time.sleep(0.01)
assert runner.run(threading.get_ident, 30) == (True, main)
print("ok")
'''


def test_light_reviews_run_inline_for_a_slice_then_on_a_thread() -> None:
    """In a gevent worker a light review runs on the main thread, where the connections
    are served, for at most `INLINE_SLICE`; then it is stopped and run again on a review
    thread within what is left of the deadline. Heavy reviews never run inline, and the
    slice is off when something else owns SIGALRM."""
    run_script(INLINE_SCRIPT)
