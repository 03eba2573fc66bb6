"""Expanding a request for a catalogued device class into `firstAvailable` alternatives.

This is KEP-4816's portable-template use case (`upstream-rules.md` §1.3): a template
asks for a class, each cluster's policy supplies its own preference list. The rules
for the request's own fields (kept as the first or last alternative, or replaced) are
documented in `draguard.schema.policy.model`.
"""

from __future__ import annotations

from typing import Any

from draguard.schema.advice.codes import Advice
from draguard.schema.policy.claimspec import ClaimSite, Warn, alternatives_of, dict_items
from draguard.schema.policy.model import CatalogEntry, Policy

# v1beta1's flat exact fields (§5.0), which v1beta2/v1 keep under `exactly`.
FLAT_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                     "tolerations", "capacity", "derivedAttributes")
# What a request may carry and still be replaced without losing meaning (`replace`):
# its class, and allocation settings equal to the defaults (§4).
_PLAIN_VALUES: dict[str, tuple[Any, ...]] = {
    "deviceClassName": (),
    "allocationMode": (None, "", "ExactCount"),
    "count": (None, 0, 1),
    "adminAccess": (None, False),
    "selectors": (None, []),
    "tolerations": (None, []),
}


def expand_requests(devices: dict[str, Any], *, site: ClaimSite, policy: Policy,
                    warn: Warn, note: Warn) -> None:
    """Replace each catalogued exact request by its alternatives, in place.

    `warn` gets what the user should know in any case (a request left unexpanded);
    `note` gets each expansion done, which matters only to explain a denial whose
    error paths name subrequests the user never wrote.
    """
    if not policy.catalog:
        return
    for i, request in dict_items(devices.get("requests")):
        exact = _exact_part(request, site)
        if exact is None:
            continue
        entry = policy.catalog.get(str(exact["deviceClassName"]))
        if entry is None:
            continue
        reason = _unexpandable(exact, entry)
        if reason:
            name = request.get("name")
            warn(Advice(site.request_path(i), "policy-not-expanded",
                        f"request {name!r} was not expanded with the catalog "
                        f"for {entry.device_class_name}: {reason}"))
            continue
        alternatives = _alternatives(exact, entry)
        _replace_exact(request, site, alternatives)
        note(Advice(site.request_path(i), "policy-expanded",
                    f"request {request.get('name')!r} was expanded with the "
                    f"catalog for {entry.device_class_name} into firstAvailable "
                    f"[{', '.join(a['name'] for a in alternatives)}]"))


def _exact_part(request: dict[str, Any], site: ClaimSite) -> dict[str, Any] | None:
    """The request's exact fields when it is an exact request with a string class."""
    if alternatives_of(request) is not None:
        return None  # already prioritized: the user's own list is kept as written
    exact: dict[str, Any] | None
    if site.flat:
        exact = {k: request[k] for k in request if k in FLAT_EXACT_FIELDS}
    else:
        value = request.get("exactly")
        exact = value if isinstance(value, dict) else None
    if exact is None or not isinstance(exact.get("deviceClassName"), str):
        return None
    return exact


def _unexpandable(exact: dict[str, Any], entry: CatalogEntry) -> str:
    """Why expanding would change the request's meaning; empty when it would not."""
    if exact.get("adminAccess") is True:
        return "it asks for admin access, which a subrequest cannot carry"
    if "name" in exact:
        return "its exact part has a field `name`, which would clash with the subrequest name"
    if entry.original != "replace":
        return ""
    extra = [k for k in exact if k not in _PLAIN_VALUES or
             (_PLAIN_VALUES[k] and not _is_one_of(exact[k], _PLAIN_VALUES[k]))]
    if extra:
        return (f"the catalog replaces the original request, which would lose its "
                f"{', '.join(extra)}")
    return ""


def _is_one_of(value: Any, allowed: tuple[Any, ...]) -> bool:
    # `type(...) is` so that `True` does not pass for 1 nor `False` for 0.
    return any(type(value) is type(ok) and value == ok for ok in allowed)


def _alternatives(exact: dict[str, Any], entry: CatalogEntry) -> list[dict[str, Any]]:
    catalogued = [alternative.to_json() for alternative in entry.alternatives]
    if entry.original == "replace":
        return catalogued
    # A subrequest has no adminAccess field (§1.3); only false/null can remain here.
    original = {"name": entry.original_name}
    original.update((k, v) for k, v in exact.items() if k != "adminAccess")
    return [original, *catalogued] if entry.original == "first" else [*catalogued, original]


def _replace_exact(request: dict[str, Any], site: ClaimSite,
                   alternatives: list[dict[str, Any]]) -> None:
    """Drop the exact part and set `firstAvailable` (the one-of, §3.3 rule 7)."""
    if site.flat:
        # Every flat field goes, even `selectors: []` or `adminAccess: false`: each
        # counts as "set" in v1beta1 conversion and would make both one-of members set
        # (upstream-rules.md §5.2 step 2).
        for name in FLAT_EXACT_FIELDS:
            request.pop(name, None)
    else:
        request.pop("exactly", None)
    request["firstAvailable"] = alternatives
