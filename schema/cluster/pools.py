"""Per node: the pools whose slices reach it, as upstream gathers them.

Upstream `structured/internal/stable/pools_stable.go` (`GatherPools`, `addSlice`,
`buildPool`, `checkSlicesInPool`, `NodeMatches`) and the release facts the allocator
depends on (`Features`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

from draguard.schema.cluster.objects import Device, Node, NodeSelector, Slice
from draguard.schema.model.releases import Release


@dataclass(frozen=True, slots=True)
class Features:
    """The allocator's feature gates at their defaults in one release.

    From the release table where it has them; the others from upstream's
    `pkg/features/kube_features.go` as remembered (no copy of that file was at hand):
    DRAPartitionableDevices and DRADeviceBindingConditions beta (on) from 1.36.
    """

    prioritized_list: bool
    admin_access: bool
    device_taints: bool
    partitionable_devices: bool
    consumable_capacity: bool
    binding_conditions: bool
    sorted_pools: bool  # before 1.36 pools came out of a Go map: random order
    scoring: bool  # the plugin scores nodes from 1.35
    # Before 1.36 an All-mode subrequest after the first went on, after its first
    # device, with subrequest 0's data (allocator_stable.go allocateOne dropped
    # `subRequestIndex`), and subrequest 1 was validated under subrequest 0's
    # cache key (`Allocator._borrowed_selection`); both fixed by "DRA: Fix incorrect
    # behavior when using AllocationModeAll with PrioritizedList", in 1.36.0).
    all_subrequest_bug: bool
    # From 1.37 a CEL runtime error names the device and hints at `.?`/has()
    # ("DRA: add hint for CEL "no such key" errors", cel/errors.go EnhanceRuntimeError).
    cel_error_names_device: bool

    @classmethod
    def of(cls, release: Release) -> Features:
        minor = release.minor
        return cls(prioritized_list=release.prioritized_list, admin_access=release.admin_access,
                   device_taints=release.device_taints, partitionable_devices=minor >= 36,
                   consumable_capacity=release.consumable_capacity,
                   binding_conditions=minor >= 36, sorted_pools=minor >= 36, scoring=minor >= 35,
                   all_subrequest_bug=minor <= 35, cel_error_names_device=minor >= 37)


class Candidate(NamedTuple):
    """One device of a pool that reaches the node, with its ID (driver, pool, device).

    A named tuple: one is made per device per node, and a frozen dataclass costs more.
    """

    key: tuple[str, str, str]
    device: Device
    slice: Slice
    pool: Pool


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid: str | None = None
    slices: list[Slice] = field(default_factory=list)  # those targeting the node
    other_slices: list[Slice] = field(default_factory=list)
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    content_id: int = -1  # SelectorCache.pool_content
    _per_device: bool | None = None
    _devices: list[Device] | None = None
    _candidates: list[Candidate] | None = None
    _by_slice: list[tuple[Slice, list[Candidate]]] | None = None

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"

    @property
    def per_device_node_selection(self) -> bool:
        if self._per_device is None:
            self._per_device = any(s.per_device_node_selection for s in self.slices)
        return self._per_device

    def devices(self) -> list[Device]:
        """The devices of the slices that target the node, in slice order: what
        `candidates` holds, without making a candidate per device (nodes whose search is
        replayed need only these)."""
        if self._devices is None:
            slices = self.slices
            self._devices = (slices[0].devices if len(slices) == 1
                             else [device for found in slices for device in found.devices])
        return self._devices

    def candidates(self) -> list[Candidate]:
        """The devices of the slices that target the node, in slice order (made once)."""
        if self._candidates is None:
            self._candidates = [c for _, members in self.candidates_by_slice() for c in members]
        return self._candidates

    def drop_candidates(self) -> None:
        """Forget the candidates, which refer back to the pool (a cycle), once done with it."""
        self._candidates = self._by_slice = None

    def candidates_by_slice(self) -> list[tuple[Slice, list[Candidate]]]:
        if self._by_slice is None:
            self._by_slice = [(found, [Candidate((found.driver, found.pool, device.name), device,
                                                 found, self) for device in found.devices])
                              for found in self.slices]
        return self._by_slice


def selector_matches(selector: NodeSelector, node: Node) -> bool:
    """`nodeaffinity.NewNodeSelector(...).Match(node)`: terms ORed, requirements ANDed."""
    return any(_term_matches(term.expressions, term.fields, node) for term in selector
               if term.expressions or term.fields)


def _term_matches(expressions: Sequence[tuple[str, str, tuple[str, ...]]],
                  fields: Sequence[tuple[str, str, tuple[str, ...]]], node: Node) -> bool:
    for key, operator, values in expressions:
        if not _requirement(node.labels.get(key), operator, values):
            return False
    for key, operator, values in fields:
        value = node.name if key == "metadata.name" else None
        if not _requirement(value, operator, values):
            return False
    return True


def _requirement(value: str | None, operator: str, values: tuple[str, ...]) -> bool:
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if value is None or len(values) != 1 or not _is_int(value) or not _is_int(values[0]):
        return False
    return int(value) > int(values[0]) if operator == "Gt" else int(value) < int(values[0])


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def node_matches(node: Node, node_name: str, all_nodes: bool, selector: NodeSelector | None) -> bool:
    """Upstream `NodeMatches`."""
    if node_name:
        return node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return selector_matches(selector, node)
    return False


class SliceIndex:
    """The slices by the node they name, so that gathering per node is not a scan of all.

    Slices with `nodeName` are found by name; the others (all nodes, a node selector,
    per-device selection, counter sets) are looked at for every node. Within a node
    the slices keep their input order (`ordinal`), which upstream's result may depend
    on before 1.36 (see `Features.sorted_pools`).
    """

    def __init__(self, slices: Sequence[Slice]) -> None:
        self.slices = slices
        self.by_node: dict[str, list[Slice]] = {}
        self.general: list[tuple[int, Slice]] = []
        self._by_pool: dict[tuple[str, str], list[Slice]] | None = None
        self._ordinals: dict[int, int] | None = None  # by id of a named slice
        by_node = self.by_node
        for ordinal, found in enumerate(slices):
            if found.node_name and not found.shared_counters:
                named = by_node.get(found.node_name)
                if named is None:
                    by_node[found.node_name] = [found]
                else:
                    named.append(found)
            else:
                self.general.append((ordinal, found))

    @property
    def by_pool(self) -> dict[tuple[str, str], list[Slice]]:
        """Every slice of each pool, made when a pool is first found incomplete on a node
        (complete pools, the usual case, never need it)."""
        if self._by_pool is None:
            self._by_pool = {}
            for found in self.slices:
                self._by_pool.setdefault((found.driver, found.pool), []).append(found)
        return self._by_pool

    def for_node(self, node: Node) -> list[Slice]:
        named = self.by_node.get(node.name, [])
        if not self.general:
            return list(named)
        if self._ordinals is None:  # input order, wanted only beside general slices
            self._ordinals = {id(found): ordinal for ordinal, found in enumerate(self.slices)}
        ordinals = self._ordinals
        return [found for _, found in sorted([*((ordinals[id(s)], s) for s in named), *self.general],
                                             key=lambda e: e[0])]


def gather_pools(index: SliceIndex, node: Node, features: Features) -> list[Pool]:
    """Upstream `GatherPools` over the slices that may reach the node."""
    pools = _gathered(index, node, features)
    result: list[Pool] = []
    for (driver, name), members in pools.items():
        wanted = members[0].slice_count
        if len(members) == wanted:
            result.append(_build_pool(driver, name, members, features, None))
            continue
        generation = members[0].generation
        everything = index.by_pool.get((driver, name), [])
        if any(s.generation > generation for s in everything):
            continue  # obsolete: a newer generation is being published
        same = [s for s in everything if s.generation == generation]
        if len(same) != wanted:
            result.append(Pool(driver, name, incomplete=True))
            continue
        result.append(_build_pool(driver, name, members, features, same))
    if features.sorted_pools:
        result.sort(key=lambda p: (p.driver, p.name))
    return result


def _gathered(index: SliceIndex, node: Node, features: Features) -> dict[tuple[str, str], list[Slice]]:
    """The slices reaching the node by pool, newest generation only (upstream `addSlice`)."""
    pools: dict[tuple[str, str], list[Slice]] = {}
    if not index.general:
        # Only slices naming this node (the usual cluster): each reaches it, and none has
        # counter sets or per-device selection (read_slice allows one selection field),
        # so `_add_slice` alone decides.
        for found in index.by_node.get(node.name, ()):
            _add_slice(pools, found)
        return pools
    for found in index.for_node(node):
        if not features.partitionable_devices and (found.per_device_node_selection
                                                   or found.shared_counters):
            continue
        if found.shared_counters:
            _add_slice(pools, found)
        elif found.node_name or found.all_nodes or found.node_selector is not None:
            if node_matches(node, found.node_name, found.all_nodes, found.node_selector):
                _add_slice(pools, found)
        elif found.per_device_node_selection and any(
                node_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in found.devices):
            _add_slice(pools, found)
    return pools


def _add_slice(pools: dict[tuple[str, str], list[Slice]], found: Slice) -> None:
    key = (found.driver, found.pool)
    members = pools.get(key)
    if members is None or found.generation > members[0].generation:
        pools[key] = [found]
    elif found.generation == members[0].generation:
        members.append(found)


def _duplicate_name(slices: list[Slice]) -> str | None:
    """The first device name that a later device of the slices repeats, in order."""
    names = [device.name for found in slices for device in found.devices]
    if len(set(names)) == len(names):
        return None
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def _build_pool(driver: str, name: str, members: list[Slice], features: Features,
                everything: list[Slice] | None) -> Pool:
    """Upstream `buildPool`: validation failures make the pool invalid, not an error."""
    pool = Pool(driver, name)
    device_slices = [s for s in members if not (features.partitionable_devices and s.shared_counters)]
    if len(device_slices) > 1:  # read_slice refuses a slice that repeats a device name
        duplicate = _duplicate_name(device_slices)
        if duplicate is not None:
            pool.invalid = f"duplicate device name {duplicate}"
            return pool
    pool.slices = device_slices
    if not features.partitionable_devices:
        return pool
    for found in members:
        for set_name, counters in found.shared_counters.items():
            if set_name in pool.counter_sets:
                pool.invalid = f"duplicate counter set name {set_name}"
                return pool
            pool.counter_sets[set_name] = counters
    if everything:
        names = {s.name for s in members}
        pool.other_slices = [s for s in everything if s.name not in names]
    for found in [*members, *pool.other_slices] if pool.other_slices else members:
        for device in found.devices:
            for set_name, counters in device.consumes_counters:
                available = pool.counter_sets.get(set_name)
                if available is None:
                    pool.invalid = f"counter set {set_name} not found"
                    return pool
                for counter in counters:
                    if counter not in available:
                        pool.invalid = f"counter {counter} not found in counter set {set_name}"
                        return pool
    return pool
