"""JSON text → values as the apiserver's decoder sees them.

Python's `json` turns an escaped lone UTF-16 surrogate (`"\\ud800"`) into a lone
surrogate code point, a string that cannot be encoded as UTF-8 again; Go's
`encoding/json`, which decodes for the apiserver and kubectl, replaces it with U+FFFD.
So does `loads` here, so that every later step (sizes of annotations, messages, the
JSON output) sees the same text as upstream and never fails on it.
"""

from __future__ import annotations

import json
import re
from typing import Any

# An escape in the surrogate range (\ud800-\udfff), valid pairs included; only a text
# with one is walked.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def loads(text: str) -> Any:
    """`json.loads`, with each lone surrogate replaced by U+FFFD (as Go decodes it)."""
    value = json.loads(text)
    if _SURROGATE_ESCAPE.search(text) is None:
        return value
    return _replace(value)


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
