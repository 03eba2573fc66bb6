"""The worker pool shared by lint, convert, fix and roundtrip (`schema/model/pool.py`)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from functools import partial

import pytest

from draguard.schema.model import pool


def _squares(offset: int, batch: Sequence[int]) -> list[tuple[int, int]]:
    return [(n, n * n + offset) for n in batch]


def _die(batch: Sequence[int]) -> list[int]:
    os._exit(3)


def test_results_come_in_order_from_every_path() -> None:
    """One process, a pool, and a pool on a tiny input give each item's result in order."""
    items = list(range(1_000))
    expected = [(n, n * n + 7) for n in items]
    work = partial(_squares, 7)
    assert list(pool.run(work, items, jobs=1)) == expected
    assert list(pool.run(work, items, jobs=2)) == expected
    assert list(pool.run(work, items[:10], jobs=2)) == expected[:10]


def test_a_dead_worker_is_named() -> None:
    with pytest.raises(pool.WorkerDied):
        list(pool.run(_die, list(range(500)), jobs=2))


def test_jobs_follow_lints_rule() -> None:
    """None: by the input's size; 0 or less: every usable core; else as asked."""
    assert pool.jobs_for(None, pool.AUTO_DOCUMENTS - 1) == 1
    assert pool.jobs_for(None, pool.AUTO_DOCUMENTS) == pool.usable_cores()
    assert pool.jobs_for(0, 5) == pool.usable_cores()
    assert pool.jobs_for(3, 5) == 3


def _pids(batch: Sequence[int]) -> list[int]:
    return [os.getpid() for _ in batch]


def test_no_more_workers_than_batches() -> None:
    """`--jobs` far beyond the input starts one worker per batch at most, not a process
    for every job asked (the pool forks them all at once)."""
    items = list(range(3 * pool.BATCH))
    pids = set(pool.run(_pids, items, jobs=10**9))
    assert os.getpid() not in pids and 1 <= len(pids) <= 3


def test_a_worker_that_cannot_start_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forking refused (a process limit reached) is `WorkerDied`, which every command
    reports in a line, not an OSError traceback."""
    def refuse() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refuse)
    with pytest.raises(pool.WorkerDied, match="cannot start worker processes"):
        list(pool.run(_pids, list(range(3 * pool.BATCH)), jobs=2))


@pytest.mark.parametrize("count", [1, pool.SMALLEST, 2 * pool.BATCH + 1, 15_000, 100_000])
@pytest.mark.parametrize("jobs", [1, 2, 8])
def test_batches_cover_the_items_and_shrink_toward_the_end(count: int, jobs: int) -> None:
    """Consecutive ranges over every item, never larger than the one before, none
    smaller than `SMALLEST` but the last: the workers end close together."""
    ranges = pool._ranges(count, jobs)
    assert ranges[0][0] == 0 and ranges[-1][1] == count
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    sizes = [end - start for start, end in ranges]
    assert sizes == sorted(sizes, reverse=True)
    assert min(sizes[:-1], default=pool.SMALLEST) >= pool.SMALLEST
    assert sizes[0] <= max(pool.SMALLEST, -(-count // (jobs * 8)))
