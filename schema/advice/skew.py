"""Skew advice: what older cluster components will not understand in an admitted claim.

The apiserver accepts these objects; the risk is a component one or more minors
behind (a scheduler, controller or driver during an upgrade) that lacks the feature.
Each finding is an `Advice` with a `skew-*` code, produced by `advise_claim_spec` with
the other claim checks, so lint, the webhook and `draguard skew` show the same
findings and `draguard.io/ignore` silences them alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from draguard.schema.advice.codes import Advice
from draguard.schema.advice.requests import Request
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import FEATURE_SINCE, SUBREQUEST_RESULTS_SINCE

# Gated field → its code; the order is the order of the checks on one request.
FIELD_CODES = {
    "adminAccess": "skew-admin-access",
    "tolerations": "skew-tolerations",
    "capacity": "skew-capacity",
}
SKEW_CODES = (
    "skew-first-available",
    *FIELD_CODES.values(),
    "skew-subrequest-results",
    "skew-distinct-attribute",
)


def check_skew(
    devices: dict[str, Any], requests: list[Request], dpath: FieldPath
) -> Iterator[Advice]:
    """Per request its gated features, then subrequest references, then distinctAttribute."""
    prioritized: set[str] = set()
    for i, request, subs, _, _ in requests:
        rpath = dpath.child("requests").index(i)
        name = _name(request)
        if subs:
            prioritized.add(name)
            yield _first_available(name, rpath)
        yield from _field_advice(name, request, subs, rpath)
    yield from _reference_advice(devices, prioritized, dpath)
    yield from _distinct_attribute_advice(devices, dpath)


def _since(feature: str) -> str:
    """The release that turned the feature's gate on by default (model.releases)."""
    return f"1.{FEATURE_SINCE[feature][0]}"


def _first_available(name: str, rpath: FieldPath) -> Advice:
    # upstream-rules.md §1.1/§1.3: the gate is beta from 1.34; an older scheduler sees a
    # request with neither `exactly` nor `deviceClassName` and refuses it.
    return Advice(
        rpath.child("firstAvailable"),
        "skew-first-available",
        f"request {name} uses firstAvailable: schedulers before {_since('firstAvailable')} "
        "cannot allocate it",
    )


def _field_advice(
    name: str, request: dict[str, Any], subs: list[dict[str, Any]], rpath: FieldPath
) -> Iterator[Advice]:
    exact = request.get("exactly")
    fields = exact if isinstance(exact, dict) else {}
    # §1.1 DRAAdminAccess: default-on from 1.34; older apiservers drop the field.
    if fields.get("adminAccess") is True:
        yield Advice(rpath, FIELD_CODES["adminAccess"],
                     f"request {name} uses adminAccess: clusters before {_since('adminAccess')} "
                     "drop it")
    # §1.1 DRADeviceTaints: default-on from 1.36. Only 1.35 drops the field (the claim
    # strategy's drop is kubernetes#132927); 1.33/1.34 store it and apply no device taints.
    if fields.get("tolerations") or any(s.get("tolerations") for s in subs):
        yield Advice(rpath, FIELD_CODES["tolerations"],
                     f"request {name} uses tolerations: clusters before {_since('tolerations')} "
                     "drop them (1.35) or ignore them (1.33, 1.34)")
    # §1.1 DRAConsumableCapacity: default-on from 1.36.
    if fields.get("capacity") or any(s.get("capacity") for s in subs):
        yield Advice(rpath, FIELD_CODES["capacity"],
                     f"request {name} uses capacity: clusters before {_since('capacity')} drop it")


def _reference_advice(
    devices: dict[str, Any], prioritized: set[str], dpath: FieldPath
) -> Iterator[Advice]:
    for section in ("constraints", "config"):
        entries = devices.get(section)
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            refs = entry.get("requests") if isinstance(entry, dict) else None
            for j, ref in enumerate(refs if isinstance(refs, list) else []):
                if isinstance(ref, str) and "/" in ref and ref.split("/", 1)[0] in prioritized:
                    # §1.3: results name `<request>/<subrequest>`; drivers must parse that form.
                    yield Advice(
                        dpath.child(section).index(i).child("requests").index(j),
                        "skew-subrequest-results",
                        f"{section}[{i}] names subrequest {ref}: drivers built before "
                        f"1.{SUBREQUEST_RESULTS_SINCE} do not understand subrequest results",
                    )


def _distinct_attribute_advice(devices: dict[str, Any], dpath: FieldPath) -> Iterator[Advice]:
    entries = devices.get("constraints")
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if isinstance(entry, dict) and entry.get("distinctAttribute"):
            yield Advice(
                dpath.child("constraints").index(i).child("distinctAttribute"),
                "skew-distinct-attribute",
                # 1.34's drop removed nothing until kubernetes#134962 (1.35.0).
                f"constraints[{i}] uses distinctAttribute: clusters before "
                f"{_since('distinctAttribute')} drop it (1.35) or ignore it (1.34)",
            )


def _name(request: dict[str, Any]) -> str:
    name = request.get("name")
    return name if isinstance(name, str) and name else "(unnamed)"
