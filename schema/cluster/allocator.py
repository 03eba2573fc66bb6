"""Upstream's structured allocator for one node and the Pod's unallocated claims.

A port of `structured/internal/stable/allocator_stable.go` (kubernetes/
dynamic-resource-allocation): `Allocate` (the pre-pass over every request and
subrequest, the 32-result minimum), `validateDeviceRequest`, `allocateOne` (the
depth-first first-fit search with backtracking across requests and claims, the
subrequests of a `firstAvailable` request tried in order), `isSelectable` /
`selectorsMatch` (class selectors, then the request's), `allocateDevice` (in use,
counters, taints, constraints), `checkAvailableCounters`, the match-attribute
constraint. `distinctAttribute` follows the incubating allocator's `constraint.go`
where the release enables it.

Errors are values: `allocate` returns `Allocated`, `Unfit` (no solution on this node)
or `Failed` (an error that upstream returns from `Allocate`, which aborts the Pod).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draguard.schema.cluster import capacity
from draguard.schema.cluster.inventory import Claim, DeviceKey
from draguard.schema.cluster.objects import Device, DeviceClass, Node
from draguard.schema.cluster.pools import Candidate, Features, Pool, node_matches
from draguard.schema.cluster.quantity import parse_quantity
from draguard.schema.cluster.selectors import evaluate, unevaluable

MAX_RESULTS = 32  # resourceapi.AllocationResultsMaxSize
_UNKNOWN: Any = object()
_NO_SUCH_KEY_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or "
                     "guarding the check with has() for optional fields")  # cel/errors.go


@dataclass(frozen=True, slots=True)
class Result:
    """One `status.allocation.devices.results[]` entry."""

    request: str  # `req` or `req/sub`
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    # A share of a device that allows multiple allocations (the scheduler gives it a
    # random shareID) and what it consumes of each capacity.
    shared: bool = False
    consumed: tuple[tuple[str, Fraction], ...] = ()


@dataclass(frozen=True, slots=True)
class Allocated:
    results: list[list[Result]]  # per claim
    chosen: list[dict[int, int]]  # per claim: request index → chosen subrequest index


@dataclass(frozen=True, slots=True)
class Unfit:
    invalid_pools: bool = False  # "invalid resource pools were encountered"


@dataclass(frozen=True, slots=True)
class Failed:
    message: str


Outcome = Allocated | Unfit | Failed


@dataclass(slots=True)
class Request:
    """One request without subrequests, or one subrequest (`parent` set)."""

    name: str
    parent: str | None
    class_name: str
    selectors: list[str]
    mode: str
    count: int
    admin_access: bool
    tolerations: list[dict[str, Any]]
    capacity: dict[str, Fraction] | None = None  # capacity.requests (KEP-5075)

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name


def claim_requests(claim: Claim) -> list[list[Request]]:
    """Per request of the hub spec: [the exact request] or its subrequests in order.

    Read once per claim (the claim's spec does not change during a run).
    """
    if claim.parsed is None:
        claim.parsed = _parse_requests(claim)
    parsed: list[list[Request]] = claim.parsed
    return parsed


def _parse_requests(claim: Claim) -> list[list[Request]]:
    out: list[list[Request]] = []
    for raw in claim.devices.get("requests") or []:
        name = str(raw.get("name", ""))
        if raw.get("firstAvailable"):
            out.append([_request(sub, str(sub.get("name", "")), name)
                        for sub in raw["firstAvailable"]])
        else:
            out.append([_request(raw.get("exactly") or {}, name, None)])
    return out


def _request(raw: dict[str, Any], name: str, parent: str | None) -> Request:
    selectors = [str(s.get("cel", {}).get("expression", "")) for s in raw.get("selectors") or []]
    count = raw.get("count")
    requests = (raw.get("capacity") or {}).get("requests") if isinstance(raw.get("capacity"), dict) else None
    amounts = None
    if isinstance(requests, dict):
        parsed = {str(k): parse_quantity(v) for k, v in requests.items()}
        amounts = {k: v for k, v in parsed.items() if v is not None}
    return Request(name, parent, str(raw.get("deviceClassName", "")), selectors,
                   str(raw.get("allocationMode", "ExactCount")),
                   count if isinstance(count, int) else 1, raw.get("adminAccess") is True,
                   list(raw.get("tolerations") or []), amounts)


@dataclass(slots=True)
class _Data:
    request: Request
    klass: DeviceClass | None
    num_devices: int
    all_devices: list[Candidate] = field(default_factory=list)
    selector_id: int = -1  # SelectorCache.selector_id of the class's and request's selectors

    def selector_key(self) -> tuple[Any, ...]:
        klass = self.klass
        return (klass.name if klass else None, tuple(klass.selectors) if klass else (),
                tuple(self.request.selectors))


class SelectorCache:
    """CEL outcomes per (expression, device content): they depend on nothing else.

    Shared by every node of one run, so identical devices on many nodes are evaluated
    once (upstream caches per `Allocate` call; the answer is the same).
    """

    def __init__(self, consumable_capacity: bool) -> None:
        self.consumable_capacity = consumable_capacity
        self._outcomes: dict[tuple[str, str], tuple[bool, str | None]] = {}
        self.selections: dict[tuple[int, str], bool] = {}
        self.by_slice: dict[tuple[int, int], list[int]] = {}
        self.by_pool: dict[tuple[int, int], list[int]] = {}
        self._selector_ids: dict[tuple[Any, ...], int] = {}
        self._contents: dict[tuple[str, ...], int] = {}
        self._identities: dict[tuple[str | int, ...], int] = {}  # by driver and device identity
        self._by_request: dict[int, tuple[Request, DeviceClass | None, int]] = {}

    def selector_id(self, key: tuple[Any, ...]) -> int:
        """A small number per distinct selector set: cheap to hash in the keys above."""
        return self._selector_ids.setdefault(key, len(self._selector_ids))

    def id_for(self, data: _Data) -> int:
        """`selector_id` of a request with its class, looked up by identity first.

        The requests of a claim are parsed once and live through the run; the entry
        holds the request, so its id cannot be reused by another object meanwhile.
        """
        entry = self._by_request.get(id(data.request))
        if entry is not None and entry[0] is data.request and entry[1] is data.klass:
            return entry[2]
        found = self.selector_id(data.selector_key())
        self._by_request[id(data.request)] = (data.request, data.klass, found)
        return found

    def pool_content(self, pool: Pool) -> int:
        """A small number per distinct pool content (every device's signature, in order).

        Pools of many nodes often hold identical devices: what a selector set picks
        from one of them is then worked out once per run.
        """
        if pool.content_id < 0:
            # Devices read from equal text are one object (`read_slice`): most pools are
            # found by their devices' identities, without making the content key. The
            # devices live as long as the inventory the run explains, so no id is reused.
            identities: tuple[str | int, ...] = (pool.driver, *[id(d) for d in pool.devices()])
            found = self._identities.get(identities)
            if found is not None:
                pool.content_id = found
                return found
            # Binding conditions decide selectability too (before 1.36), outside the signature.
            # Request policies decide whether a capacity request fits (1.36+).
            key = tuple((c.device._signature or c.device.signature(c.key[0]))
                        + ("\0b" if c.device.binding_conditions else "")
                        + (repr(sorted(c.device.policies.items())) if c.device.policies else "")
                        for c in pool.candidates())
            pool.content_id = self._contents.setdefault(key, len(self._contents))
            self._identities[identities] = pool.content_id
        return pool.content_id

    def matches(self, expression: str, driver: str, device: Device) -> tuple[bool, str | None]:
        key = (expression, device.signature(driver))
        found = self._outcomes.get(key)
        if found is None:
            attributes, capacity = device.cel_inputs(driver)
            outcome = evaluate(expression, driver=driver, attributes=attributes, capacity=capacity,
                               allow_multiple=device.allow_multiple_allocations,
                               consumable_capacity=self.consumable_capacity)
            found = (outcome.matches, outcome.error)
            self._outcomes[key] = found
        return found


# A solution by position: per claim (request name, pool index, candidate index, admin
# access), and the chosen subrequests. Nodes of the same shape share it.
Positional = tuple[list[list[tuple[str, int, int, bool]]], list[dict[int, int]]]
Shape = tuple[Any, ...]


def node_shape(pools: Sequence[Pool], allocated: set[DeviceKey], cache: SelectorCache,
               features: Features) -> Shape | None:
    """What the search on a node depends on, when node names aside it is all content.

    Two nodes with the same shape (pools of equal device content in the same order,
    the same devices allocated) get the same solution by position: the search sees
    attributes, capacities and allocation state, never names. None where more than
    that matters (per-device node selection, taints, counters, binding conditions,
    shared devices and the capacity their shares use, and before 1.36 the order
    note, which runs its own search).
    """
    usable = 0
    out: list[Any] = []
    for pool in pools:
        if pool.incomplete or pool.invalid:
            out.append((pool.id, pool.incomplete, pool.invalid))  # ids: in the reasons
            continue
        usable += 1
        if pool.per_device_node_selection or pool.counter_sets:
            return None
        members = pool.devices()
        for device in members:
            if device.taints or device.consumes_counters or device.binding_conditions or (
                    device.allow_multiple_allocations and features.consumable_capacity):
                return None
        # Nothing allocated in the cluster (the allocated set is the run's): no need to look.
        driver, name = pool.driver, pool.name
        taken = tuple((driver, name, d.name) in allocated for d in members) if allocated else None
        out.append((cache.pool_content(pool), taken))
    if not features.sorted_pools and usable >= 2:
        return None
    return tuple(out)


class Abort(Exception):
    """Upstream's errors returned from deep inside the search, carried up as one value."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _SizeExceeded(Exception):
    """Upstream `errAllocationResultMaxSizeExceeded`."""


@dataclass(slots=True)
class Allocator:
    """One `Allocate` call: a node, the Pod's claims to allocate, the cluster state."""

    node: Node
    claims: Sequence[Claim]
    pools: list[Pool]
    classes: dict[str, DeviceClass]
    allocated: set[DeviceKey]
    features: Features
    cache: SelectorCache
    requests: list[list[list[Request]]] = field(default_factory=list)
    data: dict[tuple[int, int, int], _Data] = field(default_factory=dict)
    constraints: list[list[_Constraint]] = field(default_factory=list)
    allocating: dict[DeviceKey, set[int]] = field(default_factory=dict)
    selected: dict[tuple[int, int, int], list[Candidate] | None] = field(default_factory=dict)
    result: list[list[Result]] = field(default_factory=list)
    chosen: list[dict[int, int]] = field(default_factory=list)
    available_counters: dict[str, dict[str, dict[str, Fraction]]] = field(default_factory=dict)
    consumed: dict[str, dict[str, dict[str, Fraction]]] = field(default_factory=dict)
    # Consumable capacity (1.36+): what allocated shares use per device (upstream
    # `AggregatedCapacity`) and what this search's shares take (`allocatingCapacity`).
    in_use: dict[DeviceKey, dict[str, Fraction]] = field(default_factory=dict)
    allocating_capacity: dict[DeviceKey, dict[str, Fraction]] = field(default_factory=dict)
    shared_devices: set[DeviceKey] = field(default_factory=set)  # `AllocatedSharedDeviceIDs`

    def allocate(self) -> Outcome:
        try:
            failure = self._prepare()
            if failure is not None:
                return failure
            done = self._allocate_one(0, 0, 0, 0, sub_mode=False)
        except Abort as stop:
            return Failed(stop.message)
        except _SizeExceeded:
            done = False
        if not done:
            return Unfit(invalid_pools=any(p.invalid for p in self.pools))
        return Allocated([list(r) for r in self.result], [dict(c) for c in self.chosen])

    def positional(self, result: Allocated) -> Positional:
        where = {c.key: (pi, ci) for pi, pool in enumerate(self.pools)
                 for ci, c in enumerate(pool.candidates())
                 if not (pool.incomplete or pool.invalid)}
        return ([[(r.request, *where[(r.driver, r.pool, r.device)], r.admin_access) for r in claim]
                 for claim in result.results], [dict(c) for c in result.chosen])

    def replay(self, solution: Positional | Unfit) -> Outcome:
        """The outcome on a node of the same shape, with this node's devices.

        The pre-pass is left to `describe_request`, which needs it only for reasons
        not already found on the same shape; it cannot fail where it did not there.
        """
        if isinstance(solution, Unfit):
            return solution
        pools = self.pools
        results = [[Result(request, pools[pi].driver, pools[pi].name, pools[pi].devices()[ci].name,
                           admin)
                    for request, pi, ci, admin in claim] for claim in solution[0]]
        return Allocated(results, [dict(c) for c in solution[1]])

    # --- the pre-pass (upstream `Allocate` before `allocateOne`) ---------------------

    def _prepare(self) -> Failed | None:
        self.requests = [claim_requests(c) for c in self.claims]
        self.result = [[] for _ in self.claims]
        self.chosen = [{} for _ in self.claims]
        for ci, claim in enumerate(self.claims):
            minimum = 0
            for ri, alternatives in enumerate(self.requests[ci]):
                parent = alternatives[0].parent
                if parent is not None and not self.features.prioritized_list:
                    return Failed(f"claim {_kobj(claim)}, request {parent}: has subrequests, "
                                  "but the DRAPrioritizedList feature is disabled")
                least = None
                for si, request in enumerate(alternatives):
                    data = self._validate(ci, ri, si, request)
                    self.data[(ci, ri, si)] = data
                    least = data.num_devices if least is None else min(least, data.num_devices)
                minimum += least or 0
            if minimum > MAX_RESULTS:
                return Failed(f"claim {_kobj(claim)}: number of requested devices {minimum} "
                              f"exceeds the claim limit of {MAX_RESULTS}")
            constraints: list[_Constraint] = []
            for i, raw in enumerate(claim.devices.get("constraints") or []):
                requests = set(raw.get("requests") or [])
                if raw.get("matchAttribute"):
                    constraints.append(_Constraint(requests, str(raw["matchAttribute"]), distinct=False))
                elif raw.get("distinctAttribute") and self.features.consumable_capacity:
                    constraints.append(_Constraint(requests, str(raw["distinctAttribute"]), distinct=True))
                else:
                    return Failed(f"claim {_kobj(claim)}, constraint #{i}: empty constraint "
                                  "(unsupported constraint type?)")
            self.constraints.append(constraints)
        return None

    def _validate(self, ci: int, ri: int, si: int, request: Request) -> _Data:
        """Upstream `validateDeviceRequest`; raises `Abort` with upstream's message."""
        claim = self.claims[ci]
        where = f"claim {_kobj(claim)}, request {request.name}"
        if any(not s for s in request.selectors):
            bad = next(i for i, s in enumerate(request.selectors) if not s)
            raise Abort(f"{where}, selector #{bad}: CEL expression empty (unsupported selector type?)")
        if request.admin_access and not self.features.admin_access:
            raise Abort(f"{where}: admin access is requested, but the feature is disabled")
        if not request.class_name:
            raise Abort(f"{where}: missing device class name (unsupported request type?)")
        klass = self.classes.get(request.class_name)
        if klass is None:
            raise Abort(f"{where}: could not retrieve device class {request.class_name}: "
                        f'deviceclass.resource.k8s.io "{request.class_name}" not found')
        data = _Data(request, klass, request.count)
        borrowed = self._borrowed_selection(ci, ri, si)
        if request.mode == "All":
            for pool in self.pools:
                if pool.incomplete:
                    raise Abort(f"{where}: asks for all devices, but resource pool {pool.id} "
                                "is currently being updated")
                if pool.invalid:
                    raise Abort(f"{where}: asks for all devices, but resource pool {pool.id} "
                                "is currently invalid")
                if borrowed is not None:
                    data.all_devices += [c for c in borrowed if c.pool is pool]
                    continue
                for candidate in pool.candidates():
                    if self._selectable((ci, ri, si), data, candidate) and (
                            not self.features.consumable_capacity
                            or self._capacity_fits(request, candidate) is True):
                        data.all_devices.append(candidate)
            data.num_devices = len(data.all_devices)
        elif request.mode != "ExactCount":
            raise Abort(f"{where}: unsupported count mode {request.mode}")
        return data

    def _borrowed_selection(self, ci: int, ri: int, si: int) -> list[Candidate] | None:
        """Before 1.36, subrequest 1 of an All request sees subrequest 0's selection.

        The pre-pass validated subrequest i under the cache key of subrequest i - 1
        (`Allocate` set `requestKey.subRequestIndex = i` only after
        `validateDeviceRequest`; allocator_stable.go in 1.34 and 1.35), and
        `isSelectable` answers from `deviceMatchesRequest` by that key. Only
        subrequest 1 finds entries there: those subrequest 0 wrote, when it is an All
        request too (an ExactCount one selects nothing in the pre-pass). It then
        takes exactly subrequest 0's devices and evaluates no selector of its own.
        Fixed by "DRA: Fix incorrect behavior when using AllocationModeAll with
        PrioritizedList" (kubernetes 3caaccc, 1.36.0), with the search half.
        """
        if not self.features.all_subrequest_bug or si != 1:
            return None
        first = self.data.get((ci, ri, 0))
        if first is None or first.request.mode != "All":
            return None
        if self.requests[ci][ri][1].mode != "All":
            return None
        return first.all_devices

    # --- the search (upstream `allocateOne`) ----------------------------------------

    def _allocate_one(self, ci: int, ri: int, si: int, di: int, *, sub_mode: bool) -> bool:
        if ci >= len(self.claims):
            return True
        if ri >= len(self.requests[ci]):
            try:
                return self._allocate_one(ci + 1, 0, 0, 0, sub_mode=False)
            except _SizeExceeded:
                return False
        data = self.data[(ci, ri, si)]
        if not sub_mode and data.request.parent is not None:
            return self._try_subrequests(ci, ri, di)
        request = data.request
        every = request.mode == "All"
        if every and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, sub_mode=False)
        if len(self.result[ci]) + data.num_devices - di > MAX_RESULTS:
            raise _SizeExceeded
        if every:
            candidate = data.all_devices[di]
            undo = self._allocate_device(ci, ri, si, candidate, must=True)
            if undo is None:
                return False
            following = 0 if self.features.all_subrequest_bug else si
            return self._descend(undo, ci, ri, following, di + 1, sub_mode=sub_mode)
        selected = self._selected(ci, ri, si, data)
        for candidate in selected if selected is not None else self._usable_candidates():
            if self._busy(candidate.key, ci, request) or (
                    selected is None and not self._selectable((ci, ri, si), data, candidate)):
                continue
            if self.features.consumable_capacity and self._capacity_fits(request, candidate) is not True:
                continue
            undo = self._allocate_device(ci, ri, si, candidate, must=False)
            if undo is None:
                continue
            if self._descend(undo, ci, ri, si, di + 1, sub_mode=sub_mode):
                return True
        return False

    def _descend(self, undo: Callable[[], None], ci: int, ri: int, si: int, di: int, *,
                 sub_mode: bool) -> bool:
        """Search on with a device taken; give it back unless the search succeeded.

        Shared by the All and the ExactCount branch of `allocateOne`: the device is
        given back when the search below fails, and before a size abort rises.
        """
        try:
            if self._allocate_one(ci, ri, si, di, sub_mode=sub_mode):
                return True
        except _SizeExceeded:
            undo()
            raise
        undo()
        return False

    def _usable_candidates(self) -> Iterator[Candidate]:
        for pool in self.pools:
            if not (pool.incomplete or pool.invalid):
                yield from pool.candidates()

    def _selected(self, ci: int, ri: int, si: int, data: _Data) -> list[Candidate] | None:
        """The candidates the request selects on this node, in search order; made once.

        None when selecting every device would meet a CEL error: then the search checks
        device by device as upstream does, so that an error aborts the Pod only if the
        search gets to that device.
        """
        indices = (ci, ri, si)
        known: list[Candidate] | None = self.selected.get(indices, _UNKNOWN)
        if known is not _UNKNOWN:
            return known
        found: list[Candidate] | None
        chosen: list[Candidate] = []
        by_slice = self.cache.by_slice
        try:
            for pool in self.pools:
                if pool.incomplete or pool.invalid:
                    continue
                if not pool.per_device_node_selection:
                    chosen += self._selected_in_pool(indices, data, pool)
                    continue
                for found_slice, members in pool.candidates_by_slice():
                    if found_slice.node_name or found_slice.per_device_node_selection:
                        # Reaches this node only (or differs per node): nothing to share.
                        chosen += [c for c in members if self._selectable(indices, data, c)]
                        continue
                    # The same slice reaches many nodes (allNodes, node selectors): what
                    # it offers a selector set is worked out once per run.
                    if data.selector_id < 0:
                        data.selector_id = self.cache.id_for(data)
                    key = (data.selector_id, id(found_slice))
                    picked = by_slice.get(key)
                    if picked is None:
                        picked = [i for i, c in enumerate(members) if self._selectable(indices, data, c)]
                        by_slice[key] = picked
                    chosen += [members[i] for i in picked]
            found = chosen
        except Abort:
            found = None
        self.selected[indices] = found
        return found

    def _selected_in_pool(self, indices: tuple[int, int, int], data: _Data,
                          pool: Pool) -> list[Candidate]:
        """What the request selects in a pool whose devices reach the node alike.

        Selection depends on the selectors and the devices' content only (per-device
        node selection aside, handled per slice): equal pools on other nodes share it.
        """
        if data.selector_id < 0:
            data.selector_id = self.cache.id_for(data)
        members = pool.candidates()
        key = (data.selector_id, self.cache.pool_content(pool))
        picked = self.cache.by_pool.get(key)
        if picked is None:
            picked = [i for i, c in enumerate(members) if self._selectable(indices, data, c)]
            self.cache.by_pool[key] = picked
        return [members[i] for i in picked]

    def _try_subrequests(self, ci: int, ri: int, di: int) -> bool:
        all_exceeded = True
        for si in range(len(self.requests[ci][ri])):
            try:
                success = self._allocate_one(ci, ri, si, di, sub_mode=True)
            except _SizeExceeded:
                continue
            all_exceeded = False
            if success:
                self.chosen[ci][ri] = si
                return True
        if all_exceeded:
            raise _SizeExceeded
        return False

    def _busy(self, key: DeviceKey, ci: int, request: Request) -> bool:
        if request.admin_access:
            return ci in self.allocating.get(key, ())
        return key in self.allocated or bool(self.allocating.get(key))

    def _selectable(self, indices: tuple[int, int, int], data: _Data, candidate: Candidate) -> bool:
        """Upstream `isSelectable`: class selectors, then the request's.

        The selector outcome is remembered per selector set and device content across
        every node of the run (`SelectorCache.selections`); per-device node selection
        is checked per node.
        """
        device = candidate.device
        if not self.features.binding_conditions and device.binding_conditions:
            return False
        signature = device._signature or device.signature(candidate.key[0])
        if data.selector_id < 0:
            data.selector_id = self.cache.id_for(data)
        cache_key = (data.selector_id, signature)
        selections = self.cache.selections
        ok = selections.get(cache_key)
        if ok is None:
            claim = self.claims[indices[0]]
            ok = True
            if data.klass is not None:
                ok = self._selectors_match(data.klass.selectors, candidate, data.klass, claim)
            if ok:
                ok = self._selectors_match(data.request.selectors, candidate, None, claim)
            selections[cache_key] = ok
        if ok and candidate.slice.per_device_node_selection:
            ok = node_matches(self.node, device.node_name, device.all_nodes, device.node_selector)
        return ok

    def _selectors_match(self, selectors: list[str], candidate: Candidate,
                         klass: DeviceClass | None, claim: Claim) -> bool:
        driver = candidate.key[0]
        for i, expression in enumerate(selectors):
            matches, error = self.cache.matches(expression, driver, candidate.device)
            if error is not None:
                owner = f"class {klass.name}" if klass is not None else f"claim {_kobj(claim)}"
                where = "/".join(candidate.key)
                if error.startswith("compilation failed"):
                    raise Abort(f"{owner}: selector #{i}: CEL compile error: {error}")
                if not self.features.cel_error_names_device:
                    raise Abort(f"{owner}: selector #{i}: CEL runtime error: {error}")
                if "no such key:" in error:
                    error += _NO_SUCH_KEY_HINT
                raise Abort(f"{owner}: selector #{i} on device {where}: CEL runtime error: {error}")
            if not matches:
                return False
        return True

    def _allocate_device(self, ci: int, ri: int, si: int, candidate: Candidate, *,
                         must: bool) -> Callable[[], None] | None:
        """Upstream `allocateDevice`: None when the device cannot be added, else an undo."""
        data = self.data[(ci, ri, si)]
        request = data.request
        device = candidate.device
        # Incubating `allocateDevice`: a device that allows multiple allocations is
        # never marked as allocating, so only a dedicated one is busy within a claim.
        shared = self.features.consumable_capacity and device.allow_multiple_allocations
        if (not shared or not request.admin_access) and self._busy(candidate.key, ci, request):
            return None
        # Counters are taken by the first share only (upstream `skipCounterCheck`).
        skip_counters = shared and (candidate.key in self.in_use
                                    or candidate.key in self.allocating_capacity)
        if device.consumes_counters and not skip_counters and not (
                self.features.partitionable_devices and self._take_counters(candidate)):
            return None
        base, sub = (request.parent, request.name) if request.parent else (request.name, "")
        # Upstream returns here (and after a failed constraint) without giving the
        # counters just taken back; kept, as the scheduler behaves so.
        if device.taints and self.features.device_taints and _taint_prevents(device, request):
            return None
        constraints = self.constraints[ci]
        for i, constraint in enumerate(constraints):
            if not constraint.add(base, sub, device, candidate.key):
                if must:
                    raise Abort(f"claim {_kobj(self.claims[ci])}, request {request.name}: cannot add "
                                f"device {'/'.join(candidate.key)} because a claim constraint "
                                "would not be satisfied")
                for earlier in constraints[:i]:
                    earlier.remove(base, sub, candidate.key)
                return None
        users = self.allocating.setdefault(candidate.key, set())
        if not shared:
            users.add(ci)
        taken: dict[str, Fraction] = {}
        if self.features.consumable_capacity:
            if self._capacity_fits(request, candidate) is not True:
                # Upstream returns here without undoing the constraints and the
                # allocating mark just made; kept (only an All request gets here).
                return None
            if shared:
                taken = capacity.consumed(request.capacity, device.capacity, device.policies)
                into = self.allocating_capacity.setdefault(candidate.key, {})
                for name, amount in taken.items():
                    into[name] = into.get(name, Fraction(0)) + amount
        before = len(self.result[ci])
        driver, pool, name = candidate.key
        self.result[ci].append(Result(request.full_name, driver, pool, name, request.admin_access,
                                      shared, tuple(sorted(taken.items()))))

        def undo() -> None:
            for constraint in constraints:
                constraint.remove(base, sub, candidate.key)
            self.allocating[candidate.key].discard(ci)
            if shared:
                # ConsumedCapacityCollection.Remove, for a share that consumed something
                # (an empty one's entry stays, as upstream's does).
                if taken:
                    left = self.allocating_capacity[candidate.key]
                    for name, amount in taken.items():
                        left[name] -= amount
                    if not any(left.values()):
                        del self.allocating_capacity[candidate.key]
            elif device.consumes_counters:
                self._release_counters(candidate)
            del self.result[ci][before:]

        return undo

    def _capacity_fits(self, request: Request, candidate: Candidate) -> bool | None:
        """Upstream `allocator.CmpRequestOverCapacity` for one device (None: upstream errs)."""
        device = candidate.device
        return capacity.fits(requests=request.capacity, capacity=device.capacity,
                             policies=device.policies, in_use=self.in_use.get(candidate.key),
                             allocating=self.allocating_capacity.get(candidate.key))

    # --- partitionable devices (upstream `checkAvailableCounters`) ---------------------

    def _take_counters(self, candidate: Candidate) -> bool:
        pool = candidate.pool
        available = self.available_counters.get(pool.id)
        if available is None:
            available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for found in [*pool.slices, *pool.other_slices]:
                for device in found.devices:
                    # Upstream `IsDeviceAllocated`: dedicated, or with an allocated share.
                    key = (found.driver, found.pool, device.name)
                    if key not in self.allocated and key not in self.shared_devices \
                            and key not in self.in_use:
                        continue
                    for set_name, counters in device.consumes_counters:
                        for counter, amount in counters.items():
                            if counter in available.get(set_name, {}):
                                available[set_name][counter] -= amount
            self.available_counters[pool.id] = available
        consumed = self.consumed.setdefault(pool.id, {})
        for set_name, counters in candidate.device.consumes_counters:
            into = consumed.setdefault(set_name, {})
            for counter, amount in counters.items():
                into[counter] = into.get(counter, Fraction(0)) + amount
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for counter, amount in counters.items():
                if amount < used.get(counter, 0):
                    self._release_counters(candidate)
                    return False
        return True

    def _release_counters(self, candidate: Candidate) -> None:
        consumed = self.consumed.get(candidate.pool.id, {})
        for set_name, counters in candidate.device.consumes_counters:
            for counter, amount in counters.items():
                consumed[set_name][counter] -= amount


@dataclass(slots=True)
class _Constraint:
    """matchAttribute (upstream `matchAttributeConstraint`) or distinctAttribute."""

    requests: set[str]
    attribute: str
    distinct: bool
    values: list[tuple[DeviceKey, tuple[str, Any]]] = field(default_factory=list)

    def applies(self, base: str, sub: str) -> bool:
        if not self.requests:
            return True
        return base in self.requests or (bool(sub) and f"{base}/{sub}" in self.requests)

    def add(self, base: str, sub: str, device: Device, key: DeviceKey) -> bool:
        if not self.applies(base, sub):
            return True
        value = lookup_attribute(device, key[0], self.attribute)
        if value is None:
            return False
        if self.values:
            if self.distinct:
                if any(v == value for _, v in self.values):
                    return False
            elif self.values[0][1] != value:
                return False
        self.values.append((key, value))
        return True

    def remove(self, base: str, sub: str, key: DeviceKey) -> None:
        if not self.applies(base, sub):
            return
        for i in range(len(self.values) - 1, -1, -1):
            if self.values[i][0] == key:
                del self.values[i]
                return


def lookup_attribute(device: Device, driver: str, name: str) -> tuple[str, Any] | None:
    """Upstream `lookupAttribute`: the full name, or `<driver>/<id>` as the bare id."""
    found = device.attributes.get(name)
    if found is not None:
        return found
    domain, sep, ident = name.partition("/")
    if not sep or domain != driver:
        return None
    return device.attributes.get(ident)


def _taint_prevents(device: Device, request: Request) -> bool:
    """Upstream `taintPreventsAllocation` with `resourceclaim.ToleratesTaint`."""
    for taint in device.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(
                tolerates(t, taint) for t in request.tolerations):
            return True
    return False


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def _kobj(claim: Claim) -> str:
    return f"{claim.namespace}/{claim.name}"


# --- why an alternative was not taken ------------------------------------------------

def describe_request(allocator: Allocator, ci: int, ri: int, si: int, *,
                     node_name: str | None = None) -> str | None:
    """Why one request or subrequest cannot be met on the node on its own; None if it can.

    Counts the devices of the node's pools that the class and the request select, and
    of those the ones already allocated (to claims outside this Pod) or tainted, the
    way `allocateOne` and `allocateDevice` would skip them.
    """
    if not allocator.requests and allocator._prepare() is not None:  # after a replay
        return None
    data = allocator.data.get((ci, ri, si))
    if data is None:
        return None
    request = data.request
    klass, need = request.class_name, data.request.count
    owned = [(f"class {klass}", e) for e in (data.klass.selectors if data.klass else [])]
    for owner, expression in owned + [("request", e) for e in request.selectors]:
        function = unevaluable(expression)
        if function is not None:
            # Counted as matching nothing in the search (`selectors.evaluate`).
            return (f"selector `{expression}` of the {owner} uses {function}, which draguard "
                    "cannot evaluate; its outcome is unknown")
    node = allocator.node.name if node_name is None else node_name
    if allocator._borrowed_selection(ci, ri, si) == []:
        first = allocator.data[(ci, ri, 0)].request.name
        return (f"before 1.36 the scheduler gives this All subrequest the devices subrequest "
                f"{first} selects, none on {node}, instead of its own (upstream bug, fixed "
                "in 1.36)")
    incomplete = [p.id for p in allocator.pools if p.incomplete or p.invalid]
    selected = allocator._selected(ci, ri, si, data)
    if selected is None:  # some device gives a CEL error: say which
        selected = [c for c in allocator._usable_candidates()
                    if allocator._selectable((ci, ri, si), data, c)]
    matching, allocated, tainted, short = len(selected), 0, 0, 0
    for candidate in selected:
        device = candidate.device
        if not request.admin_access and candidate.key in allocator.allocated:
            allocated += 1
        elif device.taints and allocator.features.device_taints and _taint_prevents(
                device, request):
            tainted += 1
        elif allocator.features.consumable_capacity and capacity.fits(
                requests=request.capacity, capacity=device.capacity, policies=device.policies,
                in_use=allocator.in_use.get(candidate.key), allocating=None) is not True:
            short += 1  # the request's capacity (or the policy) does not fit what is left
    of_class = matching
    if matching == 0:
        only_class = _Data(Request(request.name, request.parent, klass, [], request.mode,
                                   request.count, request.admin_access, []), data.klass, 0)
        class_only = allocator._selected(ci, ri, -1 - si, only_class)
        of_class = len(class_only) if class_only is not None else 0
    usable = matching - allocated - tainted - short
    selectors = " && ".join(f"`{s}`" for s in request.selectors)
    what = f"no device of class {klass}" + (f" matches {selectors}" if selectors else "")
    suffix = f" (pools not usable: {', '.join(incomplete)})" if incomplete else ""
    if of_class == 0:
        return f"no device of class {klass} on {node}{suffix}"
    if matching == 0:
        return f"{what} on {node}: {of_class} of the class, none matches{suffix}"
    if request.mode == "All":
        if allocated or tainted:
            return (f"asks for all {matching} devices of class {klass} on {node}: "
                    f"{_busy_text(matching, allocated, tainted, short)}")
        return None
    if usable >= need:
        return None
    head = what if usable == 0 else f"needs {need} devices of class {klass}, {usable} free"
    return f"{head} on {node}: {_busy_text(matching, allocated, tainted, short)}{suffix}"


def _busy_text(matching: int, allocated: int, tainted: int, short: int = 0) -> str:
    noun = "candidate" if matching == 1 else "candidates"
    parts = []
    for count, word in ((allocated, "allocated"), (tainted, "tainted"),
                        (short, "short of capacity")):
        if not count:
            continue
        if count == matching:
            parts.append({1: word, 2: f"both {word}"}.get(count, f"all {word}"))
        else:
            parts.append(f"{count} {word}")
    return f"{matching} {noun}" + (", " + ", ".join(parts) if parts else "")
