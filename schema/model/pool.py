"""Work over many documents shared out to forked worker processes, results in order.

The one pool of draguard's commands: `lint` checks its documents here, `convert`, `fix`
and `roundtrip` rewrite theirs (issue 21). A command hands `in_pool` its items and a
function that does a batch of them; each item's result comes back in the items' order,
so that what the command prints is the same as one process would print.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

AUTO_DOCUMENTS = 1_000
"""With `jobs=None`, inputs of at least this many documents are spread over every core
the process may use: below it the pool's start (forking, the workers' first batches)
costs more than a second core saves, and a pre-commit run on a few files stays one
process (issue 21: start under 150 ms, at least 7,500 documents/s for large inputs)."""

BATCH = 64
"""Fewer than two batches of items are done in this process: a pool would not pay."""

Work = Callable[[Sequence[Any]], list[Any]]
"""A batch of items to their results, one per item in order (a module-level function
or a `functools.partial` of one, so that it pickles where workers cannot fork)."""


class WorkerDied(RuntimeError):
    """A worker process ended without answering (killed, out of memory, a crash in C)."""


def auto_jobs(documents: int) -> int:
    """One process per usable core for a large input, else one (`AUTO_DOCUMENTS`)."""
    return usable_cores() if documents >= AUTO_DOCUMENTS else 1


def usable_cores() -> int:
    """The cores this process may run on (its affinity, as `os.process_cpu_count` of
    Python 3.13 counts them: a container limited by cpuset gets its share, not the
    machine's)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def jobs_for(requested: int | None, documents: int) -> int:
    """A command's `--jobs`: None decides by the input's size, 0 or less every core."""
    if requested is None:
        return auto_jobs(documents)
    return requested if requested > 0 else usable_cores()


def run(work: Work, items: Sequence[Any], *, jobs: int,
        detach: Callable[[Any], Any] | None = None) -> Iterator[Any]:
    """Each item's result of `work`, in order: in this process when `jobs` is 1 or the
    input is small, else in `jobs` worker processes. `detach` makes an item fit to be
    pickled to a worker that did not fork. Raises `WorkerDied`."""
    if jobs <= 1 or len(items) < 2 * BATCH:
        for item in items:  # one at a time: what a command prints comes as it goes
            yield from work([item])
        return
    # No more workers than batches: the pool forks them all at once, so a `--jobs` far
    # beyond the input would only start processes with nothing to do.
    jobs = min(jobs, -(-len(items) // BATCH))
    # Loaded only here: most runs are one process, and these imports cost a start.
    from concurrent.futures.process import BrokenProcessPool

    try:
        yield from _in_pool(work, items, jobs=jobs, detach=detach)
    except BrokenProcessPool as exc:
        raise WorkerDied(str(exc)) from exc
    except OSError as exc:  # no process to start (the user's or the system's limit)
        raise WorkerDied(f"cannot start worker processes: {exc}") from exc


def _in_pool(work: Work, items: Sequence[Any], *, jobs: int,
             detach: Callable[[Any], Any] | None) -> Iterator[Any]:
    """`jobs` worker processes take batches of consecutive items; results in order.

    This process only hands out and collects: when it did batches too, its work held
    the interpreter lock that the pool's own threads need to feed the workers, and the
    workers waited (measured: more CPU time in all and no gain in wall time). With fork
    a batch is sent as a range of indexes into the items the workers inherited, so that
    no document text is copied through a pipe.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _inherited
    ranges = _ranges(len(items), jobs)
    # fork: workers inherit the imported rule set (and an injected validator) for free.
    # An executor rather than a Pool: a worker that dies raises instead of hanging.
    forking = "fork" in multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if forking else None)
    _inherited = (work, items) if forking else None
    # Objects alive now are moved out of the collector's sight, so that its passes in
    # the forked workers do not touch (and so copy) every inherited page (`gc.freeze`'s
    # documented purpose); `unfreeze` gives them back afterwards. Here the collector is
    # also paused while the results come in: they are acyclic (tuples, strings), yet
    # each arrival of thousands of them set off passes over all those kept so far,
    # which cost this process more CPU than taking the results (bench/RESULTS.md), on
    # the cores the workers need. Cyclic garbage made meanwhile is collected after.
    gc.freeze()
    collecting = gc.isenabled()
    gc.disable()
    try:
        with ProcessPoolExecutor(jobs, mp_context=context) as pool:
            futures = [pool.submit(_do_range, k, end) if forking
                       else pool.submit(work, [detach(i) if detach else i
                                               for i in items[k:end]])
                       for k, end in ranges]
            for future in futures:
                yield from future.result()
    finally:
        _inherited = None
        gc.unfreeze()
        if collecting:
            gc.enable()


_inherited: tuple[Work, Sequence[Any]] | None = None  # `_in_pool`'s, for its forks

SMALLEST = 32
"""The fewest items in a batch (but the input's last): a batch costs a message each
way and a wake-up of both processes, small next to 32 documents even if all are only
skipped."""


def _ranges(count: int, jobs: int) -> list[tuple[int, int]]:
    """Batches of consecutive items, each an eighth of what is left per worker: large
    at first (few messages), small at the end, so that the workers end close together
    (with equal batches, one worker idled for half a batch on average while the other
    finished its last) and the results of the last batch are few to take in."""
    out: list[tuple[int, int]] = []
    start = 0
    while start < count:
        end = min(count, start + max(SMALLEST, -(-(count - start) // (jobs * 8))))
        out.append((start, end))
        start = end
    return out


def _do_range(start: int, end: int) -> list[Any]:
    """The inherited work on the inherited items `start:end` (a forked worker)."""
    assert _inherited is not None, "a range sent to a worker that did not fork"
    work, items = _inherited
    return work(items[start:end])
