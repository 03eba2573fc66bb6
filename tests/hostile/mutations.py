"""Seeded random damage to corpus documents: thousands of near-valid objects, reproducibly.

Each generated object is a corpus document (tests/cases) with one to three changes
drawn from the kinds of mistakes users and hostile clients make: a field removed, a
value of the wrong type or out of range, a list entry duplicated, a name broken, an
unknown field, a list grown past its limit; and often the example policy's catalogued
classes, so that /mutate has something to expand or forbid. The same seed gives the same objects, so a failure names its object.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

Path = tuple[str | int, ...]

ODD_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 1.5, 2**63, -(2**63) - 1, "", "UPPER", "a" * 300, "ünïcode",
    [], {}, [1, "x"], {"k": "v"},
)
CATALOGUED = ("gpu.nvidia.com", "gpu.portable.example.com", "legacy-fpga.example.com",
              "x.experimental.example.com")


def odd(rng: random.Random) -> Any:
    """One of ODD_VALUES, copied: a shared `{}` changed later would make a cycle."""
    return copy.deepcopy(rng.choice(ODD_VALUES))


def paths(node: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every path to a value inside `node` (the root excluded)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield (*prefix, i)
            yield from paths(value, (*prefix, i))


def parent_of(doc: Any, path: Path) -> Any:
    node = doc
    for step in path[:-1]:
        node = node[step]
    return node


def damage(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A deep copy of `doc` with one to three random changes."""
    out = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        candidates = list(paths(out))
        if not candidates:
            break
        path = rng.choice(candidates)
        parent, last = parent_of(out, path), path[-1]
        _change(rng.randrange(7), parent, last, rng)
    if rng.random() < 0.3:  # give /mutate's catalog something to expand or forbid
        for path in list(paths(out)):
            if path[-1] == "deviceClassName":
                parent_of(out, path)[path[-1]] = rng.choice(CATALOGUED)
    return out


def _change(kind: int, parent: Any, last: str | int, rng: random.Random) -> None:
    value = parent[last]
    if kind == 0:  # remove the field or entry
        del parent[last]
    elif kind == 1:  # a value of another type, or out of range
        parent[last] = odd(rng)
    elif kind == 2 and isinstance(parent, list):  # duplicate an entry (names collide)
        parent.insert(int(last), copy.deepcopy(value))
    elif kind == 3 and isinstance(value, str):  # a broken or long name
        parent[last] = rng.choice((value.upper(), value + "-", value * 20, value + "/x", ""))
    elif kind == 4 and isinstance(value, dict):  # an unknown field
        value[rng.choice(("extra", "exactly", "firstAvailable", "count", "adminAccess"))] = (
            odd(rng))
    elif kind == 5 and isinstance(value, list) and value:  # past a list limit
        value.extend(copy.deepcopy(value[-1]) for _ in range(rng.choice((8, 32))))
    else:
        parent[last] = odd(rng)
