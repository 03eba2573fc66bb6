"""The claim-spec rules of the apiserver (`upstream-rules.md` §3.3), on the hub shape.

One `_check_*` method per API type; each caller hands its child path down, so every
error is complete when made (the apimachinery model). Input is the clean, defaulted,
converted and gate-dropped internal spec: types are already right, so rules only
check values. The order of errors is upstream's (§3.4).

This is the hot path of `draguard lint` and the webhook, run on every distinct claim,
so its rules append their errors to one list (`out`) that the entry point makes and
returns, rather than `yield` them through a chain of generators as the other rule
modules do: a generator per rule per item cost more than the rules themselves, and
appending keeps upstream's order just the same. Inside this module a path is a plain
tuple (`_Parts`), turned into a `FieldPath` only when an error is made. The tuples never
leave the module: its entry point, `Rules.validate_claim_spec`, takes a `FieldPath`,
and every error holds one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
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
from draguard.schema.model.formats import is_dns1123_label, is_dns1123_subdomain
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
from draguard.schema.rules.derived import DerivedChecks, check_declarative, has_derived_attributes

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
# A rule over one item at its path, appending what it finds.
Check = Callable[[dict[str, Any], _Parts, Errors], None]
# name → the request of that name (rule 19); its subrequests are looked at only for a
# `request/subrequest` reference.
RequestNames = dict[str, dict[str, Any]]
# The items of a list field, not copied: the loops skip an item that is not a mapping
# (malformed: reading reported it and kept its slot as null, so later indexes stay the
# user's). In the clean copy a list field is a list or absent, so `field or ()` gives them.
Items = Sequence[Any]


def rules_for(release: Release, feature_gates: frozenset[str] = frozenset()) -> Rules:
    """The rule set of `release` with the alpha gates `feature_gates` on (`Options`),
    built once (its release flags are read once, too)."""
    return _rules_for(release, feature_gates)


@cache
def _rules_for(release: Release, feature_gates: frozenset[str]) -> Rules:
    return Rules(release, feature_gates)


class Rules:
    """The rule set bound to one release and its alpha gates (messages and paths differ
    between releases)."""

    def __init__(self, release: Release, feature_gates: frozenset[str] = frozenset()) -> None:
        self.release = release
        # Release flags are properties; the loops below read them as plain attributes.
        self._short_circuit = release.short_circuit_too_many
        self._duplicate_at_name = release.duplicate_at_name
        self._effects = release.toleration_effects
        # The spec comes gate-dropped (§3.8): with DRADerivedAttributes off no request
        # holds derivedAttributes any more, so no claim needs to be searched for them.
        self._derived = release.derived_attributes_on(feature_gates)
        self._new_names = release.new_qualified_name_messages
        self._extra_slashes = release.rejects_extra_slashes
        self._no_attribute_at_constraint = release.consumable_capacity
        # Expressions known to compile cleanly in this release: a set lookup is several
        # times cheaper than the call into the CEL cache, and selectors repeat a lot.
        self._passing: set[str] = set()
        self._passing_chars = 0
        # Attribute names whose check found nothing: the same few names (a driver's
        # `numa`, `pcieRoot`) come back claim after claim, so each is checked once.
        self._clean_attribute_names: set[str] = set()
        # Device class names found valid, for the same reason: a cluster has few classes,
        # and a set lookup costs a tenth of the subdomain check. At most
        # PASSING_CACHE_SIZE names, each a valid subdomain (at most 253 characters).
        self._clean_classes: set[str] = set()

    def validate_claim_spec(self, spec: dict[str, Any], path: FieldPath) -> Errors:
        """Every finding for one claim spec at `path`, in upstream's order."""
        out: Errors = []
        self._check_device_claim(spec.get("devices", {}), (*path.parts, "devices"), out)
        return out

    # -- list helpers ------------------------------------------------------------------

    # `validateSlice`'s limit (rules 3, 5, 8, 14, 17): in 1.35+ TooMany short-circuits
    # the items; before, the items are checked and TooMany follows their errors. Each
    # list check asks `over and self._short_circuit` first and adds `_too_many` once done.

    def _check_list(
        self, items: Items, max_items: int, check: Check, path: _Parts, out: Errors
    ) -> None:
        """`validateSlice`: every item that is a mapping, within the limit."""
        over = len(items) > max_items
        if over and self._short_circuit:
            out.append(_too_many(items, max_items, path))
            return
        for i, item in enumerate(items):
            if isinstance(item, dict):  # else malformed, already reported while reading
                check(item, (*path, i), out)
        if over:
            out.append(_too_many(items, max_items, path))

    def _check_named_set(
        self, items: Items, max_items: int, check: Check, path: _Parts, out: Errors
    ) -> None:
        """`validateSet` keyed by `name`: a list plus a Duplicate per repeated name (rules 4, 9).

        Duplicates follow all item errors; their path is the list index since 1.35
        (before: `[i].name`, rule 4 version note).
        """
        over = len(items) > max_items
        if over and self._short_circuit:
            out.append(_too_many(items, max_items, path))
            return
        seen: set[Any] = set()
        repeated: list[tuple[int, Any]] = []
        for i, item in enumerate(items):
            if isinstance(item, dict):  # else malformed, already reported while reading
                check(item, (*path, i), out)
                name = item.get("name", "")
                if name in seen:
                    repeated.append((i, name))
                seen.add(name)
        for i, name in repeated:  # after every item's own errors
            at = (*path, i, "name") if self._duplicate_at_name else (*path, i)
            out.append(duplicate(FieldPath(at), name))
        if over:
            out.append(_too_many(items, max_items, path))

    # -- claim spec ----------------------------------------------------------------------

    def _check_device_claim(self, devices: dict[str, Any], path: _Parts, out: Errors) -> None:
        requests: Items = devices.get("requests") or ()
        constraints: Items = devices.get("constraints") or ()
        # Kept only with DRADerivedAttributes on (model/gates.py); made per claim.
        derived = (DerivedChecks(constraints, self.release)
                   if self._derived and has_derived_attributes(requests) else None)
        check_request = self._check_request if derived is None else partial(
            self._check_request, derived=derived)
        self._check_named_set(requests, REQUESTS_MAX, check_request, (*path, "requests"), out)
        configs: Items = devices.get("config") or ()
        if constraints or configs:  # else nothing refers to the requests: no lookup table
            names = _gather_request_names(requests)
            if constraints:
                self._check_list(constraints, CONSTRAINTS_MAX,
                                 partial(self._check_constraint, names=names),
                                 (*path, "constraints"), out)
            if configs:
                self._check_list(configs, CONFIG_MAX, partial(self._check_config, names=names),
                                 (*path, "config"), out)
        if derived is not None:
            out.extend(derived.check_total(path))
            out.extend(check_declarative(requests, path, self.release))

    # -- requests (rules 6–13) -----------------------------------------------------------

    def _check_request(
        self, request: dict[str, Any], path: _Parts, out: Errors,
        derived: DerivedChecks | None = None,
    ) -> None:
        name = request.get("name", "")
        if not is_dns1123_label(name):
            _bad_request_name(name, path, out)
        subrequests: Items = request.get("firstAvailable") or ()
        exactly = request.get("exactly")
        has_first, has_exact = bool(subrequests), isinstance(exactly, dict)
        if has_first and has_exact:  # rule 7: neither branch's content is validated
            out.append(invalid(FieldPath(path), None, ONE_OF_MULTIPLE))
        elif not has_first and not has_exact:
            out.append(required(FieldPath(path), ONE_OF_REQUIRED))
        elif isinstance(exactly, dict):
            self._check_exact(exactly, (*path, "exactly"), out, derived, name)
        else:
            check = self._check_subrequest if derived is None else partial(
                self._check_subrequest, derived=derived, parent=name)
            self._check_named_set(
                subrequests, FIRST_AVAILABLE_MAX, check, (*path, "firstAvailable"), out
            )

    def _check_exact(
        self, exact: dict[str, Any], path: _Parts, out: Errors,
        derived: DerivedChecks | None = None, name: Any = "",
    ) -> None:
        """Rules 11–13 (adminAccess and capacity have no value rules)."""
        device_class = exact.get("deviceClassName", "")
        if device_class not in self._clean_classes:
            self._check_device_class(device_class, path, out)
        self._check_device_fields(exact, path, out, derived, name)

    def _check_subrequest(
        self, sub: dict[str, Any], path: _Parts, out: Errors,
        derived: DerivedChecks | None = None, parent: Any = "",
    ) -> None:
        """Rule 10."""
        name = sub.get("name", "")
        if not is_dns1123_label(name):
            _bad_request_name(name, path, out)
        device_class = sub.get("deviceClassName", "")
        if device_class not in self._clean_classes:
            self._check_device_class(device_class, path, out)
        self._check_device_fields(sub, path, out, derived,
                                  "" if derived is None else f"{parent}/{name}")

    def _check_device_fields(
        self, request: dict[str, Any], path: _Parts, out: Errors,
        derived: DerivedChecks | None = None, ref: Any = "",
    ) -> None:
        """Selectors, derived attributes (with their gate on), allocation mode/count and
        tolerations, shared by exact and sub requests; `ref` names the request for the
        derived attributes' constraints (`name` or `parent/sub`)."""
        selectors = request.get("selectors")
        if selectors and isinstance(selectors, list):
            self._check_selectors(selectors, (*path, "selectors"), out)
        if derived is not None:
            attrs = request.get("derivedAttributes")
            if isinstance(attrs, list) and attrs:
                out.extend(derived.check(attrs, (*path, "derivedAttributes"), str(ref)))
        mode = request.get("allocationMode", "")
        # Rule 15; the defaulted `ExactCount` with a positive count is the usual case.
        if mode != "ExactCount" or request.get("count", 0) <= 0:
            _check_allocation(mode, request.get("count", 0), path, out)
        tolerations = request.get("tolerations")
        if tolerations and isinstance(tolerations, list):
            for t, toleration in enumerate(tolerations):
                if isinstance(toleration, dict):
                    self._check_toleration(toleration, (*path, "tolerations", t), out)

    def _check_selectors(self, selectors: list[Any], path: _Parts, out: Errors) -> None:
        """Rule 14 over a request's selectors, within their limit (`_check_list`)."""
        over = len(selectors) > SELECTORS_MAX
        if over and self._short_circuit:
            out.append(_too_many(selectors, SELECTORS_MAX, path))
            return
        passing = self._passing
        for i, selector in enumerate(selectors):
            if isinstance(selector, dict):  # else malformed, already reported while reading
                cel = selector.get("cel")
                # The usual selector: an expression already known to compile cleanly.
                if not isinstance(cel, dict) or cel.get("expression", "") not in passing:
                    self._check_selector(selector, (*path, i), out)
        if over:
            out.append(_too_many(selectors, SELECTORS_MAX, path))

    def _check_selector(self, selector: dict[str, Any], path: _Parts, out: Errors) -> None:
        """Rule 14: a selector needs `cel`; its expression is compiled in the DRA environment."""
        cel = selector.get("cel")
        if not isinstance(cel, dict):
            out.append(required(FieldPath((*path, "cel"))))
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
        out.extend(check_selector(expression, at, release=self.release))

    def _check_toleration(self, toleration: dict[str, Any], path: _Parts, out: Errors) -> None:
        """Rule 16 (an empty key is allowed with any operator; tolerationSeconds unchecked)."""
        key = toleration.get("key", "")
        if key and not formats.is_qualified_name(key):
            for msg in formats.qualified_name_messages(key):
                out.append(invalid(FieldPath((*path, "key")), key, msg))
        operator, value = toleration.get("operator", ""), toleration.get("value", "")
        if operator == "Exists":
            if value:
                detail = "must be empty for operator `Exists`"
                out.append(invalid(FieldPath((*path, "value")), value, detail))
        elif operator == "Equal":
            if not formats.is_label_value(value):
                for msg in formats.label_value_messages(value):
                    out.append(invalid(FieldPath((*path, "value")), value, msg))
        elif operator == "":
            out.append(required(FieldPath((*path, "operator"))))
        else:
            out.append(not_supported(FieldPath((*path, "operator")), operator, OPERATORS))
        effect = toleration.get("effect", "")
        if effect and effect not in self._effects:
            out.append(not_supported(FieldPath((*path, "effect")), effect, self._effects))

    # -- constraints and config (rules 17–21) ----------------------------------------------

    def _check_references(
        self, refs: list[Any], path: _Parts, names: RequestNames, out: Errors
    ) -> None:
        """`validateSet` over request references (rule 17): each reference's own errors,
        then a Duplicate per repeated reference."""
        over = len(refs) > REQUESTS_MAX
        if over and self._short_circuit:
            out.append(_too_many(refs, REQUESTS_MAX, path))
            return
        for i, ref in enumerate(refs):
            # A non-string is a malformed item, already reported while reading.
            if isinstance(ref, str):
                _check_reference(ref, (*path, i), names, out)
        seen: set[str] = set()
        for i, ref in enumerate(refs):
            if isinstance(ref, str):
                if ref in seen:
                    out.append(duplicate(FieldPath((*path, i)), ref))
                seen.add(ref)
        if over:
            out.append(_too_many(refs, REQUESTS_MAX, path))

    def _check_constraint(
        self, constraint: dict[str, Any], path: _Parts, out: Errors, *, names: RequestNames
    ) -> None:
        self._check_references(constraint.get("requests", []), (*path, "requests"), names, out)
        # Rule 18: with both set, distinctAttribute is ignored.
        field = "matchAttribute" if "matchAttribute" in constraint else "distinctAttribute"
        if field in constraint:
            self._check_qualified_name(constraint[field], (*path, field), out)
        elif self._no_attribute_at_constraint:
            out.append(required(FieldPath(path), NO_ATTRIBUTE))
        else:
            out.append(required(FieldPath((*path, "matchAttribute"))))

    def _check_config(
        self, config: dict[str, Any], path: _Parts, out: Errors, *, names: RequestNames
    ) -> None:
        """Rule 21."""
        self._check_references(config.get("requests", []), (*path, "requests"), names, out)
        opaque = config.get("opaque")
        if not isinstance(opaque, dict):
            out.append(required(FieldPath((*path, "opaque"))))
            return
        _check_driver_name(opaque.get("driver", ""), (*path, "opaque", "driver"), out)
        _check_parameters(opaque, (*path, "opaque", "parameters"), out)

    def _check_device_class(self, name: str, parent: _Parts, out: Errors) -> None:
        """Rules 10b / 11: `parent.deviceClassName` is required, then a DNS subdomain
        (called for a name not yet known to be valid, which it then remembers)."""
        if not name:
            out.append(required(FieldPath((*parent, "deviceClassName"))))
        elif not is_dns1123_subdomain(name):
            for msg in formats.dns1123_subdomain_messages(name):
                out.append(invalid(FieldPath((*parent, "deviceClassName")), name, msg))
        else:
            _remember(self._clean_classes, name)

    def _check_qualified_name(self, name: str, path: _Parts, out: Errors) -> None:
        """Rule 20, remembering the names it finds nothing in."""
        clean = self._clean_attribute_names
        if name in clean:
            return
        before = len(out)
        self._check_attribute_name(name, path, out)
        if len(out) == before:
            _remember(clean, name)

    def _check_attribute_name(self, name: str, path: _Parts, out: Errors) -> None:
        """Rule 20: `domain/name` for matchAttribute and distinctAttribute.

        Before 1.35 (S2, S4) an empty name or part was `Required` and a missing domain
        "must include a domain"; from 1.35 all are `Invalid` with the newer texts.
        """
        new = self._new_names
        if not name and not new:
            out.append(required(FieldPath(path), "name required"))
            return
        parts = name.split("/")
        if len(parts) == 1:
            _check_c_identifier(name, path, out)
            detail = "a fully qualified name must be a domain and a name separated by a slash"
            out.append(invalid(FieldPath(path), name, detail if new else "must include a domain"))
        elif len(parts) == 2:
            domain, ident = parts
            if not domain:
                out.append(_empty_part(path, "the domain must not be empty", new=new))
            else:
                _check_driver_name(domain, path, out)
            if not ident:
                out.append(_empty_part(path, "the name must not be empty", new=new))
            else:
                _check_c_identifier(ident, path, out)
        elif self._extra_slashes:
            out.append(invalid(FieldPath(path), name, "must not contain more than one slash"))


def _too_many(items: Items, max_items: int, path: _Parts) -> FieldError:
    return too_many(FieldPath(path), len(items), max_items)


def _empty_part(path: _Parts, detail: str, *, new: bool) -> FieldError:
    return invalid(FieldPath(path), "", detail) if new else required(FieldPath(path), detail)


# -- format rules shared by several types ------------------------------------------------


def _bad_request_name(name: str, parent: _Parts, out: Errors) -> None:
    """Rule 6 / 10a, for a name `is_dns1123_label` refused: `parent.name` is a DNS label;
    "" gets the regex message, not Required (§3.2)."""
    for msg in formats.dns1123_label_messages(name):
        out.append(invalid(FieldPath((*parent, "name")), name, msg))


def _check_allocation(mode: str, count: int, parent: _Parts, out: Errors) -> None:
    """Rule 15, on `parent.allocationMode` and `parent.count`."""
    if mode == "ExactCount":
        if count <= 0:
            out.append(invalid(FieldPath((*parent, "count")), count, "must be greater than zero"))
    elif mode == "All":
        if count != 0:
            detail = "must not be specified when allocationMode is 'All'"
            out.append(invalid(FieldPath((*parent, "count")), count, detail))
    else:
        out.append(not_supported(FieldPath((*parent, "allocationMode")), mode, ALLOCATION_MODES))


def _check_c_identifier(name: str, path: _Parts, out: Errors) -> None:
    if len(name) > C_IDENTIFIER_MAX:
        out.append(too_long(FieldPath(path), C_IDENTIFIER_MAX))
    if not formats.c_identifier_matches(name):
        out.append(invalid(FieldPath(path), name, formats.C_IDENTIFIER_MSG))


def _check_driver_name(name: str, path: _Parts, out: Errors) -> None:
    """`ValidateCSIDriverName`: ≤ 63, DNS subdomain checked on the lower-cased value (§3.2).

    For "" only Required is reported, as the newest declarative test expects
    (upstream-rules.md §6 open point 2).
    """
    if not name:
        out.append(required(FieldPath(path)))
        return
    if len(name) > DRIVER_NAME_MAX:
        out.append(too_long(FieldPath(path), DRIVER_NAME_MAX))
    lowered = name.lower()
    if not is_dns1123_subdomain(lowered):
        for msg in formats.dns1123_subdomain_messages(lowered):
            out.append(invalid(FieldPath(path), name, msg))


def _check_parameters(opaque: dict[str, Any], path: _Parts, out: Errors) -> None:
    """Rule 21: present, ≤ 10240 bytes of JSON, and a JSON object."""
    if "parameters" not in opaque or opaque["parameters"] is None:
        out.append(required(FieldPath(path)))
        return
    params = opaque["parameters"]
    # The apiserver measures the raw bytes it received; a compact encoding is what kubectl sends.
    size = len(json.dumps(params, separators=(",", ":"), ensure_ascii=False).encode())
    if size > PARAMETERS_MAX:
        out.append(too_long(FieldPath(path), PARAMETERS_MAX))
        return
    if not isinstance(params, dict):
        out.append(invalid(FieldPath(path), "<value omitted>", "must be a valid JSON object"))


def _check_reference(ref: str, path: _Parts, names: RequestNames, out: Errors) -> None:
    """Rule 19: `request` or `request/subrequest`, each segment a DNS label, and it must resolve."""
    segments = ref.split("/")
    if len(segments) > 2:
        out.append(invalid(FieldPath(path), ref, BAD_REFERENCE))
        return
    for segment in segments:
        if not is_dns1123_label(segment):
            for msg in formats.dns1123_label_messages(segment):
                out.append(invalid(FieldPath(path), segment, msg))
    request = names.get(segments[0])
    if request is None or (len(segments) == 2 and not _has_subrequest(request, segments[1])):
        out.append(invalid(FieldPath(path), ref, BAD_REFERENCE))


def _remember(clean: set[str], name: str) -> None:
    """Add a name found valid to one of the rule set's sets of such names, which starts
    again when it holds PASSING_CACHE_SIZE (names that clients send are not trusted to
    be few)."""
    if len(clean) >= PASSING_CACHE_SIZE:
        clean.clear()
    clean.add(name)


def _has_subrequest(request: dict[str, Any], name: str) -> bool:
    for sub in request.get("firstAvailable") or ():
        if isinstance(sub, dict) and sub.get("name", "") == name:
            return True
    return False


def _gather_request_names(requests: Items) -> RequestNames:
    """Rule 19 lookup table; later duplicates overwrite earlier ones, as upstream's map does
    (a name in the clean copy is a string, "" when absent)."""
    names: RequestNames = {}
    for request in requests:  # a loop: no comprehension call (Python 3.11)
        if isinstance(request, dict):
            names[request.get("name", "")] = request
    return names
