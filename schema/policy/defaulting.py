"""Upstream's defaults (`upstream-rules.md` §4) for fields still unset, on the raw object.

Only unset fields change: Go cannot tell an absent string from `""` nor an absent
count from `0`, so upstream defaults those too, and so does draguard; anything else
(including wrong JSON types, which the rule set reports) is left as written. Claim
status is not touched: the apiserver resets it on create (§3.0 step 4).
"""

from __future__ import annotations

from typing import Any

from draguard.schema.policy.claimspec import ClaimSite, dict_items


def apply_defaults(devices: dict[str, Any], *, site: ClaimSite) -> None:
    """Default every request and subrequest of `devices` in place, per its API version."""
    for _, request in dict_items(devices.get("requests")):
        if site.flat:
            _default_flat_request(request)
        else:
            exact = request.get("exactly")
            # §4.1: only a non-nil `exactly` is defaulted (an empty `{}` is too).
            if isinstance(exact, dict):
                _default_allocation(exact)
                _default_tolerations(exact)
        for _, alternative in dict_items(request.get("firstAvailable")):
            _default_allocation(alternative)
            _default_tolerations(alternative)


def _default_flat_request(request: dict[str, Any]) -> None:
    # §4.2: allocation defaults only when the flat class is set (not for prioritized
    # requests); request-level tolerations are defaulted regardless.
    device_class = request.get("deviceClassName")
    if isinstance(device_class, str) and device_class:
        _default_allocation(request)
    _default_tolerations(request)


def _unset(value: Any, zero: str | int) -> bool:
    return value is None or (type(value) is type(zero) and value == zero)


def _default_allocation(part: dict[str, Any]) -> None:
    """allocationMode "" → ExactCount, then ExactCount with count 0 → 1 (§4.1)."""
    if _unset(part.get("allocationMode"), ""):
        part["allocationMode"] = "ExactCount"
    if part.get("allocationMode") == "ExactCount" and _unset(part.get("count"), 0):
        part["count"] = 1


def _default_tolerations(part: dict[str, Any]) -> None:
    """Each toleration's operator "" → Equal (§4.1, §4.2)."""
    for _, toleration in dict_items(part.get("tolerations")):
        if _unset(toleration.get("operator"), ""):
            toleration["operator"] = "Equal"
