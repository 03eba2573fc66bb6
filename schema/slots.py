"""Filling a frozen slotted dataclass without its `__init__`, for the hottest paths.

A frozen dataclass's `__init__` sets each field by name through `object.__setattr__`
(its way round `frozen`); the slot's own descriptor sets it in about half the time. The
rule set makes a `Verdict` per document and an `Advice` per common warning, so those
two are built this way: `object.__new__`, then one setter per field. A field left
unset would fail on reading (`AttributeError`), so each builder sets every field, and
`tests/schema/test_slots.py` checks that against `dataclasses.fields`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def slot_setter(cls: type, name: str) -> Callable[[Any, Any], None]:
    """The function that sets field `name` of a `cls` instance, frozen or not."""
    setter: Callable[[Any, Any], None] = vars(cls)[name].__set__
    return setter
