"""The batching decision-log handler: every line arrives, in order, soon, and at exit."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from draguard.webhook.serving.decisionlog import (
    BatchingHandler,
    JsonLine,
    UtcClock,
    encode_line,
    log_line,
    stamped,
)

from .conftest import start_server


def logger_with(handler: logging.Handler, name: str) -> logging.Logger:
    log = logging.getLogger(name)
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
    return log


def test_lines_are_compact_json_in_order() -> None:
    stream = io.StringIO()
    handler = BatchingHandler(stream, interval=60, max_lines=1000)
    handler.setFormatter(JsonLine())
    log = logger_with(handler, "test.decisionlog.order")
    for i in range(5):
        log.info({"n": i, "when": time})  # not JSON-serialisable: written with str()
    handler.flush()
    lines = stream.getvalue().splitlines()
    assert [json.loads(line)["n"] for line in lines] == [0, 1, 2, 3, 4]
    assert lines[0].startswith('{"n":0,"when":"<module')
    handler.close()


ODD_VALUES = [
    {"uid": "a", "n": 1, "ok": True, "none": None, "ms": 1.25},
    {"text": "grüße ✓"},  # non-ASCII
    {"lone": "\ud800"},  # a lone surrogate: orjson refuses it, the stdlib writes it
    {"big": 2**70},  # beyond 64 bits: orjson refuses it
    {"when": time},  # not JSON: written with str()
]


@pytest.mark.parametrize("message", ODD_VALUES)
def test_encode_line_reads_back_as_the_stdlib_encoding(message: dict[str, object]) -> None:
    stdlib = json.dumps(message, separators=(",", ":"), default=str)
    assert json.loads(encode_line(message)) == json.loads(stdlib)
    assert "\n" not in encode_line(message)


@pytest.mark.parametrize("message", ODD_VALUES)
def test_log_line_writes_what_a_record_would(message: dict[str, object]) -> None:
    """The queued fast path writes the line a stamped record would, once encoded."""
    now = 1_764_720_000_123_456_789
    direct, recorded = io.StringIO(), io.StringIO()
    for stream, name in ((direct, "test.decisionlog.direct"), (recorded, "test.decisionlog.rec")):
        handler = BatchingHandler(stream, interval=60, max_lines=1000)
        handler.setFormatter(JsonLine())
        log = logger_with(handler, name)
        if stream is direct:
            log_line(log, message, now_ns=now)
        else:
            log.info(stamped(now, message))
        handler.close()
    assert direct.getvalue() == recorded.getvalue()
    assert direct.getvalue().startswith('{"time":"2025-12-03T00:00:00.123+00:00",')
    assert direct.getvalue().endswith("\n")


def test_a_queued_decision_keeps_the_time_it_was_logged_at() -> None:
    """Lines are encoded when their batch is written, but stamped with the call's time."""
    stream = io.StringIO()
    handler = BatchingHandler(stream, interval=60, max_lines=1000)
    handler.setFormatter(JsonLine())
    log = logger_with(handler, "test.decisionlog.stamp")
    before = UtcClock().now()
    log_line(log, {"uid": "early"})
    after = UtcClock().now()
    time.sleep(0.01)
    log.info({"uid": "record"})  # a record between two queued decisions keeps its place
    log_line(log, {"uid": "late"}, now_ns=0)
    handler.flush()
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["uid"] for line in lines] == ["early", "record", "late"]
    assert before <= lines[0]["time"] <= after
    assert list(lines[0]) == ["time", "uid"]
    assert lines[2]["time"] == "1970-01-01T00:00:00.000+00:00"
    handler.close()


def test_lines_from_many_threads_are_each_written_once() -> None:
    """Requests queue without the lock while full batches are written from any thread."""
    stream = io.StringIO()
    handler = BatchingHandler(stream, interval=0.001, max_lines=7)
    handler.setFormatter(JsonLine())
    log = logger_with(handler, "test.decisionlog.threads")

    def send(worker: int) -> None:
        for n in range(500):
            log_line(log, {"w": worker, "n": n})

    threads = [threading.Thread(target=send, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    handler.close()
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 6 * 500
    for worker in range(6):  # each thread's lines complete and in its order
        assert [line["n"] for line in lines if line["w"] == worker] == list(range(500))


def test_log_line_goes_through_records_for_any_other_set_up() -> None:
    """A filter, another handler or propagation must still see the decision."""
    stream = io.StringIO()
    handler = BatchingHandler(stream, interval=60, max_lines=1000)
    handler.setFormatter(JsonLine())
    log = logger_with(handler, "test.decisionlog.filtered")
    seen: list[logging.LogRecord] = []

    def keep(record: logging.LogRecord) -> bool:
        seen.append(record)
        return record.msg.get("uid") != "hidden"

    log.addFilter(keep)
    log_line(log, {"uid": "shown"})
    log_line(log, {"uid": "hidden"})
    handler.close()
    assert [r.msg["uid"] for r in seen] == ["shown", "hidden"]
    assert [json.loads(line)["uid"] for line in stream.getvalue().splitlines()] == ["shown"]


def test_full_batch_is_written_at_once() -> None:
    stream = io.StringIO()
    handler = BatchingHandler(stream, interval=60, max_lines=3)
    handler.setFormatter(JsonLine())
    log = logger_with(handler, "test.decisionlog.full")
    log.info({"n": 1})
    log.info({"n": 2})
    assert stream.getvalue() == ""
    log.info({"n": 3})
    assert len(stream.getvalue().splitlines()) == 3
    handler.close()


def test_idle_lines_appear_within_the_interval() -> None:
    stream = io.StringIO()
    handler = BatchingHandler(stream, interval=0.05)
    handler.setFormatter(JsonLine())
    logger_with(handler, "test.decisionlog.idle").info({"uid": "late"})
    deadline = time.monotonic() + 30  # a bound on polling, not a speed check
    while "late" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert json.loads(stream.getvalue()) == {"uid": "late"}
    handler.close()


def test_lines_are_written_at_interpreter_exit() -> None:
    """A worker leaves by sys.exit; logging.shutdown then writes what is still waiting."""
    code = textwrap.dedent("""
        import logging, sys
        from draguard.webhook.serving.decisionlog import BatchingHandler, JsonLine
        handler = BatchingHandler(sys.stderr, interval=3600, max_lines=10**6)
        handler.setFormatter(JsonLine())
        log = logging.getLogger("d")
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        for i in range(1000):
            log.info({"n": i})
        sys.exit(0)
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert [json.loads(line)["n"] for line in run.stderr.splitlines()] == list(range(1000))


def test_served_decisions_survive_a_graceful_stop(tmp_path: Path) -> None:
    """Every review answered right before SIGTERM has its line in the server log."""
    server = start_server(tmp_path, workers=2)
    try:
        api = server.client()
        uids = [f"last-{i}" for i in range(40)]
        for uid in uids:
            body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "request": {"uid": uid, "operation": "CONNECT"}}
            assert api.review(body, fresh=uid.endswith("7")).status == 200
        api.close()
    finally:
        server.stop()  # at once: well within the flush interval
    logged = {json.loads(line)["uid"] for line in server.log().splitlines()
              if line.startswith('{"time"')}
    assert logged >= set(uids)


def test_clock_reads_as_datetime_isoformat(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decision line's time, across seconds, days and years, with the clock going back."""
    from datetime import UTC, datetime

    from draguard.webhook.serving.decisionlog import UtcClock

    clock = UtcClock()
    for now in (1_700_000_000_000_000_000, 1_700_000_000_999_999_999, 1_700_000_001_000_500_000,
                1_700_000_000_250_000_000, 1_735_689_599_999_400_000, 1_735_689_600_001_000_000, 0):
        monkeypatch.setattr(time, "time_ns", lambda now=now: now)
        second, nanoseconds = divmod(now, 10**9)
        expected = datetime.fromtimestamp(second, UTC).replace(microsecond=nanoseconds // 1000)
        assert clock.now() == expected.isoformat(timespec="milliseconds")
