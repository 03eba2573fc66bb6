"""`Record`: the base of the frozen dataclasses in compiled modules, so they copy and pickle.

mypyc compiles a frozen dataclass into a native class whose fields are set only by its
`__init__`; pickle and copy, which set them one by one afterwards, fail on it
(`FrozenInstanceError`). A record is rebuilt through its `__init__` instead: what lint
hands to its worker processes (`Chunk`) and the values library users may keep (errors,
verdicts, options) copy and pickle compiled or not.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any


class Record:
    """Rebuilt from its fields, in order (every field of a subclass must be an init field)."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        this: Any = self  # a dataclass: every subclass is one
        return (type(self), tuple(getattr(self, f.name) for f in fields(this)))
