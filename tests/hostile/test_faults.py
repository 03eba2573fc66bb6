"""Faults on a running server: a killed worker, a broken policy file, garbage certificates.

Each test drives the real `draguard serve` (gunicorn, 2 gevent workers, TLS on
loopback). tests/webhook/test_rotation.py already covers garbage in `tls.crt` alone;
this file adds the cases it does not: a worker killed mid-stream, a policy file made
invalid or unreadable, and both certificate files (or a mismatched key) replaced.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from draguard.certs.authority import issue_ca, issue_serving_cert
from draguard.certs.files import StatePaths, renew, write_atomically

from .conftest import POLICY, is_admission_review, review, start_server

GPU_CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
}
POLICY_CHECK_SECONDS = 1.2  # PolicyStore looks at the file at most once a second


def workers(master: int) -> set[int]:
    """The gunicorn worker pids: the master's children."""
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return {int(pid) for pid in children}


def settled(server: Any) -> bool:
    """True once every current worker has built its app (its metrics file exists).

    A worker forked a moment ago is not ready yet; it loads the policy as it builds the
    app, and a policy broken before that leaves it nothing to keep. Waiting for its
    metrics file (written in `create_app`, just before the policy load) and a little
    more keeps these tests about faults of a running worker.
    """
    metrics = server.state_dir.parent / "metrics"
    pids = workers(server.process.pid)
    if len(pids) != 2 or not all((metrics / f"counter_{pid}.db").exists() for pid in pids):
        return False
    time.sleep(0.5)
    return True


def wait_for(condition: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def metric_total(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and not line.startswith("#"))


def patch_of(reply: Any) -> list[dict[str, Any]]:
    response = reply.json()["response"]
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []


class Stream:
    """Background apiserver clients (kept-alive and fresh connections) counting answers."""

    def __init__(self, server: Any, clients: int = 3) -> None:
        self.server = server
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answers: list[float] = []  # monotonic times of well-formed answers
        self.failures: list[tuple[float, str]] = []
        self.threads = [threading.Thread(target=self.run, args=(i % 2 == 1,))
                        for i in range(clients)]

    def run(self, fresh: bool) -> None:
        api = self.server.client()
        n = 0
        while not self.stop.is_set():
            n += 1
            uid = f"stream-{threading.get_ident()}-{n}"
            try:
                reply = api.review(review(GPU_CLAIM, uid=uid), fresh=fresh)
                problem = None if is_admission_review(reply.body, uid) else f"HTTP {reply.status}"
            except Exception as exc:  # a request lost with the killed worker
                problem = repr(exc)
            with self.lock:
                if problem is None:
                    self.answers.append(time.monotonic())
                else:
                    self.failures.append((time.monotonic(), problem))
        api.close()

    def answered_after(self, moment: float) -> int:
        with self.lock:
            return sum(1 for t in self.answers if t > moment)

    def __enter__(self) -> Stream:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=20)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A server of its own with a policy copy: these tests break its files and workers."""
    folder = tmp_path_factory.mktemp("faults")
    shutil.copyfile(POLICY, folder / "policy.yaml")
    running = start_server(folder, "--policy", str(folder / "policy.yaml"))
    yield running
    running.stop()


def test_killed_worker_others_keep_answering(faulty: Any) -> None:
    """SIGKILL of one worker mid-stream: answers continue, a new worker replaces it."""
    before = workers(faulty.process.pid)
    assert len(before) == 2
    victim = min(before)
    with Stream(faulty) as stream:
        assert wait_for(lambda: stream.answered_after(0) >= 20)
        killed_at = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        assert wait_for(lambda: stream.answered_after(killed_at) >= 50)
        assert wait_for(lambda: len(workers(faulty.process.pid) - {victim}) == 2)
        assert wait_for(lambda: settled(faulty))
    lost = [problem for _, problem in stream.failures]
    # At most the requests in flight on the victim's connections (one per client) fail.
    assert len(lost) <= len(stream.threads), lost
    assert faulty.process.poll() is None
    assert faulty.client().request("GET", "/readyz", fresh=True).status == 200


def break_with_garbage(path: Path) -> None:
    write_atomically(path, b"catalog: [unclosed\n\t- : :", mode=0o644)


def break_with_wrong_kind(path: Path) -> None:
    write_atomically(path, b"apiVersion: v1\nkind: ConfigMap\n", mode=0o644)


def break_with_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()  # unreadable as a file even for root (chmod 000 is not, for root)


def break_by_deleting(path: Path) -> None:
    path.unlink()


@pytest.mark.parametrize("breakage", [
    pytest.param(break_with_garbage, id="invalid-yaml"),
    pytest.param(break_with_wrong_kind, id="not-a-policy"),
    pytest.param(break_with_directory, id="unreadable"),
    pytest.param(break_by_deleting, id="deleted"),
])
def test_broken_policy_keeps_last_good(faulty: Any, breakage: Callable[[Path], None]) -> None:
    """A broken policy file: the last good policy still mutates, an error is logged and counted."""
    policy = faulty.state_dir.parent / "policy.yaml"
    assert wait_for(lambda: settled(faulty))
    api = faulty.client()
    good = patch_of(api.review(review(GPU_CLAIM), path="/mutate"))
    assert good  # the example policy expands gpu.nvidia.com
    scrape = lambda: metric_total(  # noqa: E731
        api.request("GET", "/metrics", fresh=True).body.decode(),
        "draguard_policy_load_failures_total")
    failures = scrape()
    try:
        breakage(policy)
        time.sleep(POLICY_CHECK_SECONDS)
        for i in range(6):  # fresh connections reach both workers
            reply = api.review(review(GPU_CLAIM, uid=f"p{i}"), path="/mutate", fresh=True)
            assert patch_of(reply) == good
        assert wait_for(lambda: scrape() > failures, 30)
        assert "policy not loaded, keeping generation" in faulty.log()
    finally:
        if policy.is_dir():
            policy.rmdir()
        shutil.copyfile(POLICY, policy)
    time.sleep(POLICY_CHECK_SECONDS)
    assert patch_of(api.review(review(GPU_CLAIM), path="/mutate")) == good
    api.close()


def fingerprints(server: Any, connections: int = 6) -> set[str]:
    seen = set()
    for _ in range(connections):
        conn = server.client().connection()
        conn.connect()
        seen.add(conn.peer_fingerprint())
        conn.close()
    return seen


def garbage_both(state: StatePaths) -> None:
    write_atomically(state.tls_cert, os.urandom(512), mode=0o644)
    write_atomically(state.tls_key, b"-----BEGIN PRIVATE KEY-----\nAAAA\n", mode=0o600)


def mismatched_key(state: StatePaths) -> None:
    other = issue_serving_cert(issue_ca())  # a valid key, not the certificate's
    write_atomically(state.tls_key, other.key_pem, mode=0o600)


def empty_files(state: StatePaths) -> None:
    write_atomically(state.tls_cert, b"", mode=0o644)
    write_atomically(state.tls_key, b"", mode=0o600)


@pytest.mark.parametrize("damage", [
    pytest.param(garbage_both, id="both-files-garbage"),
    pytest.param(mismatched_key, id="key-of-another-certificate"),
    pytest.param(empty_files, id="truncated-to-empty"),
])
def test_broken_certificates_keep_last_good_pair(faulty: Any,
                                                 damage: Callable[[StatePaths], None]) -> None:
    """Broken certificate files: new connections still get the last good pair and answers."""
    state = StatePaths.of(faulty.state_dir)
    good = fingerprints(faulty)
    assert len(good) == 1
    api = faulty.client()
    refused = lambda: metric_total(  # noqa: E731
        api.request("GET", "/metrics", fresh=True).body.decode(),
        "draguard_tls_load_failures_total")
    before = refused()
    with Stream(faulty, clients=2) as stream:
        damage(state)
        time.sleep(0.3)
        assert fingerprints(faulty) == good
        started = time.monotonic()
        assert wait_for(lambda: stream.answered_after(started) >= 20)
        assert wait_for(lambda: refused() > before)  # counted in /metrics
    renew(state.dir)  # leave a good pair for the next test
    assert fingerprints(faulty) != good
    assert stream.failures == []
