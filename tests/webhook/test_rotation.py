"""Certificate rotation under load: no failed request, new connections see the new certificate."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.serialization import Encoding

from draguard.certs.files import StatePaths, renew, write_atomically

from .conftest import Server, start_server

CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "default"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}]}},
}
REVIEW = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
          "request": {"uid": "rot", "operation": "CREATE", "namespace": "default",
                      "object": CLAIM}}


@pytest.fixture(scope="module")
def rotating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of its own: these tests replace its certificate files."""
    running = start_server(tmp_path_factory.mktemp("rotate"))
    yield running
    running.stop()


class Load:
    """Clients sending reviews in the background, on a kept-alive and on fresh connections."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.stop = threading.Event()
        self.failures: list[str] = []
        self.answered = 0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(fresh,)) for fresh in
                        (False, True, True)]

    def run(self, fresh: bool) -> None:
        api = self.server.client()
        while not self.stop.is_set():
            try:
                reply = api.review(REVIEW, fresh=fresh)
                ok = reply.status == 200 and reply.json()["response"]["allowed"] is True
                problem = None if ok else f"HTTP {reply.status}: {reply.body[:200]!r}"
            except Exception as exc:  # any exception is a failed request
                problem = repr(exc)
            with self.lock:
                if problem is None:
                    self.answered += 1
                else:
                    self.failures.append(problem)
        api.close()

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=20)

    def wait_for_answers(self, count: int) -> bool:
        """Wait until `count` more reviews are answered: progress, not time, paces a test.

        Under a loaded machine the clients may answer few requests in a second, so a
        test that slept a fixed time could see no load at all; waiting for answers
        keeps it about renewals *under load* however fast the machine is.
        """
        with self.lock:
            target = self.answered + count
        deadline = time.monotonic() + 60  # a bound on polling, not a speed check
        while time.monotonic() < deadline:
            with self.lock:
                if self.answered >= target or self.failures:
                    return self.answered >= target
            time.sleep(0.02)
        return False


def served_fingerprints(server: Server, connections: int = 6) -> set[str]:
    """SHA-256 of the certificate served on several new connections (both workers)."""
    seen = set()
    for _ in range(connections):
        conn = server.client().connection()
        conn.connect()
        seen.add(conn.peer_fingerprint())
        conn.close()
    return seen


def fingerprint_of(state: StatePaths) -> str:
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(state.tls_cert.read_bytes())
    return hashlib.sha256(cert.public_bytes(Encoding.DER)).hexdigest()


def test_renewal_under_load_fails_no_request(rotating: Server) -> None:
    """Three renewals under load: zero failures, new connections get each new certificate."""
    state = StatePaths.of(rotating.state_dir)
    with Load(rotating) as load:
        for _ in range(3):
            assert load.wait_for_answers(20), load.failures
            renew(state.dir)
            assert served_fingerprints(rotating) == {fingerprint_of(state)}
        assert load.wait_for_answers(20), load.failures
    assert load.failures == []
    assert load.answered >= 80


def test_broken_files_keep_serving_last_good(rotating: Server) -> None:
    """Garbage in tls.crt is ignored: the last good certificate is served, then the fixed one."""
    state = StatePaths.of(rotating.state_dir)
    good = fingerprint_of(state)
    with Load(rotating) as load:
        write_atomically(state.tls_cert, b"not a certificate", mode=0o644)
        time.sleep(0.3)
        assert served_fingerprints(rotating) == {good}
        renew(state.dir)
        assert served_fingerprints(rotating) == {fingerprint_of(state)} != {good}
        time.sleep(0.2)
    assert load.failures == []
    assert "TLS files unusable, keeping the last good pair" in rotating.log()
