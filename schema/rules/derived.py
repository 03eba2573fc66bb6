"""`derivedAttributes` with DRADerivedAttributes on (alpha from 1.37; issue 17).

The field exists only behind its gate, so these rules see it only when
`Options.feature_gates` turns the gate on (else the strategy drops it first,
`model/gates.py`). What the stored upstream code settles
(staging/src/k8s.io/api/resource/v1/types.go, ExactDeviceRequest / DeviceSubRequest
/ DeviceDerivedAttribute):

- Declarative tags without a lifecycle prefix, so always enforced and, like every
  enforced declarative error, reported after the hand-written ones
  (`rules/declarative.py` puts them in traversal order): the list `+k8s:maxItems=32`;
  `name` `+k8s:required` and `+k8s:format=k8s-resource-fully-qualified-name`;
  `expression` `+k8s:required`. Messages from apimachinery pkg/api/validate
  (required.go: Required with no detail; strfmt.go `ResourceFullyQualifiedName`: the
  C identifier, "prefix: " before the DNS subdomain messages, "prefix must not be
  empty", "name must not be empty", and the missing-slash message).
- The type's documentation: "It is not valid to define a derived attribute that isn't
  used in at least one constraint" (a MatchAttribute or DistinctAttribute constraint).

Not settled by stored code, hence draguard's choice (README "where draguard chose"):
the hand-written error for an unused derived attribute has draguard's words and comes
after every other hand-written error. Not checked at all: compiling the expressions
and their shared cost budget (DeviceClaimDerivedAttributeCELMaxCost, 1,000,000), the
expression length, and name uniqueness (the list is `listType=atomic`, no unique tag;
the hand-written validation was not available to read).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from draguard.schema.model import formats
from draguard.schema.model.errors import FieldError, invalid, required, too_long, too_many
from draguard.schema.model.paths import FieldPath, Segment
from draguard.schema.model.releases import (
    C_IDENTIFIER_MAX,
    DERIVED_ATTRIBUTES_MAX,
    DEVICE_DOMAIN_MAX,
    Release,
)

_Parts = tuple[Segment, ...]

NO_SLASH = "a fully qualified name must be a domain and a name separated by a slash"
UNUSED = ("must be referenced by a matchAttribute or distinctAttribute constraint that "
          "applies to this request")


def check_derived_attributes(
    requests: Sequence[Any], constraints: Sequence[Any], path: _Parts, release: Release
) -> Iterator[FieldError]:
    """Every derived attribute of the claim at `path` (= `spec.devices`): the unused ones
    (hand-written), then the declarative checks (moved into order by the merge)."""
    owners = list(_owners(requests, (*path, "requests")))
    if not owners:
        return
    used = _used_by(constraints)
    for attrs, at, refs in owners:
        for k, attr in enumerate(attrs):
            name = attr.get("name") if isinstance(attr, dict) else None
            if isinstance(name, str) and name and not any((ref, name) in used for ref in refs):
                yield invalid(FieldPath((*at, k, "name")), name, UNUSED)
    for attrs, at, _ in owners:
        yield from _declarative(attrs, at, release)


def _owners(requests: Sequence[Any], path: _Parts) -> Iterator[tuple[list[Any], _Parts, tuple[str, ...]]]:
    """(derivedAttributes, its path, the references a constraint may use for it): the
    request's name for an exact request; parent or `parent/sub` for a subrequest."""
    for i, request in enumerate(requests):
        if not isinstance(request, dict):
            continue
        name = request.get("name", "")
        exactly = request.get("exactly")
        if isinstance(exactly, dict) and isinstance(exactly.get("derivedAttributes"), list):
            at = (*path, i, "exactly", "derivedAttributes")
            yield exactly["derivedAttributes"], at, ("", name)
        subs = request.get("firstAvailable")
        for j, sub in enumerate(subs if isinstance(subs, list) else []):
            if isinstance(sub, dict) and isinstance(sub.get("derivedAttributes"), list):
                at = (*path, i, "firstAvailable", j, "derivedAttributes")
                yield sub["derivedAttributes"], at, ("", name, f"{name}/{sub.get('name', '')}")


def _used_by(constraints: Sequence[Any]) -> set[tuple[str, str]]:
    """(reference, attribute) pairs the constraints name; "" is a constraint without
    `requests`, which applies to every request."""
    used: set[tuple[str, str]] = set()
    for constraint in constraints:
        if not isinstance(constraint, dict):
            continue
        attributes = [constraint.get(key) for key in ("matchAttribute", "distinctAttribute")]
        refs = constraint.get("requests") or [""]
        for attribute in attributes:
            if isinstance(attribute, str):
                used.update((ref, attribute) for ref in refs if isinstance(ref, str))
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
