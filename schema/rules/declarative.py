"""1.37's declarative validation where it changes what a user sees (issue 17).

What upstream code settles, and only that:

- The merge (apiserver pkg/registry/rest `ValidateDeclarativelyWithMigrationChecks`,
  apimachinery pkg/api/validate `FilterCoveredHandwrittenErrors`): a hand-written error
  marked CoveredByDeclarative is removed when an enforced beta declarative error of the
  same type, field and origin exists, and the enforced declarative errors are appended
  after every hand-written one, in the order the generated code walks the object
  (a list's maxItems, then its uniqueness, then each item; struct fields in Go order).
- What is covered (pkg/apis/resource/validation/validation.go) and tagged
  `+k8s:beta(since: "1.37")=` (staging/src/k8s.io/api/resource/v1/types.go) for a claim
  spec: maxItems of `requests` (32), `firstAvailable` (8), `selectors` (32, exactly and
  subrequest), `constraints` (32), `config` (32) and of both `requests` reference lists
  (32); uniqueness of `requests` and `firstAvailable` by name (list-map) and of the
  reference lists (set); the subrequest's `deviceClassName` (Required, and its
  `k8s-long-name` format, whose messages are content.IsDNS1123Subdomain's, the
  hand-written ones); a toleration's key (`k8s-label-key`, content.IsLabelKey: the
  hand-written IsQualifiedName messages, "a valid label key" for several slashes); the
  enums of `allocationMode` and of a toleration's `operator` and `effect` (their types
  carry `+k8s:enum`; validation.go marks those NotSupported errors covered).
- Messages (apimachinery pkg/api/validate): MaxItems is field.TooMany, the same
  words; Enum is field.NotSupported with the values sorted, the same words;
  RequiredValue is field.Required with no detail; Unique on a set reports the string,
  the same words, while on a list-map it reports the duplicate item itself, which
  field.Error prints as JSON (the versioned struct in Go field order, omitempty fields
  left out when empty).

Applied to every version: declarative validation runs on the object converted to the
request's version, and upstream's equivalence test (pkg/registry/resource/resourceclaim
declarative_validation_test.go) checks hand-written against declarative errors for
v1beta1, v1beta2 and v1 alike, which fails unless all three carry the rule. Their
DeviceSubRequest has the same fields in the same order; v1beta1's DeviceRequest is
flat (the exact request's fields and `firstAvailable` side by side), and a duplicate
request in v1beta1 prints that struct.

Not reproduced, because the stored code does not date it: `k8s-resource-fully-
qualified-name` on matchAttribute (covered in validation.go): two stored strfmt.go
versions differ (one with the unmerged extra-slash fix, one with the TODO that 1.37
matches), and its prefix check (`LongName`, "prefix: " + content.IsDNS1123Subdomain)
does not lower-case as the hand-written `validateDriverName` does, so an upper-case
domain would be refused only by it; the opaque `driver` (RequiredCovered,
FormatCovered; `+k8s:required`, `+k8s:format=k8s-long-name-caseless`:
content.IsDNS1123SubdomainCaseless's "an RFC 1123 subdomain must consist of
alphanumeric characters…", verdicts as the hand-written lower-casing check, per
pkg/registry/resource/resourceclaim declarative_validation_test.go; the embedded
DeviceConfiguration keeps the path at `config[i]`, `safe.Value` giving the parent's);
`distinctAttribute`, tagged in the stored types.go but covered neither in the stored
validation.go nor generated in the stored zz_generated.validations.go. Those keep
their hand-written place and words. The stored validation.go and types.go are not
pinned to the release-1.37 branch (the store keeps one version of each).
"""

from __future__ import annotations

from typing import Any

from draguard.schema.model.errors import ErrorType, FieldError
from draguard.schema.model.paths import FieldPath
from draguard.schema.rules.derived import UNUSED

# DeviceSubRequest's fields in Go order; `name` and `deviceClassName` have no omitempty.
_SUB_FIELDS = ("name", "deviceClassName", "selectors", "allocationMode", "count",
               "tolerations", "capacity", "derivedAttributes")
_ALWAYS = frozenset({"name", "deviceClassName"})
_TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")


def merge_declarative(
    errors: list[FieldError], spec: dict[str, Any], spec_path: FieldPath, api_version: str = "v1"
) -> list[FieldError]:
    """The hand-written spec errors as a 1.37 apiserver returns them: the covered ones
    moved after the rest, in the generated code's traversal order, as the declarative
    rules word them."""
    base = len(spec_path.parts)
    kept: list[FieldError] = []
    moved: list[tuple[tuple[Any, ...], FieldError]] = []
    for err in errors:
        rest = err.path.parts[base:]
        if _covered(err, rest):
            moved.append((_traversal_key(rest), _declarative(err, rest, spec, api_version)))
        else:
            kept.append(err)
    if not moved:
        return errors
    # Stable: errors at the same place keep their hand-written order.
    moved.sort(key=lambda pair: pair[0])
    return kept + [err for _, err in moved]


# Where each covered check sits, as a pattern over the path below `spec` ("#" is an
# index), by error type. From validation.go's covered calls (validateSet/validateSlice
# with sizeCovered/uniquenessCovered, validateDeviceClass(...).MarkCoveredByDeclarative()
# for a subrequest, the NotSupported of validateDeviceAllocationMode and of a
# toleration's operator and effect in validateDeviceToleration) matched with the v1
# tags (`+k8s:beta(since: "1.37")=` maxItems, unique=map/set, required, enum on
# DeviceAllocationMode, DeviceTolerationOperator, DeviceTaintEffect). Left out on
# purpose, see the module docstring: the formats and the opaque driver.
_REQ = ("devices", "requests", "#")
_SUB = (*_REQ, "firstAvailable", "#")
_COVERED: dict[ErrorType, frozenset[tuple[Any, ...]]] = {
    ErrorType.TOO_MANY: frozenset({
        ("devices", "requests"),
        (*_REQ, "firstAvailable"),
        (*_REQ, "exactly", "selectors"),
        (*_SUB, "selectors"),
        ("devices", "constraints"),
        ("devices", "constraints", "#", "requests"),
        ("devices", "config"),
        ("devices", "config", "#", "requests"),
    }),
    ErrorType.DUPLICATE: frozenset({
        _REQ,
        _SUB,
        ("devices", "constraints", "#", "requests", "#"),
        ("devices", "config", "#", "requests", "#"),
    }),
    ErrorType.NOT_SUPPORTED: frozenset({
        (*_REQ, "exactly", "allocationMode"),
        (*_SUB, "allocationMode"),
        (*_REQ, "exactly", "tolerations", "#", "operator"),
        (*_REQ, "exactly", "tolerations", "#", "effect"),
        (*_SUB, "tolerations", "#", "operator"),
        (*_SUB, "tolerations", "#", "effect"),
    }),
    ErrorType.REQUIRED: frozenset({(*_SUB, "deviceClassName")}),
}
# derivedAttributes' declarative checks (unprefixed tags, always enforced; see
# rules/derived.py): not covering anything, but placed the same way.
_DERIVED = ((*_REQ, "exactly", "derivedAttributes"), (*_SUB, "derivedAttributes"))
_COVERED[ErrorType.TOO_MANY] |= frozenset(_DERIVED)
_COVERED[ErrorType.REQUIRED] |= frozenset(
    (*at, "#", key) for at in _DERIVED for key in ("name", "expression"))
_COVERED[ErrorType.TOO_LONG] = frozenset((*at, "#", "name") for at in _DERIVED)
# A subrequest's deviceClassName format (`+k8s:format=k8s-long-name`, validate.LongName):
# content.IsDNS1123Subdomain gives the hand-written messages, one Invalid each.
_COVERED[ErrorType.INVALID] = _COVERED[ErrorType.TOO_LONG] | {(*_SUB, "deviceClassName")}
# A toleration's key (`+k8s:format=k8s-label-key`, validate.LabelKey): content.IsLabelKey
# words it as the hand-written IsQualifiedName, but for a name with several slashes,
# "a valid label key …" (content/kube.go).
_KEYS = ((*_REQ, "exactly", "tolerations", "#", "key"), (*_SUB, "tolerations", "#", "key"))
_COVERED[ErrorType.INVALID] |= frozenset(_KEYS)


def _covered(err: FieldError, rest: tuple[Any, ...]) -> bool:
    if err.detail == UNUSED:  # derived.py's hand-written check shares the name's path
        return False
    shape = tuple("#" if isinstance(part, int) else part for part in rest)
    return shape in _COVERED.get(err.type, frozenset())


# Go field order of the v1 structs on the way down: validation-gen visits the fields
# of a struct in this order, and for a list its maxItems, then its uniqueness, then
# each item (zz_generated.validations.go, Validate_DeviceClaim and below).
_FIELD_ORDER = {name: i for i, name in enumerate((
    "devices", "requests", "constraints", "config", "name", "exactly", "firstAvailable",
    "deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations",
    "capacity", "matchAttribute", "distinctAttribute", "opaque", "driver",
    "key", "operator", "value", "effect", "tolerationSeconds", "derivedAttributes",
    "expression",
))}


def _traversal_key(rest: tuple[Any, ...]) -> tuple[Any, ...]:
    """Sort key for the generated code's order: a list's own errors (a prefix) first,
    then a Duplicate at `[i]` (tag 0) before anything inside any item (tag 1)."""
    key: list[Any] = []
    for n, part in enumerate(rest):
        if isinstance(part, int):
            key.append((0 if n == len(rest) - 1 else 1, part))
        else:
            key.append((2, _FIELD_ORDER.get(part, len(_FIELD_ORDER))))
    return tuple(key)


_QUALIFIED = "a qualified name "


def _declarative(
    err: FieldError, rest: tuple[Any, ...], spec: dict[str, Any], api_version: str
) -> FieldError:
    """The declarative wording: Required has no detail (validate.RequiredValue); a
    Duplicate in a list-map carries the whole item, which field.Error prints as JSON
    (the versioned struct). TooMany, NotSupported and a set's Duplicate read the same."""
    if err.type is ErrorType.REQUIRED:
        return FieldError(err.type, err.path, err.value, "")
    if err.type is ErrorType.INVALID and rest[-1] == "key" and err.detail.startswith(_QUALIFIED):
        return FieldError(err.type, err.path, err.value,
                          "a valid label key " + err.detail[len(_QUALIFIED):])
    if err.type is not ErrorType.DUPLICATE or (rest[-2] == "requests" and len(rest) > 3):
        return err
    try:
        item = spec["devices"]["requests"][rest[2]]
        if len(rest) == 5:
            return FieldError(err.type, err.path, _go_json(item["firstAvailable"][rest[4]]),
                              err.detail)
    except (KeyError, IndexError, TypeError):
        return err
    as_json = _request_json_v1beta1 if api_version == "v1beta1" else _request_json
    return FieldError(err.type, err.path, as_json(item), err.detail)


# ExactDeviceRequest's fields in Go order; only `deviceClassName` lacks omitempty.
_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                 "tolerations", "capacity", "derivedAttributes")


def _request_json(request: Any) -> Any:
    """A v1/v1beta2 DeviceRequest as encoding/json writes it: `name`, then `exactly`
    or `firstAvailable` (omitempty)."""
    if not isinstance(request, dict):
        return request
    out: dict[str, Any] = {"name": request.get("name") or ""}
    exactly = request.get("exactly")
    if isinstance(exactly, dict):
        out["exactly"] = _struct_json(exactly, _EXACT_FIELDS, frozenset({"deviceClassName"}))
    subs = request.get("firstAvailable")
    if isinstance(subs, list) and subs:
        out["firstAvailable"] = [_go_json(sub) for sub in subs]
    return out


# v1beta1's flat DeviceRequest in Go order (staging/src/k8s.io/api/resource/v1beta1/
# types.go): the exact request's fields with `firstAvailable` among them;
# `deviceClassName` has no omitempty there either.
_V1BETA1_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                   "firstAvailable", "tolerations", "capacity", "derivedAttributes")


def _request_json_v1beta1(request: Any) -> Any:
    """A v1beta1 DeviceRequest as encoding/json writes it, from the hub request."""
    if not isinstance(request, dict):
        return request
    exactly = request.get("exactly")
    flat: dict[str, Any] = dict(exactly) if isinstance(exactly, dict) else {}
    subs = request.get("firstAvailable")
    if isinstance(subs, list) and subs:
        flat["firstAvailable"] = [_go_json(sub) for sub in subs]
    out: dict[str, Any] = {"name": request.get("name") or ""}
    out.update(_struct_json(flat, _V1BETA1_FIELDS, frozenset({"deviceClassName"})))
    return out


def _struct_json(obj: dict[str, Any], fields: tuple[str, ...], always: frozenset[str]) -> Any:
    out: dict[str, Any] = {}
    for key in fields:
        value = obj.get(key)
        if key in always:
            out[key] = value if value is not None else ""
        elif isinstance(value, bool) or value not in (None, "", 0, [], {}):
            # `adminAccess` is a *bool: false is written, only nil is omitted.
            out[key] = _tolerations(value) if key == "tolerations" else value
    return out


def _go_json(sub: Any) -> Any:
    """The subrequest as encoding/json writes the v1 struct (field order, omitempty)."""
    if not isinstance(sub, dict):
        return sub
    return _struct_json(sub, _SUB_FIELDS, _ALWAYS)


def _tolerations(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    return [{k: t[k] for k in _TOLERATION_FIELDS if t.get(k) not in (None, "")}
            if isinstance(t, dict) else t for t in value]
