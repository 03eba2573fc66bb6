"""Signals on a server with its own temporary metrics folder (no `--metrics-dir`): a
worker's exit must not remove the folder the others share (issue 15 §4: before, one
`kill -TERM` of a worker or `kill -HUP` of the master took the whole server down)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import is_admission_review, review, webhook_helpers
from .test_faults import GPU_CLAIM, wait_for, workers

BOUND = 30.0  # seconds: only stops a wait that would otherwise hang


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[Any]:
    port = webhook_helpers.free_port()
    log_file = tmp_path / "server.log"
    argv = [sys.executable, "-m", "draguard.webhook.cli.main", "serve", "--host", "127.0.0.1",
            "--port", str(port), "--state-dir", str(tmp_path / "state")]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DRAGUARD_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    with open(log_file, "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   cwd=tmp_path)
    server = webhook_helpers.Server(process, port, tmp_path / "state", log_file)
    try:
        assert wait_for(lambda: answers(server), BOUND), server.log()
        yield server
    finally:
        server.stop()


def answers(server: Any) -> bool:
    try:
        reply = server.client().review(review(GPU_CLAIM, uid="sig"), fresh=True)
    except OSError:
        return False
    return is_admission_review(reply.body, "sig")


def metrics_folder(master: int) -> Path:
    """The folder of the metric files a current worker has open."""
    for worker in workers(master):
        for fd in Path(f"/proc/{worker}/fd").iterdir():
            try:
                target = Path(os.readlink(fd))
            except OSError:
                continue
            if target.suffix == ".db" and "draguard-metrics-" in str(target):
                return target.parent
    raise AssertionError("no worker has a metrics file open")


def test_worker_term_leaves_the_server_running(plain: Any) -> None:
    master = plain.process.pid
    before = workers(master)
    os.kill(min(before), signal.SIGTERM)
    assert wait_for(lambda: len(workers(master) - before) == 1, BOUND)
    assert plain.process.poll() is None
    assert wait_for(lambda: answers(plain), BOUND)
    assert metrics_folder(master).is_dir()
    time.sleep(1)  # a crash loop would show by now
    assert plain.process.poll() is None and answers(plain)


def test_hup_reloads_and_keeps_serving(plain: Any) -> None:
    master = plain.process.pid
    before = workers(master)
    os.kill(master, signal.SIGHUP)
    assert wait_for(lambda: not (workers(master) & before) and len(workers(master)) == 2, BOUND)
    assert plain.process.poll() is None
    assert wait_for(lambda: answers(plain), BOUND)
    assert metrics_folder(master).is_dir()
    text = plain.client().request("GET", "/metrics", fresh=True).body.decode()
    assert "draguard_admission_requests_total" in text
