"""Kept-alive connections spread over the workers instead of piling onto one."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from pathlib import Path

import pytest
from gunicorn.config import Config as GunicornConfig

from draguard.webhook.serving.balance import STALE_SECONDS, BalancedThreadWorker, Table, _now_ms

from .conftest import Connection, Server


def test_table_slots_are_claimed_and_released() -> None:
    table = Table(slots=3)
    assert [table.claim(), table.claim(), table.claim(), table.claim()] == [0, 1, 2, None]
    table.release(1)
    assert table.claim() == 1  # a dead worker's slot goes to the next one


def test_fewest_elsewhere_ignores_itself_and_free_slots() -> None:
    table = Table(slots=4)
    first, second, third = table.claim(), table.claim(), table.claim()
    assert first is not None and second is not None and third is not None
    now = _now_ms()
    table.set_open(first, 5)
    table.set_open(second, 2)
    table.set_open(third, 7)
    assert table.fewest_elsewhere(first, now) == 2
    assert table.fewest_elsewhere(second, now) == 5
    table.release(second)  # its worker exited: its count no longer holds anyone back
    assert table.fewest_elsewhere(first, now) == 7
    table.release(third)
    assert table.fewest_elsewhere(first, now) > 10**9  # alone: always accepts


def test_a_worker_whose_loop_stopped_holds_nobody_back() -> None:
    """A hung worker (until gunicorn's timeout kills it) with few connections must not
    stop the live ones from accepting."""
    table = Table(slots=2)
    live, hung = table.claim(), table.claim()
    assert live is not None and hung is not None
    start = _now_ms()
    table.set_open(live, 3)
    table.set_open(hung, 0)
    assert table.fewest_elsewhere(hung, start) == 3  # the hung one's loop ran, once
    assert table.fewest_elsewhere(live, start + 1000) == 0  # recently alive: it counts
    later = start + int(STALE_SECONDS * 1000) + 1
    assert table.fewest_elsewhere(live, later) > 10**9  # silent too long: left out


class _Log:
    def __getattr__(self, name: str) -> object:
        return lambda *args, **kwargs: None


@pytest.mark.parametrize(("mine", "others", "accepts"), [
    (0, [0], True), (1, [1], True), (2, [1], False), (1, [2], True),
    (3, [5, 2], False), (2, [5, 2], True), (4, [], True),
])
def test_worker_accepts_only_while_no_other_has_fewer(
        monkeypatch: pytest.MonkeyPatch, mine: int, others: list[int], accepts: bool) -> None:
    """gthread accepts while `nr_conns < worker_connections`: that reads as 0 when it must not."""
    from draguard.webhook.serving import balance

    table = Table(slots=4)
    monkeypatch.setattr(balance, "TABLE", table)
    cfg = GunicornConfig()
    worker = BalancedThreadWorker(1, os.getpid(), [], None, 30, cfg, _Log())
    worker.balance_slot = table.claim()
    worker.pid = os.getpid()  # as the forked child sees itself
    for count in others:
        slot = table.claim()
        assert slot is not None
        table.set_open(slot, count)
    worker.nr_conns = mine
    assert (worker.nr_conns < worker.worker_connections) is accepts
    assert worker.worker_connections in (0, cfg.worker_connections)


def _owners(server: Server) -> dict[int, int]:
    """Client port → pid of the worker holding the server side of that connection."""
    inodes: dict[str, int] = {}
    workers = [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) ==
               server.process.pid]
    for pid in workers:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes[target[8:-1]] = pid
    owners: dict[int, int] = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port = int(fields[1].split(":")[1], 16)
        remote_port = int(fields[2].split(":")[1], 16)
        if local_port == server.port and fields[9] in inodes:
            owners[remote_port] = inodes[fields[9]]
    return owners


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


@pytest.mark.parametrize("attempt", range(4))
def test_connections_opened_together_spread_over_both_workers(server: Server,
                                                              attempt: int) -> None:
    """Four connections opened at once end up two per worker (unbalanced, gunicorn
    put all four on one worker in about a third of the tries)."""
    from .test_server import GOOD, review

    api = server.client()
    start = threading.Barrier(4)
    conns: list[Connection] = []

    def open_and_ask() -> None:
        conn = api.connection()
        start.wait()
        conn.connect()
        conn.request("POST", "/validate", json.dumps(review(GOOD)).encode(),
                     {"Content-Type": "application/json"})
        assert conn.getresponse().read()
        conns.append(conn)

    threads = [threading.Thread(target=open_and_ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        ports = [conn.sock.getsockname()[1] for conn in conns]
        owners = _owners(server)
        assert len(conns) == 4 and all(port in owners for port in ports)
        assert sorted(Counter(owners[port] for port in ports).values()) == [2, 2]
    finally:
        for conn in conns:
            conn.close()
