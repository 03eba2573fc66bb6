"""Cluster-aware checks of one claim or template against `ClusterFacts` (issue 20).

The apiserver validates a claim alone; these checks need other objects, so they run
against the cluster view (the webhook's watch cache, or lint's files). Pure: no API
call. Each finding is an `Advice` with one of `CLUSTER_CODES`, at the path of the
request, alternative or selector it concerns (hub shape: `exactly` / `firstAvailable`),
and the policy's `clusterChecks:` says per code whether it denies, warns or is off
(`CheckSettings`, defined in `settings.py` so that the policy loads without CEL).
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from draguard.schema.advice.codes import Advice, ignored_codes
from draguard.schema.cel.environment import EnvFlags, environment
from draguard.schema.cel.syntax import Node, decode_checked
from draguard.schema.cluster import selectors
from draguard.schema.cluster.facts import (
    ClusterFacts,
    DeviceKind,
    Offer,
    _Snapshot,
    kinds_of_class,
    offer,
)
from draguard.schema.cluster.inventory import Claim
from draguard.schema.cluster.quota import QuotaVerdict, claim_charge, quantities
from draguard.schema.cluster.settings import (
    CLUSTER_CODES,
    DEFAULT_SETTINGS,
    LEVELS,
    CheckSettings,
    Level,
)
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.shapes import identify
from draguard.schema.validate import prepare


@dataclass(frozen=True, slots=True)
class ClusterVerdict:
    denials: tuple[Advice, ...]
    warnings: tuple[Advice, ...]


EMPTY_VERDICT = ClusterVerdict((), ())
__all__ = ["CLUSTER_CODES", "DEFAULT_SETTINGS", "EMPTY_VERDICT", "LEVELS", "CheckSettings",
           "ClusterVerdict", "Level", "check_internal", "check_object", "device_references",
           "stale_advice"]


def check_object(obj: Mapping[str, Any], facts: ClusterFacts, settings: CheckSettings,
                 *, options: Options) -> ClusterVerdict:
    """The cluster checks for a ResourceClaim or ResourceClaimTemplate of any served version."""
    document = dict(obj)
    doc_type = identify(document)
    if doc_type is None:
        return EMPTY_VERDICT
    prepared = prepare(document, doc_type, options)
    return check_internal(prepared.document, doc_type.kind, facts, settings, options=options)


_CLAIM_SPEC = FieldPath.root("spec")
_TEMPLATE_CLAIM_SPEC = FieldPath.root("spec", "spec")


def check_internal(internal: Mapping[str, Any], kind: str, facts: ClusterFacts,
                   settings: CheckSettings, *, options: Options) -> ClusterVerdict:
    """The cluster checks for an object already prepared: `Verdict.internal` (hub shape,
    defaulted, gate-dropped) of a ResourceClaim or ResourceClaimTemplate.

    The rule set prepared it; reading and defaulting it again here cost about a third of
    what the checks add to a review (bench/RESULTS.md, issue 20). Read only: the rule
    set's memo shares the spec between the verdicts on it, across threads.
    """
    holder: Any = internal.get("spec") if kind == "ResourceClaimTemplate" else internal
    spec = holder.get("spec") if isinstance(holder, Mapping) else None
    devices = spec.get("devices") if isinstance(spec, Mapping) else None
    if not isinstance(devices, dict):
        return EMPTY_VERDICT
    spec_path = _TEMPLATE_CLAIM_SPEC if kind == "ResourceClaimTemplate" else _CLAIM_SPEC
    meta = internal.get("metadata") or {}
    namespace = str(meta.get("namespace") or options.default_namespace or "default")
    snapshot = facts.snapshot()
    key = _quiet_key(devices, namespace, options)
    if key is not None and snapshot.cache.get(key) is True:
        return EMPTY_VERDICT  # this snapshot found nothing in a claim asking the same
    found = list(_Scope(snapshot, namespace, options).findings(devices,
                                                               spec_path.child("devices")))
    if not found:
        if key is not None:
            _remember(snapshot.cache, key, True, _strings(key[-1]))
        return EMPTY_VERDICT
    ignored = ignored_codes(meta)
    denials: list[Advice] = []
    warnings: list[Advice] = []
    for item in found:
        level = settings.level(item.code)
        if level == "off" or item.code in ignored:
            continue
        (denials if level == "deny" else warnings).append(item)
    return ClusterVerdict(tuple(denials), tuple(warnings))


def _quiet_key(devices: dict[str, Any], namespace: str,
               options: Options) -> tuple[Any, ...] | None:
    """What the checks read of a claim, without its names: the key under which a snapshot
    remembers that such a claim has no finding (None: requests not a list, no memo).

    Findings depend on each alternative's class, selectors, count and allocation mode,
    each request's admin access, the namespace and the release's admin-access rule, never
    on request names (they only appear in messages, and a claim with no finding has none).
    Claims from many templates share classes and selectors, so reviews of distinct
    claims mostly come down to building this key (issue 20); a claim with findings runs
    the checks each time. The key keeps every position (request, alternative, selector)
    and every value the checks tell apart: two claims under one key get the same answer.
    """
    requests = devices.get("requests") or []
    if not isinstance(requests, list):
        return None
    shape: list[Any] = []
    for request in requests:
        if not isinstance(request, dict):
            shape.append(None)
            continue
        listed = request.get("firstAvailable")
        subs = (tuple(_alternative_key(a) if isinstance(a, dict) else None for a in listed)
                if isinstance(listed, list) and listed else None)
        exactly = request.get("exactly")
        shape.append((subs, _alternative_key(exactly), exactly.get("adminAccess") is True)
                     if isinstance(exactly, dict) else (subs, None, False))
    release = options.release
    return ("quiet", namespace, release.admin_access, release.admin_access_label, tuple(shape))


def _alternative_key(alternative: dict[str, Any]) -> tuple[Any, ...]:
    # As `_alternative`, `_unsatisfiable` and quota's `claim_charge` read them: the class
    # (formatted into a quota resource name whatever its type: a non-string is kept with
    # its type), the selectors' expressions, `All` or not, the count (an int, a bool, or
    # anything else, which all count as 1).
    device_class = alternative.get("deviceClassName", "")
    count = alternative.get("count", 1)
    return (device_class if type(device_class) is str
            else (type(device_class).__name__, repr(device_class)),
            tuple(_expressions(alternative)),
            alternative.get("allocationMode") == "All",
            count if type(count) is int else ("bool", count) if isinstance(count, bool) else None)


def _strings(value: Any) -> Iterator[str]:
    """The strings in a nested key (its size for the snapshot's byte budget)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple):
        for part in value:
            yield from _strings(part)


# An alternative as the checks see it: where (path segments: a FieldPath is made only for
# a finding), request name for messages, its mapping.
_Alternative = tuple[tuple[Any, ...], str, dict[str, Any]]


def _alternatives(devices: dict[str, Any], requests: tuple[Any, ...]) -> Iterator[_Alternative]:
    for i, request in enumerate(devices.get("requests") or []):
        if not isinstance(request, dict):
            continue
        name = str(request.get("name", ""))
        listed = request.get("firstAvailable")
        if isinstance(listed, list) and listed:
            for j, sub in enumerate(listed):
                if isinstance(sub, dict):
                    yield (*requests, i, "firstAvailable", j), f"{name}/{sub.get('name', '')}", sub
        elif isinstance(request.get("exactly"), dict):
            yield (*requests, i, "exactly"), name, request["exactly"]


class _Scope:
    def __init__(self, snapshot: _Snapshot, namespace: str, options: Options) -> None:
        self.snapshot, self.namespace, self.options = snapshot, namespace, options

    def findings(self, devices: dict[str, Any], devices_path: FieldPath) -> Iterator[Advice]:
        requests_path = devices_path.child("requests")
        for where, name, alternative in _alternatives(devices, requests_path.parts):
            yield from self._alternative(where, name, alternative)
        yield from self._admin_access(devices, requests_path)
        yield from self._quota(devices, requests_path)

    def _alternative(self, where: tuple[Any, ...], name: str,
                     alternative: dict[str, Any]) -> Iterator[Advice]:
        snapshot = self.snapshot
        device_class = alternative.get("deviceClassName")
        if not isinstance(device_class, str) or not device_class:
            return
        if "DeviceClass" not in snapshot.loaded:
            return
        if device_class not in snapshot.classes:
            # dynamic-resource-allocation structured/internal/stable/allocator_stable.go
            # `Allocate`: `validateDeviceRequest` runs for every subrequest before the
            # search and its error (the class lookup among them) fails the whole claim,
            # so the Pod is refused whichever alternative would have fit.
            yield Advice(FieldPath((*where, "deviceClassName")), "class-missing",
                         f"request {name}: device class {device_class} does not exist; the "
                         "scheduler refuses the whole Pod, even when another alternative fits")
            return
        if "ResourceSlice" not in snapshot.loaded:
            return
        expressions = _expressions(alternative)
        class_offer = _cached_offer(snapshot, device_class, ())
        drivers = class_offer.drivers or frozenset(snapshot.published)
        unknown = [found for k, expression in expressions
                   for found in self._unknown_names(
                       (*where, "selectors", k, "cel", "expression"), expression, drivers)]
        yield from unknown
        if unknown:  # the selector fails on every device: saying so again adds nothing
            return
        yield from self._unsatisfiable(where, name, alternative, device_class,
                                       tuple(e for _, e in expressions), class_offer)

    def _unknown_names(self, where: tuple[Any, ...], expression: str,
                       drivers: frozenset[str]) -> Iterator[Advice]:
        # The messages depend on the expression, the drivers and the snapshot only: made
        # once per snapshot, the path added per claim.
        key = ("unknown", expression, drivers)
        cache = self.snapshot.cache
        messages: tuple[str, ...] | None = cache.get(key)
        if messages is None:
            messages = tuple(_unknown_messages(self.snapshot, expression, drivers))
            _remember(cache, key, messages, messages)
        for message in messages:
            yield Advice(FieldPath(where), "attribute-unknown", message)

    def _unsatisfiable(self, where: tuple[Any, ...], name: str, alternative: dict[str, Any],
                       device_class: str, expressions: tuple[str, ...],
                       class_offer: Offer) -> Iterator[Advice]:
        found = _cached_offer(self.snapshot, device_class, expressions) if expressions else class_offer
        what = f"device class {device_class}" + (" with these selectors" if expressions else "")
        if not found.exact:  # some devices were not evaluated (facts.MAX_KINDS): no guess
            return
        if any(selectors.compile_error(e, consumable_capacity=True) for e in expressions):
            return  # the rules report a selector that does not compile
        if found.total == 0:
            yield Advice(FieldPath(where), "alternative-unsatisfiable",
                         f"request {name}: no device of {what} in the cluster; this alternative "
                         "can never be allocated")
            return
        if alternative.get("allocationMode") == "All":
            return
        count = alternative.get("count", 1)
        count = count if isinstance(count, int) and count > 0 else 1
        if count > found.per_node:
            yield Advice(FieldPath((*where, "count")), "alternative-unsatisfiable",
                         f"request {name}: needs {count} devices of {what} on one node; the "
                         f"cluster offers at most {found.per_node} per node")

    def _admin_access(self, devices: dict[str, Any], requests_path: FieldPath) -> Iterator[Advice]:
        """§3.7: adminAccess needs the namespace label; the first such request is reported.

        Upstream pkg/registry/resource/resourceclaim/strategy.go `Validate` calls
        `resourceutils.AuthorizedForAdmin(ctx, claim.Spec.Devices.Requests,
        claim.Namespace, s.nsClient)` (pkg/registry/resource) on create only
        (`ValidateUpdate`: "the spec is immutable"); the apiserver reads the Namespace
        itself, the cluster view lets lint and the webhook say it first.
        """
        release = self.options.release
        labels = self.snapshot.namespaces.get(self.namespace)
        if labels is None or not release.admin_access:
            return
        label = release.admin_access_label
        for i, request in enumerate(devices.get("requests") or []):
            exactly = request.get("exactly") if isinstance(request, dict) else None
            if isinstance(exactly, dict) and exactly.get("adminAccess") is True:
                if labels.get(label) != "true":
                    yield Advice(requests_path.index(i).child("adminAccess"), "admin-access-namespace",
                                 f"admin access to devices requires the `{label}: true` label on "
                                 f"the containing namespace ({self.namespace} does not have it)")
                return

    def _quota(self, devices: dict[str, Any], requests_path: FieldPath) -> Iterator[Advice]:
        limits = _limits(self.snapshot, self.namespace)
        if not limits:
            return
        # claim_charge reads mappings only: leave out what the rules already refuse.
        requests: list[dict[str, Any]] = []
        for request in devices.get("requests") or []:
            if not isinstance(request, dict):
                continue
            listed = request.get("firstAvailable")
            listed = [a for a in listed if isinstance(a, dict)] if isinstance(listed, list) else []
            exactly = request.get("exactly")
            requests.append({"firstAvailable": listed} if listed else
                            {"exactly": exactly if isinstance(exactly, dict) else {}})
        charge = claim_charge(Claim(self.namespace, "", {"requests": requests}, None))
        for quota, resource, hard, used, room in limits:
            amount = charge.get(resource)
            if amount is not None and amount > room:
                verdict = QuotaVerdict(quota, resource, hard, used, amount)
                yield Advice(requests_path, "quota-exceeded",
                             f"{verdict.render()}: creating this claim would be refused "
                             "(worst case: the largest alternative of each request)")


# One hard limit of a namespace's quotas: quota name, resource, hard, used, and the room
# left (hard - used: an int when whole, as it nearly always is, cheaper to compare).
_Limit = tuple[str, str, Fraction, Fraction, Fraction | int]


def _limits(snapshot: _Snapshot, namespace: str) -> tuple[_Limit, ...]:
    """The namespace's hard limits with their usage, parsed once per snapshot.

    What `quota.check_quotas` compares, in its order (quota, then resource), without
    parsing every quantity again for each claim.
    """
    key = ("limits", namespace)
    found: tuple[_Limit, ...] | None = snapshot.cache.get(key)
    if found is None:
        limits: list[_Limit] = []
        for quota in snapshot.quotas.get(namespace) or ():
            name = str((quota.get("metadata") or {}).get("name", ""))
            hard = quantities((quota.get("spec") or {}).get("hard"))
            used = quantities((quota.get("status") or {}).get("used"))
            for resource, limit in sorted(hard.items()):
                spent = used.get(resource, Fraction(0))
                room = limit - spent
                limits.append((name, resource, limit, spent,
                               room.numerator if room.denominator == 1 else room))
        found = tuple(limits)
        _remember(snapshot.cache, key, found)
    return found


def _unknown_messages(snapshot: _Snapshot, expression: str,
                      drivers: frozenset[str]) -> Iterator[str]:
    reported: set[tuple[str, str]] = set()
    for what, domain, name in device_references(expression):
        known: dict[str, set[str]] = {}
        for driver in drivers:
            published = snapshot.published.get(driver)
            if published is None:
                continue
            table: Mapping[str, Any] = (published.attributes if what == "attributes"
                                        else published.capacity)
            for found_domain, names in table.items():
                known.setdefault(found_domain, set()).update(names)
        owners = ", ".join(sorted(drivers)) or "any driver"
        if domain not in known:
            if (what, domain) in reported:
                continue
            reported.add((what, domain))
            yield (f'device.{what}["{domain}"]: no ResourceSlice of {owners} publishes '
                   f"{what} in domain {domain}, so the selector never matches "
                   f"(domains published: {_nearest(domain, known)})")
        elif name is not None and name not in known[domain]:
            yield (f'device.{what}["{domain}"].{name}: no ResourceSlice of {owners} '
                   f"publishes it; at scheduling time this is a CEL runtime error "
                   f"that aborts the Pod (published: {_nearest(name, known[domain])})")


def _expressions(alternative: Mapping[str, Any]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for k, selector in enumerate(alternative.get("selectors") or []):
        cel = selector.get("cel") if isinstance(selector, dict) else None
        expression = cel.get("expression") if isinstance(cel, dict) else None
        if isinstance(expression, str) and expression:
            out.append((k, expression))
    return out


_CACHE_MAX = 4096
# A snapshot's cache is bounded in bytes too: keys hold client text (selector expressions,
# up to 10 KiB each upstream), values messages naming what the cluster publishes. The
# count is kept in the cache under `_BYTES`; threads racing on it may lose a few counts,
# never more than an entry each.
_CACHE_BYTES = 8 * 1024 * 1024
_ENTRY_BYTES = 256  # an entry's dict slot, tuple and value beside its text
_BYTES = ("bytes",)


# The outcomes of selectors on device kinds (`_Snapshot.matched`), kept across snapshots:
# up to one per kind (facts.MAX_KINDS of them) for each selector set in use.
_MATCHED_MAX = 65_536
_MATCHED_BYTES = 16 * 1024 * 1024


def _remember(cache: dict[Any, Any], key: tuple[Any, ...], value: Any,
              text: Iterable[str] = (), *, entries: int = _CACHE_MAX,
              budget: int = _CACHE_BYTES) -> None:
    """Keep `value` in a snapshot's cache, starting it again when full (count or bytes)."""
    size = _ENTRY_BYTES + sum(len(t) for t in text)
    for part in key:
        if isinstance(part, str):
            size += len(part)
        elif isinstance(part, tuple):
            size += sum(len(e) for e in part if isinstance(e, str))
    used: int = cache.get(_BYTES, 0)
    if len(cache) >= entries or used + size > budget:
        cache.clear()  # distinct selectors without end: start again
        used = 0
    cache[key] = value
    cache[_BYTES] = used + size


def _cached_offer(snapshot: _Snapshot, device_class: str, expressions: tuple[str, ...]) -> Offer:
    """The offer for a class and selectors, once per snapshot (readers may race: same value)."""
    key = ("offer", device_class, expressions)
    found = snapshot.cache.get(key)
    if found is None:
        kinds: frozenset[DeviceKind] | None = None
        if expressions:
            kinds = frozenset(k for k in kinds_of_class(snapshot, device_class)
                              if _matches(snapshot, k, expressions))
        found = offer(snapshot, kinds, device_class)
        _remember(snapshot.cache, key, found)
    return found


def _matches(snapshot: _Snapshot, kind: DeviceKind, expressions: tuple[str, ...]) -> bool:
    """`kind.matches(expressions)`, evaluated once while the kind lives (not per snapshot).

    The signature is what a selector can see of the kind (a coarse kind's names its
    driver; its allow-multiple flag is in the key), so equal keys give equal outcomes.
    """
    if not kind.signature:  # not made by the facts' writer: no key to keep it under
        return kind.matches(expressions)
    key = (kind.signature, kind.allow_multiple, expressions)
    found: bool | None = snapshot.matched.get(key)
    if found is None:
        found = kind.matches(expressions)
        _remember(snapshot.matched, key, found, entries=_MATCHED_MAX, budget=_MATCHED_BYTES)
    return found


def _nearest(name: str, names: Iterable[str]) -> str:
    """The names, nearest to `name` first (difflib), then the rest alphabetically."""
    pool = sorted(names)
    close = difflib.get_close_matches(name, pool, n=len(pool), cutoff=0.5)
    rest = [n for n in pool if n not in close]
    return ", ".join(close + rest) or "none"



@functools.lru_cache(maxsize=1024)
def device_references(expression: str) -> tuple[tuple[str, str, str | None], ...]:
    """The literal `device.attributes["d"].name` / `device.capacity["d"].name` references.

    From the checked tree (schema/cel), never from the text: each is (attributes or
    capacity, domain, name), with name None when the expression only tests presence
    (`has()`, `in`) or uses the domain's map as a whole. An expression that does not
    compile names nothing here (the rules report it).
    """
    try:
        compiled = environment(EnvFlags(consumable_capacity=True)).compile(expression)
        root = decode_checked(compiled.serialize()).root
    except Exception:  # a compile failure or a tree the decoder refuses: nothing to check
        return ()
    found: dict[tuple[str, str, str | None], None] = {}
    _walk(root, None, found)
    return tuple(found)


def _domain_of(node: Node) -> tuple[str, str] | None:
    """(attributes|capacity, domain) when `node` is `device.<map>["<domain>"]`."""
    if node.kind != "call" or node.name != "_[_]" or len(node.args) != 2:
        return None
    base, key = node.args
    if base.kind != "ident" or base.name not in ("device.attributes", "device.capacity"):
        return None
    if key.kind != "const" or not isinstance(key.const, str):
        return None
    return base.name.removeprefix("device."), key.const


def _walk(node: Node, parent: Node | None,
          found: dict[tuple[str, str, str | None], None]) -> None:
    domain = _domain_of(node)
    if domain is not None:
        found[(*domain, _name_used(node, parent))] = None
    for child in node.children():
        _walk(child, node, found)


def _name_used(domain_node: Node, parent: Node | None) -> str | None:
    """The name looked up in a domain's map, when the lookup fails on a missing name."""
    if parent is None:
        return None
    if parent.kind == "select" and parent.operand is domain_node and not parent.test_only:
        return parent.name
    if (parent.kind == "call" and parent.name == "_[_]" and len(parent.args) == 2
            and parent.args[0] is domain_node and parent.args[1].kind == "const"
            and isinstance(parent.args[1].const, str)):
        return parent.args[1].const
    return None


def stale_advice(age_seconds: float | None, settings: CheckSettings) -> Advice:
    """The one warning a review carries instead of the checks when the view cannot be trusted.

    `age_seconds` None: the first list is still loading. The webhook adds it (code
    `cluster-view-stale`) rather than guessing from an old or partial view (issue 20).
    """
    state = ("still loading its first list" if age_seconds is None
             else f"last updated {age_seconds:.0f}s ago (more than "
                  f"{settings.stale_after_seconds:.0f}s)")
    return Advice(FieldPath.root(), "cluster-view-stale",
                  f"the cluster view is {state}; the cluster checks "
                  f"({', '.join(CLUSTER_CODES)}) did not run")
