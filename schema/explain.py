"""Explain: which alternative each node would give a Pod's claims, and why (issue 19).

For each Pod (or each unallocated claim alone when no Pod is given) and each node,
the allocator runs as the scheduler's DynamicResources plugin runs it in Filter: the
Pod's unallocated claims together, the allocated devices of every other claim out of
reach (`cluster.allocator`). Then the plugin's scoring (from 1.35) over the feasible
nodes, and for every alternative not taken the first reason it failed.

The output is `contract.md` §6: `to_json` gives the JSON object, `render_text` the
table a person reads at a glance.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draguard.schema.cluster.allocator import (
    Abort,
    Allocated,
    Allocator,
    Failed,
    Positional,
    Result,
    SelectorCache,
    Shape,
    Unfit,
    claim_requests,
    describe_request,
    node_shape,
)
from draguard.schema.cluster.inventory import Claim, Inventory, pod_claim_names
from draguard.schema.cluster.objects import Node
from draguard.schema.cluster.pools import (
    Features,
    Pool,
    SliceIndex,
    gather_pools,
    selector_matches,
)
from draguard.schema.cluster.quantity import format_quantity
from draguard.schema.cluster.quota import QuotaVerdict, check_quotas
from draguard.schema.model.releases import Release

# Upstream's scoring (kubernetes pkg/scheduler/framework/plugins/dynamicresources/
# dynamicresources.go, `computeScore`): a subrequest at index i that some result names
# scores FirstAvailableDeviceRequestMaxSize - i, i.e. 8 for the first alternative down
# to 1. `NormalizeScore` is `helper.DefaultNormalizeScore(MaxNodeScore, false, ...)`:
# MaxNodeScore × raw / max with integer division, all left at 0 when max is 0.
FIRST_AVAILABLE_MAX_SIZE = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize
MAX_NODE_SCORE = 100  # framework.MaxNodeScore
_TOGETHER = "fits alone, but not together with the Pod's other requests and constraints"


@dataclass(slots=True)
class Rejected:
    subrequest: str
    reason: str


@dataclass(slots=True)
class Alternative:
    request: str
    chosen: str | None
    rejected: list[Rejected] = field(default_factory=list)


@dataclass(slots=True)
class ClaimOutcome:
    name: str
    results: list[Result] | None
    alternatives: list[Alternative] = field(default_factory=list)


@dataclass(slots=True)
class NodeOutcome:
    node: str
    feasible: bool
    reason: str | None = None
    claims: list[ClaimOutcome] = field(default_factory=list)
    raw_score: int | None = None
    score: int | None = None
    rank: int = 0  # 1 = first alternative everywhere, larger = worse; 0 infeasible
    order_note: str | None = None  # text only: the JSON keys are contract §6's


@dataclass(slots=True)
class PodOutcome:
    namespace: str
    name: str | None
    error: str | None = None
    nodes: list[NodeOutcome] = field(default_factory=list)
    quota: list[QuotaVerdict] | None = None  # None: no ResourceQuota in the input
    claim_names: list[str] = field(default_factory=list)  # text only: titles a lone claim

    @property
    def refused(self) -> bool:
        return any(v.refused for v in self.quota or ())

    @property
    def schedulable(self) -> bool:
        return self.error is None and not self.refused and any(n.feasible for n in self.nodes)


@dataclass(slots=True)
class Explanation:
    release: Release
    patch: int | None
    pods: list[PodOutcome]

    @property
    def version(self) -> str:
        return self.release.name + (f".{self.patch}" if self.patch is not None else "")


def explain(inventory: Inventory, *, release: Release, patch: int | None = None,
            node_name: str | None = None) -> Explanation:
    # The cluster model is large and long-lived, and the run makes many short-lived
    # objects: with automatic collection on, the full collections they trigger rescan
    # the model again and again (half of the run at 50,000 nodes). Off for the run:
    # the per-node garbage that only a collection frees (pools and their candidates
    # refer to each other) waits for the end (about a tenth more memory at 50,000
    # nodes); even explicit young collections every thousand nodes cost most of
    # what disabling saves.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _explain(inventory, release=release, patch=patch, node_name=node_name)
    finally:
        if enabled:
            gc.enable()


def _explain(inventory: Inventory, *, release: Release, patch: int | None,
             node_name: str | None) -> Explanation:
    features = Features.of(release)
    # Every node is explained even for `node_name`: scores are relative to the other
    # feasible nodes, and an error on any node aborts the Pod, as in the scheduler.
    nodes = _nodes(inventory)
    by_pool = SliceIndex(inventory.slices)
    cache = SelectorCache(features.consumable_capacity)
    allocated = inventory.allocated_devices(consumable_capacity=features.consumable_capacity)
    consumable = features.consumable_capacity
    state = _State(allocated, inventory.shared_capacity() if consumable else {},
                   inventory.shared_devices() if consumable else set())
    pods: list[PodOutcome] = []
    for unit in _units(inventory):
        outcome = _explain_unit(unit, inventory, nodes, by_pool, features, cache, state,
                                release=release, patch=patch)
        outcome.claim_names = [c.name for c in unit.claims]
        if inventory.quotas:
            # Only claims the Pod's creation makes (from templates) are charged; existing
            # claims were charged when they were created.
            created = [c for c in unit.claims if (c.namespace, c.name) not in inventory.claims]
            if unit.name is None:
                created = unit.claims  # a lone claim: preview its own creation
            outcome.quota = check_quotas(unit.namespace, created, inventory.quotas)
        if node_name is not None:
            outcome.nodes = [n for n in outcome.nodes if n.node == node_name]
        pods.append(outcome)
    return Explanation(release, patch, pods)


@dataclass(slots=True)
class _State:
    """The cluster's allocated state: dedicated devices, and shares' capacity per device."""

    devices: set[tuple[str, str, str]]
    shared: dict[tuple[str, str, str], dict[str, Fraction]]
    shared_devices: set[tuple[str, str, str]]


@dataclass(slots=True)
class _Unit:
    namespace: str
    name: str | None
    claims: list[Claim]
    error: str | None = None


def _nodes(inventory: Inventory) -> list[Node]:
    """The Nodes read, by name; without any, one per node a slice names (no labels)."""
    if inventory.nodes:
        return sorted(inventory.nodes, key=lambda n: n.name)
    names = sorted({s.node_name for s in inventory.slices if s.node_name})
    return [Node(name, {}) for name in names]


def _units(inventory: Inventory) -> Iterator[_Unit]:
    if not inventory.pods:
        for claim in inventory.claims.values():
            if claim.allocated is None:
                yield _Unit(claim.namespace, None, [claim])
        return
    for pod in inventory.pods:
        unit = _Unit(pod.namespace, pod.name, [])
        for claim_name, template in pod_claim_names(pod):
            found = inventory.claims.get((pod.namespace, claim_name))
            if found is None and template is not None:
                base = inventory.templates.get((pod.namespace, template))
                if base is None:
                    unit.error = f'resourceclaimtemplate.resource.k8s.io "{template}" not found'
                    break
                found = Claim(pod.namespace, claim_name, base.devices, None, origin=base.origin)
            if found is None:
                unit.error = f'resourceclaim.resource.k8s.io "{claim_name}" not found'
                break
            unit.claims.append(found)
        yield unit


def _explain_unit(unit: _Unit, inventory: Inventory, nodes: Sequence[Node],
                  by_pool: SliceIndex, features: Features,
                  cache: SelectorCache, state: _State, *,
                  release: Release, patch: int | None) -> PodOutcome:
    outcome = PodOutcome(unit.namespace, unit.name, unit.error)
    if unit.error is not None:
        return outcome
    pending = [c for c in unit.claims if c.allocated is None]
    done = [c for c in unit.claims if c.allocated is not None]
    memo = _Memo()
    for node in nodes:
        node_outcome = _explain_node(node, unit, pending, done, inventory, by_pool, features,
                                     cache, state, memo)
        if isinstance(node_outcome, str):
            return PodOutcome(unit.namespace, unit.name, node_outcome)
        outcome.nodes.append(node_outcome)
    if _score_fails(release, patch, pending, done, outcome):
        # Upstream's event for the Pod, which stays Pending (kubernetes#139016).
        return PodOutcome(unit.namespace, unit.name,
                          'running Score plugins: plugin "DynamicResources" failed with: number '
                          f"of allocations {len(pending)} is smaller than number of claims "
                          f"(upstream bug in {release.name}.{patch}, fixed in "
                          f"{release.name}.{6 if release.minor == 35 else 2})")
    _score(outcome, features, unit.claims, pending)
    return outcome


def _explain_node(node: Node, unit: _Unit, pending: list[Claim], done: list[Claim],
                  inventory: Inventory, by_pool: SliceIndex,
                  features: Features, cache: SelectorCache, state: _State,
                  memo: _Memo) -> NodeOutcome | str:
    for claim in done:
        if claim.node_selector is not None and not selector_matches(claim.node_selector, node):
            return NodeOutcome(node.name, False,
                               f"claim {claim.name} is allocated to devices {node.name} cannot reach")
    pools = gather_pools(by_pool, node, features)
    try:
        return _explain_pools(node, pools, unit, pending, done, inventory, features, cache,
                              state, memo)
    finally:
        # A pool and its candidates refer to each other: freed now by reference
        # counting, not left for a collection to find (a quarter of the run at 5,000
        # nodes when the collector ran after it, bench/RESULTS.md issue 19).
        for pool in pools:
            pool.drop_candidates()


def _explain_pools(node: Node, pools: list[Pool], unit: _Unit, pending: list[Claim],
                   done: list[Claim], inventory: Inventory, features: Features,
                   cache: SelectorCache, state: _State, memo: _Memo) -> NodeOutcome | str:
    allocator = Allocator(node, pending, pools, inventory.classes, state.devices, features, cache,
                          in_use=state.shared, shared_devices=state.shared_devices)
    shape = node_shape(pools, state.devices, cache, features)
    shape_id = memo.shapes.setdefault(shape, len(memo.shapes)) if shape is not None else -1
    known = memo.solutions.get(shape_id)
    result = allocator.replay(known) if known is not None else allocator.allocate()
    if shape is not None and known is None and not isinstance(result, Failed):
        memo.solutions[shape_id] = allocator.positional(result) if isinstance(result, Allocated) else result
    if isinstance(result, Failed):
        return result.message
    reasons = _Reasons(shape_id, memo.reasons, memo.claims) if shape is not None else None
    claims = [_claim_outcome(allocator, ci, claim, result, reasons) for ci, claim in enumerate(pending)]
    claims += [ClaimOutcome(c.name, [Result(r.request, *r.key, r.admin_access,
                                            r.share_id is not None, r.consumed or ())
                                     for r in c.allocated or ()]) for c in done]
    if done:  # pending claims come in the Pod's order already
        order = {c.name: i for i, c in enumerate(unit.claims)}
        claims.sort(key=lambda c: order.get(c.name, 0))
    if isinstance(result, Unfit):
        # Upstream's own words first: Allocate returns this error when it found no
        # solution and some pool was invalid (allocator_stable.go, end of Allocate).
        invalid = [f"{p.id}: {p.invalid}" for p in pools if p.invalid]
        reason = (f"invalid resource pools were encountered ({'; '.join(invalid)})" if invalid
                  else _first_reason(claims)
                  or "the requests cannot all be met together (shared devices or constraints)")
        return NodeOutcome(node.name, False, reason, claims)
    rank = 1 + sum(c_index for ch in result.chosen for c_index in ch.values())
    outcome = NodeOutcome(node.name, True, None, claims, rank=rank)
    outcome.order_note = _order_note(node, pending, pools, inventory, features, cache,
                                     state, result)
    return outcome


def _order_note(node: Node, pending: list[Claim], pools: list[Pool], inventory: Inventory,
                features: Features, cache: SelectorCache, state: _State,
                result: Allocated) -> str | None:
    """Before 1.36 pools came in Go map order: say when the reverse order answers otherwise.

    The search is exhaustive, so whether a node fits does not depend on the order; which
    devices (and, through constraints, which alternative) it picks can. One other order
    is tried, the reverse: a difference proves the answer is order-dependent (no
    difference does not prove the opposite for three or more pools).
    """
    usable = [p for p in pools if not (p.incomplete or p.invalid)]
    if features.sorted_pools or len(usable) < 2:
        return None
    other = Allocator(node, pending, list(reversed(pools)), inventory.classes, state.devices,
                      features, cache, in_use=state.shared,
                      shared_devices=state.shared_devices).allocate()
    if not isinstance(other, Allocated) or _same(other, result):
        return None
    devices = ", ".join(f"{r.driver}/{r.pool}/{r.device}" for claim in other.results for r in claim)
    return (f"pool order is random before 1.36: in another order this node gives {devices}")


def _same(first: Allocated, second: Allocated) -> bool:
    return first.chosen == second.chosen and first.results == second.results


def _claim_outcome(allocator: Allocator, ci: int, claim: Claim,
                   result: Allocated | Unfit, memo: _Reasons | None) -> ClaimOutcome:
    results = result.results[ci] if isinstance(result, Allocated) else None
    if memo is None:
        return ClaimOutcome(claim.name, results, _alternatives(
            allocator, ci, claim, result, lambda ri, si: _describe(allocator, ci, ri, si, None)))
    # Nodes of one shape choose alike and fail alike: the alternatives are worked out
    # once per shape with the node's name left open, then filled in per node.
    key = (memo.shape, ci)
    template = memo.claims.get(key, _UNSHARED)
    if template is _UNSHARED:
        try:
            template = _alternatives(allocator, ci, claim, result,
                                     lambda ri, si: _describe_shared(allocator, ci, ri, si, memo))
        except _NotShared:
            template = None
        memo.claims[key] = template
    if template is None:  # a reason names a device of this node
        return ClaimOutcome(claim.name, results, _alternatives(
            allocator, ci, claim, result, lambda ri, si: _describe(allocator, ci, ri, si, None)))
    name = allocator.node.name
    return ClaimOutcome(claim.name, results, [
        a if not any(_NODE in r.reason for r in a.rejected) else Alternative(
            a.request, a.chosen, [Rejected(r.subrequest, r.reason.replace(_NODE, name))
                                  for r in a.rejected])
        for a in template])


def _alternatives(allocator: Allocator, ci: int, claim: Claim, result: Allocated | Unfit,
                  describe: Callable[[int, int], str | None]) -> list[Alternative]:
    chosen = result.chosen[ci] if isinstance(result, Allocated) else {}
    out: list[Alternative] = []
    for ri, alternatives in enumerate(claim_requests(claim)):
        parent = alternatives[0].parent
        if parent is None:
            if isinstance(result, Unfit):
                reason = describe(ri, 0)
                if reason is not None:
                    out.append(Alternative(alternatives[0].name, None, [Rejected("", reason)]))
            continue
        taken = chosen.get(ri)
        alternative = Alternative(parent, None if taken is None else alternatives[taken].name)
        for si, sub in enumerate(alternatives[: len(alternatives) if taken is None else taken]):
            reason = describe(ri, si) or _TOGETHER
            alternative.rejected.append(Rejected(sub.name, reason))
        out.append(alternative)
    return out


class _NotShared(Exception):
    """A reason that cannot be shared among the nodes of a shape (it names a device)."""


_UNSHARED: Any = object()


_NODE = "\0"  # stands for the node's name in a reason shared by nodes of one shape


@dataclass(slots=True)
class _Reasons:
    """Reasons found on nodes of one shape: the same but for the node's name."""

    shape: int
    known: dict[tuple[int, int, int, int], list[str] | None]
    claims: dict[tuple[int, int], list[Alternative] | None]  # reasons with `_NODE`


@dataclass(slots=True)
class _Memo:
    """Per Pod: node shapes by number, the search's outcome and the reasons per shape."""

    shapes: dict[Shape, int] = field(default_factory=dict)
    solutions: dict[int, Positional | Unfit] = field(default_factory=dict)
    reasons: dict[tuple[int, int, int, int], list[str] | None] = field(default_factory=dict)
    claims: dict[tuple[int, int], list[Alternative] | None] = field(default_factory=dict)


def _describe(allocator: Allocator, ci: int, ri: int, si: int, memo: _Reasons | None) -> str | None:
    if memo is not None:
        key = (memo.shape, ci, ri, si)
        if key not in memo.known:
            try:
                text = describe_request(allocator, ci, ri, si, node_name=_NODE)
            except Abort:  # may name a device: not shared
                return _describe(allocator, ci, ri, si, None)
            memo.known[key] = None if text is None else text.split(_NODE)
        parts = memo.known[key]
        return None if parts is None else allocator.node.name.join(parts)
    try:
        return describe_request(allocator, ci, ri, si)
    except Abort as stop:
        return stop.message


def _describe_shared(allocator: Allocator, ci: int, ri: int, si: int, memo: _Reasons) -> str | None:
    """`_describe` for every node of the shape: `_NODE` where the node's name goes."""
    key = (memo.shape, ci, ri, si)
    if key not in memo.known:
        try:
            text = describe_request(allocator, ci, ri, si, node_name=_NODE)
        except Abort:  # may name a device: not shared
            raise _NotShared from None
        memo.known[key] = None if text is None else text.split(_NODE)
    parts = memo.known[key]
    return None if parts is None else _NODE.join(parts)


def _first_reason(claims: list[ClaimOutcome]) -> str | None:
    """The first request (in claim order) that cannot be met alone, with every reason."""
    for claim in claims:
        for alternative in claim.alternatives:
            rejected = alternative.rejected
            if alternative.chosen is not None or not rejected:
                continue
            if all(r.reason.startswith(_TOGETHER) for r in rejected):
                continue
            if len(rejected) == 1 and not rejected[0].subrequest:
                return f"claim {claim.name}, request {alternative.request}: {rejected[0].reason}"
            reasons = "; ".join(f"{r.subrequest}: {r.reason}" for r in rejected)
            return f"claim {claim.name}, request {alternative.request}: no alternative fits ({reasons})"
    return None


def _score(outcome: PodOutcome, features: Features, claims: list[Claim],
           pending: list[Claim]) -> None:
    """Upstream's `Score` and `NormalizeScore`; none before 1.35 or with < 2 feasible nodes.

    The scheduler skips scoring when one node is feasible (`schedulePod`). `Score` is 0
    on every node when the Pod has no claim to allocate (no allocation was kept for
    the node in Filter). Otherwise `computeScore` walks every claim of the Pod in its
    order: an allocated claim's results are its `status.allocation` (since #139017),
    the others' the allocation Filter found on the node.
    """
    feasible = [n for n in outcome.nodes if n.feasible]
    if not features.scoring or len(feasible) < 2:
        return
    # The score depends on the request names of the results alone: nodes that chose
    # alike score alike (most nodes, in a large cluster).
    known: dict[tuple[tuple[str, ...], ...], int] = {}
    for node in feasible:
        if not pending:
            node.raw_score = 0
            continue
        key = tuple(tuple(r.request for r in c.results or ()) for c in node.claims)
        raw = known.get(key)
        if raw is None:
            raw = known[key] = _raw_score(node, claims)
        node.raw_score = raw
    best = max(n.raw_score or 0 for n in feasible)
    for node in feasible:
        # DefaultNormalizeScore: scores stay as they are (all 0) when the best is 0.
        node.score = (node.raw_score or 0) * MAX_NODE_SCORE // best if best else 0


def _raw_score(node: NodeOutcome, claims: list[Claim]) -> int:
    """Upstream `computeScore` for one node."""
    results = {c.name: c.results or [] for c in node.claims}
    score = 0
    for claim in claims:
        # Only subrequest references (`req/sub`) count; a set, so a subrequest given
        # several devices counts once.
        taken = {r.request for r in results.get(claim.name, ()) if "/" in r.request}
        for raw in claim.devices.get("requests") or []:
            if not raw.get("firstAvailable"):
                continue  # `exactly` requests do not score
            name = str(raw.get("name", ""))
            for index, sub in enumerate(raw["firstAvailable"]):
                if f"{name}/{sub.get('name', '')}" in taken:
                    score += FIRST_AVAILABLE_MAX_SIZE - index
    return score


def _score_fails(release: Release, patch: int | None, pending: list[Claim], done: list[Claim],
                 outcome: PodOutcome) -> bool:
    """1.35.0–1.35.5 and 1.36.0–1.36.1: Score fails for a Pod with mixed claims.

    Before #139017 (cherry-picked as #139362 for 1.35.6 and #139363 for 1.36.2),
    `computeScore` indexed the allocations found in Filter (one per unallocated
    claim) with the index over all the Pod's claims, and returned an error once that
    index passed their number, which it always does when some claim is allocated.
    Score runs only with two or more feasible nodes.
    """
    if patch is None or not pending or not done or sum(n.feasible for n in outcome.nodes) < 2:
        return False
    return (release.minor == 35 and patch <= 5) or (release.minor == 36 and patch <= 1)


# --- output ------------------------------------------------------------------------------

def to_json(explanation: Explanation) -> dict[str, Any]:
    return {"kubernetesVersion": explanation.version,
            "pods": [_pod_json(p) for p in explanation.pods]}


def _pod_json(pod: PodOutcome) -> dict[str, Any]:
    out = {"namespace": pod.namespace, "name": pod.name, "error": pod.error,
           "nodes": [] if pod.error else [_node_json(n) for n in pod.nodes]}
    if pod.quota is not None:  # only when the input has ResourceQuotas (README "explain")
        out["quota"] = [{"quota": v.quota, "resource": v.resource, "hard": str(v.hard),
                         "used": str(v.used), "charge": v.charge, "refused": v.refused}
                        for v in pod.quota]
    return out


def _node_json(node: NodeOutcome) -> dict[str, Any]:
    return {"node": node.node, "feasible": node.feasible, "score": node.score,
            "rawScore": node.raw_score, "reason": node.reason,
            "claims": [_claim_json(c, node.feasible) for c in node.claims]}


def _claim_json(claim: ClaimOutcome, feasible: bool) -> dict[str, Any]:
    return {"name": claim.name,
            "results": [_result_json(r) for r in claim.results or ()] if feasible else None,
            "alternatives": [{"request": a.request, "chosen": a.chosen,
                              "rejected": [{"subrequest": r.subrequest, "reason": r.reason}
                                           for r in a.rejected]}
                             for a in claim.alternatives]}


def _result_json(result: Result) -> dict[str, Any]:
    out: dict[str, Any] = {"request": result.request, "driver": result.driver,
                           "pool": result.pool, "device": result.device}
    if result.admin_access:
        out["adminAccess"] = True
    if result.shared:
        # The scheduler gives each share a random shareID: which one cannot be foreseen.
        out["shareID"] = "<generated>"
    if result.consumed:
        out["consumedCapacity"] = {name: format_quantity(v) for name, v in result.consumed}
    return out


def render_text(explanation: Explanation, *, detail: bool = False) -> str:
    """Per Pod: nodes grouped by outcome with counts, best first; `detail` tells all."""
    lines = [f"Kubernetes {explanation.version}"]
    for pod in explanation.pods:
        title = f"Pod {pod.namespace}/{pod.name}" if pod.name else (
            f"claim {pod.namespace}/{_claim_names(pod)}")
        lines.append("")
        lines.append(title)
        for verdict in pod.quota or ():
            lines.append(f"  quota: {verdict.render()}")
        if pod.refused:
            lines.append("  creation would be refused: a ResourceQuota is exceeded")
        if pod.error is not None:
            lines.append(f"  scheduling error: {pod.error}")
            continue
        if not pod.nodes:
            lines.append("  no nodes")
            continue
        lines.extend(_detail_lines(pod) if detail else _summary_lines(pod))
    return "\n".join(lines) + "\n"


def _claim_names(pod: PodOutcome) -> str:
    return ", ".join(pod.claim_names) or "?"


def _choice(node: NodeOutcome) -> str:
    picks = [f"{c.name}:{a.request}→{a.chosen}" for c in node.claims for a in c.alternatives
             if a.chosen is not None]
    return ", ".join(picks) if picks else "as requested"


def _summary_lines(pod: PodOutcome) -> list[str]:
    groups: dict[str, list[NodeOutcome]] = {}
    for node in pod.nodes:
        key = _choice(node) if node.feasible else "infeasible"
        groups.setdefault(key, []).append(node)
    ordered = sorted(groups.items(), key=lambda kv: (
        kv[0] == "infeasible", min(n.rank for n in kv[1]) if kv[0] != "infeasible" else 0,
        -max(n.score or 0 for n in kv[1])))
    out: list[str] = []
    for key, members in ordered:
        out.append(f"  {len(members):>5} node{'s' if len(members) != 1 else ' '}  {key}")
        members = sorted(members, key=lambda n: (-(n.score or 0), n.node))
        shown = members[:5]
        for node in shown:
            if node.feasible:
                score = "" if node.score is None else f"  score {node.score} (raw {node.raw_score})"
                devices = ", ".join(f"{r.driver}/{r.pool}/{r.device}"
                                    for c in node.claims for r in c.results or ())
                note = "  (another pool order gives other devices before 1.36)" if (
                    node.order_note) else ""
                out.append(f"         {node.node}{score}: {devices}{note}")
            else:
                out.append(f"         {node.node}: {node.reason}")
        if len(members) > len(shown):
            out.append(f"         … {len(members) - len(shown)} more")
    return out


def _detail_lines(pod: PodOutcome) -> list[str]:
    out: list[str] = []
    for node in pod.nodes:
        state = "feasible" if node.feasible else "infeasible"
        score = "" if node.score is None else f", score {node.score} (raw {node.raw_score})"
        out.append(f"  node {node.node}: {state}{score}")
        if node.reason:
            out.append(f"    reason: {node.reason}")
        if node.order_note:
            out.append(f"    note: {node.order_note}")
        for claim in node.claims:
            out.append(f"    claim {claim.name}")
            for result in claim.results or ():
                admin = " (admin access)" if result.admin_access else ""
                if result.shared:
                    taken = ", ".join(f"{n} {format_quantity(v)}" for n, v in result.consumed)
                    admin += f" (shared{', consumes ' + taken if taken else ''})"
                out.append(f"      {result.request or '(allocated)'}: "
                           f"{result.driver}/{result.pool}/{result.device}{admin}")
            for alternative in claim.alternatives:
                out.append(f"      request {alternative.request}: "
                           f"{'chose ' + alternative.chosen if alternative.chosen else 'nothing fits'}")
                for rejected in alternative.rejected:
                    label = rejected.subrequest or alternative.request
                    out.append(f"        {label}: {rejected.reason}")
    return out
