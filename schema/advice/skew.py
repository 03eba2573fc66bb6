"""Skew advice: what older cluster components will not understand in an admitted claim.

The apiserver accepts these objects; the risk is a component one or more minors
behind (a scheduler, controller or driver during an upgrade) that lacks the feature.
Only a component the version-skew policy allows next to an apiserver of the target
release counts (`releases.CONTROL_PLANE_SKEW`, `KUBELET_SKEW`): at 1.37 the oldest
scheduler is 1.36 and the oldest kubelet 1.34, which have every feature below, so a
1.37 target gets no skew advice (issue 17).
Each finding is an `Advice` with a `skew-*` code, produced by `advise_claim_spec` with
the other claim checks, so lint, the webhook and `draguard skew` show the same
findings and `draguard.io/ignore` silences them alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from draguard.schema.advice.codes import Advice
from draguard.schema.advice.requests import Request
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import (
    CONTROL_PLANE_SKEW,
    FEATURE_SINCE,
    KUBELET_SKEW,
    SUBREQUEST_RESULTS_SINCE,
)

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
    devices: dict[str, Any], requests: list[Request], dpath: FieldPath, target: int
) -> Iterator[Advice]:
    """Per request its gated features, then subrequest references, then distinctAttribute,
    each only when a component allowed next to a 1.`target` apiserver lacks it."""
    if skew_silent(target):  # every check below is guarded by a lack: nothing to walk for
        return
    scheduler, kubelet, lacking = _plan(target)
    first_available = "firstAvailable" in lacking
    fields = not lacking.isdisjoint(FIELD_CODES)
    rparts = (*dpath.parts, "requests")
    prioritized: set[str] = set()
    for i, request, subs, _, _ in requests:
        if subs:
            name = _name(request)
            prioritized.add(name)
            if first_available:
                yield _first_available(name, FieldPath((*rparts, i)), scheduler)
        if fields:
            yield from _field_advice(request, subs, FieldPath((*rparts, i)), scheduler, lacking)
    if kubelet.minor < SUBREQUEST_RESULTS_SINCE:
        yield from _reference_advice(devices, prioritized, dpath, kubelet)
    if "distinctAttribute" in lacking:
        yield from _distinct_attribute_advice(devices, dpath, scheduler)


@cache
def _plan(target: int) -> tuple[_Oldest, _Oldest, frozenset[str]]:
    """The oldest scheduler and kubelet next to a 1.`target` apiserver, and the features
    of the checks that scheduler lacks: one table per release."""
    scheduler = _oldest("kube-scheduler", target, CONTROL_PLANE_SKEW)
    kubelet = _oldest("kubelet", target, KUBELET_SKEW)
    features = ("firstAvailable", *FIELD_CODES, "distinctAttribute")
    return scheduler, kubelet, frozenset(f for f in features if scheduler.lacks(f))


class _Oldest:
    """The oldest release of a component the skew policy allows with the target apiserver."""

    __slots__ = ("component", "minor", "target")

    def __init__(self, component: str, target: int, minor: int) -> None:
        self.component, self.target, self.minor = component, target, minor

    def lacks(self, feature: str) -> bool:
        """Its gate is not on by default there (model.releases.FEATURE_SINCE)."""
        return self.minor < FEATURE_SINCE[feature][0]

    def why(self, feature: str) -> str:
        """Why that component may lack the feature at the target, in words."""
        if self.target < FEATURE_SINCE[feature][0]:
            return f"so does the {self.component} of a 1.{self.target} cluster"
        return (f"a 1.{self.target} cluster may run {self.component} 1.{self.minor} "
                "(version-skew policy)")


@cache
def skew_silent(target: int) -> bool:
    """True when the oldest scheduler and kubelet the skew policy allows next to a
    1.`target` apiserver have every feature the checks ask about (from 1.37 on)."""
    _, kubelet, lacking = _plan(target)
    return not lacking and kubelet.minor >= SUBREQUEST_RESULTS_SINCE


def _oldest(component: str, target: int, skew: int) -> _Oldest:
    return _Oldest(component, target, target - skew)


def _since(feature: str) -> str:
    """The release that turned the feature's gate on by default (model.releases)."""
    return f"1.{FEATURE_SINCE[feature][0]}"


def _first_available(name: str, rpath: FieldPath, scheduler: _Oldest) -> Advice:
    # upstream-rules.md §1.1/§1.3: the gate is beta from 1.34; an older scheduler sees a
    # request with neither `exactly` nor `deviceClassName` and refuses it.
    return Advice(
        rpath.child("firstAvailable"),
        "skew-first-available",
        f"request {name} uses firstAvailable: schedulers before {_since('firstAvailable')} "
        f"cannot allocate it, and {scheduler.why('firstAvailable')}",
    )


def _field_advice(
    request: dict[str, Any], subs: list[dict[str, Any]], rpath: FieldPath,
    scheduler: _Oldest, lacking: frozenset[str],
) -> Iterator[Advice]:
    exact = request.get("exactly")
    fields = exact if isinstance(exact, dict) else {}
    # §1.1 DRAAdminAccess: default-on from 1.34; an older scheduler allocates the device
    # as if for exclusive use.
    if "adminAccess" in lacking and fields.get("adminAccess") is True:
        yield Advice(rpath, FIELD_CODES["adminAccess"],
                     f"request {_name(request)} uses adminAccess: schedulers before "
                     f"{_since('adminAccess')} do not know it, and {scheduler.why('adminAccess')}")
    # §1.1 DRADeviceTaints: default-on from 1.36; an older scheduler and controller-manager
    # apply no device taints, so tolerations mean nothing there. (What the apiserver of
    # the target itself drops is `release-drops-field`.)
    if "tolerations" in lacking and (
            fields.get("tolerations") or any(s.get("tolerations") for s in subs)):
        yield Advice(rpath, FIELD_CODES["tolerations"],
                     f"request {_name(request)} uses tolerations: schedulers before "
                     f"{_since('tolerations')} ignore device taints, and {scheduler.why('tolerations')}")
    # §1.1 DRAConsumableCapacity: default-on from 1.36.
    if "capacity" in lacking and (fields.get("capacity") or any(s.get("capacity") for s in subs)):
        yield Advice(rpath, FIELD_CODES["capacity"],
                     f"request {_name(request)} uses capacity: schedulers before {_since('capacity')} "
                     f"do not allocate by capacity, and {scheduler.why('capacity')}")


def _reference_advice(
    devices: dict[str, Any], prioritized: set[str], dpath: FieldPath, kubelet: _Oldest
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
                        f"1.{SUBREQUEST_RESULTS_SINCE} do not understand subrequest results, "
                        f"and a 1.{kubelet.target} cluster may run kubelet 1.{kubelet.minor} "
                        "(version-skew policy) with drivers of its age",
                    )


def _distinct_attribute_advice(
    devices: dict[str, Any], dpath: FieldPath, scheduler: _Oldest
) -> Iterator[Advice]:
    entries = devices.get("constraints")
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if isinstance(entry, dict) and entry.get("distinctAttribute"):
            yield Advice(
                dpath.child("constraints").index(i).child("distinctAttribute"),
                "skew-distinct-attribute",
                f"constraints[{i}] uses distinctAttribute: schedulers before "
                f"{_since('distinctAttribute')} ignore it, and {scheduler.why('distinctAttribute')}",
            )


def _name(request: dict[str, Any]) -> str:
    name = request.get("name")
    return name if isinstance(name, str) and name else "(unnamed)"
