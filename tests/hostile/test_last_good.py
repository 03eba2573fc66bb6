"""Workers started after the files broke serve the last good state; /readyz tells the
truth when there never was one (issue 15 §4)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import POLICY, is_admission_review, review, start_server, webhook_helpers
from .test_faults import GPU_CLAIM, patch_of, settled, wait_for, workers

BOUND = 30.0  # seconds: only stops a wait that would otherwise hang


def replace_a_worker(server: Any) -> None:
    """TERM one worker and wait until its replacement has built its app."""
    master = server.process.pid
    before = workers(master)
    os.kill(min(before), signal.SIGTERM)
    assert wait_for(lambda: len(workers(master) - before) == 1, BOUND)
    assert wait_for(lambda: settled(server), BOUND)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Any]:
    shutil.copyfile(POLICY, tmp_path / "policy.yaml")
    running = start_server(tmp_path, "--policy", str(tmp_path / "policy.yaml"))
    yield running
    running.stop()


def test_new_worker_after_state_folder_deleted_serves_last_good_pair(
        server: Any, tmp_path: Path) -> None:
    ca = tmp_path / "ca-copy.crt"
    shutil.copyfile(server.ca_file, ca)
    assert wait_for(lambda: settled(server), BOUND)
    shutil.rmtree(server.state_dir)
    replace_a_worker(server)
    api = webhook_helpers.ApiserverClient(server.port, ca)
    for i in range(8):  # fresh connections reach both workers, the new one included
        uid = f"tls-{i}"
        assert is_admission_review(api.review(review(GPU_CLAIM, uid=uid), fresh=True).body, uid)
    assert api.request("GET", "/readyz", fresh=True).status == 200


def test_new_worker_after_policy_broke_enforces_last_good_policy(
        server: Any, tmp_path: Path) -> None:
    api = server.client()
    assert wait_for(lambda: settled(server), BOUND)
    good = patch_of(api.review(review(GPU_CLAIM), path="/mutate"))
    assert good
    (tmp_path / "policy.yaml").write_text("{not: [a policy")
    replace_a_worker(server)
    for i in range(8):
        reply = api.review(review(GPU_CLAIM, uid=f"p{i}"), path="/mutate", fresh=True)
        assert patch_of(reply) == good
    assert api.request("GET", "/readyz", fresh=True).status == 200
    api.close()  # an idle kept-alive connection would hold the graceful stop


def test_invalid_policy_at_start_is_not_ready(tmp_path: Path) -> None:
    """No good policy ever: its rules are not enforced, so /readyz says so (and why)."""
    (tmp_path / "policy.yaml").write_text("{not: [a policy")
    port = webhook_helpers.free_port()
    argv = [sys.executable, "-m", "draguard.webhook.cli.main", "serve", "--host", "127.0.0.1",
            "--port", str(port), "--state-dir", str(tmp_path / "state"),
            "--metrics-dir", str(tmp_path / "metrics"),
            "--policy", str(tmp_path / "policy.yaml")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAGUARD_")}
    with open(tmp_path / "server.log", "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   cwd=tmp_path)
    server = webhook_helpers.Server(process, port, tmp_path / "state", tmp_path / "server.log")
    try:
        def readyz() -> Any:
            try:
                return server.client().request("GET", "/readyz", fresh=True)
            except OSError:
                return None

        assert wait_for(lambda: readyz() is not None, BOUND), server.log()
        reply = readyz()
        assert reply.status == 503
        assert b"policy not loaded" in reply.body
    finally:
        server.stop()
