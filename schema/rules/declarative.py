"""1.37's declarative validation where it changes what a user sees (issue 17).

What upstream code settles, and only that:

- The merge (apiserver pkg/registry/rest `ValidateDeclarativelyWithMigrationChecks`,
  apimachinery pkg/api/validate `FilterCoveredHandwrittenErrors`): a hand-written error
  marked CoveredByDeclarative is removed when an enforced beta declarative error of the
  same type, field and origin exists, and the enforced declarative errors are appended
  after every hand-written one.
- What is covered and beta in 1.37 for a claim: `firstAvailable`'s size and uniqueness
  (validation.go passes `sizeCovered, uniquenessCovered` to its `validateSet`; the v1
  types carry `+k8s:beta(since: "1.37")=+k8s:maxItems=8` and the list-map uniqueness
  on `name`, generated in v1 zz_generated.validations.go as MaxItems and Unique).
- Messages: MaxItems gives the same `Too many: n: must have at most 8 items`; Unique
  reports the duplicate item itself, which apimachinery's field.Error prints as JSON
  (the versioned struct: `name`, `deviceClassName`, then the `omitempty` fields that
  are set).

Applied to every version: declarative validation runs on the object converted to the
request's version, and upstream's equivalence test (pkg/registry/resource/resourceclaim
declarative_validation_test.go) checks hand-written against declarative errors for
v1beta1, v1beta2 and v1 alike, which fails unless all three carry the rule. Their
DeviceSubRequest has the same fields in the same order.
"""

from __future__ import annotations

from typing import Any

from draguard.schema.model.errors import ErrorType, FieldError
from draguard.schema.model.paths import FieldPath

# DeviceSubRequest's fields in Go order; `name` and `deviceClassName` have no omitempty.
_SUB_FIELDS = ("name", "deviceClassName", "selectors", "allocationMode", "count",
               "tolerations", "capacity")
_ALWAYS = frozenset({"name", "deviceClassName"})
_TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")


def merge_declarative(
    errors: list[FieldError], spec: dict[str, Any], spec_path: FieldPath
) -> list[FieldError]:
    """The hand-written spec errors as a 1.37 apiserver returns them: the covered ones
    moved after the rest, in their own order, as the declarative rules word them."""
    base = len(spec_path.parts)
    kept: list[FieldError] = []
    moved: list[FieldError] = []
    for err in errors:
        rest = err.path.parts[base:]
        if _covered(err, rest):
            moved.append(_declarative(err, rest, spec))
        else:
            kept.append(err)
    return kept + moved if moved else errors


def _covered(err: FieldError, rest: tuple[Any, ...]) -> bool:
    """TooMany on `devices.requests[i].firstAvailable`, Duplicate on one of its items."""
    if len(rest) < 4 or rest[:2] != ("devices", "requests") or rest[3] != "firstAvailable":
        return False
    if err.type is ErrorType.TOO_MANY:
        return len(rest) == 4
    return err.type is ErrorType.DUPLICATE and len(rest) == 5 and isinstance(rest[4], int)


def _declarative(err: FieldError, rest: tuple[Any, ...], spec: dict[str, Any]) -> FieldError:
    if err.type is not ErrorType.DUPLICATE:
        return err
    try:
        sub = spec["devices"]["requests"][rest[2]]["firstAvailable"][rest[4]]
    except (KeyError, IndexError, TypeError):
        return err
    return FieldError(err.type, err.path, _go_json(sub), err.detail)


def _go_json(sub: Any) -> Any:
    """The subrequest as encoding/json writes the v1 struct (field order, omitempty)."""
    if not isinstance(sub, dict):
        return sub
    out: dict[str, Any] = {}
    for key in _SUB_FIELDS:
        value = sub.get(key)
        if key in _ALWAYS:
            out[key] = value if value is not None else ""
        elif value not in (None, "", 0, [], {}):
            out[key] = _tolerations(value) if key == "tolerations" else value
    return out


def _tolerations(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    return [{k: t[k] for k in _TOLERATION_FIELDS if t.get(k) not in (None, "")}
            if isinstance(t, dict) else t for t in value]
