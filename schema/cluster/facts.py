"""What the cluster-aware checks know of the cluster, kept small and updated object by object.

Issue 20: the webhook keeps a list+watch of `WATCHED` and feeds each event to a
`ClusterFacts`; lint builds one from files or a one-shot list (`facts_from_objects`).
Objects are read with the explain readers (`objects.read_device_class`, `read_slice`),
so a slice the apiserver would refuse is a problem here as it is there.

Kept, and nothing else:

* DeviceClasses: name → selectors;
* per driver, the attribute names (with their value types) and capacity names its
  devices publish, by domain (the part before `/`; unqualified names are under the
  driver's own domain, as upstream `cel/compile.go` splits them);
* device kinds: devices with equal `Device.signature` (what a selector can see) are one
  `DeviceKind`, evaluated once against each class; a node's devices are a *profile*
  (kind → count), and the cluster is a histogram of profiles (profile → nodes), so
  50,000 equal nodes cost one profile. Devices not tied to one node (`allNodes`, a node
  selector) are a profile offered to every node;
* Namespaces: name → labels; ResourceQuotas: per namespace, their hard and used amounts.

Bounded: past `MAX_KINDS` distinct device kinds (every device unique, e.g. a UUID
attribute), new kinds keep only their names and classes; counts per class stay right,
request selectors are not evaluated on those devices and the checks say nothing there.
Memory per 1,000 nodes: bench/cluster_facts.py, figures in bench/RESULTS.md.

Concurrency (CONTRACT20): writers (`replace`, `apply`) are serialised by a lock and
work on writer-only state; each ends by publishing a new immutable `_Snapshot`
(per-kind maps copied on write, the unchanged ones shared). Readers take the current
snapshot with one attribute read and never lock, so a review sees an update wholly or
not at all and never waits for one.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from types import MappingProxyType
from typing import Any, TypeVar

from draguard.schema.cluster import selectors
from draguard.schema.cluster.objects import (
    NOWHERE,
    DeviceClass,
    Origin,
    Problem,
    Slice,
    meta_name,
    read_device_class,
    read_slice,
)
from draguard.schema.model.paths import FieldPath


@dataclass(frozen=True, slots=True)
class Watched:
    """One kind the view keeps."""

    kind: str
    group: str
    version: str
    plural: str


WATCHED: tuple[Watched, ...] = (
    Watched("DeviceClass", "resource.k8s.io", "v1", "deviceclasses"),
    Watched("ResourceSlice", "resource.k8s.io", "v1", "resourceslices"),
    Watched("Namespace", "", "v1", "namespaces"),
    Watched("ResourceQuota", "", "v1", "resourcequotas"),
)
KINDS = frozenset(w.kind for w in WATCHED)
_T = TypeVar("_T")
_WHOLE = FieldPath()  # a problem with the whole object (or list), not one field
ANYWHERE = ""
# Device kinds kept with their attribute values. Past this many, a new kind keeps only its
# names and classes (a "coarse" kind): memory stays bounded when every device carries its
# own attribute (a serial, a UUID), at the price of not evaluating request selectors on
# those devices (checks then say nothing rather than guess).
MAX_KINDS = 20_000
_COARSE = "(devices past MAX_KINDS)"  # the name its problem is filed under  # the node key of devices offered to every node (allNodes, node selectors)


@dataclass(frozen=True, slots=True)
class FactProblem:
    """An object the facts could not read (left out), as a value."""

    kind: str
    name: str
    path: FieldPath
    message: str

    def render(self) -> str:
        where = ".".join(str(p) for p in self.path)
        subject = f"{self.kind} {self.name}" if self.name else self.kind
        return f"{subject}: {where}: {self.message}" if where else f"{subject}: {self.message}"


@dataclass(eq=False, slots=True)
class DeviceKind:
    """Devices a selector cannot tell apart (equal `Device.signature`), with their classes.

    Compared by identity: kinds are interned per signature, and a class change makes
    new kinds, so an old snapshot keeps the kinds it was built with.
    """

    driver: str
    attributes: dict[str, dict[str, Any]]  # CEL inputs (objects.Device.cel_inputs)
    capacity: dict[str, dict[str, int]]
    allow_multiple: bool
    classes: frozenset[str] = frozenset()
    names: tuple[tuple[str, str, str, str], ...] = ()  # (attribute|capacity, domain, name, type)
    signature: str = ""  # the interned `Device.signature`
    coarse: bool = False  # attribute values dropped (MAX_KINDS reached)

    def matches(self, expressions: Iterable[str]) -> bool:
        """Whether every expression is true for this kind (a runtime error is no match)."""
        return all(selectors.evaluate(e, driver=self.driver, attributes=self.attributes,
                                      capacity=self.capacity,
                                      allow_multiple=self.allow_multiple,
                                      consumable_capacity=True).matches
                   for e in expressions)


Profile = frozenset[tuple[DeviceKind, int]]  # one node's devices: kind → count


@dataclass(frozen=True, slots=True)
class Published:
    """What one driver's devices publish: domain → name → value type, domain → capacity names."""

    attributes: Mapping[str, Mapping[str, str]]
    capacity: Mapping[str, frozenset[str]]


@dataclass(frozen=True, slots=True)
class Offer:
    """What the cluster offers for some set of device kinds."""

    total: int
    per_node: int  # the most on any one node (devices offered everywhere included)
    drivers: frozenset[str]
    exact: bool = True  # False: some devices could not be evaluated (coarse kinds)


@dataclass(frozen=True, slots=True)
class _Snapshot:
    classes: Mapping[str, DeviceClass]
    published: Mapping[str, Published]
    profiles: Mapping[Profile, int]  # profile → how many nodes have it
    anywhere: Profile
    namespaces: Mapping[str, Mapping[str, str]]
    quotas: Mapping[str, tuple[Mapping[str, Any], ...]]
    problems: tuple[FactProblem, ...]
    loaded: frozenset[str]
    inexact_classes: frozenset[str] = frozenset()  # classes coarse kinds were not evaluated for
    cache: dict[Any, Any] = field(default_factory=dict, compare=False)  # derived values
    # Whether a device kind matches some selectors, by (kind signature, allow multiple,
    # expressions): what a selector sees of a kind does not depend on the rest of the
    # view, so each snapshot hands this on to the next (`ClusterFacts._matched`), and a
    # slice event does not make every kind be evaluated again. Readers bound it (checks).
    matched: dict[Any, Any] = field(default_factory=dict, compare=False)


_EMPTY_PROFILE: Profile = frozenset()
_EMPTY = _Snapshot(MappingProxyType({}), MappingProxyType({}), MappingProxyType({}),
                   _EMPTY_PROFILE, MappingProxyType({}), MappingProxyType({}), (), frozenset())


# One slice's contribution, kept to take it back out when the slice changes: its driver
# and, per node key, (node key, (signature, count, signature, count, ...)). Flat, since a
# 50,000-node view holds one of these per slice: two tuples for a one-node slice rather
# than one per device kind (bench/RESULTS.md, issue 20). Plain tuples of strings and ints
# (and `_nodes`' plain dicts of them), not objects: the cyclic collector stops tracking
# such containers, so a full collection in a worker does not walk two objects per node.
_SliceShare = tuple[str, tuple[tuple[str, tuple[str | int, ...]], ...]]


def _entries(share: _SliceShare) -> Iterator[tuple[str, str, int]]:
    """(node key, signature, count) for each kind on each node of a slice's share."""
    for node, flat in share[1]:
        for k in range(0, len(flat), 2):
            yield node, str(flat[k]), int(flat[k + 1])


class ClusterFacts:
    """What the cluster-aware checks need, kept small and updated object by object."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot = _EMPTY
        # Writer-only state (under the lock).
        self._classes: dict[str, DeviceClass] = {}
        self._slices: dict[str, _SliceShare] = {}
        self._kinds: dict[str, DeviceKind] = {}
        self._kind_refs: Counter[str] = Counter()
        self._names: dict[str, Counter[tuple[str, str, str, str]]] = {}  # driver → refs
        self._nodes: dict[str, dict[str, int]] = {}  # node key → signature → count
        self._profiles: Counter[Profile] = Counter()
        self._namespaces: dict[str, Mapping[str, str]] = {}
        self._quotas: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._problems: dict[tuple[str, str], tuple[FactProblem, ...]] = {}
        self._loaded: set[str] = set()
        self._shared: dict[Any, Any] = {}  # interned names tuples and class sets
        self._coarse = 0  # how many kinds are coarse
        self._inexact: set[str] = set()  # classes changed while coarse kinds existed
        self._class_changes = 0  # counts updates that changed the classes (see `StagedList`)
        self._matched: dict[Any, Any] = {}  # every snapshot's `matched`

    # --- readers ------------------------------------------------------------------

    def snapshot(self) -> _Snapshot:
        """The current immutable view (one attribute read: no lock)."""
        return self._snapshot

    def problems(self) -> tuple[FactProblem, ...]:
        """Objects that could not be read and were left out; never raises."""
        return self._snapshot.problems

    def loaded(self, kind: str) -> bool:
        """Whether `kind` has been listed at least once (`replace`)."""
        return kind in self._snapshot.loaded

    # --- writers ------------------------------------------------------------------

    def replace(self, kind: str, objects: Iterable[Mapping[str, Any]]) -> None:
        """After a (re)list: the objects of `kind` are exactly these."""
        with self._lock:
            state = _Writer(self)
            try:
                state.replace(kind, list(objects))
            except Exception as exc:  # never let a bad list kill the caller's loop
                state.problem(kind, "", _WHOLE, f"list not read: {exc}")
            self._loaded.add(kind)
            state.publish()

    def apply(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED, DELETED); a bad object is a problem, never raised."""
        with self._lock:
            state = _Writer(self)
            try:
                state.apply(kind, event, obj)
            except Exception as exc:  # a malformed object must not stop the watch
                state.problem(kind, _name(obj), _WHOLE, f"not read: {exc}")
            state.publish()

    def stage(self, kind: str) -> StagedList:
        """A `replace` of `kind` taken page by page (see `StagedList`)."""
        with self._lock:
            return StagedList(self, kind)


class StagedList:
    """A relist of one kind in progress: `add` each page as it arrives, then `commit`.

    Each page is read into the compact form the facts keep (device kinds, per-node
    counts, labels) as it arrives, so the list's raw objects are never all held at once
    (a 50,000-node ResourceSlice list is hundreds of MiB as parsed JSON). The pages go
    into a private `ClusterFacts` (the staging), built as a fresh `replace` builds, with
    a copy of the live DeviceClasses; `commit` swaps the kind's state into the live
    facts under the lock and publishes one snapshot: readers see the old list or the
    whole new one, never half, and what the old list had and the new one lacks is gone.

    A DeviceClass update between `stage` and `commit` (another thread's watch) is not in
    the staged classes: `commit` then evaluates the classes of every kind again, as a
    class event does, and a class changed meanwhile is inexact for coarse kinds.
    Not thread-safe itself: one list, one thread (the view's thread for the kind).
    """

    def __init__(self, facts: ClusterFacts, kind: str) -> None:
        self.facts, self.kind = facts, kind
        self._staging = ClusterFacts()
        # A slice's device kinds are matched against the classes; a class list starts empty.
        if kind != "DeviceClass":
            self._staging._classes = dict(facts._classes)
        self._class_changes = facts._class_changes
        self._writer = _Writer(self._staging)
        self.count = 0

    def add(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """One page: each object read now (the caller may drop the page afterwards)."""
        kind, writer = self.kind, self._writer
        for obj in objects:
            self.count += 1
            try:
                writer.apply(kind, "ADDED", obj)
            except Exception as exc:  # a malformed object is a problem, as in `replace`
                writer.problem(kind, _name(obj), _WHOLE, f"not read: {exc}")

    def commit(self) -> None:
        """Make the staged list the kind's objects and publish them at once."""
        facts, staging, kind = self.facts, self._staging, self.kind
        with facts._lock:
            state = _Writer(facts)
            for key in [k for k in facts._problems if k[0] == kind]:
                del facts._problems[key]
            facts._problems.update(staging._problems)
            state.touched.add("problems")
            classes_moved = facts._class_changes != self._class_changes
            if kind == "DeviceClass":
                facts._classes = staging._classes
                if facts._coarse:  # as `_device_class` marks each class it reads
                    facts._inexact.update(facts._classes)
                state.classes_changed = True
            elif kind == "ResourceSlice":
                state.drivers.update(facts._names, staging._names)
                facts._slices, facts._kinds = staging._slices, staging._kinds
                facts._kind_refs, facts._names = staging._kind_refs, staging._names
                facts._nodes, facts._profiles = staging._nodes, staging._profiles
                facts._shared, facts._coarse = staging._shared, staging._coarse
                # A fresh build starts with no coarse kinds, so nothing inexact; classes
                # that changed while staging were not seen by the staged coarse kinds.
                facts._inexact = set(facts._classes) if classes_moved and facts._coarse else set()
                state.classes_changed = classes_moved
                state.touched.add("profiles")
            elif kind == "Namespace":
                facts._namespaces = staging._namespaces
                state.touched.add("namespaces")
            elif kind == "ResourceQuota":
                facts._quotas = staging._quotas
                state.touched.add("quotas")
            facts._loaded.add(kind)
            state.publish()


def facts_from_objects(objects: Iterable[Mapping[str, Any]]) -> ClusterFacts:
    """Facts from plain objects (files, a one-shot list): each watched kind replaced at once."""
    grouped: dict[str, list[Mapping[str, Any]]] = {kind: [] for kind in sorted(KINDS)}
    for obj in objects:
        kind = obj.get("kind") if isinstance(obj, Mapping) else None
        if isinstance(kind, str) and kind in grouped:
            grouped[kind].append(obj)
    facts = ClusterFacts()
    for kind, items in grouped.items():
        facts.replace(kind, items)
    return facts


def _name(obj: Any) -> str:
    if not isinstance(obj, Mapping):
        return ""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""


def _namespace(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    return namespace if isinstance(namespace, str) and namespace else "default"


class _Writer:
    """One update's work on a `ClusterFacts`' writer state, then the publication."""

    def __init__(self, facts: ClusterFacts) -> None:
        self.facts = facts
        self.touched: set[str] = set()
        self.drivers: set[str] = set()
        self.classes_changed = False

    def problem(self, kind: str, name: str, path: FieldPath, message: str) -> None:
        key = (kind, name)
        self.facts._problems[key] = (*self.facts._problems.get(key, ()),
                                     FactProblem(kind, name, path, message))
        self.touched.add("problems")

    def _clear_problems(self, kind: str, name: str) -> None:
        if self.facts._problems.pop((kind, name), None) is not None:
            self.touched.add("problems")

    def replace(self, kind: str, objects: list[Mapping[str, Any]]) -> None:
        facts = self.facts
        for key in [k for k in facts._problems if k[0] == kind]:
            del facts._problems[key]
            self.touched.add("problems")
        if kind == "DeviceClass":
            facts._classes.clear()
            self.classes_changed = True
        elif kind == "ResourceSlice":
            for name in list(facts._slices):
                self._remove_slice(name)
        elif kind == "Namespace":
            facts._namespaces.clear()
            self.touched.add("namespaces")
        elif kind == "ResourceQuota":
            facts._quotas.clear()
            self.touched.add("quotas")
        for obj in objects:
            self.apply(kind, "ADDED", obj)

    def apply(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        if kind not in KINDS:
            return
        if not isinstance(obj, Mapping):
            self.problem(kind, "", _WHOLE, "not an object")
            return
        name = _name(obj)
        deleted = event == "DELETED"
        if event not in ("ADDED", "MODIFIED", "DELETED"):
            self.problem(kind, name, _WHOLE, f"unknown watch event {event!r}")
            return
        if kind == "DeviceClass":
            self._device_class(name, obj, deleted)
        elif kind == "ResourceSlice":
            self._slice(name, obj, deleted)
        elif kind == "Namespace":
            self._namespace_labels(name, obj, deleted)
        else:
            self._quota(obj, deleted)

    def _device_class(self, name: str, obj: Mapping[str, Any], deleted: bool) -> None:
        self._clear_problems("DeviceClass", name)
        self.classes_changed = True
        if self.facts._coarse:  # coarse kinds cannot be evaluated against the new class
            self.facts._inexact.add(name)
        self.facts._classes.pop(name, None)
        if deleted:
            return
        found = self._read("DeviceClass", name, obj, read_device_class)
        if found is not None:
            self.facts._classes[found.name] = found

    def _slice(self, name: str, obj: Mapping[str, Any], deleted: bool) -> None:
        self._clear_problems("ResourceSlice", name)
        self._remove_slice(name)
        if deleted:
            return
        found = self._read("ResourceSlice", name, obj, read_slice)
        if found is not None:
            self._add_slice(found)

    def _read(self, kind: str, name: str, obj: Mapping[str, Any],
              reader: Callable[[Mapping[str, Any], Origin], tuple[_T | None, list[Problem]]],
              ) -> _T | None:
        """The object as `reader` makes it; its problems are kept under its kind and name."""
        found, problems = reader(dict(obj), NOWHERE)
        for p in problems:
            self.problem(kind, name, p.path, p.message)
        return found

    def _remove_slice(self, name: str) -> None:
        share = self.facts._slices.pop(name, None)
        if share is None:
            return
        for node, signature, count in _entries(share):
            self._count(node, signature, -count)
            self._unref(share[0], signature)

    def _add_slice(self, found: Slice) -> None:
        counted: Counter[tuple[str, str]] = Counter()
        for device in found.devices:
            node = device.node_name or found.node_name or ANYWHERE
            signature = device.signature(found.driver)
            known = self.facts._kinds.get(signature)
            if known is not None:
                signature = known.signature  # one string per kind, however many slices
            elif len(self.facts._kinds) >= MAX_KINDS:
                signature = self._coarse_kind(found.driver, device)
            else:
                attributes, capacity = device.cel_inputs(found.driver)
                names = tuple([("attribute", *_split(q, found.driver), t)
                               for q, (t, _) in device.attributes.items()]
                              + [("capacity", *_split(q, found.driver), "")
                                 for q in device.capacity])
                names = self._intern(names)  # equal across a driver's devices: one copy
                kind = DeviceKind(found.driver, attributes, capacity,
                                  device.allow_multiple_allocations, names=names,
                                  signature=signature)
                kind.classes = self._intern(self._classes_of(kind))
                self.facts._kinds[signature] = kind
                self.facts._names.setdefault(found.driver, Counter()).update(names)
                self.drivers.add(found.driver)
            counted[(node, signature)] += 1
        per_node: dict[str, list[str | int]] = {}
        for (node, signature), count in counted.items():
            per_node.setdefault(node, []).extend((signature, count))
        # The driver interned: one string for all its slices, not one per parsed slice.
        share = (sys.intern(found.driver),
                 tuple((node, tuple(flat)) for node, flat in per_node.items()))
        self.facts._slices[found.name] = share
        for node, signature, count in _entries(share):
            self.facts._kind_refs[signature] += 1
            self._count(node, signature, count)

    def _coarse_kind(self, driver: str, device: Any) -> str:
        """The coarse kind of a device past MAX_KINDS: its names and classes, no values."""
        attributes, capacity = device.cel_inputs(driver)
        full = DeviceKind(driver, attributes, capacity, device.allow_multiple_allocations)
        names = self._intern(tuple([("attribute", *_split(q, driver), t)
                                    for q, (t, _) in device.attributes.items()]
                                   + [("capacity", *_split(q, driver), "")
                                      for q in device.capacity]))
        classes = self._intern(self._classes_of(full))
        signature = f"{driver}\0coarse\0{names!r}\0{sorted(classes)!r}"
        if signature not in self.facts._kinds:
            self.facts._kinds[signature] = DeviceKind(driver, {}, {}, full.allow_multiple,
                                                      classes, names, signature, coarse=True)
            self.facts._names.setdefault(driver, Counter()).update(names)
            self.facts._coarse += 1
            self.drivers.add(driver)
            if self.facts._coarse == 1:
                self.problem("ResourceSlice", _COARSE, _WHOLE, (
                    f"more than {MAX_KINDS} distinct devices: further ones are kept without "
                    "their attribute values, so request selectors are not evaluated on them"))
        return signature

    def _unref(self, driver: str, signature: str) -> None:
        refs = self.facts._kind_refs
        refs[signature] -= 1
        if refs[signature] > 0:
            return
        del refs[signature]
        kind = self.facts._kinds.pop(signature, None)
        if kind is None:
            return
        if kind.coarse:
            self.facts._coarse -= 1
            if not self.facts._coarse:
                self.facts._inexact.clear()
                self._clear_problems("ResourceSlice", _COARSE)
        names = self.facts._names.get(driver)
        if names is not None:
            names.subtract(kind.names)
            for key in [k for k, v in names.items() if v <= 0]:
                del names[key]
            self.drivers.add(driver)

    def _count(self, node: str, signature: str, delta: int) -> None:
        counts = self.facts._nodes.setdefault(node, {})
        if node != ANYWHERE:
            self._profile(counts, -1)
        counts[signature] = counts.get(signature, 0) + delta
        if counts[signature] <= 0:
            del counts[signature]
        if node != ANYWHERE:
            self._profile(counts, +1)
        if not counts:
            del self.facts._nodes[node]
        self.touched.add("profiles")

    def _profile(self, counts: dict[str, int], delta: int) -> None:
        if not counts:
            return
        profile = self._make_profile(counts)
        self.facts._profiles[profile] += delta
        if self.facts._profiles[profile] <= 0:
            del self.facts._profiles[profile]

    def _make_profile(self, counts: Mapping[str, int]) -> Profile:
        return frozenset((self.facts._kinds[s], n) for s, n in counts.items())

    def _intern(self, value: _T) -> _T:
        return self.facts._shared.setdefault(value, value)  # type: ignore[no-any-return]

    def _classes_of(self, kind: DeviceKind) -> frozenset[str]:
        return frozenset(name for name, found in self.facts._classes.items()
                         if kind.matches(found.selectors))

    def _rebuild_kinds(self) -> None:
        """A class changed: every kind gets its classes again, profiles are made anew."""
        facts = self.facts
        for signature, old in list(facts._kinds.items()):
            classes = (frozenset(c for c in old.classes if c in facts._classes) if old.coarse
                       else self._classes_of(old))
            facts._kinds[signature] = dc_replace(old, classes=self._intern(classes))
        facts._profiles = Counter(self._make_profile(c) for n, c in facts._nodes.items()
                                  if n != ANYWHERE and c)
        self.touched.add("profiles")

    def _namespace_labels(self, name: str, obj: Mapping[str, Any], deleted: bool) -> None:
        self.touched.add("namespaces")
        self.facts._namespaces.pop(name, None)
        if deleted or not name:
            return
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, Mapping) else None
        self.facts._namespaces[name] = MappingProxyType(
            {k: v for k, v in (labels or {}).items() if isinstance(k, str) and isinstance(v, str)}
            if isinstance(labels, Mapping) else {})

    def _quota(self, obj: Mapping[str, Any], deleted: bool) -> None:
        self.touched.add("quotas")
        key = (_namespace(obj), _name(obj))
        self.facts._quotas.pop(key, None)
        if deleted:
            return
        spec, status = obj.get("spec"), obj.get("status")
        # Only what check_quotas reads: name, namespace, hard and used.
        self.facts._quotas[key] = MappingProxyType({
            "metadata": {"name": key[1], "namespace": key[0]},
            "spec": {"hard": dict(spec.get("hard") or {}) if isinstance(spec, Mapping) else {}},
            "status": {"used": dict(status.get("used") or {}) if isinstance(status, Mapping) else {}},
        })

    def publish(self) -> None:
        facts = self.facts
        if self.classes_changed:
            facts._class_changes += 1
            self._rebuild_kinds()
        old = facts._snapshot
        published = old.published
        if self.drivers:
            updated = dict(published)
            for driver in self.drivers:
                names = facts._names.get(driver)
                if names:
                    updated[driver] = _published(names)
                else:
                    updated.pop(driver, None)
                    facts._names.pop(driver, None)
            published = MappingProxyType(updated)
        anywhere = facts._nodes.get(ANYWHERE)
        quotas: dict[str, list[Mapping[str, Any]]] = {}
        if "quotas" in self.touched:
            for (namespace, _), quota in sorted(facts._quotas.items()):
                quotas.setdefault(namespace, []).append(quota)
        facts._snapshot = _Snapshot(
            classes=MappingProxyType(dict(facts._classes)) if self.classes_changed else old.classes,
            published=published,
            profiles=(MappingProxyType(dict(facts._profiles)) if "profiles" in self.touched
                      else old.profiles),
            anywhere=self._make_profile(anywhere) if anywhere else _EMPTY_PROFILE,
            namespaces=(MappingProxyType(dict(facts._namespaces)) if "namespaces" in self.touched
                        else old.namespaces),
            quotas=(MappingProxyType({k: tuple(v) for k, v in quotas.items()})
                    if "quotas" in self.touched else old.quotas),
            problems=(tuple(p for ps in facts._problems.values() for p in ps)
                      if "problems" in self.touched else old.problems),
            loaded=frozenset(facts._loaded),
            inexact_classes=frozenset(facts._inexact),
            matched=facts._matched,
        )


def _split(qualified: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = qualified.rpartition("/")
    return (domain, ident) if sep else (driver, qualified)


def _published(names: Counter[tuple[str, str, str, str]]) -> Published:
    attributes: dict[str, dict[str, str]] = {}
    capacity: dict[str, set[str]] = {}
    for (what, domain, name, value_type), refs in names.items():
        if refs <= 0:
            continue
        if what == "attribute":
            attributes.setdefault(domain, {})[name] = value_type
        else:
            capacity.setdefault(domain, set()).add(name)
    return Published(MappingProxyType({d: MappingProxyType(n) for d, n in attributes.items()}),
                     MappingProxyType({d: frozenset(n) for d, n in capacity.items()}))


def offer(snapshot: _Snapshot, kinds: frozenset[DeviceKind] | None, device_class: str) -> Offer:
    """Devices of `device_class` (and among `kinds` when given): total and most on one node."""
    total = per_node = 0
    drivers: set[str] = set()
    everywhere = 0
    exact = device_class not in snapshot.inexact_classes
    for kind, count in snapshot.anywhere:
        if device_class in kind.classes and (kinds is None or kind in kinds):
            everywhere += count
            drivers.add(kind.driver)
        if kind.coarse and kinds is not None and device_class in kind.classes:
            exact = False
    total += everywhere
    for profile, nodes in snapshot.profiles.items():
        here = 0
        for kind, count in profile:
            if device_class in kind.classes and (kinds is None or kind in kinds):
                here += count
                drivers.add(kind.driver)
            if kind.coarse and kinds is not None and device_class in kind.classes:
                exact = False
        total += here * nodes
        per_node = max(per_node, here)
    return Offer(total, per_node + everywhere, frozenset(drivers), exact)


def kinds_of_class(snapshot: _Snapshot, device_class: str) -> list[DeviceKind]:
    """The distinct device kinds of a class, each once."""
    seen: dict[int, DeviceKind] = {}
    for kind, _ in snapshot.anywhere:
        if device_class in kind.classes:
            seen.setdefault(id(kind), kind)
    for profile in snapshot.profiles:
        for kind, _ in profile:
            if device_class in kind.classes:
                seen.setdefault(id(kind), kind)
    return list(seen.values())


# Keep `meta_name` importable from here for callers that read objects the same way.
__all__ = ["WATCHED", "ClusterFacts", "DeviceKind", "FactProblem", "Offer", "Published",
           "StagedList", "Watched", "facts_from_objects", "kinds_of_class", "meta_name", "offer"]
