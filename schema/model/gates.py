"""Fields a release drops when their feature gate is off (`upstream-rules.md` §3.8).

Runs on the internal (hub) spec after conversion, in place, on create. Returns the
paths dropped, so the skew report can say what a release silently removes.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import Release


def drop_disabled_fields(
    spec: dict[str, Any], path: FieldPath, release: Release,
    enabled: frozenset[str] = frozenset(),
) -> list[FieldPath]:
    """Drop the gated fields `release`'s strategy drops (its gate off by default, and a
    working drop in that release: see `Release.keeps_tolerations`), except those of the
    alpha gates in `enabled` (`Options.feature_gates`); return their paths."""
    devices = spec.get("devices")
    if not isinstance(devices, dict):
        return []
    off, drop_first_available, drop_distinct = _drops(release, enabled)
    dropped: list[FieldPath] = []
    requests = devices.get("requests")
    for i, request in enumerate(requests if isinstance(requests, list) else ()):
        if not isinstance(request, dict):
            continue
        # DRAPrioritizedList first: the later drops then no longer see the subrequests.
        if drop_first_available and "firstAvailable" in request:
            _record(
                dropped,
                request.pop("firstAvailable"),
                path,
                "devices",
                "requests",
                i,
                "firstAvailable",
            )
        if not off:
            continue
        exactly = request.get("exactly")
        if isinstance(exactly, dict):
            for key in off:
                if key in exactly:
                    _record(
                        dropped, exactly.pop(key), path, "devices", "requests", i, "exactly", key
                    )
        subs = request.get("firstAvailable")
        for j, sub in enumerate(subs if isinstance(subs, list) else ()):
            if isinstance(sub, dict):
                for key in off:
                    if key in sub:
                        _record(
                            dropped,
                            sub.pop(key),
                            path,
                            "devices",
                            "requests",
                            i,
                            "firstAvailable",
                            j,
                            key,
                        )
    if drop_distinct:
        constraints = devices.get("constraints")
        for c, constraint in enumerate(constraints if isinstance(constraints, list) else ()):
            if isinstance(constraint, dict) and "distinctAttribute" in constraint:
                value = constraint.pop("distinctAttribute")
                _record(dropped, value, path, "devices", "constraints", c, "distinctAttribute")
    return dropped


@cache
def _drops(
    release: Release, gates: frozenset[str] = frozenset()
) -> tuple[tuple[str, ...], bool, bool]:
    """What `release`'s strategy drops, read from its flags once per release and gates:
    the fields of each exact request and subrequest, whether `firstAvailable` goes
    (DRAPrioritizedList off) and whether `constraints[].distinctAttribute` goes."""
    return (_gated_off(release, gates), not release.prioritized_list,
            not release.keeps_distinct_attribute)


@cache
def _gated_off(release: Release, gates: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """Per exact request and subrequest: the fields this release's strategy drops."""
    return tuple(
        key
        for key, enabled in (
            ("tolerations", release.keeps_tolerations),
            ("adminAccess", release.admin_access),
            ("capacity", release.consumable_capacity),
            ("derivedAttributes", release.derived_attributes_on(gates)),
        )
        if not enabled
    )


def _record(dropped: list[FieldPath], value: Any, path: FieldPath, *rest: str | int) -> None:
    """Report a drop only when the field held something (an empty list loses nothing)."""
    if value not in (None, [], {}):
        dropped.append(FieldPath((*path.parts, *rest)))
