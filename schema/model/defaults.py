"""Upstream defaulting of a versioned claim spec (`upstream-rules.md` §4): the one implementation.

Every caller goes through `default_devices`: reading (`validate.prepare`, on the clean
copy, before conversion), the round trip (on the hub shape, as storage reads do) and
the mutating policy (on the raw admission object). It runs in place, as the
generated defaulters do, and touches only the request fields.

Only unset fields change. Go cannot tell an absent string from `""` nor an absent
count from `0`, so those are defaulted too; JSON `null` is unset as well. A value of
another JSON type is left as written: on the raw object that is the rule set's
business (`Malformed`), and a clean copy never holds one.
"""

from __future__ import annotations

from typing import Any

from draguard.schema.model.fieldmap import PARALLEL_KEY

EXACT_COUNT = "ExactCount"

# Go struct order (§2.1, §2.2): what follows allocationMode and count in a request,
# an exact request or a subrequest. A default goes in before these, as upstream's JSON
# prints it, so that a converted file reads `allocationMode`, then `count`.
_GO_ORDER_AFTER_MODE = ("count", "adminAccess", "firstAvailable", "tolerations", "capacity")
_AFTER_MODE = frozenset(_GO_ORDER_AFTER_MODE)
_AFTER_COUNT = frozenset(_GO_ORDER_AFTER_MODE[1:])


def default_claim_spec(spec: Any, version: str) -> None:
    """Apply §4.1 (v1, v1beta2) or §4.2 (v1beta1) to a claim spec in place."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if isinstance(devices, dict):
        default_devices(devices, version)


def default_claim_status(status: Any) -> None:
    """§4.1: `status.allocation.devices.results[].tolerations[].operator` "" → Equal.

    The generated defaulters of every version (zz_generated.defaults.go,
    SetObjectDefaults_ResourceClaim) walk the allocation results as well as the spec.
    """
    allocation = status.get("allocation") if isinstance(status, dict) else None
    devices = allocation.get("devices") if isinstance(allocation, dict) else None
    results = devices.get("results") if isinstance(devices, dict) else None
    for result in results if isinstance(results, list) else ():
        if isinstance(result, dict):
            _default_tolerations(result)


def default_devices(devices: dict[str, Any], version: str) -> None:
    """Default every request, subrequest and parallel option of `devices`, per API version."""
    requests = devices.get("requests")
    # The lists are walked in place (defaulting changes items, never the list), with plain
    # loops: in Python 3.11 each comprehension is a function call of its own.
    for request in requests if isinstance(requests, list) else ():
        if not isinstance(request, dict):
            continue
        if version == "v1beta1":
            _default_flat_request(request)
        else:
            exactly = request.get("exactly")
            if isinstance(exactly, dict):  # §4.1: only a non-nil `exactly` (an empty `{}` too)
                _default_device_fields(exactly)
        subs = request.get("firstAvailable")
        if subs and isinstance(subs, list):
            for sub in subs:
                if isinstance(sub, dict):
                    # `_default_device_fields`, inline: every subrequest of every claim.
                    _default_allocation(sub)
                    if "tolerations" in sub:
                        _default_tolerations(sub)
    if PARALLEL_KEY in devices:
        # Contract §2: the parallel shape's options default like subrequests.
        entries = devices[PARALLEL_KEY]
        for entry in entries if isinstance(entries, list) else ():
            options = entry.get("options") if isinstance(entry, dict) else None
            for option in options if isinstance(options, list) else ():
                if isinstance(option, dict):
                    _default_device_fields(option)


def _default_flat_request(request: dict[str, Any]) -> None:
    """§4.2: allocation defaults only for a flat request with a class; tolerations always."""
    device_class = request.get("deviceClassName")
    if isinstance(device_class, str) and device_class:
        _default_allocation(request)
    _default_tolerations(request)


def _default_device_fields(request: dict[str, Any]) -> None:
    """Both defaults of an exact request, a subrequest or a parallel option (§4.1)."""
    _default_allocation(request)
    if "tolerations" in request:
        _default_tolerations(request)


def _default_allocation(request: dict[str, Any]) -> None:
    """allocationMode "" → ExactCount, then ExactCount with count 0 → 1 (§4.1)."""
    mode = request.get("allocationMode")
    if mode is None or (mode == "" and isinstance(mode, str)):
        count = request.get("count")
        if count is None and _AFTER_MODE.isdisjoint(request):
            # The usual request names neither: both go at the end, in Go's order.
            request["allocationMode"] = EXACT_COUNT
            request["count"] = 1
            return
        _put(request, "allocationMode", EXACT_COUNT, _AFTER_MODE)
        mode = EXACT_COUNT
    if mode == EXACT_COUNT:
        count = request.get("count")
        if count is None or (count == 0 and isinstance(count, int) and not isinstance(count, bool)):
            _put(request, "count", 1, _AFTER_COUNT)


def _default_tolerations(request: dict[str, Any]) -> None:
    """Toleration operator "" → Equal (generated defaulter, §4.1/§4.2)."""
    tolerations = request.get("tolerations")
    if not tolerations or not isinstance(tolerations, list):
        return  # the common case: nothing to default
    for toleration in tolerations:
        if isinstance(toleration, dict):
            operator = toleration.get("operator")
            if operator is None or (operator == "" and isinstance(operator, str)):
                toleration["operator"] = "Equal"


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
