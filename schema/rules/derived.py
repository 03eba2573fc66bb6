"""`derivedAttributes` with DRADerivedAttributes on (alpha from 1.37; issue 17).

The field exists only behind its gate, so these rules see it only when the gate is on
(`--feature-gates=DRADerivedAttributes=true`; else the strategy drops it first,
`model/gates.py`). Upstream: staging/src/k8s.io/api/resource/v1/types.go
(ExactDeviceRequest / DeviceSubRequest / DeviceDerivedAttribute) and the hand-written
pkg/apis/resource/validation/validation.go (`validateDeviceDerivedAttributes`,
`isAttributeUsedByConstraint`, `gatherConstraintAttributes`, `validateCELExpression`,
`validateDeviceClaim`'s total cost check; kubernetes master at 009801d9):

- Hand-written, in traversal order (`DerivedChecks.check`, called by rules/spec.py
  between a request's selectors and its allocation mode): per item, a non-empty name
  that no matchAttribute/distinctAttribute constraint targeting the request uses
  (a constraint without `requests`, the request's name, or for a subrequest also its
  parent's name) is Invalid; a non-empty expression is compiled like a selector but
  must give a primitive scalar (`cel/check.py check_derived_expression`); then a
  Duplicate per repeated name (`validateSet` keyed by name, not covered by a
  declarative tag). After requests, constraints and config, the summed cost of every
  compiled expression over DeviceClaimDerivedAttributeCELMaxCost (1,000,000) is
  Forbidden at `spec.devices`.
- Declarative tags without a lifecycle prefix, so always enforced and, like every
  enforced declarative error, reported after the hand-written ones
  (`rules/declarative.py` puts them in traversal order): the list `+k8s:maxItems=32`;
  `name` `+k8s:required` and `+k8s:format=k8s-resource-fully-qualified-name`;
  `expression` `+k8s:required`. Messages from apimachinery pkg/api/validate
  (required.go: Required with no detail; strfmt.go `ResourceFullyQualifiedName`: the
  C identifier, "prefix: " before the DNS subdomain messages, "prefix must not be
  empty", "name must not be empty", and the missing-slash message).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from draguard.schema.model import formats
from draguard.schema.model.errors import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    required,
    too_long,
    too_many,
)
from draguard.schema.model.paths import FieldPath, Segment
from draguard.schema.model.releases import (
    C_IDENTIFIER_MAX,
    DERIVED_ATTRIBUTES_COST_MAX,
    DERIVED_ATTRIBUTES_MAX,
    DEVICE_DOMAIN_MAX,
    Release,
)

_Parts = tuple[Segment, ...]

NO_SLASH = "a fully qualified name must be a domain and a name separated by a slash"
UNUSED = ("must be referenced by at least one matchAttribute or distinctAttribute "
          "constraint targeting this request")
TOTAL_COST = ("too complex, total cost of derived attribute CEL expressions in the claim "
              "exceeds cost limit")


class DerivedChecks:
    """The hand-written checks of one claim's derived attributes: made per claim, as
    upstream's `deviceValidationOptions` (the constraints' attributes, the cost total)."""

    def __init__(self, constraints: Sequence[Any], release: Release) -> None:
        self.used = _used_by(constraints)
        self.release = release
        self.total_cost = 0

    def check(self, attrs: list[Any], at: _Parts, request: str) -> Iterator[FieldError]:
        """`validateDeviceDerivedAttributes` for the list at `at` of `request` (its name,
        or `parent/sub`): each item, then a Duplicate per repeated name."""
        seen: set[Any] = set()
        repeated: list[tuple[int, Any]] = []
        for k, attr in enumerate(attrs):
            if not isinstance(attr, dict):
                continue  # malformed, already reported while reading
            yield from self._item(attr, (*at, k), request)
            name = attr.get("name", "")
            if name in seen:
                repeated.append((k, name))
            seen.add(name)
        for k, name in repeated:
            yield duplicate(FieldPath((*at, k)), name)

    def _item(self, attr: dict[str, Any], at: _Parts, request: str) -> Iterator[FieldError]:
        name, expression = attr.get("name", ""), attr.get("expression", "")
        if isinstance(name, str) and name and not self._is_used(name, request):
            yield invalid(FieldPath((*at, "name")), name, UNUSED)
        if isinstance(expression, str) and expression:
            # CEL (and protobuf under it) is loaded only when a claim has an expression.
            from draguard.schema.cel.check import check_derived_expression

            found, cost = check_derived_expression(
                expression, FieldPath((*at, "expression")), release=self.release
            )
            self.total_cost += cost
            yield from found

    def _is_used(self, name: str, request: str) -> bool:
        """`isAttributeUsedByConstraint`: a constraint for all requests, for this one,
        or (for `parent/sub`) for its parent."""
        parent, slash, _ = request.partition("/")
        refs = ("", request, parent) if slash else ("", request)
        return any(name in self.used.get(ref, ()) for ref in refs)

    def check_total(self, path: _Parts) -> Iterator[FieldError]:
        """After requests, constraints and config: the claim's summed cost."""
        if self.total_cost > DERIVED_ATTRIBUTES_COST_MAX:
            yield forbidden(FieldPath(path), TOTAL_COST)


def has_derived_attributes(requests: Sequence[Any]) -> bool:
    """Whether any request or subrequest carries a derivedAttributes list (`_owners`
    finds them; this asks every claim of a release with the field, so plain loops)."""
    for request in requests:
        if not isinstance(request, dict):
            continue
        exactly = request.get("exactly")
        if isinstance(exactly, dict) and isinstance(exactly.get("derivedAttributes"), list):
            return True
        subs = request.get("firstAvailable")
        for sub in subs if isinstance(subs, list) else ():
            if isinstance(sub, dict) and isinstance(sub.get("derivedAttributes"), list):
                return True
    return False


def check_declarative(requests: Sequence[Any], path: _Parts, release: Release) -> Iterator[FieldError]:
    """The declarative checks of every derived attribute of the claim at `path`
    (= `spec.devices`), moved into order by the merge (rules/declarative.py)."""
    for attrs, at in _owners(requests, (*path, "requests")):
        yield from _declarative(attrs, at, release)


def _owners(requests: Sequence[Any], path: _Parts) -> Iterator[tuple[list[Any], _Parts]]:
    """(derivedAttributes, its path) of each exact request and subrequest."""
    for i, request in enumerate(requests):
        if not isinstance(request, dict):
            continue
        exactly = request.get("exactly")
        if isinstance(exactly, dict) and isinstance(exactly.get("derivedAttributes"), list):
            yield exactly["derivedAttributes"], (*path, i, "exactly", "derivedAttributes")
        subs = request.get("firstAvailable")
        for j, sub in enumerate(subs if isinstance(subs, list) else []):
            if isinstance(sub, dict) and isinstance(sub.get("derivedAttributes"), list):
                yield sub["derivedAttributes"], (*path, i, "firstAvailable", j, "derivedAttributes")


def _used_by(constraints: Sequence[Any]) -> dict[str, set[str]]:
    """`gatherConstraintAttributes`: reference → attribute names its constraints use;
    "" for a constraint without `requests` (it applies to every request). With both
    set, matchAttribute is the one taken (as the constraint's own validation does)."""
    used: dict[str, set[str]] = {}
    for constraint in constraints:
        if not isinstance(constraint, dict):
            continue
        attribute = constraint.get("matchAttribute")
        if attribute is None:
            attribute = constraint.get("distinctAttribute")
        if not isinstance(attribute, str):
            continue
        refs = constraint.get("requests") or [""]
        for ref in refs if isinstance(refs, list) else []:
            if isinstance(ref, str):
                used.setdefault(ref, set()).add(attribute)
    return used


def _declarative(attrs: list[Any], at: _Parts, release: Release) -> Iterator[FieldError]:
    """maxItems (which stops the items, as the generated code returns early), then per
    item `name` (required, format) and `expression` (required)."""
    if len(attrs) > DERIVED_ATTRIBUTES_MAX:
        yield too_many(FieldPath(at), len(attrs), DERIVED_ATTRIBUTES_MAX)
        return
    for k, attr in enumerate(attrs):
        if not isinstance(attr, dict):
            continue  # malformed, already reported while reading
        name = attr.get("name", "")
        if not name:
            yield required(FieldPath((*at, k, "name")))
        elif isinstance(name, str):
            yield from _fully_qualified_name(name, (*at, k, "name"), release)
        if not attr.get("expression"):
            yield required(FieldPath((*at, k, "expression")))


def _fully_qualified_name(name: str, path: _Parts, release: Release) -> Iterator[FieldError]:
    """apimachinery validate `ResourceFullyQualifiedName` (strfmt.go)."""
    at = FieldPath(path)
    parts = name.split("/")
    if len(parts) == 1:
        yield from _c_identifier(name, at)
        yield invalid(at, name, NO_SLASH)
    elif len(parts) == 2:
        prefix, ident = parts
        if not prefix:
            yield invalid(at, "", "prefix must not be empty")
        else:
            if len(prefix) > DEVICE_DOMAIN_MAX:
                yield too_long(at, DEVICE_DOMAIN_MAX)
            if not formats.is_dns1123_subdomain(prefix):
                for msg in formats.dns1123_subdomain_messages(prefix):
                    yield invalid(at, prefix, f"prefix: {msg}")
        if not ident:
            yield invalid(at, "", "name must not be empty")
        else:
            yield from _c_identifier(ident, at)
    elif release.rejects_extra_slashes:
        # No release has it yet (Release.rejects_extra_slashes); the stored strfmt.go
        # with the fix words it so.
        yield invalid(at, name, "must not contain more than one slash")


def _c_identifier(ident: str, at: FieldPath) -> Iterator[FieldError]:
    if len(ident) > C_IDENTIFIER_MAX:
        yield too_long(at, C_IDENTIFIER_MAX)
    if not formats.c_identifier_matches(ident):
        yield invalid(at, ident, formats.C_IDENTIFIER_MSG)
