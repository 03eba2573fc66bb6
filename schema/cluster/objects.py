"""Cluster objects as the allocator sees them, read from plain values as errors-as-values.

`resource.k8s.io/v1` DeviceClass and ResourceSlice, `v1` Node and Pod. Each `read_*`
returns the object (or None when it is unusable) and the problems found, each a path
into the document and a message; `reading` turns the paths into lines. A problem that
the apiserver would refuse the object for drops the object, as a cluster could not
hold it; a doubtful but storable value is kept and reported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import orjson

from draguard.schema.cluster.capacity import RequestPolicy
from draguard.schema.cluster.quantity import milli_value, parse_quantity
from draguard.schema.cluster.semver import version_value
from draguard.schema.model.paths import FieldPath

# ResourceSliceMaxDevices and its lower bound for slices with taints or counters
# (k8s.io/api/resource/v1 types.go: ResourceSliceMaxDevices = 128,
# ResourceSliceMaxDevicesWithTaintsOrConsumesCounters = 64).
MAX_DEVICES = 128
MAX_DEVICES_WITH_TAINTS_OR_COUNTERS = 64


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with one object, at a path inside its document."""

    path: FieldPath
    message: str


class Origin:
    """Where an object came from: file and 1-based line (0 when unknown).

    The line may be found only when first asked (`find`): placing each object of a
    long YAML List walks the document (a third of reading a 5,000-node List,
    bench/RESULTS.md issue 19), and most objects never have a finding.
    """

    __slots__ = ("_find", "_line", "file")

    def __init__(self, file: str, line: int = 0, find: Callable[[], int] | None = None) -> None:
        self.file, self._line, self._find = file, line, find

    @property
    def line(self) -> int:
        if self._find is not None:
            self._line, self._find = self._find(), None
        return self._line

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Origin):
            return NotImplemented
        return (self.file, self.line) == (other.file, other.line)

    def __hash__(self) -> int:
        return hash((self.file, self.line))

    def __repr__(self) -> str:
        return f"Origin(file={self.file!r}, line={self.line})"


NOWHERE = Origin("", 0)


@dataclass(slots=True)
class NodeSelectorTerm:
    """One `nodeSelectorTerms[]` entry: every requirement must hold (ANDed)."""

    expressions: list[tuple[str, str, tuple[str, ...]]]  # (key, operator, values)
    fields: list[tuple[str, str, tuple[str, ...]]]


NodeSelector = list[NodeSelectorTerm]  # terms are ORed; an empty list matches nothing


@dataclass(slots=True)
class Device:
    """One device of a slice, with its attributes typed as in the API."""

    name: str
    attributes: dict[str, tuple[str, Any]]  # qualified name → (type, value)
    capacity: dict[str, Fraction]
    taints: list[dict[str, Any]]
    consumes_counters: list[tuple[str, dict[str, Fraction]]]
    node_name: str = ""
    all_nodes: bool = False
    node_selector: NodeSelector | None = None
    binding_conditions: bool = False
    allow_multiple_allocations: bool = False
    policies: dict[str, RequestPolicy] = field(default_factory=dict)  # capacity[].requestPolicy
    _cel: tuple[dict[str, dict[str, Any]], dict[str, dict[str, int]]] | None = None
    _signature: str | None = None

    def signature(self, driver: str) -> str:
        """What a selector can see of the device, as a key: equal keys, equal outcomes."""
        if self._signature is None:
            self._signature = driver + "\0" + repr((sorted(self.attributes.items()),
                                                    sorted(self.capacity.items()),
                                                    self.allow_multiple_allocations))
        return self._signature

    def cel_inputs(self, driver: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, int]]]:
        """Attributes and capacity by domain, unqualified names under the driver's own.

        Upstream's `cel.Device` does the same split (dynamic-resource-allocation
        `cel/compile.go`, `DeviceMatches`): `device.attributes["<driver>"].model`
        finds an attribute named `model`.
        """
        if self._cel is None:
            attributes: dict[str, dict[str, Any]] = {}
            for qualified, (kind, value) in self.attributes.items():
                domain, ident = _split_qualified(qualified, driver)
                attributes.setdefault(domain, {})[ident] = (
                    version_value(str(value)) if kind == "version" else value)
            capacity: dict[str, dict[str, int]] = {}
            for qualified, amount in self.capacity.items():
                domain, ident = _split_qualified(qualified, driver)
                capacity.setdefault(domain, {})[ident] = milli_value(amount)
            self._cel = (attributes, capacity)
        return self._cel


def _split_qualified(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.rpartition("/")
    return (domain, ident) if sep else (driver, name)


@dataclass(slots=True)
class Slice:
    """A ResourceSlice: one slice of one pool, published by a driver."""

    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str = ""
    all_nodes: bool = False
    node_selector: NodeSelector | None = None
    per_device_node_selection: bool = False
    devices: list[Device] = field(default_factory=list)
    shared_counters: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    origin: Origin = NOWHERE


@dataclass(slots=True)
class DeviceClass:
    name: str
    selectors: list[str]
    origin: Origin = NOWHERE


@dataclass(slots=True)
class Node:
    name: str
    labels: dict[str, str]
    origin: Origin = NOWHERE


@dataclass(slots=True)
class PodClaim:
    """One `spec.resourceClaims[]` entry of a Pod."""

    name: str
    claim_name: str | None
    template_name: str | None


@dataclass(slots=True)
class Pod:
    namespace: str
    name: str
    claims: list[PodClaim]
    origin: Origin = NOWHERE


# --- reading ---------------------------------------------------------------------------

def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def meta_name(obj: Mapping[str, Any]) -> str:
    return _str(_map(obj.get("metadata")).get("name"))


def read_node(obj: Mapping[str, Any], origin: Origin) -> tuple[Node | None, list[Problem]]:
    name = meta_name(obj)
    if not name:
        return None, [Problem(FieldPath(("metadata", "name")), "Node without a name")]
    labels = {k: v for k, v in _map(_map(obj.get("metadata")).get("labels")).items()
              if isinstance(v, str)}
    return Node(name, labels, origin), []


def read_device_class(obj: Mapping[str, Any], origin: Origin) -> tuple[DeviceClass | None, list[Problem]]:
    name = meta_name(obj)
    if not name:
        return None, [Problem(FieldPath(("metadata", "name")), "DeviceClass without a name")]
    problems: list[Problem] = []
    selectors: list[str] = []
    for i, selector in enumerate(_list(_map(obj.get("spec")).get("selectors"))):
        expression = _map(_map(selector).get("cel")).get("expression")
        if not isinstance(expression, str) or not expression:
            problems.append(Problem(FieldPath(("spec", "selectors", i)), "selector without a CEL expression"))
            continue
        selectors.append(expression)
    return DeviceClass(name, selectors, origin), problems


def read_pod(obj: Mapping[str, Any], origin: Origin, default_namespace: str) -> tuple[Pod | None, list[Problem]]:
    name = meta_name(obj)
    if not name:
        return None, [Problem(FieldPath(("metadata", "name")), "Pod without a name")]
    namespace = _str(_map(obj.get("metadata")).get("namespace")) or default_namespace
    claims: list[PodClaim] = []
    problems: list[Problem] = []
    for i, entry in enumerate(_list(_map(obj.get("spec")).get("resourceClaims"))):
        entry = _map(entry)
        claim = _str(entry.get("resourceClaimName")) or None
        template = _str(entry.get("resourceClaimTemplateName")) or None
        if not _str(entry.get("name")) or (claim is None) == (template is None):
            problems.append(Problem(FieldPath(("spec", "resourceClaims", i)),
                                    "needs a name and exactly one of resourceClaimName, "
                                    "resourceClaimTemplateName"))
            continue
        claims.append(PodClaim(_str(entry.get("name")), claim, template))
    return Pod(namespace, name, claims, origin), problems


def read_node_selector(value: Any, path: FieldPath, problems: list[Problem]) -> NodeSelector:
    terms: NodeSelector = []
    for i, term in enumerate(_list(_map(value).get("nodeSelectorTerms"))):
        term = _map(term)
        parts: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {}
        for key in ("matchExpressions", "matchFields"):
            parts[key] = []
            for j, requirement in enumerate(_list(term.get(key))):
                requirement = _map(requirement)
                operator = _str(requirement.get("operator"))
                if operator not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
                    problems.append(Problem(FieldPath((*path, "nodeSelectorTerms", i, key, j, "operator")),
                                            f"unsupported node selector operator {operator!r}"))
                    continue
                values = tuple(v for v in _list(requirement.get("values")) if isinstance(v, str))
                parts[key].append((_str(requirement.get("key")), operator, values))
        terms.append(NodeSelectorTerm(parts["matchExpressions"], parts["matchFields"]))
    return terms


DeviceTable = dict[tuple[str, bytes], "Device"]
"""Devices already read, by driver and their JSON text: one object for equal devices."""


def read_slice(obj: Mapping[str, Any], origin: Origin,
               known: DeviceTable | None = None) -> tuple[Slice | None, list[Problem]]:
    """A ResourceSlice, or None with the reason when the apiserver would not store it.

    With `known`, a device written exactly as one read before (same driver) is that
    object again: the devices of many slices usually differ only by slice (equal names
    and attributes on every node of a kind), and a `Device` depends on its own text and
    driver alone (its lazily made signature and CEL inputs too), never on its slice.
    """
    plain = _plain_slice(obj, origin, known)
    if plain is not None:
        return plain, []
    name = meta_name(obj)
    spec = _map(obj.get("spec"))
    pool = _map(spec.get("pool"))
    problems: list[Problem] = []
    driver, pool_name = _str(spec.get("driver")), _str(pool.get("name"))
    generation, count = _int(pool.get("generation")), _int(pool.get("resourceSliceCount"))
    chosen = [key for key in _NODE_SELECTION if spec.get(key) not in (None, "", False)]
    well_formed = (name and driver and pool_name and generation is not None and generation >= 0
                   and count is not None and count > 0)
    if not well_formed or len(chosen) > 1 or (not chosen and not spec.get("sharedCounters")):
        return None, _slice_problems(name, driver, pool_name, generation, count, chosen, spec)
    assert generation is not None and count is not None  # for mypy: checked just above
    result = Slice(name, driver, pool_name, generation, count,
                   node_name=_str(spec.get("nodeName")), all_nodes=spec.get("allNodes") is True,
                   per_device_node_selection=spec.get("perDeviceNodeSelection") is True,
                   origin=origin)
    if "nodeSelector" in chosen:
        result.node_selector = read_node_selector(spec.get("nodeSelector"), FieldPath(("spec", "nodeSelector")), problems)
    for i, counter_set in enumerate(_list(spec.get("sharedCounters"))):
        counter_set = _map(counter_set)
        result.shared_counters[_str(counter_set.get("name"))] = _counters(
            counter_set.get("counters"), FieldPath(("spec", "sharedCounters", i, "counters")), problems)
    devices = _list(spec.get("devices"))
    limit = _device_limit(devices)
    if len(devices) > limit:
        return None, [Problem(FieldPath(("spec", "devices")),
                              f"Too many: {len(devices)}: must have at most {limit} items")]
    seen: set[str] = set()
    for i, raw in enumerate(devices):
        device = _known_device(raw, driver, known, i, problems)
        if device is None:
            continue
        if device.name in seen:
            return None, [Problem(FieldPath(("spec", "devices", i, "name")),
                                  f"Duplicate value: {device.name!r}")]
        seen.add(device.name)
        result.devices.append(device)
    return result, problems


_PLAIN_SPEC = frozenset({"driver", "nodeName", "pool", "devices"})


def _plain_slice(obj: Mapping[str, Any], origin: Origin, known: DeviceTable | None) -> Slice | None:
    """`read_slice` for the usual slice, or None for the general path to read and judge.

    The usual slice (every slice of most clusters, 400,000 at 50,000 nodes): plain
    values of the expected types, `nodeName` and no other node selection, no shared
    counters, at most 64 devices (devices read before are taken from `known`), no
    problem, names distinct. The general path gives the same `Slice` for it, with more
    checks on the way.
    """
    meta, spec = obj.get("metadata"), obj.get("spec")
    if known is None or type(meta) is not dict or type(spec) is not dict or not (
            spec.keys() <= _PLAIN_SPEC):
        return None
    name, driver, node_name = meta.get("name"), spec.get("driver"), spec.get("nodeName")
    pool, devices = spec.get("pool"), spec.get("devices")
    if type(pool) is not dict or type(devices) is not list or len(devices) > MAX_DEVICES_WITH_TAINTS_OR_COUNTERS:
        return None
    pool_name, generation, count = pool.get("name"), pool.get("generation"), pool.get("resourceSliceCount")
    if not (type(name) is str and name and type(driver) is str and driver and type(node_name) is str
            and node_name and type(pool_name) is str and pool_name and type(generation) is int
            and generation >= 0 and type(count) is int and count > 0):
        return None
    found: list[Device] = []
    problems: list[Problem] = []
    for index, raw in enumerate(devices):
        try:
            key = (driver, orjson.dumps(raw))
        except TypeError:  # not JSON: the general path reads it
            return None
        device = known.get(key)
        if device is None:
            device = _read_device(_map(raw), FieldPath(("spec", "devices", index)), problems)
            if device is None or problems:  # the general path reports them
                return None
            known[key] = device
        found.append(device)
    if len(found) > 1 and len({d.name for d in found}) != len(found):
        return None
    return Slice(name, driver, pool_name, generation, count, node_name=node_name,
                 devices=found, origin=origin)


def _known_device(raw: Any, driver: str, known: DeviceTable | None, index: int,
                  problems: list[Problem]) -> Device | None:
    """`_read_device`, or the device read before from the same text (see `read_slice`)."""
    if known is None:
        return _read_device(_map(raw), FieldPath(("spec", "devices", index)), problems)
    try:
        key = (driver, orjson.dumps(raw))
    except TypeError:  # not JSON (a YAML timestamp, a huge integer): read it every time
        return _read_device(_map(raw), FieldPath(("spec", "devices", index)), problems)
    device = known.get(key)
    if device is None:
        before = len(problems)
        device = _read_device(_map(raw), FieldPath(("spec", "devices", index)), problems)
        if device is not None and len(problems) == before:  # problems name their index
            known[key] = device
    return device


_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")


def _slice_problems(name: str, driver: str, pool_name: str, generation: int | None,
                    count: int | None, chosen: list[str], spec: Mapping[str, Any]) -> list[Problem]:
    """Why the apiserver would not store the slice (read_slice checks cheaply first)."""
    fatal = [Problem(FieldPath(p), m) for p, ok, m in (
        (("metadata", "name"), bool(name), "ResourceSlice without a name"),
        (("spec", "driver"), bool(driver), "Required value: spec.driver"),
        (("spec", "pool", "name"), bool(pool_name), "Required value: spec.pool.name"),
        (("spec", "pool", "generation"), generation is not None and generation >= 0,
         "spec.pool.generation must be an integer ≥ 0"),
        (("spec", "pool", "resourceSliceCount"), (count or 0) > 0,
         "spec.pool.resourceSliceCount must be an integer > 0"),
    ) if not ok]
    if len(chosen) > 1 or (not chosen and not spec.get("sharedCounters")):
        fatal.append(Problem(FieldPath(("spec",)), "exactly one of nodeName, nodeSelector, allNodes, "
                                         "perDeviceNodeSelection is required"))
    return fatal


def _device_limit(devices: list[Any]) -> int:
    if len(devices) <= MAX_DEVICES_WITH_TAINTS_OR_COUNTERS:
        return MAX_DEVICES  # within both limits: which one applies does not matter
    special = any(_map(d).get("taints") or _map(d).get("consumesCounters") for d in devices)
    return MAX_DEVICES_WITH_TAINTS_OR_COUNTERS if special else MAX_DEVICES


def _counters(value: Any, path: FieldPath, problems: list[Problem]) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for name, counter in _map(value).items():
        amount = parse_quantity(_map(counter).get("value"))
        if amount is None:
            problems.append(Problem(FieldPath((*path, name, "value")), "not a quantity"))
            continue
        out[name] = amount
    return out


_ATTRIBUTE_TYPES = ("string", "int", "bool", "version")


def _read_device(raw: Mapping[str, Any], path: FieldPath, problems: list[Problem]) -> Device | None:
    name = _str(raw.get("name"))
    if not name:
        problems.append(Problem(FieldPath((*path, "name")), "device without a name, left out"))
        return None
    attributes: dict[str, tuple[str, Any]] = {}
    for key, attribute in _map(raw.get("attributes")).items():
        if type(attribute) is dict and len(attribute) == 1:  # the usual shape: one typed value
            ((kind, value),) = attribute.items()
            if kind in _ATTRIBUTE_TYPES and value is not None:
                attributes[key] = (kind, value)
                continue
        typed = [(t, _map(attribute).get(t)) for t in _ATTRIBUTE_TYPES
                 if _map(attribute).get(t) is not None]
        if len(typed) != 1:
            problems.append(Problem(FieldPath((*path, "attributes", key)),
                                    "an attribute needs exactly one of string, int, bool, version"))
            continue
        attributes[key] = typed[0]
    capacity: dict[str, Fraction] = {}
    policies: dict[str, RequestPolicy] = {}
    for key, entry in _map(raw.get("capacity")).items():
        amount = parse_quantity(_map(entry).get("value"))
        if amount is None:
            problems.append(Problem(FieldPath((*path, "capacity", key, "value")), "not a quantity"))
            continue
        capacity[key] = amount
        if _map(entry).get("requestPolicy") is not None:
            policies[key] = _request_policy(_map(_map(entry).get("requestPolicy")),
                                            FieldPath((*path, "capacity", key, "requestPolicy")), problems)
    raw_consumes, raw_taints = raw.get("consumesCounters"), raw.get("taints")
    consumes = [(_str(_map(c).get("counterSet")),
                 _counters(_map(c).get("counters"), FieldPath((*path, "consumesCounters", j, "counters")), problems))
                for j, c in enumerate(_list(raw_consumes))] if raw_consumes else []
    device = Device(name, attributes, capacity,
                    [dict(_map(t)) for t in _list(raw_taints)] if raw_taints else [], consumes,
                    node_name=_str(raw.get("nodeName")), all_nodes=raw.get("allNodes") is True,
                    binding_conditions=bool(_list(raw.get("bindingConditions"))),
                    allow_multiple_allocations=raw.get("allowMultipleAllocations") is True,
                    policies=policies)
    if raw.get("nodeSelector") is not None:
        device.node_selector = read_node_selector(raw.get("nodeSelector"), FieldPath((*path, "nodeSelector")), problems)
    return device


def _request_policy(raw: Mapping[str, Any], path: FieldPath, problems: list[Problem]) -> RequestPolicy:
    """A capacity's requestPolicy (KEP-5075); an unreadable quantity is a problem, left out."""
    def amount(value: Any, *where: str | int) -> Fraction | None:
        if value is None:
            return None
        found = parse_quantity(value)
        if found is None:
            problems.append(Problem(FieldPath((*path, *where)), "not a quantity"))
        return found

    valid_range = _map(raw.get("validRange"))
    values = [amount(v, "validValues", i) for i, v in enumerate(_list(raw.get("validValues")))]
    return RequestPolicy(default=amount(raw.get("default"), "default"),
                         valid_values=tuple(v for v in values if v is not None),
                         has_range=raw.get("validRange") is not None,
                         minimum=amount(valid_range.get("min"), "validRange", "min"),
                         maximum=amount(valid_range.get("max"), "validRange", "max"),
                         step=amount(valid_range.get("step"), "validRange", "step"))
