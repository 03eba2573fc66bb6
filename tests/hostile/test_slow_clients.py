"""Slow, idle and expensive clients against a real `draguard serve` (issue 15 §1, §2).

Each attack of the issue's table runs, with bounded counts, while a well-behaved client
(the apiserver) keeps sending reviews: every one must be answered. The old threaded
server (2 workers × 4 threads) answered none of them while 12 slow connections held
its threads. Durations are bounded by the attack's own size; the only clock checks are
generous outer bounds that stop a loop which would otherwise hang.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import pytest

from .conftest import is_admission_review, review, start_server

CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
}
ANSWERS = 15  # reviews the well-behaved client sends during each attack
OUTER_BOUND = 60.0  # seconds: only stops a wait that would otherwise hang the suite
READ_TIMEOUT = "2"  # the server's handshake/header/body deadline in these tests


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    running = start_server(tmp_path_factory.mktemp("slow"), "--read-timeout", READ_TIMEOUT,
                           "--review-timeout", "0.3", "--threads", "2")
    yield running
    running.stop()


def answered_meanwhile(server: Any) -> int:
    """Reviews answered, each on a new connection (the slot an attacker would take)."""
    api = server.client()
    count = 0
    for i in range(ANSWERS):
        reply = api.review(review(CLAIM, uid=f"good-{i}"), fresh=True)
        count += reply.status == 200 and is_admission_review(reply.body, f"good-{i}")
    return count


def raw(server: Any) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=OUTER_BOUND)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def tls(server: Any) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(server.ca_file))
    return context.wrap_socket(raw(server), server_hostname="draguard.draguard-system.svc")


def closed_by_server(sock: socket.socket) -> bool:
    """True when the server closes the connection (before the outer bound)."""
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True
    except TimeoutError:
        return False


def drip(sock: socket.socket, data: bytes, stop: threading.Event) -> None:
    """Send `data` a byte at a time, a byte every 0.2 s, until done, stopped or cut off."""
    for byte in data:
        if stop.wait(0.2):
            return
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return


HEAD = (b"POST /validate HTTP/1.1\r\nHost: draguard.draguard-system.svc\r\n"
        b"Content-Type: application/json\r\nContent-Length: 4096\r\n")


def one_tls_byte(server: Any) -> socket.socket:
    sock = raw(server)
    sock.sendall(b"\x16")  # the first byte of a ClientHello, then nothing
    return sock


def nothing(server: Any) -> socket.socket:
    return raw(server)


def slow_headers(server: Any, stop: threading.Event) -> socket.socket:
    sock = tls(server)
    threading.Thread(target=drip, args=(sock, HEAD + b"X-Slow: " + b"a" * 200, stop),
                     daemon=True).start()
    return sock


def slow_body(server: Any, stop: threading.Event) -> socket.socket:
    sock = tls(server)
    sock.sendall(HEAD + b"\r\n")
    threading.Thread(target=drip, args=(sock, b"{" + b" " * 4000, stop), daemon=True).start()
    return sock


Attack = Callable[[Any, threading.Event], socket.socket]
ATTACKS = [
    pytest.param(lambda s, _: one_tls_byte(s), 12, id="12-connections-one-tls-byte"),
    pytest.param(lambda s, _: nothing(s), 100, id="100-tcp-connections-sending-nothing"),
    pytest.param(slow_headers, 12, id="12-connections-headers-byte-by-byte"),
    pytest.param(slow_body, 12, id="12-connections-body-byte-by-byte"),
]


@pytest.mark.parametrize(("attack", "count"), ATTACKS)
def test_slow_clients_do_not_stop_answers(server: Any, attack: Attack, count: int) -> None:
    """While the attackers hold their connections, every review is answered."""
    stop = threading.Event()
    with ExitStack() as stack:
        stack.callback(stop.set)
        for _ in range(count):
            stack.enter_context(attack(server, stop))
        assert answered_meanwhile(server) == ANSWERS


@pytest.mark.parametrize(("attack", "count"), ATTACKS)
def test_slow_clients_are_cut_off_at_the_read_deadline(server: Any, attack: Attack,
                                                       count: int) -> None:
    """The handshake, header and body deadlines close the attackers' connections."""
    stop = threading.Event()
    with ExitStack() as stack:
        stack.callback(stop.set)
        sockets = [stack.enter_context(attack(server, stop)) for _ in range(min(count, 12))]
        assert all(closed_by_server(sock) for sock in sockets)


def test_idle_keepalive_connection_outlives_the_read_deadline(server: Any) -> None:
    """A kept-alive connection may idle longer than the read deadline (apiserver reuse)."""
    api = server.client()
    assert api.review(review(CLAIM, uid="k1")).status == 200
    time.sleep(float(READ_TIMEOUT) + 1)  # idle between requests: the keep-alive timeout applies
    conn = api._conn
    assert api.review(review(CLAIM, uid="k2")).status == 200
    assert api._conn is conn  # the same connection, not a reconnect
    api.close()


def selector(n: int) -> str:
    """A distinct ~3.9 KB selector: 80 comparisons, each compiled and cost-checked."""
    return " || ".join(f'device.attributes["d{n}.example.com"].a{j} == {j}' for j in range(80))


def expensive_claim(n: int) -> dict[str, Any]:
    """A valid claim of 4 requests × 32 distinct selectors: seconds of one thread's time."""
    requests = [{"name": f"r{r}", "exactly": {
        "deviceClassName": "gpu.example.com",
        "selectors": [{"cel": {"expression": selector(n * 1000 + r * 32 + i)}}
                      for i in range(32)]}} for r in range(4)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"costly-{n}", "namespace": "default"},
            "spec": {"devices": {"requests": requests}}}


def test_expensive_claims_are_answered_by_the_deadline(server: Any) -> None:
    """4 clients sending distinct expensive claims: each is answered by the failure mode
    (open) at the review deadline, the apiserver's reviews keep being answered, and the
    stopped reviews free their threads."""
    def attacker(k: int) -> list[dict[str, Any]]:
        api = server.client()
        out = []
        for i in range(2):
            uid = f"costly-{k}-{i}"
            reply = api.review(review(expensive_claim(k * 10 + i), uid=uid))
            assert is_admission_review(reply.body, uid)
            out.append(json.loads(reply.body)["response"])
        api.close()
        return out

    with ThreadPoolExecutor(4) as pool:
        attacks = [pool.submit(attacker, k) for k in range(4)]
        assert answered_meanwhile(server) == ANSWERS
        responses = [r for future in attacks for r in future.result()]
    assert all(r["allowed"] and "did not finish checking within 0.3 s" in r["warnings"][0]
               for r in responses)
    # Stopped, not left running: each worker's threads are free for a judged answer now
    # (unstopped, the claims above would hold them for seconds more).
    api = server.client()
    judged = [api.review(review(CLAIM, uid=f"after-{i}"), fresh=True).json()["response"]
              for i in range(4)]
    assert any("warnings" not in r for r in judged)
    assert "not finished within 0.3 s" in server.log()
