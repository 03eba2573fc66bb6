"""Kubernetes resource quantities (`resource.Quantity`) as exact fractions.

Only the parsing the allocator needs: counters and capacities are compared and
summed, never printed back, so a `Fraction` (exact, like upstream's inf.Dec) suffices.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?$")
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


def parse_quantity(text: object) -> Fraction | None:
    """`80Gi` → 85899345920; None for anything `resource.ParseQuantity` refuses."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return Fraction(text)
    if not isinstance(text, str):
        return None
    return _parse_text(text)


@functools.lru_cache(maxsize=1024)  # a cluster repeats a few quantities many times
def _parse_text(text: str) -> Fraction | None:
    match = _QUANTITY.match(text.strip())
    if match is None:
        return None
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * Fraction(2 ** _BINARY[suffix])
    exponent = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
    scale = Fraction(10**exponent) if exponent >= 0 else Fraction(1, 10**-exponent)
    result: Fraction = number * scale
    return result


def milli_value(value: Fraction) -> int:
    """Upstream's `Quantity.MilliValue()`: thousandths, rounded up."""
    return math.ceil(value * 1000)


_BINARY_SUFFIXES = (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))


def format_quantity(value: Fraction) -> str:
    """A quantity's text: the largest exact binary suffix, else plain, else thousandths.

    The value is exact; the spelling may differ from the scheduler's, which keeps
    the format of the quantity it copied (`2G` stays `2G` there, `2000000000` here).
    """
    if value.denominator == 1:
        whole = int(value)
        for suffix, shift in _BINARY_SUFFIXES:
            if whole and whole % (1 << shift) == 0:
                return f"{whole >> shift}{suffix}"
        return str(whole)
    milli = value * 1000
    if milli.denominator == 1:
        return f"{int(milli)}m"
    return str(float(value))
