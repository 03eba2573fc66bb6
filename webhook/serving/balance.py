"""Kept-alive connections spread evenly over the gunicorn workers.

The apiserver keeps a few connections to a webhook open and reuses them. gunicorn's
workers all wait on one listening socket and whichever wakes first accepts, so
connections that arrive together often all land on one worker: measured here, 4
client connections on 2 workers went 4-0 in about a third of the runs, and then one
worker's threads fight over its GIL while the other worker idles — a third of the
throughput, for as long as the connections live.

`BalancedThreadWorker` is gunicorn's `gthread` worker that stops accepting while it
holds more open connections than another live worker. The counts live in memory
shared by the master and its workers (`Table`, made when the master loads this
module, before it forks); the master hands each new worker a slot (`pre_fork`) and
takes it back when the worker exits (`release_slot`, from `child_exit`). A worker
that does not accept looks again at least every `RECHECK_SECONDS`; at any moment the
least-loaded worker accepts, so a connection never waits for a busy one. A worker
whose loop has not run for `STALE_SECONDS` (hung, until gunicorn's timeout kills it)
is left out, so it cannot hold the others back.
"""

from __future__ import annotations

import mmap
import time
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

SLOTS = 64  # workers alive at once; more than that go unbalanced, never refused
RECHECK_SECONDS = 0.05
STALE_SECONDS = 3.0  # gthread's loop runs at least once a second, even idle
_GONE = 2**62  # the count of a free slot: never the fewest


class Table:
    """Per slot: when the worker's loop last ran (monotonic ms) and its open connections;
    cell 0 counts the slots in use."""

    def __init__(self, slots: int = SLOTS) -> None:
        self.slots = slots
        self._memory = mmap.mmap(-1, 8 * (1 + 2 * slots))  # anonymous, shared over fork
        self._cells = memoryview(self._memory).cast("q")
        for slot in range(slots):
            self._cells[2 + 2 * slot] = _GONE
        self._claimed: set[int] = set()  # the master's own record

    def claim(self) -> int | None:
        """In the master: a free slot for a worker about to fork, or None when all are taken."""
        for slot in range(self.slots):
            if slot not in self._claimed:
                self._claimed.add(slot)
                self._cells[1 + 2 * slot] = _now_ms()  # counts as alive while it boots
                self._cells[2 + 2 * slot] = 0
                self._cells[0] = max(self._claimed) + 1
                return slot
        return None

    def release(self, slot: int) -> None:
        """In the master: the slot's worker has exited."""
        self._claimed.discard(slot)
        self._cells[1 + 2 * slot] = 0
        self._cells[2 + 2 * slot] = _GONE
        self._cells[0] = max(self._claimed, default=-1) + 1

    def set_open(self, slot: int, connections: int) -> None:
        self._cells[2 + 2 * slot] = connections

    def fewest_elsewhere(self, slot: int, now_ms: int) -> int:
        """The open connections of the least-loaded other live worker (`_GONE` if none);
        records that this slot's worker is alive at `now_ms`."""
        cells = self._cells
        cells[1 + 2 * slot] = now_ms
        fresh = now_ms - int(STALE_SECONDS * 1000)
        fewest = _GONE
        for other in range(cells[0]):
            if other != slot and cells[1 + 2 * other] >= fresh:
                fewest = min(fewest, cells[2 + 2 * other])
        return fewest


def _now_ms() -> int:
    return int(time.monotonic() * 1000)  # one clock for all processes of the host


TABLE = Table()


def pre_fork(server: Any, worker: Any) -> None:
    """gunicorn `pre_fork` hook (master): give the new worker its slot."""
    worker.balance_slot = TABLE.claim()


def release_slot(worker: Any) -> None:
    """For gunicorn's `child_exit` hook (master)."""
    slot = getattr(worker, "balance_slot", None)
    if slot is not None:
        TABLE.release(slot)


class BalancedThreadWorker(ThreadWorker):  # type: ignore[misc]
    """gthread, accepting only while no other live worker has fewer open connections.

    gthread's loop asks `nr_conns < worker_connections` before each wait: the
    connection count publishes itself to the table, and `worker_connections` reads
    as 0 while another worker has fewer connections.
    """

    balance_slot: int | None = None
    _open = 0
    _limit = 0

    @property
    def nr_conns(self) -> int:
        return self._open

    @nr_conns.setter
    def nr_conns(self, value: int) -> None:
        self._open = value
        # No slot yet in the master (gthread's __init__ runs before `pre_fork`);
        # `init_process` publishes the count again from the worker.
        if self.balance_slot is not None:
            TABLE.set_open(self.balance_slot, value)

    @property
    def worker_connections(self) -> int:
        slot = self.balance_slot
        if slot is not None and TABLE.fewest_elsewhere(slot, _now_ms()) < self._open:
            return 0
        return self._limit

    @worker_connections.setter
    def worker_connections(self, value: int) -> None:
        self._limit = value

    def init_process(self) -> None:
        self.nr_conns = self._open  # published from this process, now that it runs
        super().init_process()

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        if not self._accepting:
            timeout = min(timeout, RECHECK_SECONDS)
        super().wait_for_and_dispatch_events(timeout)
