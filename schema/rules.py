"""The claim-spec rules of the apiserver (`upstream-rules.md` §3.3), on the hub shape.

One `validate_*` generator per API type; each caller hands its child path down, so
every error is complete when made (the apimachinery model). Input is the clean,
defaulted, converted and gate-dropped internal spec: types are already right, so
rules only check values. The order of errors is upstream's (§3.4).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from draguard.schema import formats
from draguard.schema.cel import check_selector
from draguard.schema.errors import (
    FieldError,
    duplicate,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from draguard.schema.paths import FieldPath
from draguard.schema.releases import Release

# §2.4 constants.
REQUESTS_MAX = 32
FIRST_AVAILABLE_MAX = 8
SELECTORS_MAX = 32
CONSTRAINTS_MAX = 32
CONFIG_MAX = 32
PARAMETERS_MAX = 10 * 1024

ONE_OF_REQUIRED = "exactly one of `exactly` or `firstAvailable` is required"
ONE_OF_MULTIPLE = ONE_OF_REQUIRED + ", but multiple fields are set"
BAD_REFERENCE = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)
ALLOCATION_MODES = ("All", "ExactCount")
OPERATORS = ("Equal", "Exists")

T = TypeVar("T")
Check = Callable[[T, FieldPath], Iterator[FieldError]]
# name → None (exact request) or the set of its subrequest names (rule 19).
RequestNames = dict[str, frozenset[str] | None]


class Rules:
    """The rule set bound to one release (messages and paths differ between releases)."""

    def __init__(self, release: Release) -> None:
        self.release = release

    # -- list helpers ------------------------------------------------------------------

    def validate_list(
        self, items: Sequence[T | None], max_items: int, check: Check[T], path: FieldPath
    ) -> Iterator[FieldError]:
        """`validateSlice`: TooMany short-circuits in 1.35+, else is appended after the items."""
        over = len(items) > max_items
        if over and self.release.short_circuit_too_many:
            yield too_many(path, len(items), max_items)
            return
        for i, item in enumerate(items):
            if item is not None:  # None: a malformed item, already reported while reading
                yield from check(item, path.index(i))
        if over:
            yield too_many(path, len(items), max_items)

    def validate_set(
        self,
        items: Sequence[T | None],
        max_items: int,
        check: Check[T],
        key: Callable[[T], Any],
        path: FieldPath,
        *,
        key_field: str | None = None,
    ) -> Iterator[FieldError]:
        """`validateSet`: like a list, plus a Duplicate for each repeated key (rules 4, 9, 17).

        Duplicates follow all item errors; their path is the list index since 1.35
        (before: `[i].<key_field>`, rule 4 version note).
        """
        over = len(items) > max_items
        if over and self.release.short_circuit_too_many:
            yield too_many(path, len(items), max_items)
            return
        for i, item in enumerate(items):
            if item is not None:  # None: a malformed item, already reported while reading
                yield from check(item, path.index(i))
        seen: set[Any] = set()
        for i, item in enumerate(items):
            if item is None:
                continue
            k = key(item)
            if k in seen:
                dup_path = path.index(i)
                if key_field and self.release.duplicate_at_name:
                    dup_path = dup_path.child(key_field)
                yield duplicate(dup_path, k)
            seen.add(k)
        if over:
            yield too_many(path, len(items), max_items)

    # -- claim spec ----------------------------------------------------------------------

    def validate_claim_spec(self, spec: dict[str, Any], path: FieldPath) -> Iterator[FieldError]:
        devices = spec.get("devices", {})
        yield from self.validate_device_claim(devices, path.child("devices"))

    def validate_device_claim(
        self, devices: dict[str, Any], path: FieldPath
    ) -> Iterator[FieldError]:
        requests = _dict_items(devices.get("requests"))
        names = gather_request_names(requests)
        yield from self.validate_set(
            requests,
            REQUESTS_MAX,
            self.validate_request,
            lambda r: r.get("name", ""),
            path.child("requests"),
            key_field="name",
        )
        yield from self.validate_list(
            _dict_items(devices.get("constraints")),
            CONSTRAINTS_MAX,
            lambda c, p: self.validate_constraint(c, p, names),
            path.child("constraints"),
        )
        yield from self.validate_list(
            _dict_items(devices.get("config")),
            CONFIG_MAX,
            lambda c, p: self.validate_config(c, p, names),
            path.child("config"),
        )

    # -- requests (rules 6–13) -----------------------------------------------------------

    def validate_request(self, request: dict[str, Any], path: FieldPath) -> Iterator[FieldError]:
        yield from validate_request_name(request.get("name", ""), path.child("name"))
        subrequests = _dict_items(request.get("firstAvailable"))
        exactly = request.get("exactly")
        has_first, has_exact = bool(subrequests), isinstance(exactly, dict)
        if has_first and has_exact:  # rule 7: neither branch's content is validated
            yield invalid(path, None, ONE_OF_MULTIPLE)
        elif not has_first and not has_exact:
            yield required(path, ONE_OF_REQUIRED)
        elif isinstance(exactly, dict):
            yield from self.validate_exact(exactly, path.child("exactly"))
        else:
            yield from self.validate_set(
                subrequests,
                FIRST_AVAILABLE_MAX,
                self.validate_subrequest,
                lambda s: s.get("name", ""),
                path.child("firstAvailable"),
                key_field="name",
            )

    def validate_exact(self, exact: dict[str, Any], path: FieldPath) -> Iterator[FieldError]:
        """Rules 11–13 (adminAccess and capacity have no value rules)."""
        yield from validate_device_class(
            exact.get("deviceClassName", ""), path.child("deviceClassName")
        )
        yield from self.validate_device_fields(exact, path)

    def validate_subrequest(self, sub: dict[str, Any], path: FieldPath) -> Iterator[FieldError]:
        """Rule 10."""
        yield from validate_request_name(sub.get("name", ""), path.child("name"))
        yield from validate_device_class(
            sub.get("deviceClassName", ""), path.child("deviceClassName")
        )
        yield from self.validate_device_fields(sub, path)

    def validate_device_fields(
        self, request: dict[str, Any], path: FieldPath
    ) -> Iterator[FieldError]:
        """Selectors, allocation mode/count and tolerations, shared by exact and sub requests."""
        yield from self.validate_list(
            _dict_items(request.get("selectors")),
            SELECTORS_MAX,
            self.validate_selector,
            path.child("selectors"),
        )
        yield from validate_allocation(
            request.get("allocationMode", ""), request.get("count", 0), path
        )
        for t, toleration in enumerate(_dict_items(request.get("tolerations"))):
            if toleration is not None:
                yield from self.validate_toleration(toleration, path.child("tolerations").index(t))

    def validate_selector(self, selector: dict[str, Any], path: FieldPath) -> Iterator[FieldError]:
        """Rule 14: a selector needs `cel`; its expression is compiled in the DRA environment."""
        cel = selector.get("cel")
        if not isinstance(cel, dict):
            yield required(path.child("cel"))
            return
        expression = cel.get("expression", "")
        yield from check_selector(expression, path.child("cel", "expression"), release=self.release)

    def validate_toleration(
        self, toleration: dict[str, Any], path: FieldPath
    ) -> Iterator[FieldError]:
        """Rule 16 (an empty key is allowed with any operator; tolerationSeconds unchecked)."""
        key = toleration.get("key", "")
        if key:
            for msg in formats.qualified_name_messages(key):
                yield invalid(path.child("key"), key, msg)
        operator, value = toleration.get("operator", ""), toleration.get("value", "")
        if operator == "Exists":
            if value:
                yield invalid(path.child("value"), value, "must be empty for operator `Exists`")
        elif operator == "Equal":
            for msg in formats.label_value_messages(value):
                yield invalid(path.child("value"), value, msg)
        elif operator == "":
            yield required(path.child("operator"))
        else:
            yield not_supported(path.child("operator"), operator, OPERATORS)
        effect = toleration.get("effect", "")
        if effect and effect not in self.release.toleration_effects:
            yield not_supported(path.child("effect"), effect, self.release.toleration_effects)

    # -- constraints and config (rules 17–21) ----------------------------------------------

    def validate_references(
        self, refs: list[Any], path: FieldPath, names: RequestNames
    ) -> Iterator[FieldError]:
        yield from self.validate_set(
            [r if isinstance(r, str) else None for r in refs],
            REQUESTS_MAX,
            lambda ref, p: validate_reference(ref, p, names),
            lambda ref: ref,
            path,
        )

    def validate_constraint(
        self, constraint: dict[str, Any], path: FieldPath, names: RequestNames
    ) -> Iterator[FieldError]:
        yield from self.validate_references(
            constraint.get("requests", []), path.child("requests"), names
        )
        if "matchAttribute" in constraint:  # rule 18: distinctAttribute is then ignored
            yield from self.validate_qualified_name(
                constraint["matchAttribute"], path.child("matchAttribute")
            )
        elif "distinctAttribute" in constraint:
            yield from self.validate_qualified_name(
                constraint["distinctAttribute"], path.child("distinctAttribute")
            )
        elif self.release.consumable_capacity:
            # (sic) upstream says "multiple" although none is set (rule 18).
            yield required(
                path,
                'exactly one of "matchAttribute" or "distinctAttribute" is required, '
                "but multiple fields are set",
            )
        else:
            yield required(path.child("matchAttribute"))

    def validate_config(
        self, config: dict[str, Any], path: FieldPath, names: RequestNames
    ) -> Iterator[FieldError]:
        """Rule 21."""
        yield from self.validate_references(
            config.get("requests", []), path.child("requests"), names
        )
        opaque = config.get("opaque")
        if not isinstance(opaque, dict):
            yield required(path.child("opaque"))
            return
        yield from validate_driver_name(opaque.get("driver", ""), path.child("opaque", "driver"))
        yield from validate_parameters(opaque, path.child("opaque", "parameters"))

    def validate_qualified_name(self, name: str, path: FieldPath) -> Iterator[FieldError]:
        """Rule 20: `domain/name` for matchAttribute and distinctAttribute.

        Before 1.35 (S2, S4) an empty name or part was `Required` and a missing domain
        "must include a domain"; from 1.35 all are `Invalid` with the newer texts.
        """
        new = self.release.new_qualified_name_messages
        if not name and not new:
            yield required(path, "name required")
            return
        parts = name.split("/")
        if len(parts) == 1:
            yield from validate_c_identifier(name, path)
            detail = "a fully qualified name must be a domain and a name separated by a slash"
            yield invalid(path, name, detail if new else "must include a domain")
        elif len(parts) == 2:
            domain, ident = parts
            if not domain:
                yield _empty_part(path, "the domain must not be empty", new=new)
            else:
                yield from validate_driver_name(domain, path)
            if not ident:
                yield _empty_part(path, "the name must not be empty", new=new)
            else:
                yield from validate_c_identifier(ident, path)
        elif self.release.rejects_extra_slashes:
            yield invalid(path, name, "must not contain more than one slash")


def _empty_part(path: FieldPath, detail: str, *, new: bool) -> FieldError:
    return invalid(path, "", detail) if new else required(path, detail)


# -- format rules shared by several types ------------------------------------------------


def validate_request_name(name: str, path: FieldPath) -> Iterator[FieldError]:
    """Rule 6 / 10a: a DNS label; "" gets the regex message, not Required (§3.2)."""
    for msg in formats.dns1123_label_messages(name):
        yield invalid(path, name, msg)


def validate_device_class(name: str, path: FieldPath) -> Iterator[FieldError]:
    """Rules 10b / 11: required, then a DNS subdomain."""
    if not name:
        yield required(path)
        return
    for msg in formats.dns1123_subdomain_messages(name):
        yield invalid(path, name, msg)


def validate_allocation(mode: str, count: int, path: FieldPath) -> Iterator[FieldError]:
    """Rule 15."""
    if mode == "All":
        if count != 0:
            yield invalid(
                path.child("count"), count, "must not be specified when allocationMode is 'All'"
            )
    elif mode == "ExactCount":
        if count <= 0:
            yield invalid(path.child("count"), count, "must be greater than zero")
    else:
        yield not_supported(path.child("allocationMode"), mode, ALLOCATION_MODES)


def validate_c_identifier(name: str, path: FieldPath) -> Iterator[FieldError]:
    if len(name) > formats.C_IDENTIFIER_MAX:
        yield too_long(path, formats.C_IDENTIFIER_MAX)
    if not formats.c_identifier_matches(name):
        yield invalid(path, name, formats.C_IDENTIFIER_MSG)


def validate_driver_name(name: str, path: FieldPath) -> Iterator[FieldError]:
    """`ValidateCSIDriverName`: ≤ 63, DNS subdomain checked on the lower-cased value (§3.2).

    For "" only Required is reported, as the newest declarative test expects
    (upstream-rules.md §6 open point 2).
    """
    if not name:
        yield required(path)
        return
    if len(name) > formats.DRIVER_NAME_MAX:
        yield too_long(path, formats.DRIVER_NAME_MAX)
    for msg in formats.dns1123_subdomain_messages(name.lower()):
        yield invalid(path, name, msg)


def validate_parameters(opaque: dict[str, Any], path: FieldPath) -> Iterator[FieldError]:
    """Rule 21: present, ≤ 10240 bytes of JSON, and a JSON object."""
    if "parameters" not in opaque or opaque["parameters"] is None:
        yield required(path)
        return
    params = opaque["parameters"]
    # The apiserver measures the raw bytes it received; a compact encoding is what kubectl sends.
    size = len(json.dumps(params, separators=(",", ":"), ensure_ascii=False).encode())
    if size > PARAMETERS_MAX:
        yield too_long(path, PARAMETERS_MAX)
        return
    if not isinstance(params, dict):
        yield invalid(path, "<value omitted>", "must be a valid JSON object")


def validate_reference(ref: str, path: FieldPath, names: RequestNames) -> Iterator[FieldError]:
    """Rule 19: `request` or `request/subrequest`, each segment a DNS label, and it must resolve."""
    segments = ref.split("/")
    if len(segments) > 2:
        yield invalid(path, ref, BAD_REFERENCE)
        return
    for segment in segments:
        yield from validate_request_name(segment, path)
    if not reference_resolves(segments, names):
        yield invalid(path, ref, BAD_REFERENCE)


def reference_resolves(segments: list[str], names: RequestNames) -> bool:
    if segments[0] not in names:
        return False
    if len(segments) == 1:
        return True
    subs = names[segments[0]]
    return subs is not None and segments[1] in subs


def gather_request_names(requests: list[dict[str, Any] | None]) -> RequestNames:
    """Rule 19 lookup table; later duplicates overwrite earlier ones, as upstream's map does."""
    names: RequestNames = {}
    for request in requests:
        if request is None:
            continue
        subs = [s for s in _dict_items(request.get("firstAvailable")) if s is not None]
        names[str(request.get("name", ""))] = (
            frozenset(str(s.get("name", "")) for s in subs) if subs else None
        )
    return names


def _dict_items(value: Any) -> list[dict[str, Any] | None]:
    """List items; a malformed item stays as None so that later indexes stay the user's."""
    if not isinstance(value, list):
        return []
    return [item if isinstance(item, dict) else None for item in value]
