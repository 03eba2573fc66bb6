"""Fields a release drops when their feature gate is off (`upstream-rules.md` §3.8).

Runs on the internal (hub) spec after conversion, in place, on create. Returns the
paths dropped, so the skew report can say what a release silently removes.
"""

from __future__ import annotations

from typing import Any

from draguard.schema.paths import FieldPath
from draguard.schema.releases import Release


def drop_disabled_fields(spec: dict[str, Any], path: FieldPath, release: Release) -> list[FieldPath]:
    """Drop gated fields whose gate is off by default in `release`; return their paths."""
    devices = spec.get("devices")
    if not isinstance(devices, dict):
        return []
    dropped: list[FieldPath] = []
    devices_path = path.child("devices")
    requests = [r for r in devices.get("requests", []) if isinstance(r, dict)]
    for i, request in enumerate(requests):
        rpath = devices_path.child("requests").index(i)
        # DRAPrioritizedList first: the later drops then no longer see the subrequests.
        if not release.prioritized_list and "firstAvailable" in request:
            del request["firstAvailable"]
            dropped.append(rpath.child("firstAvailable"))
        exactly = request.get("exactly")
        targets = [(exactly, rpath.child("exactly"))] if isinstance(exactly, dict) else []
        targets += [
            (sub, rpath.child("firstAvailable").index(j))
            for j, sub in enumerate(request.get("firstAvailable", []))
            if isinstance(sub, dict)
        ]
        for target, tpath in targets:
            dropped += _drop(target, tpath, "tolerations", not release.device_taints)
            dropped += _drop(target, tpath, "adminAccess", not release.admin_access)
            dropped += _drop(target, tpath, "capacity", not release.consumable_capacity)
            dropped += _drop(target, tpath, "derivedAttributes", not release.derived_attributes)
    for c, constraint in enumerate(devices.get("constraints", [])):
        if isinstance(constraint, dict):
            cpath = devices_path.child("constraints").index(c)
            dropped += _drop(constraint, cpath, "distinctAttribute", not release.consumable_capacity)
    return dropped


def _drop(obj: dict[str, Any], path: FieldPath, key: str, gate_off: bool) -> list[FieldPath]:
    """Drop `key`; report it only when it held something (an empty list loses nothing)."""
    if gate_off and key in obj:
        value = obj.pop(key)
        return [path.child(key)] if value not in (None, [], {}) else []
    return []
