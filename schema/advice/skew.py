"""Skew warnings: what older cluster components will not understand in an admitted claim.

The apiserver accepts these objects; the risk is a component one or more minors
behind (a scheduler, controller or driver during an upgrade) that lacks the feature.
Warnings are bounded as the apiserver bounds them: each item is cut at 256
characters and the total stays within 4,096 (Kubernetes "admission webhook
warnings" guidance; more is dropped by the apiserver anyway).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from draguard.schema.skew import FEATURE_SINCE

MAX_WARNING_CHARS = 256
MAX_TOTAL_CHARS = 4096


def skew_warnings(obj: Any) -> list[str]:
    """Warnings for the requests, constraints and config of a claim or template, in order.

    Not yet limited: the caller adds other warnings and applies `limit_warnings` once.
    """
    spec = _claim_spec(obj)
    if spec is None:
        return []
    devices = spec.get("devices")
    if not isinstance(devices, dict):
        return []
    return list(_device_warnings(devices))


def limit_warnings(warnings: Iterable[str]) -> list[str]:
    """Cut each warning to 256 characters and stop before the total passes 4,096."""
    out: list[str] = []
    total = 0
    for text in warnings:
        line = text if text.isprintable() else _printable(text)
        if len(line) > MAX_WARNING_CHARS:
            line = line[: MAX_WARNING_CHARS - 1] + "…"
        if total + len(line) > MAX_TOTAL_CHARS:
            break
        out.append(line)
        total += len(line)
    return out


def _printable(text: str) -> str:
    # Warnings travel as HTTP Warning headers, where control characters are not allowed.
    return "".join(" " if unicodedata.category(ch)[0] in "CZ" else ch for ch in text)


def _claim_spec(obj: Any) -> Mapping[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    spec = obj.get("spec")
    if obj.get("kind") == "ResourceClaimTemplate" and isinstance(spec, dict):
        spec = spec.get("spec")
    return spec if isinstance(spec, dict) else None


def _device_warnings(devices: Mapping[str, Any]) -> Iterator[str]:
    requests = devices.get("requests")
    prioritized: set[str] = set()
    for request in requests if isinstance(requests, list) else []:
        if not isinstance(request, dict):
            continue
        name = _name(request)
        if request.get("firstAvailable"):
            prioritized.add(name)
            # upstream-rules.md §1.1/§1.3: the gate is beta from 1.34; an older scheduler
            # sees a request with neither `exactly` nor `deviceClassName` and refuses it.
            yield (
                f"request {name} uses firstAvailable: schedulers before {_since('firstAvailable')} cannot "
                "allocate it"
            )
        yield from _exact_warnings(name, request)
    yield from _reference_warnings(devices, prioritized)


def _since(feature: str) -> str:
    """The release that turned the feature's gate on by default (one table: schema.skew)."""
    return f"1.{FEATURE_SINCE[feature][0]}"


def _exact_warnings(name: str, request: Mapping[str, Any]) -> Iterator[str]:
    exact = request.get("exactly")
    fields = exact if isinstance(exact, dict) else request  # v1beta1 keeps them flat
    listed = request.get("firstAvailable")
    subs = [s for s in listed if isinstance(s, dict)] if isinstance(listed, list) else []
    if fields.get("adminAccess") is True:
        # §1.1 DRAAdminAccess: default-on from 1.34; older apiservers drop the field.
        yield f"request {name} uses adminAccess: clusters before {_since('adminAccess')} drop it"
    if fields.get("tolerations") or any(s.get("tolerations") for s in subs):
        # §1.1 DRADeviceTaints: default-on from 1.36; §3.8 drops it where the gate is off.
        yield f"request {name} uses tolerations: clusters before {_since('tolerations')} drop them"
    if fields.get("capacity") or any(s.get("capacity") for s in subs):
        # §1.1 DRAConsumableCapacity: default-on from 1.36.
        yield f"request {name} uses capacity: clusters before {_since('capacity')} drop it"


def _reference_warnings(devices: Mapping[str, Any], prioritized: set[str]) -> Iterator[str]:
    for section in ("constraints", "config"):
        entries = devices.get(section)
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            refs = entry.get("requests") if isinstance(entry, dict) else None
            for ref in refs if isinstance(refs, list) else []:
                if isinstance(ref, str) and "/" in ref and ref.split("/", 1)[0] in prioritized:
                    # §1.3: results name `<request>/<subrequest>`; drivers must parse that form.
                    yield (
                        f"{section}[{i}] names subrequest {ref}: drivers built before "
                        "1.33 do not understand subrequest results"
                    )
        if section == "constraints":
            for i, entry in enumerate(entries if isinstance(entries, list) else []):
                if isinstance(entry, dict) and entry.get("distinctAttribute"):
                    yield (
                        f"constraints[{i}] uses distinctAttribute: clusters before {_since('distinctAttribute')} "
                        "drop it"
                    )


def _name(request: Mapping[str, Any]) -> str:
    name = request.get("name")
    return name if isinstance(name, str) and name else "(unnamed)"
