"""Real `draguard serve` processes over TLS on loopback, and a client that acts as the apiserver.

The client connects to 127.0.0.1 but verifies the certificate against the state
folder's CA for the service DNS name (SNI + hostname check), as the apiserver does
when it calls `draguard.draguard-system.svc`.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SERVICE_DNS = "draguard.draguard-system.svc"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Connection(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1 with SNI and hostname verification for the service name."""

    def __init__(self, port: int, context: ssl.SSLContext, server_name: str) -> None:
        # A guard against a hang, not a speed check: the apiserver's 10 s timeout is a
        # production figure, and this suite also runs on loaded machines.
        super().__init__("127.0.0.1", port, context=context, timeout=60)
        self.server_name = server_name

    def connect(self) -> None:
        raw = socket.create_connection((self.host, self.port), self.timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
            raw, server_hostname=self.server_name)

    def peer_fingerprint(self) -> str:
        der = self.sock.getpeercert(binary_form=True)
        return hashlib.sha256(der).hexdigest()


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ApiserverClient:
    """Sends requests like the apiserver: keep-alive by default, or one connection each."""

    def __init__(self, port: int, ca_file: Path, server_name: str = SERVICE_DNS) -> None:
        self.port = port
        self.context = ssl.create_default_context(cafile=str(ca_file))
        self.server_name = server_name
        self._conn: Connection | None = None

    def connection(self) -> Connection:
        return Connection(self.port, self.context, self.server_name)

    def request(self, method: str, path: str, body: bytes | None = None, *,
                content_type: str = "application/json", fresh: bool = False) -> Reply:
        """One request on the kept-alive connection (or a fresh one with `fresh`)."""
        if fresh:
            conn = self.connection()
        else:
            if self._conn is None:
                self._conn = self.connection()
            conn = self._conn
        headers = {"Content-Type": content_type} if body is not None else {}
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            reply = Reply(response.status, dict(response.getheaders()), response.read())
        except Exception:
            self.close()
            raise
        if fresh or response.will_close:
            conn.close()
            if conn is self._conn:
                self._conn = None
        return reply

    def review(self, review: dict[str, Any], *, path: str = "/validate",
               fresh: bool = False) -> Reply:
        return self.request("POST", path, json.dumps(review).encode(), fresh=fresh)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


@dataclass
class Server:
    """A running `draguard serve` subprocess."""

    process: subprocess.Popen[bytes]
    port: int
    state_dir: Path
    log_file: Path

    @property
    def ca_file(self) -> Path:
        return self.state_dir / "ca.crt"

    def client(self) -> ApiserverClient:
        return ApiserverClient(self.port, self.ca_file)

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(folder: Path, *extra: str, workers: int = 2, threads: int = 4) -> Server:
    """Start `draguard serve` on a free loopback port and wait until /readyz says ready.

    The port is free when chosen but not reserved: another process (a parallel test
    worker, another checkout's suite) may take it first. Then gunicorn exits with
    "Connection in use", and the start is tried again on a new port.
    """
    for _ in range(PORT_ATTEMPTS - 1):
        try:
            return _start_once(folder, *extra, workers=workers, threads=threads)
        except PortTaken:
            pass
    return _start_once(folder, *extra, workers=workers, threads=threads)


PORT_ATTEMPTS = 3
REVIEW_TIMEOUT = 20  # seconds: below the clients' hang bounds (30 s) and socket timeout (60 s)


class PortTaken(RuntimeError):
    """gunicorn could not bind the chosen port: someone else took it meanwhile."""


def _start_once(folder: Path, *extra: str, workers: int, threads: int) -> Server:
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_file = folder / "server.log"
    argv = [sys.executable, "-m", "draguard.webhook.cli.main", "serve", "--host", "127.0.0.1",
            "--port", str(port), "--state-dir", str(folder / "state"),
            "--workers", str(workers), "--threads", str(threads),
            "--metrics-dir", str(folder / "metrics"),
            # The verdicts these tests check must not depend on how loaded the machine is:
            # past the review deadline (1 s by default) a slow review gets the failure mode's
            # answer instead. The deadline has its own tests (test_deadline.py,
            # hostile/test_slow_clients.py), which pass their own --review-timeout in `extra`.
            "--review-timeout", str(REVIEW_TIMEOUT), *extra]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAGUARD_")}
    with open(log_file, "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   cwd=folder)
    server = Server(process, port, folder / "state", log_file)
    # Not a timing assertion: a generous bound on start-up, so a broken build fails
    # instead of hanging the suite.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            problem = PortTaken if "Connection in use" in server.log() else RuntimeError
            raise problem(f"draguard serve exited {process.returncode}:\n{server.log()}")
        try:
            if server.ca_file.exists() and server.client().request(
                    "GET", "/readyz", fresh=True).status == 200:
                return server
        except OSError:
            pass
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"draguard serve not ready in 60 s:\n{server.log()}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One real server per test module (2 gevent workers over TLS)."""
    running = start_server(tmp_path_factory.mktemp("serve"))
    yield running
    running.stop()
