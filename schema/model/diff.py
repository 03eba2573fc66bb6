"""Structural differences between two JSON-like values, as field paths.

Used to say what a conversion changed and where a round trip lost something.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from draguard.schema.model.errors import render_value
from draguard.schema.model.paths import FieldPath


@dataclass(frozen=True, slots=True)
class Change:
    """One difference: `added`, `removed` or `changed` at `path`."""

    kind: str
    path: FieldPath
    old: Any = None
    new: Any = None

    def __str__(self) -> str:
        if self.kind == "added":
            return f"{self.path}: added {render_value(self.new)}"
        if self.kind == "removed":
            return f"{self.path}: removed (was {render_value(self.old)})"
        return f"{self.path}: {render_value(self.old)} → {render_value(self.new)}"


_ROOT = FieldPath()


def diff(old: Any, new: Any, path: FieldPath = _ROOT) -> Iterator[Change]:
    """Yield the changes from `old` to `new`; lists are compared index by index."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                yield Change("removed", path.child(str(key)), old=old[key])
            else:
                yield from diff(old[key], new[key], path.child(str(key)))
        for key in new:
            if key not in old:
                yield Change("added", path.child(str(key)), new=new[key])
    elif isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            if i >= len(new):
                yield Change("removed", path.index(i), old=old[i])
            elif i >= len(old):
                yield Change("added", path.index(i), new=new[i])
            else:
                yield from diff(old[i], new[i], path.index(i))
    elif type(old) is not type(new) or old != new:
        yield Change("changed", path, old=old, new=new)


def without_empties(value: Any) -> Any:
    """Semantic deep-equality form: nil and empty lists/maps are equal (§3.6).

    A copy with every null, empty list and empty map dropped from mappings, at any depth:
    what Go's `apiequality.Semantic.DeepEqual` treats as unset.
    """
    if isinstance(value, dict):
        items = {k: without_empties(v) for k, v in value.items()}
        return {k: v for k, v in items.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [without_empties(v) for v in value]
    return value
