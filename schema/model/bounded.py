"""A least-recently-used map bounded by the bytes of its entries, not their count (issue 15 §3).

An entry count bounds memory only when every entry has the same size; the webhook's
caches are keyed by what clients send (CEL expressions up to 10 KiB, names, namespaces),
so a bound by entries lets a client choose how much memory each entry costs. Each entry
here is given its estimated size when it is stored; the least recently used ones are
dropped until the total fits the budget, and an entry larger than `max_entry` is never
stored (it would evict everything else for one use).

Thread-safe (review threads share it): one lock around plain dict operations.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from typing import Generic, NamedTuple, TypeVar

K = TypeVar("K")
V = TypeVar("V")

# What an entry costs beyond its key and value objects: the OrderedDict's hash slot and
# linked node, the (value, size) tuple and the int.
ENTRY_OVERHEAD = 200


def text_bytes(*texts: str | bytes) -> int:
    """The memory of these strings as CPython holds them (an upper bound for shared ones)."""
    return sum(map(sys.getsizeof, texts))


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    entries: int
    bytes: int
    budget: int


class ByteBudgetCache(Generic[K, V]):
    """A map that keeps the most recently used entries within `budget` estimated bytes."""

    def __init__(self, budget: int, *, max_entry: int | None = None) -> None:
        if budget <= 0:
            raise ValueError("budget must be positive")
        self.budget = budget
        self.max_entry = budget if max_entry is None else min(max_entry, budget)
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value stored for `key` (now the most recently used), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self._misses += 1
                return None
            self._hits += 1
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: K, value: V, size: int) -> None:
        """Store `value` as costing `size` bytes, dropping the least recently used to fit."""
        size += ENTRY_OVERHEAD
        if size > self.max_entry:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            while self._entries and self._bytes + size > self.budget:
                self._bytes -= self._entries.popitem(last=False)[1][1]
            self._entries[key] = (value, size)
            self._bytes += size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._entries), self._bytes,
                             self.budget)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
