"""The byte-bounded LRU behind every cache keyed by client input (issue 15 §3)."""

from __future__ import annotations

from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from draguard.schema.model.bounded import ENTRY_OVERHEAD, ByteBudgetCache

BUDGET = 10_000
OPERATIONS = st.lists(st.tuples(st.sampled_from(["get", "put"]), st.integers(0, 40),
                                st.integers(0, 3 * BUDGET)), max_size=200)


@settings(max_examples=examples(200), deadline=None)
@given(OPERATIONS)
def test_never_exceeds_its_budget(operations: list[tuple[str, int, int]]) -> None:
    """Under any sequence of gets and puts of any sizes, the total stays within the budget."""
    cache: ByteBudgetCache[int, int] = ByteBudgetCache(BUDGET)
    for operation, key, size in operations:
        if operation == "put":
            cache.put(key, key, size)
        else:
            assert cache.get(key) in (None, key)
        info = cache.info()
        assert info.bytes <= BUDGET
        assert info.entries == len(cache)


def test_drops_the_least_recently_used() -> None:
    """A new entry that does not fit evicts the entry used longest ago, not the newest."""
    size = BUDGET // 3 - ENTRY_OVERHEAD
    cache: ByteBudgetCache[str, str] = ByteBudgetCache(BUDGET)
    for key in "abc":
        cache.put(key, key, size)
    assert cache.get("a") == "a"
    cache.put("d", "d", size)
    assert [key in cache for key in "abcd"] == [True, False, True, True]


def test_does_not_store_an_entry_beyond_max_entry() -> None:
    """One oversized entry is not stored, so it cannot flush everything else."""
    cache: ByteBudgetCache[str, str] = ByteBudgetCache(BUDGET, max_entry=1000)
    cache.put("small", "v", 10)
    cache.put("large", "v", 1000)
    assert "small" in cache and "large" not in cache


def test_replacing_a_key_counts_it_once() -> None:
    """Storing a key again replaces its size instead of adding to it."""
    cache: ByteBudgetCache[str, str] = ByteBudgetCache(BUDGET)
    cache.put("k", "v", 100)
    cache.put("k", "w", 300)
    assert cache.info().bytes == 300 + ENTRY_OVERHEAD
    assert cache.get("k") == "w"
