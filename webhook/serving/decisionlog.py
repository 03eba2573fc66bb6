"""The decision log's handler: one JSON line per decision, written in batches.

A `StreamHandler` writes and flushes every line on its own: one system call per
request, which also hands the GIL to another thread each time (about 7 % of a
worker's time under keep-alive load). This handler keeps what it is given in memory
and writes the waiting lines together: when `max_lines` are waiting, else at most
`interval` seconds after the first (a daemon thread), and on `flush()`.

A decision (`log_line`) is queued as its time and fields and only stamped and encoded
when its batch is written: the same work done for a batch at a time, in one loop,
costs less server CPU than spread over the requests (bench/webhook.py), because a
request's own steps run with cold caches. The lines and their order are the same.

`logging.shutdown` flushes every handler at interpreter exit, which a gunicorn
worker reaches on each graceful stop, timeout abort or max-requests restart
(`sys.exit`), so a decision is not lost at shutdown. Only a worker killed outright
(SIGKILL, OOM) loses what is waiting: at most `interval` seconds or `max_lines` lines.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import traceback
from collections import deque
from typing import Any, TextIO

import orjson

# Built once: json.dumps with non-default arguments builds a new encoder per call.
_stdlib_encode = json.JSONEncoder(separators=(",", ":"), default=str).encode


def encode_line(message: Any) -> str:
    """`message` as compact JSON; orjson (a fifth of the time) unless it refuses the value."""
    try:
        return orjson.dumps(message, default=str).decode()
    except TypeError:  # e.g. a lone surrogate or an int beyond 64 bits: the stdlib encodes it
        return _stdlib_encode(message)


class JsonLine(logging.Formatter):
    """The record's message (a dict) as compact JSON: the decision log line."""

    def format(self, record: logging.LogRecord) -> str:
        return encode_line(record.msg)


# ".000+00:00" to ".999+00:00": looked up instead of formatted per line.
_MILLISECONDS = tuple(f".{n:03d}+00:00" for n in range(1000))


class UtcClock:
    """`datetime.now(UTC).isoformat(timespec="milliseconds")` in a third of the time.

    The date and time of day are formatted once per second; only the milliseconds
    change between lines. The second and its text are one tuple, replaced whole, so
    threads racing to renew it never pair a second with another second's text.
    """

    def __init__(self) -> None:
        self._second: tuple[int, str] = (-1, "")

    def now(self) -> str:
        return self.text(time.time_ns())

    def text(self, now_ns: int) -> str:
        """The time `now_ns` (nanoseconds since the epoch) as `now()` writes it."""
        second, nanoseconds = divmod(now_ns, 1_000_000_000)
        cached = self._second
        if cached[0] != second:
            cached = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
            self._second = cached
        return cached[1] + _MILLISECONDS[nanoseconds // 1_000_000]


_CLOCK = UtcClock()


def stamped(now_ns: int, message: dict[str, Any]) -> dict[str, Any]:
    """`message` after a first field `time`: `now_ns` in UTC, to the millisecond."""
    return {"time": _CLOCK.text(now_ns), **message}


def log_line(logger: logging.Logger, message: dict[str, Any], *,
             now_ns: int | None = None) -> None:
    """Log `stamped(now_ns, message)` at INFO as one JSON line; the caller checked the level.

    `now_ns` defaults to the time of the call. When the logger's only way out is a
    `BatchingHandler` with a `JsonLine` formatter (as `draguard serve` sets it up), the
    message is queued on it straight: building a `LogRecord` (time, thread, process
    names) costs more than the rest of the line. Any other set-up (a test's handler, a
    filter, propagation) gets a real record. `message` is not changed afterwards.
    """
    if now_ns is None:
        now_ns = time.time_ns()
    handlers = logger.handlers
    if not logger.propagate and not logger.filters and len(handlers) == 1:
        handler = handlers[0]
        if (isinstance(handler, BatchingHandler) and isinstance(handler.formatter, JsonLine)
                and handler.level <= logging.INFO and not handler.filters):
            handler.add_message(now_ns, message)
            return
    # makeRecord + handle is what `logger.info` does, less the caller lookup (a walk up
    # the stack per request): the line names no source file.
    logger.handle(logger.makeRecord(logger.name, logging.INFO, __file__, 0,
                                    stamped(now_ns, message), (), None))


class BatchingHandler(logging.Handler):
    """Writes formatted lines to `stream` in batches; see the module docstring."""

    def __init__(self, stream: TextIO, *, interval: float = 0.2, max_lines: int = 128) -> None:
        super().__init__()
        self.stream = stream
        self.interval = interval
        self.max_lines = max_lines
        # A formatted line (`emit`), or a decision's time and fields (`add_message`).
        # deque.append and popleft are atomic: requests queue without taking the lock,
        # and a batch takes exactly the entries it counted.
        self._pending: deque[str | tuple[int, dict[str, Any]]] = deque()
        self._wake = threading.Event()
        self._closed = False
        self._flusher_pid: int | None = None

    def emit(self, record: logging.LogRecord) -> None:
        # Called with self.lock held (Handler.handle), as are flush() and the flusher.
        try:
            self._pending.append(self.format(record))
            self._after_append()
        except Exception:  # as StreamHandler: reported, never raised into a request
            self.handleError(record)

    def add_message(self, now_ns: int, message: dict[str, Any]) -> None:
        """Queue a decision: `stamped(now_ns, message)`, encoded when its batch is written."""
        self._pending.append((now_ns, message))
        try:
            self._after_append()
        except Exception:  # never raised into a request; said on stderr as handleError does
            if logging.raiseExceptions:
                traceback.print_exc()

    def _after_append(self) -> None:
        if len(self._pending) >= self.max_lines or self._closed:
            self.flush()
        elif self._flusher_pid != os.getpid():
            self._start_flusher()

    def flush(self) -> None:
        self.acquire()
        try:
            self._write()
        finally:
            self.release()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._closed = True
            self._wake.set()
            super().close()

    def _write(self) -> None:
        pending = self._pending
        count = len(pending)
        if not count:
            return
        lines: list[str] = []
        for _ in range(count):
            entry = pending.popleft()
            lines.append(entry if isinstance(entry, str) else encode_line(stamped(*entry)))
        lines.append("")
        self.stream.write("\n".join(lines))
        self.stream.flush()

    def _start_flusher(self) -> None:
        # Per process: a thread does not survive fork, so a forked child starts its own.
        # Under the lock: the first requests of a worker arrive together.
        self.acquire()
        try:
            if self._flusher_pid != os.getpid():
                self._flusher_pid = os.getpid()
                threading.Thread(target=self._flush_periodically, name="decision-log",
                                 daemon=True).start()
        finally:
            self.release()

    def _flush_periodically(self) -> None:
        pid = os.getpid()
        while not self._closed and self._flusher_pid == pid:
            self._wake.wait(self.interval)
            try:
                self.flush()
            except Exception:  # a broken stream: say so, keep the thread for the next lines
                if logging.raiseExceptions:
                    traceback.print_exc()
