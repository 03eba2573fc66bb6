"""A stand-in rule set for the lint tests: each document lists its own findings.

`x-errors: [[Type, path], …]` and `x-warnings: [[code, path], …]` in a document become
the verdict's findings, `x-crash: true` makes the validator raise, and kinds other than
ResourceClaim/ResourceClaimTemplate are skipped. The shape is the apiVersion's version,
or `parallel` with `x-parallel: true`. This tests reading, locating and reporting
without depending on the real rules; the CLI tests also run the real ones.

Load with `load_fakes()` from a test module (the test folders are not packages).
"""

from __future__ import annotations

from typing import Any

from draguard.schema.advice.claims import Advice
from draguard.schema.model.errors import ErrorType, FieldError
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath, MapKey, Segment
from draguard.schema.validate import Verdict

DRA_KINDS = ("ResourceClaim", "ResourceClaimTemplate")


def fake_validate(obj: Any, *, options: Options) -> Any:
    if obj.get("x-crash"):
        raise RuntimeError("boom")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    kind, api = obj.get("kind"), obj.get("apiVersion")
    namespace = meta.get("namespace", options.default_namespace)
    if kind not in DRA_KINDS:
        return Verdict(kind, api, meta.get("name"), namespace, None, skipped=True,
                       skip_reason="not a ResourceClaim or ResourceClaimTemplate")
    shape = "parallel" if obj.get("x-parallel") else str(api).rpartition("/")[2]
    errors = tuple(FieldError(ErrorType(t), parse_path(p), "v", "fake detail")
                   for t, p in obj.get("x-errors", []))
    if "x-warnings" not in obj:
        return Verdict(kind, api, meta.get("name"), namespace, shape, errors)
    warnings = tuple(Advice(parse_path(p), code, f"fake {code}") for code, p in obj["x-warnings"])
    return Verdict(kind, api, meta.get("name"), namespace, shape, errors, warnings=warnings)


def parse_path(text: str) -> FieldPath:
    """Parse the apiserver's rendering back into a path (`a.b[0][key].c`); tests only."""
    parts: list[Segment] = []
    i = 0
    name = ""
    while i < len(text):
        ch = text[i]
        if ch == ".":
            if name:
                parts.append(name)
            name = ""
        elif ch == "[":
            if name:
                parts.append(name)
            name = ""
            end = text.index("]", i)
            inner = text[i + 1 : end]
            parts.append(int(inner) if inner.isdigit() else MapKey(inner))
            i = end
        else:
            name += ch
        i += 1
    if name:
        parts.append(name)
    return FieldPath(tuple(parts))
