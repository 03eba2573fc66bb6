"""Everything `explain` reads, gathered from manifests: the cluster and the Pods to place.

Documents are split, parsed and located with lint's readers (`read.sources`), so a
broken object is a `Finding` with its file and line, never an exception. Claims and
templates of any served version are read into the hub shape by the create pipeline
(`validate.prepare`), the same one lint uses; a claim the apiserver would refuse is a
finding and is left out.
"""

from __future__ import annotations

import codecs
import gc
import mmap
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, BinaryIO

from draguard.schema.cluster.objects import (
    NOWHERE,
    DeviceClass,
    DeviceTable,
    Node,
    NodeSelector,
    Origin,
    Pod,
    Problem,
    Slice,
    read_device_class,
    read_node,
    read_node_selector,
    read_pod,
    read_slice,
)
from draguard.schema.cluster.quantity import parse_quantity
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import Release
from draguard.schema.model.shapes import identify
from draguard.schema.read import jsondecode
from draguard.schema.validate import prepare, validate_object

if TYPE_CHECKING:
    from draguard.schema.read.sources import Chunk, Parsed, Unreadable

DeviceKey = tuple[str, str, str]  # driver, pool, device


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    """One `status.allocation.devices.results[]` entry of an allocated claim."""

    key: DeviceKey
    admin_access: bool
    request: str  # `req` or `req/sub`: the scheduler's Score reads which subrequest
    share_id: str | None = None  # a share of a device that allows multiple allocations
    consumed: tuple[tuple[str, Fraction], ...] | None = None  # consumedCapacity


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem with one input document, placed in its file (1-based line and column)."""

    file: str
    line: int
    column: int
    message: str

    def render(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


@dataclass(slots=True)
class Claim:
    """A ResourceClaim (or a template's claim) in the hub shape, with its allocation."""

    namespace: str
    name: str
    devices: dict[str, Any]  # spec.devices, hub shape, defaulted
    allocated: list[AllocatedDevice] | None  # status.allocation's results; None: not allocated
    node_selector: NodeSelector | None = None  # status.allocation.nodeSelector
    origin: Origin = NOWHERE
    parsed: Any = None  # the allocator's reading of `devices`, made once (allocator.py)


@dataclass(slots=True)
class Inventory:
    classes: dict[str, DeviceClass] = field(default_factory=dict)
    slices: list[Slice] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    claims: dict[tuple[str, str], Claim] = field(default_factory=dict)
    templates: dict[tuple[str, str], Claim] = field(default_factory=dict)
    pods: list[Pod] = field(default_factory=list)
    quotas: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)
    known_devices: DeviceTable = field(default_factory=dict)  # read_slice shares equal devices

    def allocated_devices(self, *, consumable_capacity: bool = False) -> set[DeviceKey]:
        """Devices in use by allocated claims; admin-access results do not count.

        The scheduler's allocated state (kubernetes pkg/scheduler/framework/plugins/
        dynamicresources/allocateddevices.go, `foreachAllocatedDevice`): results with
        adminAccess are skipped; with DRAConsumableCapacity on, a result with a shareID
        is a share of a device, counted in `shared_capacity` instead.
        """
        return {result.key for claim in self.claims.values() for result in claim.allocated or ()
                if not result.admin_access
                and not (consumable_capacity and result.share_id is not None)}

    def shared_devices(self) -> set[DeviceKey]:
        """Upstream `AllocatedSharedDeviceIDs`, by device: devices with an allocated share.

        Such a device consumes its counters once, however many shares it has
        (`IsDeviceAllocated` in structured/internal/allocatedstate.go).
        """
        return {result.key for claim in self.claims.values() for result in claim.allocated or ()
                if not result.admin_access and result.share_id is not None}

    def shared_capacity(self) -> dict[DeviceKey, dict[str, Fraction]]:
        """Upstream `AggregatedCapacity`: the consumedCapacity of every allocated share."""
        out: dict[DeviceKey, dict[str, Fraction]] = {}
        for claim in self.claims.values():
            for result in claim.allocated or ():
                if result.admin_access or result.share_id is None or result.consumed is None:
                    continue
                into = out.setdefault(result.key, {})
                for name, amount in result.consumed:
                    into[name] = into.get(name, Fraction(0)) + amount
        return out


def read_inventory(paths: Iterable[str], *, release: Release, namespace: str = "default",
                   stdin: BinaryIO | None = None, keep: list[object] | None = None) -> Inventory:
    """Read every input; unreadable files go to `unreadable`, broken objects to `findings`.

    Paths as lint takes them: files, folders (their manifests, recursively) or `-`.
    `keep` receives each decoded document instead of letting it be freed once read: for
    a command that exits without freeing (freeing a 50,000-node List object by object
    is a noticeable share of the command: figures in bench/RESULTS.md, issue 19). A List read item by item
    (`_read_items`) is not kept: each batch is freed as read, its memory serving the next.
    """
    inventory = Inventory()
    with collection_paused():
        for path in _expanded(paths):
            if _read_json(inventory, path, release=release, namespace=namespace, keep=keep):
                continue
            from draguard.schema.read import sources  # see `_expanded`

            source = sources.read_source(path, stdin)
            if isinstance(source, sources.Unreadable):
                inventory.unreadable.append(source)
                continue
            for chunk in sources.split_documents(source):
                add_chunk(inventory, chunk, release=release, namespace=namespace, keep=keep)
        check_references(inventory)
    return inventory


def _expanded(paths: Iterable[str]) -> Iterator[str]:
    """`sources.expand_paths`, without importing lint's readers for a file named as such.

    Importing their YAML readers compiles the block grammar at every start, which a run on
    `kubectl get -o json` files never uses (figures in bench/RESULTS.md, issue 19); they are
    imported when a folder, stdin or a YAML document comes.
    """
    for path in paths:
        if path != "-" and os.path.isfile(path):
            yield path
            continue
        from draguard.schema.read import sources

        yield from sources.expand_paths([path])


_JSON_SPACE = re.compile(rb"[ \t\n\r]*+")


def _read_json(inventory: Inventory, path: str, *, release: Release, namespace: str,
               keep: list[object] | None) -> bool:
    """A `.json` file that is one value (what `kubectl get -o json` writes), decoded once;
    False when the general path must read it.

    The general path makes the file's text (decoded, line breaks normalised), finds
    where each value ends by decoding it (`split_documents`), then decodes it again
    (`parse`) with a hook per object that notices repeated keys, which explain does not
    report (the last one counts, as kubectl sends it). Here the bytes are decoded once
    (`jsondecode.loads_utf8`: orjson, or `json` where the two differ), without the
    text; a List item by item where it can be (`_read_items`). False for a file that
    cannot be read, is not UTF-8, holds several values or does not decode: the general
    path reads it again and reports or places the problem.
    """
    if not path.endswith(".json"):
        return False
    try:
        with open(path, "rb") as handle:
            data = _file_bytes(handle)
    except OSError:
        return False
    skip = len(codecs.BOM_UTF8) if data[:len(codecs.BOM_UTF8)] == codecs.BOM_UTF8 else 0
    space = _JSON_SPACE.match(data, skip)
    before = bytes(data[skip: space.end() if space is not None else skip]).decode("ascii")
    before = before.replace("\r\n", "\n").replace("\r", "\n")  # as read_source counts lines
    start = _Start(path, before.count("\n") + 1, len(before) - before.rfind("\n"))
    if _read_items(inventory, data, skip, start, release=release, namespace=namespace):
        return True
    try:
        value = jsondecode.loads_utf8(memoryview(data)[skip:])
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return False
    _add_value(inventory, value, start, release=release, namespace=namespace)
    if keep is not None:
        keep.append(value)
    return True


def _read_items(inventory: Inventory, data: mmap.mmap | bytes, skip: int, start: _Start, *,
                release: Release, namespace: str) -> bool:
    """A List decoded and read one item at a time (`jsondecode.list_items`), each item
    freed once read; False, with the inventory as it was, where an item does not decode
    alone (the whole text is then decoded as before, and fails or not as it does)."""
    listed = jsondecode.list_items(data, skip)
    if listed is None:
        return False
    members, items = listed
    kind = members.get("kind", "")
    if not isinstance(kind, str) or not kind.endswith("List"):
        return False  # one object, or a kind `_add_value` judges
    undo = _undo_point(inventory)
    for item in items:
        if item is None:
            undo()
            return False
        _add_object(inventory, item, start, release, namespace)
    return True


def _undo_point(inventory: Inventory) -> Callable[[], None]:
    """What puts the inventory back as it is now (reading only appends and sets)."""
    lengths = [(kept, len(kept)) for kept in (inventory.slices, inventory.nodes, inventory.pods,
                                              inventory.quotas, inventory.findings)]
    named = (dict(inventory.classes), dict(inventory.claims), dict(inventory.templates))

    def undo() -> None:
        for kept, length in lengths:
            del kept[length:]
        inventory.classes, inventory.claims, inventory.templates = named
        # `known_devices` keeps its new devices: each is read from its own text alone.

    return undo


def _file_bytes(handle: BinaryIO) -> mmap.mmap | bytes:
    """The file's bytes mapped, not read: decoding reads them from the page cache where
    they are, without a copy as large as the file made first (40 MB of fresh pages for
    a 5,000-node List); unmapped when the last view of them goes, as reading returns."""
    try:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # empty, or a file that cannot be mapped: read it
        return handle.read()


@contextmanager
def collection_paused() -> Iterator[None]:
    """Automatic garbage collection off while the model is built.

    Reading makes a few small objects per device and keeps nearly all of them: the
    collections their allocations trigger only rescan the growing model and the
    parsed input (three fifths of the reading at 5,000 nodes, bench/RESULTS.md).
    Nothing made here is garbage in a cycle worth freeing early. At the end the
    objects alive are moved out of the collector's sight (`gc.freeze`): the model
    lives as long as the command, and the first collection after reading would
    otherwise scan all of it once more. Objects without cycles are still freed as
    soon as they are dropped; what an earlier reading froze is given back to the
    collector first, so a process that reads many times (tests, the benchmark)
    keeps at most one reading's cyclic garbage out of reach.
    """
    enabled = gc.isenabled()
    gc.disable()
    gc.unfreeze()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def add_chunk(inventory: Inventory, chunk: Chunk, *, release: Release, namespace: str,
              keep: list[object] | None = None) -> None:
    from draguard.schema.read import sources  # see `_expanded`

    parsed = sources.parse(chunk)
    if keep is not None:
        keep.append(parsed)
    if isinstance(parsed, sources.SyntaxProblem):
        inventory.findings.append(Finding(chunk.file, parsed.line, parsed.column, parsed.detail))
        return
    value = parsed.value
    items = _list_items(value)
    if isinstance(items, list):
        for i, item in enumerate(items):
            _add_object(inventory, item, _Place(chunk, parsed, ("items", i)), release, namespace)
    else:
        _add_object(inventory, value, _Place(chunk, parsed, ()), release, namespace)


def _list_items(value: Any) -> Any:
    """The `items` of a `kind: …List` document, else None (a non-string kind is no List:
    the object is then read, and reported, as itself)."""
    if not isinstance(value, dict):
        return None
    kind = value.get("kind")
    return value.get("items") if isinstance(kind, str) and kind.endswith("List") else None


def _add_value(inventory: Inventory, value: Any, start: _Start, *, release: Release,
               namespace: str) -> None:
    """A JSON document decoded without positions: every object is placed at its start."""
    items = _list_items(value)
    for item in items if isinstance(items, list) else [value]:
        _add_object(inventory, item, start, release, namespace)


def add_objects(inventory: Inventory, objects: Iterable[Mapping[str, Any]], *, source: str,
                release: Release, namespace: str) -> None:
    """Objects from elsewhere (a live cluster): findings name the object, not a line."""
    with collection_paused():
        for obj in objects:
            _add_object(inventory, obj, _Named(source, obj), release, namespace)


class _Place:
    def __init__(self, chunk: Chunk, parsed: Parsed, prefix: tuple[str | int, ...]) -> None:
        self.chunk, self.parsed, self.prefix = chunk, parsed, prefix

    def origin(self) -> Origin:
        return Origin(self.chunk.file, find=lambda: self.finding(FieldPath()).line)

    def finding(self, path: FieldPath, message: str = "") -> Finding:
        from draguard.schema.read import sources  # see `_expanded`

        where = sources.locate(self.chunk, self.parsed.positions, [FieldPath((*self.prefix, *path))])
        return Finding(self.chunk.file, where.line, where.column, message)


class _Start:
    """The start of a JSON document read without positions: where all its objects are placed."""

    __slots__ = ("column", "file", "line", "start")

    def __init__(self, file: str, line: int, column: int) -> None:
        self.file, self.line, self.column = file, line, column
        self.start = Origin(file, line)

    def origin(self) -> Origin:
        return self.start

    def finding(self, path: FieldPath, message: str = "") -> Finding:
        # No positions to place it by: the field goes into the message, as for live objects.
        where = str(path)
        return Finding(self.file, self.line, self.column, f"{where}: {message}" if where else message)


class _Named:
    def __init__(self, source: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        self.file = f"{source}/{obj.get('kind')}/{meta.get('name') if meta else ''}"

    def origin(self) -> Origin:
        return Origin(self.file, 0)

    def finding(self, path: FieldPath, message: str = "") -> Finding:
        where = ".".join(str(p) for p in path)
        return Finding(self.file, 0, 0, f"{where}: {message}" if where else message)


_Placer = _Place | _Start | _Named


def _add_object(inventory: Inventory, obj: Any, place: _Placer, release: Release,
                namespace: str) -> None:
    if not isinstance(obj, dict):
        return
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    origin = place.origin()
    problems: list[Problem]
    if kind == "ResourceSlice" and api_version == "resource.k8s.io/v1":
        found_slice, problems = read_slice(obj, origin, inventory.known_devices)
        if found_slice is not None:
            inventory.slices.append(found_slice)
    elif kind == "DeviceClass" and api_version == "resource.k8s.io/v1":
        found_class, problems = read_device_class(obj, origin)
        if found_class is not None:
            inventory.classes[found_class.name] = found_class
    elif kind == "Node" and api_version == "v1":
        found_node, problems = read_node(obj, origin)
        if found_node is not None:
            inventory.nodes.append(found_node)
    elif kind == "Pod" and api_version == "v1":
        found_pod, problems = read_pod(obj, origin, namespace)
        if found_pod is not None:
            inventory.pods.append(found_pod)
    elif kind == "ResourceQuota" and api_version == "v1":
        meta = dict(obj.get("metadata") or {}) if isinstance(obj.get("metadata"), dict) else {}
        meta.setdefault("namespace", namespace)
        inventory.quotas.append({**obj, "metadata": meta})
        problems = []
    elif identify(obj) is not None:
        problems = _add_claim(inventory, obj, origin, release, namespace)
    else:
        return
    if problems:
        inventory.findings.extend(place.finding(p.path, p.message) for p in problems)


def _add_claim(inventory: Inventory, obj: dict[str, Any], origin: Origin, release: Release,
               namespace: str) -> list[Problem]:
    options = Options(release=release, default_namespace=namespace)
    verdict = validate_object(obj, options=options)
    if verdict.errors:
        return [Problem(e.path, f"refused by the apiserver: {e}")
                for e in verdict.errors[:3]]
    doc_type = identify(obj)
    assert doc_type is not None  # checked by the caller
    prepared = prepare(obj, doc_type, options)
    meta = prepared.document.get("metadata", {})
    claim = Claim(str(meta.get("namespace") or namespace), str(meta.get("name", "")),
                  dict(prepared.claim_spec.get("devices") or {}), None, origin=origin)
    problems: list[Problem] = []
    if doc_type.kind == "ResourceClaimTemplate":
        inventory.templates[(claim.namespace, claim.name)] = claim
        return problems
    allocation = _allocation(obj)
    if allocation is not None:
        claim.allocated = []
        for result in allocation.get("devices", {}).get("results") or []:
            if isinstance(result, dict):
                key = (str(result.get("driver", "")), str(result.get("pool", "")),
                       str(result.get("device", "")))
                share = result.get("shareID")
                consumed = result.get("consumedCapacity")
                amounts = None
                if isinstance(consumed, dict):
                    parsed = ((str(k), parse_quantity(v)) for k, v in consumed.items())
                    amounts = tuple(sorted((k, v) for k, v in parsed if v is not None))
                claim.allocated.append(AllocatedDevice(
                    key, result.get("adminAccess") is True, str(result.get("request", "")),
                    str(share) if share else None, amounts))
        if allocation.get("nodeSelector") is not None:
            claim.node_selector = read_node_selector(
                allocation["nodeSelector"], FieldPath(("status", "allocation", "nodeSelector")), problems)
    inventory.claims[(claim.namespace, claim.name)] = claim
    return problems


def _allocation(obj: dict[str, Any]) -> dict[str, Any] | None:
    status = obj.get("status")
    allocation = status.get("allocation") if isinstance(status, dict) else None
    return allocation if isinstance(allocation, dict) else None


def check_references(inventory: Inventory) -> None:
    """Findings for what the allocator would silently skip: unknown nodes, split pools."""
    known = {node.name for node in inventory.nodes}
    # A pool's first generation, and the generations of pools whose slices disagree:
    # a set per pool only where needed (400,000 slices at 50,000 nodes).
    first: dict[tuple[str, str], int] = {}
    split: dict[tuple[str, str], set[int]] = {}
    for found in inventory.slices:
        key = (found.driver, found.pool)
        generation = first.setdefault(key, found.generation)
        if generation != found.generation:
            split.setdefault(key, {generation}).add(found.generation)
        if known and found.node_name and found.node_name not in known:
            inventory.findings.append(Finding(
                found.origin.file, found.origin.line, 1,
                f"ResourceSlice {found.name}: node {found.node_name} is not among the Nodes read; "
                "its devices are offered to no node"))
    for (driver, pool), seen in sorted(split.items()):
        at = next(s for s in inventory.slices if (s.driver, s.pool) == (driver, pool))
        inventory.findings.append(Finding(
            at.origin.file, at.origin.line, 1,
            f"pool {driver}/{pool}: slices disagree on generation ({', '.join(map(str, sorted(seen)))}); "
            f"only generation {max(seen)} counts, the pool is complete only when all "
            "its slices have it"))


def pod_claim_names(pod: Pod) -> Iterator[tuple[str, str | None]]:
    """(claim name, template name) per Pod entry; templates give `<pod>-<entry>` claims."""
    for entry in pod.claims:
        if entry.claim_name is not None:
            yield entry.claim_name, None
        else:
            yield f"{pod.name}-{entry.name}", entry.template_name
