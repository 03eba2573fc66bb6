"""Reviews run on a small pool of threads, each within a deadline (issue 15 §2).

The rule set is pure Python and CPU-bound: run where the connections are served it
would hold every other connection of the worker while it works. So a review runs on
one of `threads` native threads, and the request waits for it at most `seconds`. Past
that the caller answers by the failure mode, and the review is stopped: the thread is
sent `ReviewDeadline` with `PyThreadState_SetAsyncExc` (CPython's documented C API),
which lands at its next Python instruction (a C call such as one CEL compilation
finishes first). A review still queued when its time is up never starts.

Two pools with one interface: `GeventRunner` in gunicorn's gevent workers (the
request's greenlet waits on gevent's native-thread pool, so the worker keeps serving
other connections meanwhile), `ThreadRunner` elsewhere (the Flask test client, tests).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")

_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
_set_async_exc.restype = ctypes.c_int


class ReviewDeadline(BaseException):
    """Raised in a review's thread past its deadline; a BaseException so that the rule
    set's `except Exception` (the internal-error answer) does not swallow it."""


class Job(Generic[T]):
    """One call, run at most once, stoppable while it runs."""

    def __init__(self, call: Callable[[], T]) -> None:
        self._call = call
        self._lock = threading.Lock()
        self._state = "queued"  # → running → done, or queued → cancelled
        self._thread: int | None = None

    def run(self) -> T | None:
        """In the pool's thread: the call's result, or None if cancelled or stopped."""
        with self._lock:
            if self._state != "queued":
                return None
            self._state, self._thread = "running", threading.get_ident()
        try:
            try:
                return self._call()
            finally:
                with self._lock:
                    self._state = "done"
                    # A stop sent just before `done` may still be pending: clear it, so it
                    # cannot land in the pool's own code after this returns.
                    _set_async_exc(threading.get_ident(), ctypes.py_object())
        except ReviewDeadline:
            return None

    def cancel(self) -> None:
        """From the waiting side: never start, or stop at the next Python instruction."""
        with self._lock:
            if self._state == "queued":
                self._state = "cancelled"
            elif self._state == "running" and self._thread is not None:
                _set_async_exc(self._thread, ctypes.py_object(ReviewDeadline))


class Runner(Protocol):
    def run(self, call: Callable[[], T], seconds: float) -> tuple[bool, T | None]:
        """(True, result) when `call` finished within `seconds`, else (False, None)."""
        ...


class ThreadRunner:
    """Native threads from `concurrent.futures`, waited for by a blocking thread."""

    def __init__(self, threads: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="review")

    def run(self, call: Callable[[], T], seconds: float) -> tuple[bool, T | None]:
        job = Job(call)
        future = self._pool.submit(job.run)
        try:
            return True, future.result(timeout=seconds)
        except FutureTimeout:
            job.cancel()
            return False, None


class GeventRunner:
    """gevent's pool of native threads, waited for by a greenlet (gevent workers)."""

    def __init__(self, threads: int) -> None:
        import gevent

        self._timeout = gevent.Timeout
        self._pool = gevent.get_hub().threadpool
        self._pool.maxsize = threads

    def run(self, call: Callable[[], T], seconds: float) -> tuple[bool, T | None]:
        job = Job(call)
        # One timer for the wait for a free thread and for the review itself.
        timer = self._timeout(seconds)
        timer.start()
        try:
            return True, self._pool.spawn(job.run).get()
        except self._timeout as exc:
            if exc is not timer:
                raise
            job.cancel()
            return False, None
        finally:
            timer.close()


def runner_for(threads: int) -> Runner:
    """The runner for this process: gevent's pool once gevent has patched the sockets."""
    from gevent import monkey

    if monkey.is_module_patched("socket"):
        return GeventRunner(threads)
    return ThreadRunner(threads)
