"""Upstream defaulting of a versioned claim spec (`upstream-rules.md` §4).

Runs on the versioned (clean, already read) object before conversion, in place, as
the generated defaulters do. Only the request fields are touched.
"""

from __future__ import annotations

from typing import Any

EXACT_COUNT = "ExactCount"
ALL = "All"


def default_claim_spec(spec: dict[str, Any], version: str) -> None:
    """Apply §4.1 (v1, v1beta2) or §4.2 (v1beta1) to `spec` in place."""
    devices = spec.get("devices")
    if not isinstance(devices, dict):
        return
    requests = devices.get("requests")
    # The lists are walked in place (defaulting changes items, never the list), with plain
    # loops: in Python 3.11 each comprehension is a function call of its own.
    for request in requests if isinstance(requests, list) else ():
        if not isinstance(request, dict):
            continue
        if version == "v1beta1":
            default_flat_request(request)
        else:
            exactly = request.get("exactly")
            if isinstance(exactly, dict):  # §4.1: an empty `exactly: {}` is defaulted too
                default_device_fields(exactly)
        subs = request.get("firstAvailable")
        if subs and isinstance(subs, list):
            for sub in subs:
                if isinstance(sub, dict):
                    default_device_fields(sub)
    if "prioritizedRequests" in devices:
        for option_list in _prioritized_options(devices):
            for sub in option_list:
                default_device_fields(sub)


def default_flat_request(request: dict[str, Any]) -> None:
    """§4.2: request-level allocation defaults only for a flat request with a class."""
    if request.get("deviceClassName", ""):
        default_allocation(request)
    default_tolerations(request)


def default_device_fields(request: dict[str, Any]) -> None:
    """Both defaults of an exact request or a subrequest."""
    default_allocation(request)
    if "tolerations" in request:
        default_tolerations(request)


# Go struct order (§2.1, §2.2): what follows allocationMode and count in a request,
# an exact request or a subrequest. A default goes in before these, as upstream's JSON
# prints it, so that a converted file reads `allocationMode`, then `count`.
_GO_ORDER_AFTER_MODE = ("count", "adminAccess", "firstAvailable", "tolerations", "capacity")
AFTER_ALLOCATION_MODE = frozenset(_GO_ORDER_AFTER_MODE)
_AFTER_COUNT = frozenset(_GO_ORDER_AFTER_MODE[1:])


def default_allocation(request: dict[str, Any]) -> None:
    """allocationMode "" → ExactCount, then ExactCount with count 0 → 1 (§4.1)."""
    if not request.get("allocationMode", ""):
        _put(request, "allocationMode", EXACT_COUNT, AFTER_ALLOCATION_MODE)
    if request["allocationMode"] == EXACT_COUNT:
        default_count(request)


def default_count(request: dict[str, Any]) -> None:
    """The second half of `default_allocation`, for an ExactCount request: count 0 → 1."""
    if not request.get("count", 0):
        _put(request, "count", 1, _AFTER_COUNT)


def _put(obj: dict[str, Any], key: str, value: Any, later: frozenset[str]) -> None:
    """Set `key`; a new key goes before the first of the `later` keys present."""
    if key in obj:
        obj[key] = value
        return
    for at, k in enumerate(obj):
        if k in later:
            # Move that key and all after it behind the new one, keeping their order.
            keys = list(obj)
            obj[key] = value
            for moved in keys[at:]:
                obj[moved] = obj.pop(moved)
            return
    obj[key] = value


def default_tolerations(request: dict[str, Any]) -> None:
    """Toleration operator "" → Equal (generated defaulter, §4.1/§4.2)."""
    tolerations = request.get("tolerations")
    if not tolerations or not isinstance(tolerations, list):
        return  # the common case: nothing to default
    for toleration in _dicts(tolerations):
        if not toleration.get("operator", ""):
            toleration["operator"] = "Equal"


def _prioritized_options(devices: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The parallel shape's options, which default like subrequests."""
    return [list(_dicts(entry.get("options"))) for entry in _dicts(devices.get("prioritizedRequests"))]


def _dicts(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]
