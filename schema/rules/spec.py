"""The claim-spec rules of the apiserver (`upstream-rules.md` §3.3), on the hub shape.

One `_check_*` method per API type; each caller hands its child path down, so every
error is complete when made (the apimachinery model). Input is the clean, defaulted,
converted and gate-dropped internal spec: types are already right, so rules only
check values. The order of errors is upstream's (§3.4).

Rules are generators that `yield` their errors and `yield from` their children, as
every rule module does (README, Development); the entry point makes the list. This is
the hot path of `draguard lint` and the webhook: inside this module a path is a plain
tuple (`_Parts`), turned into a `FieldPath` only when an error is made. The tuples never
leave the module: its entry point, `Rules.validate_claim_spec`, takes a `FieldPath`,
and every error holds one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from functools import cache, partial
from typing import Any

from draguard.schema.model import formats
from draguard.schema.model.errors import (
    FieldError,
    duplicate,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from draguard.schema.model.paths import FieldPath, Segment
from draguard.schema.model.releases import (
    C_IDENTIFIER_MAX,
    CONFIG_MAX,
    CONSTRAINTS_MAX,
    DRIVER_NAME_MAX,
    FIRST_AVAILABLE_MAX,
    PARAMETERS_MAX,
    REQUESTS_MAX,
    SELECTORS_MAX,
    Release,
)
from draguard.schema.rules.derived import check_derived_attributes

ONE_OF_REQUIRED = "exactly one of `exactly` or `firstAvailable` is required"
ONE_OF_MULTIPLE = ONE_OF_REQUIRED + ", but multiple fields are set"
BAD_REFERENCE = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)
NO_ATTRIBUTE = (
    # (sic) upstream says "multiple" although none is set (rule 18).
    'exactly one of "matchAttribute" or "distinctAttribute" is required, '
    "but multiple fields are set"
)
PASSING_CACHE_SIZE = 4096
# Passing expressions are up to 2,560 characters (`selector_passes`): bounded in
# characters too (issue 15 §3), so long ones cannot make the set tens of MB.
PASSING_CACHE_CHARS = 1024 * 1024
ALLOCATION_MODES = ("All", "ExactCount")
OPERATORS = ("Equal", "Exists")

__all__ = ["BAD_REFERENCE", "NO_ATTRIBUTE", "ONE_OF_MULTIPLE", "ONE_OF_REQUIRED", "Rules", "rules_for"]

# A path inside this module only (see the module docstring).
_Parts = tuple[Segment, ...]
Errors = list[FieldError]
Check = Callable[[dict[str, Any], _Parts], Iterator[FieldError]]
# name → None (exact request) or the set of its subrequest names (rule 19).
RequestNames = dict[str, frozenset[str] | None]
# The items of a list field; those that are not mappings are skipped (see `_items`).
Items = Sequence[Any]


def rules_for(release: Release, gates: frozenset[str] = frozenset()) -> Rules:
    """The rule set of `release` with the alpha `gates` on (`Options.feature_gates`),
    built once (its release flags are read once, too)."""
    return _rules_for(release, release.derived_attributes_on(gates))


@cache
def _rules_for(release: Release, derived: bool) -> Rules:
    return Rules(release, derived=derived)


class Rules:
    """The rule set bound to one release (messages and paths differ between releases)."""

    def __init__(self, release: Release, *, derived: bool = False) -> None:
        self.release = release
        # Release flags are properties; the loops below read them as plain attributes.
        self._short_circuit = release.short_circuit_too_many
        self._duplicate_at_name = release.duplicate_at_name
        self._effects = release.toleration_effects
        # `derivedAttributes` reaches the rules only with DRADerivedAttributes on: with it
        # off, the strategy drops the field first (`model/gates.py`), so there is nothing
        # for `check_derived_attributes` to walk (`rules_for` works it out from the gates).
        self._derived = derived
        # Expressions known to compile cleanly in this release: a set lookup is several
        # times cheaper than the call into the CEL cache, and selectors repeat a lot.
        self._passing: set[str] = set()
        self._passing_chars = 0
        # Attribute names whose check found nothing: the same few names (a driver's
        # `numa`, `pcieRoot`) come back claim after claim, so each is checked once.
        self._clean_attribute_names: set[str] = set()

    def validate_claim_spec(self, spec: dict[str, Any], path: FieldPath) -> Errors:
        """Every finding for one claim spec at `path`, in upstream's order (the edge: a list)."""
        return list(self._check_device_claim(spec.get("devices", {}), (*path.parts, "devices")))

    # -- list helpers ------------------------------------------------------------------

    # `validateSlice`'s limit (rules 3, 5, 8, 14, 17): in 1.35+ TooMany short-circuits
    # the items; before, the items are checked and TooMany follows their errors. Each
    # list check asks `_limit_stops` first and calls `_limit_after` once done.

    def _limited(
        self, items: Sequence[Any], max_items: int, path: _Parts, checks: Iterator[FieldError]
    ) -> Iterator[FieldError]:
        """The items' `checks`, with TooMany first instead (1.35+) or after them (before)."""
        over = len(items) > max_items
        if over and self._short_circuit:
            yield too_many(FieldPath(path), len(items), max_items)
            return
        yield from checks
        if over:
            yield too_many(FieldPath(path), len(items), max_items)

    def _check_list(
        self, items: Items, max_items: int, check: Check, path: _Parts
    ) -> Iterator[FieldError]:
        """`validateSlice`: every item that is a mapping, within the limit."""
        return self._limited(items, max_items, path, self._each(items, check, path))

    @staticmethod
    def _each(items: Items, check: Check, path: _Parts) -> Iterator[FieldError]:
        for i, item in enumerate(items):
            if isinstance(item, dict):  # else malformed, already reported while reading
                yield from check(item, (*path, i))

    def _check_named_set(
        self, items: Items, max_items: int, check: Check, path: _Parts
    ) -> Iterator[FieldError]:
        """`validateSet` keyed by `name`: a list plus a Duplicate per repeated name (rules 4, 9).

        Duplicates follow all item errors; their path is the list index since 1.35
        (before: `[i].name`, rule 4 version note).
        """
        return self._limited(items, max_items, path, self._each_named(items, check, path))

    def _each_named(self, items: Items, check: Check, path: _Parts) -> Iterator[FieldError]:
        seen: set[Any] = set()
        repeated: list[tuple[int, Any]] = []
        for i, item in enumerate(items):
            if isinstance(item, dict):  # else malformed, already reported while reading
                yield from check(item, (*path, i))
                name = item.get("name", "")
                if name in seen:
                    repeated.append((i, name))
                seen.add(name)
        for i, name in repeated:  # after every item's own errors
            at = (*path, i, "name") if self._duplicate_at_name else (*path, i)
            yield duplicate(FieldPath(at), name)

    # -- claim spec ----------------------------------------------------------------------

    def _check_device_claim(self, devices: dict[str, Any], path: _Parts) -> Iterator[FieldError]:
        requests = _items(devices.get("requests"))
        yield from self._check_named_set(
            requests, REQUESTS_MAX, self._check_request, (*path, "requests")
        )
        constraints = _items(devices.get("constraints"))
        configs = _items(devices.get("config"))
        if constraints or configs:  # else nothing refers to the requests: no lookup table
            names = _gather_request_names(requests)
            for items, limit, check, key in (
                (constraints, CONSTRAINTS_MAX, self._check_constraint, "constraints"),
                (configs, CONFIG_MAX, self._check_config, "config"),
            ):
                if items:
                    yield from self._check_list(
                        items, limit, partial(check, names=names), (*path, key)
                    )
        if self._derived:
            yield from check_derived_attributes(requests, constraints, path, self.release)

    # -- requests (rules 6–13) -----------------------------------------------------------

    def _check_request(self, request: dict[str, Any], path: _Parts) -> Iterator[FieldError]:
        yield from _check_request_name(request.get("name", ""), path)
        subrequests = _items(request.get("firstAvailable"))
        exactly = request.get("exactly")
        has_first, has_exact = bool(subrequests), isinstance(exactly, dict)
        if has_first and has_exact:  # rule 7: neither branch's content is validated
            yield invalid(FieldPath(path), None, ONE_OF_MULTIPLE)
        elif not has_first and not has_exact:
            yield required(FieldPath(path), ONE_OF_REQUIRED)
        elif isinstance(exactly, dict):
            yield from self._check_exact(exactly, (*path, "exactly"))
        else:
            yield from self._check_named_set(
                subrequests, FIRST_AVAILABLE_MAX, self._check_subrequest, (*path, "firstAvailable")
            )

    def _check_exact(self, exact: dict[str, Any], path: _Parts) -> Iterator[FieldError]:
        """Rules 11–13 (adminAccess and capacity have no value rules)."""
        yield from _check_device_class(exact.get("deviceClassName", ""), path)
        yield from self._check_device_fields(exact, path)

    def _check_subrequest(self, sub: dict[str, Any], path: _Parts) -> Iterator[FieldError]:
        """Rule 10."""
        yield from _check_request_name(sub.get("name", ""), path)
        yield from _check_device_class(sub.get("deviceClassName", ""), path)
        yield from self._check_device_fields(sub, path)

    def _check_device_fields(self, request: dict[str, Any], path: _Parts) -> Iterator[FieldError]:
        """Selectors, allocation mode/count and tolerations, shared by exact and sub requests."""
        selectors = request.get("selectors")
        if selectors and isinstance(selectors, list):
            yield from self._check_list(
                selectors, SELECTORS_MAX, self._check_selector, (*path, "selectors")
            )
        yield from _check_allocation(request.get("allocationMode", ""), request.get("count", 0), path)
        tolerations = request.get("tolerations")
        if tolerations and isinstance(tolerations, list):
            for t, toleration in enumerate(tolerations):
                if isinstance(toleration, dict):
                    yield from self._check_toleration(toleration, (*path, "tolerations", t))

    def _check_selector(self, selector: dict[str, Any], path: _Parts) -> Iterator[FieldError]:
        """Rule 14: a selector needs `cel`; its expression is compiled in the DRA environment."""
        cel = selector.get("cel")
        if not isinstance(cel, dict):
            yield required(FieldPath((*path, "cel")))
            return
        expression = cel.get("expression", "")
        passing = self._passing
        if expression in passing:
            return
        # CEL (and protobuf under it) is loaded by the first selector, not at start.
        from draguard.schema.cel.check import check_selector, selector_passes

        if selector_passes(expression, release=self.release):
            if (len(passing) >= PASSING_CACHE_SIZE
                    or self._passing_chars + len(expression) > PASSING_CACHE_CHARS):
                passing.clear()
                self._passing_chars = 0
            passing.add(expression)
            self._passing_chars += len(expression)
            return
        at = FieldPath((*path, "cel", "expression"))
        yield from check_selector(expression, at, release=self.release)

    def _check_toleration(self, toleration: dict[str, Any], path: _Parts) -> Iterator[FieldError]:
        """Rule 16 (an empty key is allowed with any operator; tolerationSeconds unchecked)."""
        key = toleration.get("key", "")
        if key and not formats.is_qualified_name(key):
            for msg in formats.qualified_name_messages(key):
                yield invalid(FieldPath((*path, "key")), key, msg)
        operator, value = toleration.get("operator", ""), toleration.get("value", "")
        if operator == "Exists":
            if value:
                detail = "must be empty for operator `Exists`"
                yield invalid(FieldPath((*path, "value")), value, detail)
        elif operator == "Equal":
            if not formats.is_label_value(value):
                for msg in formats.label_value_messages(value):
                    yield invalid(FieldPath((*path, "value")), value, msg)
        elif operator == "":
            yield required(FieldPath((*path, "operator")))
        else:
            yield not_supported(FieldPath((*path, "operator")), operator, OPERATORS)
        effect = toleration.get("effect", "")
        if effect and effect not in self._effects:
            yield not_supported(FieldPath((*path, "effect")), effect, self._effects)

    # -- constraints and config (rules 17–21) ----------------------------------------------

    def _check_references(
        self, refs: list[Any], path: _Parts, names: RequestNames
    ) -> Iterator[FieldError]:
        """`validateSet` over request references (rule 17): items, then duplicates."""
        return self._limited(refs, REQUESTS_MAX, path, _each_reference(refs, path, names))

    def _check_constraint(
        self, constraint: dict[str, Any], path: _Parts, *, names: RequestNames
    ) -> Iterator[FieldError]:
        yield from self._check_references(constraint.get("requests", []), (*path, "requests"), names)
        # Rule 18: with both set, distinctAttribute is ignored.
        field = "matchAttribute" if "matchAttribute" in constraint else "distinctAttribute"
        if field in constraint:
            yield from self._check_qualified_name(constraint[field], (*path, field))
        elif self.release.consumable_capacity:
            yield required(FieldPath(path), NO_ATTRIBUTE)
        else:
            yield required(FieldPath((*path, "matchAttribute")))

    def _check_config(
        self, config: dict[str, Any], path: _Parts, *, names: RequestNames
    ) -> Iterator[FieldError]:
        """Rule 21."""
        yield from self._check_references(config.get("requests", []), (*path, "requests"), names)
        opaque = config.get("opaque")
        if not isinstance(opaque, dict):
            yield required(FieldPath((*path, "opaque")))
            return
        yield from _check_driver_name(opaque.get("driver", ""), (*path, "opaque", "driver"))
        yield from _check_parameters(opaque, (*path, "opaque", "parameters"))

    def _check_qualified_name(self, name: str, path: _Parts) -> Iterator[FieldError]:
        """Rule 20, remembering the names it finds nothing in."""
        clean = self._clean_attribute_names
        if name in clean:
            return
        found = list(self._check_attribute_name(name, path))
        if not found:
            if len(clean) >= PASSING_CACHE_SIZE:
                clean.clear()
            clean.add(name)
        yield from found

    def _check_attribute_name(self, name: str, path: _Parts) -> Iterator[FieldError]:
        """Rule 20: `domain/name` for matchAttribute and distinctAttribute.

        Before 1.35 (S2, S4) an empty name or part was `Required` and a missing domain
        "must include a domain"; from 1.35 all are `Invalid` with the newer texts.
        """
        new = self.release.new_qualified_name_messages
        if not name and not new:
            yield required(FieldPath(path), "name required")
            return
        parts = name.split("/")
        if len(parts) == 1:
            yield from _check_c_identifier(name, path)
            detail = "a fully qualified name must be a domain and a name separated by a slash"
            yield invalid(FieldPath(path), name, detail if new else "must include a domain")
        elif len(parts) == 2:
            domain, ident = parts
            if not domain:
                yield _empty_part(path, "the domain must not be empty", new=new)
            else:
                yield from _check_driver_name(domain, path)
            if not ident:
                yield _empty_part(path, "the name must not be empty", new=new)
            else:
                yield from _check_c_identifier(ident, path)
        elif self.release.rejects_extra_slashes:
            yield invalid(FieldPath(path), name, "must not contain more than one slash")


def _empty_part(path: _Parts, detail: str, *, new: bool) -> FieldError:
    return invalid(FieldPath(path), "", detail) if new else required(FieldPath(path), detail)


# -- format rules shared by several types ------------------------------------------------


def _check_request_name(name: str, parent: _Parts) -> Iterator[FieldError]:
    """Rule 6 / 10a: `parent.name` is a DNS label; "" gets the regex message, not Required (§3.2)."""
    if not formats.is_dns1123_label(name):
        for msg in formats.dns1123_label_messages(name):
            yield invalid(FieldPath((*parent, "name")), name, msg)


def _check_device_class(name: str, parent: _Parts) -> Iterator[FieldError]:
    """Rules 10b / 11: `parent.deviceClassName` is required, then a DNS subdomain."""
    if not name:
        yield required(FieldPath((*parent, "deviceClassName")))
    elif not formats.is_dns1123_subdomain(name):
        for msg in formats.dns1123_subdomain_messages(name):
            yield invalid(FieldPath((*parent, "deviceClassName")), name, msg)


def _check_allocation(mode: str, count: int, parent: _Parts) -> Iterator[FieldError]:
    """Rule 15, on `parent.allocationMode` and `parent.count`."""
    if mode == "ExactCount":
        if count <= 0:
            yield invalid(FieldPath((*parent, "count")), count, "must be greater than zero")
    elif mode == "All":
        if count != 0:
            detail = "must not be specified when allocationMode is 'All'"
            yield invalid(FieldPath((*parent, "count")), count, detail)
    else:
        yield not_supported(FieldPath((*parent, "allocationMode")), mode, ALLOCATION_MODES)


def _check_c_identifier(name: str, path: _Parts) -> Iterator[FieldError]:
    if len(name) > C_IDENTIFIER_MAX:
        yield too_long(FieldPath(path), C_IDENTIFIER_MAX)
    if not formats.c_identifier_matches(name):
        yield invalid(FieldPath(path), name, formats.C_IDENTIFIER_MSG)


def _check_driver_name(name: str, path: _Parts) -> Iterator[FieldError]:
    """`ValidateCSIDriverName`: ≤ 63, DNS subdomain checked on the lower-cased value (§3.2).

    For "" only Required is reported, as the newest declarative test expects
    (upstream-rules.md §6 open point 2).
    """
    if not name:
        yield required(FieldPath(path))
        return
    if len(name) > DRIVER_NAME_MAX:
        yield too_long(FieldPath(path), DRIVER_NAME_MAX)
    lowered = name.lower()
    if not formats.is_dns1123_subdomain(lowered):
        for msg in formats.dns1123_subdomain_messages(lowered):
            yield invalid(FieldPath(path), name, msg)


def _check_parameters(opaque: dict[str, Any], path: _Parts) -> Iterator[FieldError]:
    """Rule 21: present, ≤ 10240 bytes of JSON, and a JSON object."""
    if "parameters" not in opaque or opaque["parameters"] is None:
        yield required(FieldPath(path))
        return
    params = opaque["parameters"]
    # The apiserver measures the raw bytes it received; a compact encoding is what kubectl sends.
    size = len(json.dumps(params, separators=(",", ":"), ensure_ascii=False).encode())
    if size > PARAMETERS_MAX:
        yield too_long(FieldPath(path), PARAMETERS_MAX)
        return
    if not isinstance(params, dict):
        yield invalid(FieldPath(path), "<value omitted>", "must be a valid JSON object")


def _check_reference(ref: str, path: _Parts, names: RequestNames) -> Iterator[FieldError]:
    """Rule 19: `request` or `request/subrequest`, each segment a DNS label, and it must resolve."""
    segments = ref.split("/")
    if len(segments) > 2:
        yield invalid(FieldPath(path), ref, BAD_REFERENCE)
        return
    for segment in segments:
        if not formats.is_dns1123_label(segment):
            for msg in formats.dns1123_label_messages(segment):
                yield invalid(FieldPath(path), segment, msg)
    if not _reference_resolves(segments, names):
        yield invalid(FieldPath(path), ref, BAD_REFERENCE)


def _each_reference(refs: list[Any], path: _Parts, names: RequestNames) -> Iterator[FieldError]:
    """Each reference's own errors, then a Duplicate per repeated reference (rule 17)."""
    for i, ref in enumerate(refs):
        # A non-string is a malformed item, already reported while reading.
        if isinstance(ref, str):
            yield from _check_reference(ref, (*path, i), names)
    seen: set[str] = set()
    for i, ref in enumerate(refs):
        if isinstance(ref, str):
            if ref in seen:
                yield duplicate(FieldPath((*path, i)), ref)
            seen.add(ref)


def _reference_resolves(segments: list[str], names: RequestNames) -> bool:
    if segments[0] not in names:
        return False
    if len(segments) == 1:
        return True
    subs = names[segments[0]]
    return subs is not None and segments[1] in subs


def _gather_request_names(requests: Items) -> RequestNames:
    """Rule 19 lookup table; later duplicates overwrite earlier ones, as upstream's map does."""
    names: RequestNames = {}
    for request in requests:
        if not isinstance(request, dict):
            continue
        sub_names = [
            str(sub.get("name", ""))
            for sub in _items(request.get("firstAvailable"))
            if isinstance(sub, dict)
        ]
        names[str(request.get("name", ""))] = frozenset(sub_names) if sub_names else None
    return names


def _items(value: Any) -> Items:
    """A list field's items, not copied: the loops skip an item that is not a mapping
    (malformed, reported while reading), so later indexes stay the user's."""
    return value if isinstance(value, list) else ()
