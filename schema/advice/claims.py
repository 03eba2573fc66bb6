"""Warnings beyond upstream: traps that break prioritized lists after the apiserver said yes.

Issue 7. Each check is a small generator over the claim spec in the hub shape (the
same object the rules see) and yields `Advice` values with a stable kebab-case code.
The evidence behind every code is in README ("Warnings"). Advice never changes the
verdict; front ends decide whether it fails a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from math import prod
from typing import Any

from draguard.schema.advice.codes import CODES as CODES
from draguard.schema.advice.codes import IGNORE_ANNOTATION as IGNORE_ANNOTATION
from draguard.schema.advice.codes import Advice as Advice
from draguard.schema.advice.codes import Version as Version
from draguard.schema.advice.codes import ignored_codes as ignored_codes
from draguard.schema.advice.requests import Request, gather_requests
from draguard.schema.advice.skew import check_skew, skew_silent
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import (
    ALLOCATION_RESULTS_MAX,
    FEATURE_SINCE,
    REQUESTS_MAX,
    Release,
)

ALL_MODE_QUOTA_CHARGE = 32  # core ResourceQuota counts an `All` request as 32 devices
COMBINATIONS_WARN_AT = 64  # products above 8×8 make the allocator's search visibly slower
PROFILES = ("kueue", "autoscaler", "dynamo")


def advise_claim_spec(
    spec: dict[str, Any],
    path: FieldPath,
    *,
    version: Version,
    profiles: frozenset[str] = frozenset(),
    per_pod: bool = False,
) -> list[Advice]:
    """Every per-object check over one hub-shaped claim spec at `path`, in a fixed order.

    The requests, their alternatives and device counts are gathered once and shared
    by all checks; one loop over them serves every per-request check and the totals of
    `devices-over-32` and `combinations`, and paths and messages are built only for a
    finding (the webhook judges every distinct claim with this).
    """
    devices = spec.get("devices")
    if not isinstance(devices, dict):
        return []
    requests = gather_requests(devices)
    minor = version.release.minor
    silent = skew_silent(minor)
    config = devices.get("config")
    out: list[Advice] = []
    if config or not silent:
        dpath = path.child("devices")
        if not silent:
            out.extend(check_skew(devices, requests, dpath, minor))
        if config:
            out.extend(check_config_names_parent(devices, requests, dpath, minor))
    if not requests:
        return out  # every check below needs a request
    # Each path is built from its segments in one step, and only for a finding.
    rparts = (*path.parts, "devices", "requests")
    rpaths = FieldPath(rparts)
    # quota-charge: core ResourceQuota charges a prioritized request, per device class,
    # the largest count among its alternatives of that class (`All` as 32), summed over
    # requests (KEP-4816: no quota circumvention); an allocation needs only the chosen
    # alternative. Plain loops: in Python 3.11 each comprehension is a call of its own.
    charge: dict[str, int] = {}
    need: dict[str, int] = {}
    charged = needed = worst = 0
    sizes: list[int] = []
    per_request: list[Advice] = []
    for i, request, subs, alternatives, counts in requests:
        if not counts:
            continue
        n = counts[0] or ALL_MODE_QUOTA_CHARGE
        cls = alternatives[0].get("deviceClassName", "")
        if not isinstance(cls, str):
            cls = str(cls)
        need[cls] = need.get(cls, 0) + n
        needed += n
        if len(counts) == 1:  # an exact request or a lone subrequest: charged as needed
            charge[cls] = charge.get(cls, 0) + n
            charged += n
            worst += counts[0]
        else:
            largest = {cls: n}
            for k in range(1, len(counts)):
                cls = alternatives[k].get("deviceClassName", "")
                if not isinstance(cls, str):
                    cls = str(cls)
                n = counts[k] or ALL_MODE_QUOTA_CHARGE
                if n > largest.get(cls, 0):
                    largest[cls] = n
            for cls, n in largest.items():
                charge[cls] = charge.get(cls, 0) + n
                charged += n
            worst += max(counts)  # `All` counts 0, so it never is the largest
        if not subs:
            continue
        sizes.append(len(subs))
        if 0 in counts:  # an `All` subrequest
            per_request.extend(check_all_mode(counts, FieldPath((*rparts, i)), version))
        if len(counts) > 1 and counts.count(counts[0]) != len(counts):
            per_request.append(_counts_differ(
                request, counts, FieldPath((*rparts, i, "firstAvailable")), profiles))
        if profiles:
            per_request.extend(check_profiles(request, FieldPath((*rparts, i)), profiles))
    if charged > needed:
        out.append(_quota_charge(charge, need, charged, needed, rpaths, per_pod=per_pod))
    out += per_request
    if worst > ALLOCATION_RESULTS_MAX:
        out.append(_devices_over_32(worst, rpaths))
    if len(sizes) > 1:
        _give(out, _combinations(sizes, rpaths))
    if len(requests) > 1 and minor in _CLASS_CONFIG_FIXED:  # (the releases with that bug)
        _give(out, check_class_config_names(requests, rpaths, version))
    return out


def _give(out: list[Advice], advice: Advice | None) -> None:
    if advice is not None:
        out.append(advice)


# -- release-drops-field -------------------------------------------------------------------

# The gate behind each field a release may drop (§1.1); FEATURE_SINCE has the release in
# which it became on by default, DRADerivedAttributes is alpha wherever it exists.
_DROP_GATES = {"derivedAttributes": "DRADerivedAttributes"}


def check_dropped_fields(dropped: Iterable[FieldPath], release: Release) -> list[Advice]:
    """The fields `release` silently removes on create (gates.py), each naming its gate.

    Lint under a release says what `skew` says for it: the apiserver answers 201 and the
    stored claim lacks the field, which validation alone cannot show. A list, not a
    generator: almost every claim drops nothing, and that answer should cost nothing.
    """
    out: list[Advice] = []
    for path in dropped:
        field = str(path.parts[-1])
        since, gate = FEATURE_SINCE.get(field, (None, _DROP_GATES.get(field, "its feature gate")))
        on = f"on by default from 1.{since}" if since is not None else "alpha, off by default"
        state = ("set to false by --feature-gates" if (gate, False) in release.gates
                 else "off by default")
        out.append(Advice(
            path,
            "release-drops-field",
            f"Kubernetes {release.name} drops `{field}` on create: {gate} is {state} "
            f"there ({on}), so the stored claim lacks it",
        ))
    return out


# -- config-names-parent ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReferenceRewrite:
    """Replace `config[index].requests` by `new` (every parent name spelled out)."""

    index: int
    old: tuple[str, ...]
    new: tuple[str, ...]

    @property
    def fits(self) -> bool:
        return len(self.new) <= REQUESTS_MAX


def prioritized_parents(devices: dict[str, Any]) -> dict[str, list[str]]:
    """Parent name → subrequest names; later requests of a name win (rule 19's lookup)."""
    return _parents(gather_requests(devices))


def _parents(requests: list[Request]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for _, request, subrequests, _, _ in requests:
        name = request.get("name")
        if not isinstance(name, str):
            continue
        subs = [s.get("name") for s in subrequests]
        if subs and all(isinstance(n, str) and n for n in subs):
            out[name] = [str(n) for n in subs]
        else:
            out.pop(name, None)
    return out


def config_reference_rewrites(devices: dict[str, Any]) -> list[ReferenceRewrite]:
    """The `config-names-parent` rewrites for a devices object of any version or layout."""
    if not devices.get("config"):
        return []
    return _rewrites(devices, prioritized_parents(devices))


def _rewrites(devices: dict[str, Any], parents: dict[str, list[str]]) -> list[ReferenceRewrite]:
    rewrites = []
    configs = devices.get("config")  # any JSON type: the rule set reports it, not this
    for k, config in enumerate(configs if isinstance(configs, list) else []):
        refs = config.get("requests") if isinstance(config, dict) else None
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            continue
        if not any(r in parents for r in refs):
            continue
        new: list[str] = []
        for ref in refs:
            for expanded in [f"{ref}/{s}" for s in parents[ref]] if ref in parents else [ref]:
                if expanded not in new:
                    new.append(expanded)
        rewrites.append(ReferenceRewrite(k, tuple(refs), tuple(new)))
    return rewrites


def check_config_names_parent(
    devices: dict[str, Any], requests: list[Request], dpath: FieldPath, minor: int | None = None
) -> Iterator[Advice]:
    """`requests`: `gather_requests(devices)`; `minor`: the release; from 1.37 a config
    that covers every request is not affected."""
    if not devices.get("config"):
        return
    parents = _parents(requests)
    everyone = _request_names(requests) if minor is not None and minor >= 37 else None
    for rewrite in _rewrites(devices, parents):
        if everyone and everyone <= set(rewrite.old):
            # From 1.37 the allocator clears `config[].requests` when the config covers
            # every request ("empty means all"), so a driver applies it to every result
            # whatever its name says: only a config naming some of several requests is hit.
            continue
        for r, ref in enumerate(rewrite.old):
            if ref not in parents:
                continue
            explicit = ", ".join(f"`{ref}/{s}`" for s in parents[ref])
            fix = (
                "`draguard fix` rewrites it"
                if rewrite.fits
                else (
                    f"spelling them out needs {len(rewrite.new)} entries, over upstream's {REQUESTS_MAX}"
                )
            )
            yield Advice(
                dpath.child("config").index(rewrite.index).child("requests").index(r),
                "config-names-parent",
                f"config names the prioritized request `{ref}` by its parent name; allocation results say "
                f"`{ref}/<subrequest>` and most drivers compare names exactly, so they silently skip this "
                f"config: name {explicit} instead ({fix})",
            )


def _request_names(requests: list[Request]) -> set[str]:
    names = set()
    for _, request, _, _, _ in requests:
        name = request.get("name")
        if isinstance(name, str):
            names.add(name)
    return names


# -- quota-charge, devices-over-32, combinations -------------------------------------------


def _quota_charge(
    charge: dict[str, int], need: dict[str, int], charged: int, needed: int,
    rpaths: FieldPath, *, per_pod: bool,
) -> Advice:
    """`charge`, `need`: devices per class charged to quota and needed by the first
    choices, `charged` and `needed` their sums; `rpaths`: `devices.requests`."""
    unit = "per pod " if per_pod else ""
    return Advice(
        rpaths,
        "quota-charge",
        f"ResourceQuota charges this claim {unit}for every alternative at once: {_per_class(charge)} "
        f"({charged} devices), while its first choices need {_per_class(need)} "
        f"({needed}); size namespace quotas for the larger figure",
    )


def _devices_over_32(worst: int, rpaths: FieldPath) -> Advice:
    """`worst`: the devices when every request gets its largest alternative."""
    return Advice(
        rpaths,
        "devices-over-32",
        f"up to {worst} devices when the largest alternatives are chosen, but an allocation holds at most "
        f"{ALLOCATION_RESULTS_MAX} results: the scheduler cannot allocate those combinations",
    )


def _combinations(sizes: list[int], rpaths: FieldPath) -> Advice | None:
    """`sizes`: the number of alternatives of each prioritized request, two or more."""
    if len(sizes) > REQUESTS_MAX:
        # Over upstream's 32 requests the object is rejected anyway (TooMany), and the
        # product can outgrow what int → str may print (ValueError past 4,300 digits).
        return None
    total = prod(sizes)
    if total <= COMBINATIONS_WARN_AT:
        return None
    return Advice(
        rpaths,
        "combinations",
        f"{total} combinations of alternatives across {len(sizes)} prioritized requests "
        f"({' × '.join(map(str, sizes))}); the allocator may try each on every candidate node",
    )


# -- per-request checks ---------------------------------------------------------------------


def check_all_mode(counts: list[int], rpath: FieldPath, version: Version) -> Iterator[Advice]:
    """`counts` are the subrequests' device counts, `All` as 0."""
    for j, count in enumerate(counts):
        if count:
            continue
        path = rpath.child("firstAvailable").index(j).child("allocationMode")
        if j >= 1 and version.release.minor in (33, 34, 35):
            # kubernetes#131660 (1.36.0, not backported); 1.33 lacks it too, where
            # firstAvailable needs DRAPrioritizedList turned on.
            gate = " with DRAPrioritizedList on" if not version.release.prioritized_list else ""
            yield Advice(
                path,
                "all-mode-in-alternative",
                f"allocationMode All in alternative {j}: the allocator in Kubernetes "
                f"{version.release.name}{gate} mishandles an All-mode subrequest after the first "
                "(fixed in 1.36.0 by kubernetes#131660, not backported); move it first or avoid All here",
                release_note=True,
            )
        else:
            yield Advice(
                path,
                "all-mode-in-alternative",
                "allocationMode All inside firstAvailable takes every matching device of a node; "
                "the alternatives after it are tried only where none matches",
            )


def _counts_differ(
    request: dict[str, Any], counts: list[int], at: FieldPath, profiles: frozenset[str]
) -> Advice:
    """`counts` are the subrequests' device counts, `All` as 0, not all the same; `at` is
    the request's `firstAvailable`."""
    shown = []
    for c in counts:  # a loop: no comprehension call (Python 3.11)
        shown.append("All" if c == 0 else str(c))
    refusal = " (NVIDIA Dynamo refuses such claims)" if "dynamo" in profiles else ""
    return Advice(
        at,
        "alternative-counts-differ",
        f"alternatives of `{request.get('name', '')}` ask for different device counts "
        f"({', '.join(shown)}): operators that size workers from the claim see only one of "
        f"them{refusal}",
    )


def check_profiles(
    request: dict[str, Any], rpath: FieldPath, profiles: frozenset[str]
) -> Iterator[Advice]:
    name = request.get("name", "")
    if "kueue" in profiles:
        yield Advice(
            rpath.child("firstAvailable"),
            "consumer-profile",
            f"Kueue rejects workloads whose claims use firstAvailable (request `{name}`)",
        )
    if "autoscaler" in profiles:
        yield Advice(
            rpath.child("firstAvailable"),
            "consumer-profile",
            f"the cluster autoscaler ignores the order of `{name}`'s alternatives: it may add nodes "
            "for a later alternative while the first one could be had",
        )


def check_class_config_names(
    requests: list[Request], rpaths: FieldPath, version: Version
) -> Advice | None:
    """kubernetes#134789 (fixed by #134793 in 1.33.6 and 1.34.2): the allocator leaves
    `requests` empty in FromClass configs of the allocation result. Empty means "all", so
    a single-request claim is unharmed; with several requests a driver applies every
    class's config to every request, prioritized or not. `rpaths`: `devices.requests`."""
    fixed = _CLASS_CONFIG_FIXED.get(version.release.minor)
    if fixed is None or not version.before(version.release.minor, fixed):
        return None
    if len(requests) < 2:
        return None
    first = f"{version.release.name}.{fixed}"
    return Advice(
        rpaths,
        "class-config-request-names",
        f"Kubernetes {version.release.name}.x before {first} leaves request names out of "
        "DeviceClass configs in allocation results, so with several requests drivers cannot tell "
        "which request a class config belongs to (when the classes carry configs); upgrade to "
        f"{first} or later",
        release_note=True,
    )


# The first patch of each release with kubernetes#134793 (#134789).
_CLASS_CONFIG_FIXED = {33: 6, 34: 2}


# -- helpers ---------------------------------------------------------------------------------


def _per_class(counter: dict[str, int]) -> str:
    parts = []
    for cls, n in counter.items():  # a loop: no comprehension call (Python 3.11)
        parts.append(f"{cls} {n}")
    return ", ".join(parts)
