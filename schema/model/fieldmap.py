"""Field mapping between the shapes of a device claim (`upstream-rules.md` §5, contract §2).

These are the per-object mappings; document-level conversion (defaults, loss reports,
YAML round trips) is built on them elsewhere. Functions take clean, read objects and
return new ones; inputs are never mutated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ORDER_ANNOTATION = "draguard.io/request-order"
PARALLEL_KEY = "prioritizedRequests"

# §5.0: the flat v1beta1 fields that live under `exactly` in the hub shape, in Go order;
# `derivedAttributes` too (1.37, behind DRADerivedAttributes: upstream validation.go's
# ResourceNormalizationRules map v1beta1's `requests[i].derivedAttributes` to `exactly`).
FLAT_FIELDS = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
    "derivedAttributes",
)

# v1beta1 DeviceRequest field order after name and deviceClassName (§2.2, Go struct order).
V1BETA1_ORDER = ("selectors", "allocationMode", "count", "adminAccess", "firstAvailable", "tolerations",
                 "capacity", "derivedAttributes")


def v1beta1_request_to_hub(request: dict[str, Any]) -> dict[str, Any]:
    """§5.2: build `exactly` iff any main field is set (explicit `[]` and `false` count)."""
    out: dict[str, Any] = {}
    if "name" in request:
        out["name"] = request["name"]
    if main_fields_set(request):
        exactly: dict[str, Any] = {}
        for key in FLAT_FIELDS:
            if key not in request:
                continue
            value = request[key]
            # The element-wise toleration loop turns an explicit [] into nil (§5.2 step 3).
            if key == "tolerations" and value == []:
                continue
            exactly[key] = value
        out["exactly"] = exactly
    if "firstAvailable" in request:
        out["firstAvailable"] = request["firstAvailable"]
    return out


def main_fields_set(request: dict[str, Any]) -> bool:
    return bool(
        request.get("deviceClassName", "")
        or "selectors" in request
        or request.get("allocationMode", "")
        or request.get("count", 0)
        or "adminAccess" in request
        or "tolerations" in request
        or "capacity" in request
        or "derivedAttributes" in request
    )


def hub_request_to_v1beta1(request: dict[str, Any]) -> dict[str, Any]:
    """§5.3: flatten `exactly`; `deviceClassName` has no omitempty, so it is always written."""
    out: dict[str, Any] = {}
    if "name" in request:
        out["name"] = request["name"]
    exactly = request.get("exactly")
    exactly = exactly if isinstance(exactly, dict) else {}
    out["deviceClassName"] = exactly.get("deviceClassName", "")
    for key in V1BETA1_ORDER:
        if key == "firstAvailable":
            if key in request:
                out[key] = request[key]
        elif key in exactly and not (key == "tolerations" and exactly[key] == []):
            out[key] = exactly[key]  # element-wise toleration copy: empty becomes nil (§5.3)
    return out


def map_requests(spec: dict[str, Any], convert: Any) -> dict[str, Any]:
    """A copy of a claim spec with every request passed through `convert`."""
    devices = spec.get("devices")
    if not isinstance(devices, dict) or not isinstance(devices.get("requests"), list):
        return dict(spec)
    requests = [convert(r) if isinstance(r, dict) else r for r in devices["requests"]]
    return {**spec, "devices": {**devices, "requests": requests}}


def spec_v1beta1_to_hub(spec: dict[str, Any]) -> dict[str, Any]:
    return map_requests(spec, v1beta1_request_to_hub)


def spec_hub_to_v1beta1(spec: dict[str, Any]) -> dict[str, Any]:
    return map_requests(spec, hub_request_to_v1beta1)


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a nested request came from in a parallel document."""

    list_name: str  # "requests" or "prioritizedRequests"
    index: int


def parallel_to_nested(
    devices: dict[str, Any], order: list[str] | None
) -> tuple[dict[str, Any], list[Origin]]:
    """Contract §2: put each prioritized request back as a request with `firstAvailable`.

    Requests are placed in the recorded `order` when it names exactly the requests
    present, else exact requests first, then prioritized ones. Returns the nested
    devices and, per nested index, the origin in the parallel document.
    """
    exact = [r for r in devices.get("requests", []) or [] if isinstance(r, dict)]
    prioritized = [p for p in devices.get(PARALLEL_KEY, []) or [] if isinstance(p, dict)]
    entries: list[tuple[dict[str, Any], Origin]] = [
        (r, Origin("requests", i)) for i, r in enumerate(exact)
    ]
    for i, entry in enumerate(prioritized):
        request: dict[str, Any] = {}
        if "name" in entry:
            request["name"] = entry["name"]
        if "options" in entry:
            request["firstAvailable"] = entry["options"]
        entries.append((request, Origin(PARALLEL_KEY, i)))
    entries = _reorder(entries, order)
    nested = {k: v for k, v in devices.items() if k != PARALLEL_KEY}
    nested["requests"] = [request for request, _ in entries]
    return nested, [origin for _, origin in entries]


def _reorder(
    entries: list[tuple[dict[str, Any], Origin]], order: list[str] | None
) -> list[tuple[dict[str, Any], Origin]]:
    names = [request.get("name") for request, _ in entries]
    if order is None or sorted(map(str, names)) != sorted(order) or len(set(order)) != len(order):
        return entries
    by_name = {request.get("name"): (request, origin) for request, origin in entries}
    return [by_name[name] for name in order]


def nested_to_parallel(devices: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Contract §2: move every request with a non-empty `firstAvailable` to `prioritizedRequests`.

    Returns the parallel devices and the original request order (names) to record in
    the order annotation. A request that has both exact fields and `firstAvailable`
    cannot be represented; callers refuse such documents before calling this.
    """
    requests = [r for r in devices.get("requests", []) or [] if isinstance(r, dict)]
    exact, prioritized, order = [], [], []
    for request in requests:
        order.append(str(request.get("name", "")))
        if request.get("firstAvailable"):
            prioritized.append({"name": request.get("name", ""), "options": request["firstAvailable"]})
        elif "firstAvailable" in request:
            # An empty list counts as absent (rule 7), and `requests` of the parallel
            # shape holds only exact requests, which have no such field (contract §2).
            exact.append({k: v for k, v in request.items() if k != "firstAvailable"})
        else:
            exact.append(request)
    # `prioritizedRequests` right after `requests`, as contract §2 lays the shape out.
    parallel: dict[str, Any] = {}
    for key, value in devices.items():
        parallel[key] = exact if key == "requests" else value
        if key == "requests":
            parallel[PARALLEL_KEY] = prioritized
    parallel.setdefault("requests", exact)
    parallel.setdefault(PARALLEL_KEY, prioritized)
    return parallel, order


def encode_order(order: list[str]) -> str:
    return json.dumps(order, separators=(",", ":"))


def decode_order(annotations: Any) -> list[str] | None:
    """The recorded request order, or None when absent or unreadable."""
    if not isinstance(annotations, dict):
        return None
    raw = annotations.get(ORDER_ANNOTATION)
    if not isinstance(raw, str):
        return None
    try:
        order = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(order, list) or not all(isinstance(n, str) for n in order):
        return None
    return order
