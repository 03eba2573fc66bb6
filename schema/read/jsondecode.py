"""JSON text → values as the apiserver's decoder sees them.

Python's `json` turns an escaped lone UTF-16 surrogate (`"\\ud800"`) into a lone
surrogate code point, a string that cannot be encoded as UTF-8 again; Go's
`encoding/json`, which decodes for the apiserver and kubectl, replaces it with U+FFFD.
So does `loads` here, so that every later step (sizes of annotations, messages, the
JSON output) sees the same text as upstream and never fails on it.

Given the UTF-8 bytes, `loads_utf8` reads with orjson (a third of the time)
whenever orjson reads the text as `json` does. It does for everything but: integers
beyond 64 bits (orjson makes floats of them, so a text with a run of 19 digits goes to
`json`), and texts orjson refuses (NaN, lone surrogates, nesting past 1024, 1e400,
broken JSON), which `json` then reads or explains in its own words.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# An escape in the surrogate range (\ud800-\udfff), valid pairs included; only a text
# with one is walked.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")  # raw: `re` reads the escapes
REPLACEMENT = "\ufffd"


# Digits to "0", everything else to " ": a run of 19 zeros is a run of 19 digits.
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_DIGIT_RUN = b"0" * 19  # -2**63 - 1 and 2**64 have 19 and 20 digits


def loads(text: str) -> Any:
    """`json.loads`, with each lone surrogate replaced by U+FFFD (as Go decodes it)."""
    value = json.loads(text)
    if _SURROGATE_ESCAPE.search(text) is None:
        return value
    return _replace(value)


def loads_utf8(data: bytes) -> Any:
    """`loads(data.decode("utf-8"))`: UnicodeDecodeError for bytes that are not UTF-8.

    orjson reads the bytes without the text being made first when it reads them as
    `json` would (see the module docstring); it refuses every byte sequence that
    strict UTF-8 decoding refuses, and those go the slow way to fail as it does.
    """
    if _LONG_DIGIT_RUN not in data.translate(_DIGITS_ONLY):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return loads(data.decode("utf-8"))


def _replace(value: Any) -> Any:
    # Iterative: a document may nest as deep as json.loads allows.
    root = [value]
    pending: list[tuple[Any, Any]] = [(root, 0)]
    while pending:
        holder, key = pending.pop()
        item = holder[key]
        if isinstance(item, str):
            holder[key] = _LONE_SURROGATE.sub(REPLACEMENT, item)
        elif isinstance(item, list):
            pending.extend((item, k) for k in range(len(item)))
        elif isinstance(item, dict):
            if any(_LONE_SURROGATE.search(k) for k in item):  # rebuilt to keep the order
                fixed = {_LONE_SURROGATE.sub(REPLACEMENT, k): v for k, v in item.items()}
                item.clear()
                item.update(fixed)
            pending.extend((item, k) for k in item)
    return root[0]
