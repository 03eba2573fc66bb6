"""The batching decision-log handler: every line arrives, in order, soon, and at exit."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from draguard.webhook.decisionlog import BatchingHandler, JsonLine

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
    deadline = time.monotonic() + 5
    while "late" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert json.loads(stream.getvalue()) == {"uid": "late"}
    handler.close()


def test_lines_are_written_at_interpreter_exit() -> None:
    """A worker leaves by sys.exit; logging.shutdown then writes what is still waiting."""
    code = textwrap.dedent("""
        import logging, sys
        from draguard.webhook.decisionlog import BatchingHandler, JsonLine
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
