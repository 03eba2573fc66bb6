"""Field errors as values, with upstream's closed set of types and rendering (§3.1).

Validators yield `FieldError`s; nothing here raises for bad user input. Rendering
lives only in this module so that the CLI, JSON, JUnit, SARIF and the admission
`Status` all print the same text the apiserver prints.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from draguard.schema.model.paths import FieldPath


class ErrorType(StrEnum):
    """Upstream's error types (apimachinery `field.ErrorType`), plus draguard's two."""

    REQUIRED = "Required"
    INVALID = "Invalid"
    DUPLICATE = "Duplicate"
    TOO_MANY = "TooMany"
    TOO_LONG = "TooLong"
    FORBIDDEN = "Forbidden"
    NOT_SUPPORTED = "NotSupported"
    INTERNAL = "InternalError"
    # draguard's own: a field the apiVersion does not have (upstream rejects it while
    # decoding under strict field validation) and a wrong JSON type.
    UNKNOWN = "Unknown"
    MALFORMED = "Malformed"

    @property
    def cause_type(self) -> str:
        """The `details.causes[].reason` the apiserver puts in its Status."""
        return _CAUSE_TYPES[self]


_CAUSE_TYPES = {
    ErrorType.REQUIRED: "FieldValueRequired",
    ErrorType.INVALID: "FieldValueInvalid",
    ErrorType.DUPLICATE: "FieldValueDuplicate",
    ErrorType.TOO_MANY: "FieldValueTooMany",
    ErrorType.TOO_LONG: "FieldValueTooLong",
    ErrorType.FORBIDDEN: "FieldValueForbidden",
    ErrorType.NOT_SUPPORTED: "FieldValueNotSupported",
    ErrorType.INTERNAL: "InternalError",
    ErrorType.UNKNOWN: "FieldValueUnknown",
    ErrorType.MALFORMED: "FieldValueInvalid",
}

_TITLES = {
    ErrorType.REQUIRED: "Required value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.INTERNAL: "Internal error",
    ErrorType.UNKNOWN: "Unknown field",
    ErrorType.MALFORMED: "Malformed value",
}

# Types whose body never shows the value (apimachinery `ErrorBody`).
_VALUELESS = {
    ErrorType.REQUIRED,
    ErrorType.FORBIDDEN,
    ErrorType.TOO_LONG,
    ErrorType.INTERNAL,
    ErrorType.UNKNOWN,
}


class _Omit:
    """Sentinel: the error carries no value (`field.OmitValueType`)."""

    def __reduce__(self) -> str:
        # A copy or an unpickled error (lint --jobs) gets the module's one instance.
        return "OMIT"

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Any = _Omit()


@dataclass(frozen=True, slots=True)
class FieldError:
    """One finding: where (path), what kind (type), the bad value and the detail."""

    type: ErrorType
    path: FieldPath
    value: Any = OMIT
    detail: str = ""

    @property
    def field(self) -> str:
        return str(self.path)

    @property
    def message(self) -> str:
        """The body as the apiserver renders it, e.g. `Invalid value: "x": detail`."""
        return render_body(self)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def with_path(self, path: FieldPath) -> FieldError:
        return FieldError(self.type, path, self.value, self.detail)


def render_body(err: FieldError) -> str:
    title = _TITLES[err.type]
    if err.type in _VALUELESS or err.value is OMIT:
        body = title
    else:
        body = f"{title}: {render_value(err.value)}"
    if err.detail:
        body += f": {err.detail}"
    return body


def render_value(value: Any) -> str:
    """Print a bad value as apimachinery 1.34+ does: scalars bare, strings quoted, rest JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
               "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def go_quote(text: str) -> str:
    """Quote a string like Go's `%q` (used by apimachinery for string values)."""
    out = ['"']
    for ch in text:
        esc = _GO_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def aggregate_message(errors: Sequence[FieldError]) -> str:
    """`ToAggregate().Error()`: one error bare, several in brackets, exact repeats dropped."""
    seen: dict[str, None] = {}
    for err in errors:
        seen.setdefault(str(err), None)
    texts = list(seen)
    if len(texts) == 1:
        return texts[0]
    return "[" + ", ".join(texts) + "]"


# Constructors, named like apimachinery's (`field.Required`, `field.Invalid`, …).

def required(path: FieldPath, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, path, OMIT, detail)


def invalid(path: FieldPath, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, path, value, detail)


def not_supported(path: FieldPath, value: Any, supported: Iterable[str]) -> FieldError:
    quoted = ", ".join(go_quote(s) for s in supported)
    return FieldError(ErrorType.NOT_SUPPORTED, path, value, f"supported values: {quoted}")


def duplicate(path: FieldPath, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, path, value)


def forbidden(path: FieldPath, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, path, OMIT, detail)


def too_long(path: FieldPath, max_length: int) -> FieldError:
    return FieldError(ErrorType.TOO_LONG, path, OMIT, f"may not be more than {max_length} bytes")


def too_many(path: FieldPath, actual: int, max_items: int) -> FieldError:
    noun = "item" if max_items == 1 else "items"
    return FieldError(ErrorType.TOO_MANY, path, actual, f"must have at most {max_items} {noun}")


def internal_error(path: FieldPath, detail: str) -> FieldError:
    return FieldError(ErrorType.INTERNAL, path, OMIT, detail)


def unknown_field(path: FieldPath, detail: str = "") -> FieldError:
    return FieldError(ErrorType.UNKNOWN, path, OMIT, detail)


def malformed(path: FieldPath, detail: str) -> FieldError:
    """A wrong JSON type or unreadable node; the value is not echoed (it may be huge)."""
    return FieldError(ErrorType.MALFORMED, path, OMIT, detail)
