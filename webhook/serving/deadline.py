"""Reviews run within a deadline, without holding the worker's connections (issue 15 §2).

The rule set is pure Python and CPU-bound: run where the connections are served it
holds every other connection of the worker while it works. A light review (most of the
traffic) costs less than handing it to another thread, so in gunicorn's gevent workers
it runs first on the worker's main thread, inline, for at most `INLINE_SLICE` seconds
(`InlineSlice`: an interval timer, `signal.setitimer`, whose SIGALRM handler raises
`SliceOver` in the review). A review stopped there starts again on one of `threads`
native threads (the stop lands as one past the deadline lands on a thread, and the
rule set's answer is a function of the review alone, so the rerun gives the same
answer), and the request waits for it at most what is left of `seconds`: the
connections of the worker were held for one slice at most. Past the deadline the caller answers by the failure
mode, and the review is stopped: the thread is sent `ReviewDeadline` with
`PyThreadState_SetAsyncExc` (CPython's documented C API), which lands at its next
Python instruction (a C call such as one CEL compilation finishes first). A review
still queued when its time is up never starts.

Heavy reviews, one at a time (issue 15 §2, bench/RESULTS.md): threads share the
worker's GIL, so a few reviews burning CPU (a claim of hundreds of distinct 4 KB CEL
selectors takes seconds) starve the worker's other requests, and the greenlets that
read and write every connection with them. A review's work grows with its body, so a
review whose body is larger than `HEAVY_BODY_BYTES` (ten times a large real claim), or
that holds more than `HEAVY_CEL_CHARS` of CEL this worker has not compiled yet (the
costliest part per byte), never runs inline: it waits for the worker's single heavy
thread, within the same deadline: the worker's main thread and other threads stay free
for the small reviews that make up the traffic, and heavy ones past the deadline are
answered by the failure mode without running. The heavy thread has a lower CPU priority
(a higher nice value), so that on busy cores the kernel runs the others first.
`SWITCH_INTERVAL` is how long a thread may keep the GIL while another waits (CPython's
default is 5 ms): shorter, so that the greenlets serving connections get it back
quickly from a heavy review.

Two runners with one interface: `GeventRunner` in gunicorn's gevent workers (inline
first; a request's greenlet waits for a native thread's result, so the worker keeps
serving other connections meanwhile; `Handoff`), `ThreadRunner` elsewhere (the Flask
test client, tests: always a thread).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from types import FrameType
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")

HEAVY_BODY_BYTES = 16 * 1024
HEAVY_CEL_CHARS = 2048  # CEL this worker has not compiled yet: compiling costs most per byte
HEAVY_SLOTS = 1
HEAVY_NICE = 10  # added to the heavy threads' nice value (at most 19)
SWITCH_INTERVAL = 0.0002  # seconds (sys.setswitchinterval)
# How long a light review may hold the worker's main thread (and so its connections)
# before it is moved to a review thread: far above what a light review takes, far
# below the review deadline.
INLINE_SLICE = 0.02  # seconds

_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
_set_async_exc.restype = ctypes.c_int


class SliceOver(BaseException):
    """Raised in an inline review at the end of its slice (`InlineSlice`); a BaseException
    for the same reason as `ReviewDeadline`."""


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
    def run(self, call: Callable[[], T], seconds: float, *,
            heavy: bool = False) -> tuple[bool, T | None]:
        """(True, result) when `call` finished within `seconds`, else (False, None);
        a `heavy` call runs on one of `HEAVY_SLOTS` threads of lower priority."""
        ...


def _lower_priority() -> None:
    """Give this thread a lower CPU priority (Linux nice is per thread): when the cores
    are busy, the kernel runs the worker's other threads first. Once per thread; an
    unprivileged thread cannot raise its priority again, and needs not to."""
    # Not Linux, or not permitted: the priority stays unchanged.
    with contextlib.suppress(AttributeError, OSError):
        thread = threading.get_native_id()
        niceness = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, niceness + HEAVY_NICE))


class ThreadRunner:
    """Native threads from `concurrent.futures`, waited for by a blocking thread."""

    def __init__(self, threads: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="review")
        self._heavy = ThreadPoolExecutor(max_workers=HEAVY_SLOTS, thread_name_prefix="heavy",
                                         initializer=_lower_priority)

    def run(self, call: Callable[[], T], seconds: float, *,
            heavy: bool = False) -> tuple[bool, T | None]:
        job = Job(call)
        future = (self._heavy if heavy else self._pool).submit(job.run)
        try:
            return True, future.result(timeout=seconds)
        except FutureTimeout:
            job.cancel()
            return False, None


class GeventRunner:
    """Inline first, then native threads waited for by a greenlet (gevent workers): the
    request's greenlet waits on an `AsyncResult`, so the worker keeps serving other
    connections meanwhile."""

    def __init__(self, threads: int, *, inline: float | None = INLINE_SLICE) -> None:
        """`inline`: the slice in seconds, None for none (every review on a thread)."""
        import gevent

        self._timeout = gevent.Timeout
        self._pool = Handoff(threads, name="review")
        self._heavy = Handoff(HEAVY_SLOTS, name="heavy", initializer=_lower_priority)
        self._inline = InlineSlice(inline) if inline is not None else None
        sys.setswitchinterval(SWITCH_INTERVAL)

    def run(self, call: Callable[[], T], seconds: float, *,
            heavy: bool = False) -> tuple[bool, T | None]:
        if not heavy and self._inline is not None:
            started = time.monotonic()
            done, value = self._inline.run(call, seconds)
            if done:
                return True, value
            # What the slice used is gone from the thread's time.
            seconds = max(0.0, seconds - (time.monotonic() - started))
        job = Job(call)
        # One timer for the wait for a free thread and for the review itself.
        timer = self._timeout(seconds)
        timer.start()
        try:
            return True, (self._heavy if heavy else self._pool).run(job.run)
        except self._timeout as exc:
            if exc is not timer:
                raise
            job.cancel()
            return False, None
        finally:
            timer.close()


class InlineSlice:
    """Runs a call on this process's main thread for at most `seconds`.

    SIGALRM from an interval timer (`signal.setitimer`, ITIMER_REAL) ends the slice: its
    handler, which Python runs on the main thread between two instructions, raises
    `SliceOver` in the call, which is then not finished (a C call such as one CEL
    compilation finishes first). The handler raises only while a call is running, so an
    alarm that lands just after the call returned is ignored; one that lands between the
    call's return and the end of the slice costs a rerun, never a wrong answer. Off (every
    call is declined) outside the main thread, or when something else in the process
    already handles SIGALRM.
    """

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds

    def run(self, call: Callable[[], T], deadline: float) -> tuple[bool, T | None]:
        """(True, result) when `call` finished within the slice (its exception is raised
        here); (False, None) when it was stopped at the slice's end, or not run."""
        seconds = min(self._seconds, deadline)
        if seconds <= 0 or not _alarm_ready():  # a zero timer would be no timer at all
            return False, None
        _slice[0] = True
        try:
            try:
                signal.setitimer(signal.ITIMER_REAL, seconds)
                return True, call()
            finally:
                _slice[0] = False
                signal.setitimer(signal.ITIMER_REAL, 0)
        except SliceOver:
            return False, None


# Whether an inline call runs now: one process-wide flag, as SIGALRM and its handler are
# one per process (calls run one at a time, on the main thread).
_slice = [False]


def _alarm(signum: int, frame: FrameType | None) -> None:
    if _slice[0]:
        _slice[0] = False
        raise SliceOver


def _alarm_ready() -> bool:
    """On the main thread, with SIGALRM handled by `_alarm` (installed on first use)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    handler = signal.getsignal(signal.SIGALRM)
    if handler is _alarm:
        return True
    if handler not in (signal.SIG_DFL, None):
        return False
    signal.signal(signal.SIGALRM, _alarm)
    return True


class Handoff:
    """A fixed set of native threads fed by a native queue, whose results reach the
    waiting greenlets through one gevent async watcher per worker.

    gevent's own `ThreadPool` makes and starts an async watcher for every task and
    manages its threads from the hub; this hand-off costs the worker less than half that
    CPU time per review under load (bench/RESULTS.md). Threads, queue and watcher are
    made on the first `run`, in the hub's thread of the process that runs it (a forked
    worker makes its own: threads do not survive fork).
    """

    def __init__(self, threads: int, *, name: str,
                 initializer: Callable[[], None] | None = None) -> None:
        self._threads = threads
        self._name = name
        self._initializer = initializer
        self._pid: int | None = None
        self._tasks: Any = None  # the native queue.SimpleQueue (gevent patches the module's)
        self._wake: Any = None  # the hub loop's async watcher
        self._done: deque[tuple[Any, bool, Any]] = deque()

    def run(self, call: Callable[[], T]) -> T:
        """`call()` on one of the threads; the calling greenlet waits (gevent timeouts
        interrupt the wait, not the call). Its exception is raised here."""
        from gevent.event import AsyncResult

        if self._pid != os.getpid():
            self._start()
        result: Any = AsyncResult()
        self._tasks.put((call, result))
        value: T = result.get()
        return value

    def _start(self) -> None:
        import gevent
        from gevent import monkey

        self._pid = os.getpid()
        self._done = deque()
        self._tasks = monkey.get_original("queue", "SimpleQueue")()
        self._wake = gevent.get_hub().loop.async_()
        self._wake.ref = False  # a waiting greenlet's timer keeps the loop running
        self._wake.start(self._deliver)
        for n in range(self._threads):
            threading.Thread(target=self._work, name=f"{self._name}-{n}", daemon=True).start()

    def _work(self) -> None:
        if self._initializer is not None:
            self._initializer()
        tasks, done, wake = self._tasks, self._done, self._wake
        while True:
            call, result = tasks.get()
            try:
                done.append((result, True, call()))
            except BaseException as exc:  # handed to the waiting greenlet, raised there
                done.append((result, False, exc))
            wake.send()  # thread-safe: wakes the hub, which runs `_deliver`

    def _deliver(self) -> None:
        # In the hub; deque.popleft is atomic, so results appended meanwhile wait for
        # this loop or the next wake-up.
        done = self._done
        while done:
            result, ok, value = done.popleft()
            if ok:
                result.set(value)
            else:
                result.set_exception(value)


def runner_for(threads: int) -> Runner:
    """The runner for this process: gevent's pool once gevent has patched the sockets."""
    from gevent import monkey

    if monkey.is_module_patched("socket"):
        return GeventRunner(threads)
    return ThreadRunner(threads)
