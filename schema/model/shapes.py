"""The wire shapes of each API version, and reading a document against them.

Reading is what the apiserver's strict decoder does before any rule runs (§3.0 step
1): a field the version does not have is `Unknown`, a wrong JSON type `Malformed`.
Reading never raises; it returns a clean copy holding only well-typed, known
fields (JSON `null` counts as absent, as Go's decoder leaves such fields zero), so
the later pipeline steps may mutate it freely without touching the caller's object.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any, Union

from draguard.schema.model.errors import FieldError, malformed, unknown_field
from draguard.schema.model.fieldmap import PARALLEL_KEY
from draguard.schema.model.paths import FieldPath, MapKey, Segment
from draguard.schema.model.releases import API_VERSIONS, GROUP, KINDS, Release

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_QUANTITY_RE = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?")


@dataclass(frozen=True, slots=True)
class Obj:
    """A JSON object with a closed set of fields (`open` ones accept anything else too)."""

    type_name: str
    fields: Mapping[str, Node]
    open: bool = False


@dataclass(frozen=True, slots=True)
class ListOf:
    item: Node


@dataclass(frozen=True, slots=True)
class MapOf:
    value: Node


@dataclass(frozen=True, slots=True)
class Scalar:
    """`string`, `integer`, `boolean`, `quantity`, `any` or `raw` (RawExtension: null kept)."""

    kind: str


Node = Union[Obj, ListOf, MapOf, Scalar]  # noqa: UP007 - a runtime alias used in dataclass fields

STRING, INTEGER, BOOLEAN = Scalar("string"), Scalar("integer"), Scalar("boolean")
QUANTITY, ANY, RAW = Scalar("quantity"), Scalar("any"), Scalar("raw")

OBJECT_META = Obj(
    "ObjectMeta",
    {
        "name": STRING,
        "generateName": STRING,
        "namespace": STRING,
        "selfLink": STRING,
        "uid": STRING,
        "resourceVersion": STRING,
        "generation": INTEGER,
        "creationTimestamp": ANY,
        "deletionTimestamp": ANY,
        "deletionGracePeriodSeconds": INTEGER,
        "labels": MapOf(STRING),
        "annotations": MapOf(STRING),
        "ownerReferences": ListOf(Obj("OwnerReference", {}, open=True)),
        "finalizers": ListOf(STRING),
        "managedFields": ListOf(Obj("ManagedFieldsEntry", {}, open=True)),
    },
)

SELECTOR = Obj("DeviceSelector", {"cel": Obj("CELDeviceSelector", {"expression": STRING})})
TOLERATION = Obj(
    "DeviceToleration",
    {
        "key": STRING,
        "operator": STRING,
        "value": STRING,
        "effect": STRING,
        "tolerationSeconds": INTEGER,
    },
)
CAPACITY = Obj("CapacityRequirements", {"requests": MapOf(QUANTITY)})


def _exact_fields(release: Release, *, admin: bool) -> dict[str, Node]:
    """Fields of ExactDeviceRequest / DeviceSubRequest (§2.1); capacity from 1.34 (§2.3)."""
    fields: dict[str, Node] = {
        "deviceClassName": STRING,
        "selectors": ListOf(SELECTOR),
        "allocationMode": STRING,
        "count": INTEGER,
    }
    if admin:
        fields["adminAccess"] = BOOLEAN
    fields["tolerations"] = ListOf(TOLERATION)
    if release.has_capacity_fields:
        fields["capacity"] = CAPACITY
    if release.has_derived_attributes:
        # Newest types only (§2.1); its alpha gate is off, so it is dropped, not rejected (§3.8).
        fields["derivedAttributes"] = ListOf(
            Obj("DeviceDerivedAttribute", {"name": STRING, "expression": STRING}, open=True)
        )
    return fields


@cache
def claim_spec_node(version: str, release: Release, parallel: bool) -> Obj:
    """The `ResourceClaimSpec` of one version in one release (optionally the parallel shape)."""
    subrequest = Obj("DeviceSubRequest", {"name": STRING, **_exact_fields(release, admin=False)})
    if version == "v1beta1":
        request = Obj(
            "DeviceRequest",
            {"name": STRING, **_exact_fields(release, admin=True), "firstAvailable": ListOf(subrequest)},
        )
    else:
        exact = Obj("ExactDeviceRequest", _exact_fields(release, admin=True))
        request = Obj(
            "DeviceRequest",
            {"name": STRING, "exactly": exact, "firstAvailable": ListOf(subrequest)},
        )
    if parallel:
        # Contract §2: `requests` of the parallel shape holds only exact requests.
        fields = {k: v for k, v in request.fields.items() if k != "firstAvailable"}
        request = Obj(request.type_name, fields)
    constraint_fields: dict[str, Node] = {"requests": ListOf(STRING), "matchAttribute": STRING}
    if release.has_capacity_fields:
        constraint_fields["distinctAttribute"] = STRING
    config = Obj(
        "DeviceClaimConfiguration",
        {
            "requests": ListOf(STRING),
            "opaque": Obj("OpaqueDeviceConfiguration", {"driver": STRING, "parameters": RAW}),
        },
    )
    devices: dict[str, Node] = {
        "requests": ListOf(request),
        "constraints": ListOf(Obj("DeviceConstraint", constraint_fields)),
        "config": ListOf(config),
    }
    if parallel:
        devices[PARALLEL_KEY] = ListOf(
            Obj("PrioritizedDeviceRequest", {"name": STRING, "options": ListOf(subrequest)})
        )
    return Obj("ResourceClaimSpec", {"devices": Obj("DeviceClaim", devices)})


@cache
def document_node(kind: str, version: str, release: Release, parallel: bool) -> Obj:
    spec = claim_spec_node(version, release, parallel)
    top: dict[str, Node] = {"apiVersion": STRING, "kind": STRING, "metadata": OBJECT_META}
    if kind == "ResourceClaimTemplate":
        top["spec"] = Obj("ResourceClaimTemplateSpec", {"metadata": OBJECT_META, "spec": spec})
    else:
        top["spec"] = spec
        top["status"] = ANY  # reset on create (§3.0 step 4); its own rules are not in scope
    return Obj(kind, top)


@dataclass
class Reading:
    """The clean copy of a document and what reading it found."""

    value: Any
    findings: list[FieldError] = field(default_factory=list)


_DROP = object()

# A reader checks one value at `path` against its node: it returns the clean copy (or
# _DROP) and appends findings. Readers are compiled once per node, so the per-field
# work is one dict lookup and, for the many string fields, an inline type test; the
# child path is built only for a container (its items need it) or a finding.
#
# Inside the reader a path is linked: `(parent, segment)`, down to a root `(parts,)`
# holding the flat parts `read` was given. A child is then a pair whatever its depth,
# where a flat tuple copies every segment above it; `_flat` undoes it for a finding.
_Linked = tuple[Any, ...]
_Reader = Callable[[Any, _Linked, list[FieldError]], Any]

_READERS: dict[tuple[int, str], tuple[Node, _Reader]] = {}
_READERS_MAX = 512  # nodes are few and cached (document_node); a bound for callers' own


def read(value: Any, node: Node, path: FieldPath, api_version: str) -> Reading:
    """Check `value` against `node`; return the clean copy and Unknown/Malformed findings."""
    findings: list[FieldError] = []
    clean = _reader(node, api_version)(value, (path.parts,), findings)
    return Reading(None if clean is _DROP else clean, findings)


def _reader(node: Node, api_version: str) -> _Reader:
    """The compiled reader of `node`; the entry keeps the node alive so its id stays its own."""
    key = (id(node), api_version)
    entry = _READERS.get(key)
    if entry is None:
        if len(_READERS) >= _READERS_MAX:
            _READERS.clear()
        entry = _READERS[key] = (node, _compile(node, api_version))
    return entry[1]


def _compile(node: Node, api_version: str) -> _Reader:
    if isinstance(node, Obj):
        return _object_reader(node, api_version)
    if isinstance(node, ListOf):
        return _collection_reader(_compile(node.item, api_version), mapping=False)
    if isinstance(node, MapOf):
        return _collection_reader(_compile(node.value, api_version), mapping=True)
    if node.kind == "string":
        return _read_string
    if node.kind in ("any", "raw"):
        return _read_any
    if node.kind == "integer":
        return _read_integer
    return partial(_read_scalar, node=node)


def _object_reader(node: Obj, api_version: str) -> _Reader:
    plan = {name: _compile(child, api_version) for name, child in node.fields.items()}
    # JSON null counts as absent, except for a RawExtension, which keeps it.
    keeps_null = frozenset(name for name, child in node.fields.items() if child is RAW)
    unknown = f"{api_version} {node.type_name} has no such field"
    is_open = node.open
    if is_open and not plan:
        return _read_open  # managedFields and ownerReferences entries: kept as written

    def read_object(value: Any, path: _Linked, out: list[FieldError]) -> Any:
        if not isinstance(value, dict):
            return _wrong_type(value, "object", path, out)
        result: dict[Any, Any] = {}
        for key, item in value.items():
            # Only a str equals a field name, so a key of another type finds nothing.
            step = plan.get(key)
            # The common fields first: a well-typed string or integer is checked inline.
            if step is _read_string:
                if isinstance(item, str):
                    result[key] = item
                    continue
            elif step is _read_integer:
                if type(item) is int and INT64_MIN <= item <= INT64_MAX:
                    result[key] = item
                    continue
            elif step is None:
                if is_open:
                    result[str(key)] = item
                else:
                    out.append(unknown_field(_flat((path, str(key))), unknown))
                continue
            if item is None:
                if key in keeps_null:
                    result[key] = None
                continue
            clean = step(item, (path, key), out)
            if clean is not _DROP:
                result[key] = clean
        return result

    return read_object


def _read_open(value: Any, path: _Linked, out: list[FieldError]) -> Any:
    """An open object without declared fields: `read_object`'s copy (every key as a
    string, nulls kept) in one comprehension, as `kubectl get -o yaml` writes one in
    every object's managedFields."""
    if not isinstance(value, dict):
        return _wrong_type(value, "object", path, out)
    return {key if type(key) is str else str(key): item for key, item in value.items()}


def _collection_reader(item_reader: _Reader, *, mapping: bool) -> _Reader:
    """Read a JSON array, or (`mapping`) an object with free keys, item by item.

    A malformed array item keeps its slot (as null) so later indexes stay the user's;
    a malformed map value is left out. Map keys become strings (YAML may give others).
    """
    strings = item_reader is _read_string
    if not mapping:
        return _list_reader(item_reader, strings=strings)

    def read_map(value: Any, path: _Linked, out: list[FieldError]) -> Any:
        if not isinstance(value, dict):
            return _wrong_type(value, "object", path, out)
        result: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                key = str(key)
            if strings and isinstance(item, str):
                result[key] = item
                continue
            clean = item_reader(item, (path, MapKey(key)), out)
            if clean is not _DROP:
                result[key] = clean
        return result

    return read_map


def _list_reader(item_reader: _Reader, *, strings: bool) -> _Reader:
    """The array half of `_collection_reader`: appends to a list (every claim has several)."""

    def read_list(value: Any, path: _Linked, out: list[FieldError]) -> Any:
        if not isinstance(value, list):
            return _wrong_type(value, "array", path, out)
        result: list[Any] = []
        for index, item in enumerate(value):
            if strings and isinstance(item, str):
                result.append(item)
                continue
            clean = item_reader(item, (path, index), out)
            result.append(None if clean is _DROP else clean)
        return result

    return read_list


def _flat(path: _Linked) -> FieldPath:
    """The FieldPath of a linked path (only for a finding, so rarely)."""
    segments: list[Segment] = []
    while len(path) == 2:
        path, segment = path
        segments.append(segment)
    segments.reverse()
    return FieldPath((*path[0], *segments))


def _wrong_type(value: Any, expected: str, path: _Linked, out: list[FieldError]) -> Any:
    """Report a value of the wrong JSON type (`Malformed`) and drop it from the copy."""
    out.append(malformed(_flat(path), f"expected {expected}, got {json_type(value)}"))
    return _DROP


def _read_string(value: Any, path: _Linked, out: list[FieldError]) -> Any:
    if isinstance(value, str):
        return value
    return _wrong_type(value, "string", path, out)


def _read_any(value: Any, path: _Linked, out: list[FieldError]) -> Any:
    return value


def _read_integer(value: Any, path: _Linked, out: list[FieldError]) -> Any:
    return _read_scalar(value, path, out, node=INTEGER)


def _read_scalar(value: Any, path: _Linked, out: list[FieldError], *, node: Scalar) -> Any:
    kind = node.kind
    if kind in ("any", "raw"):
        return value
    if kind == "string":
        ok = isinstance(value, str)
    elif kind == "boolean":
        ok = isinstance(value, bool)
    elif kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and not INT64_MIN <= value <= INT64_MAX:
            out.append(malformed(_flat(path), "integer out of int64 range"))
            return _DROP
    else:  # quantity: a number or a string in Kubernetes quantity syntax
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
        ok = isinstance(value, str) and bool(_QUANTITY_RE.fullmatch(value))
        if isinstance(value, str) and not ok:
            out.append(malformed(_flat(path), f"quantities must match the regular expression '{_QUANTITY_RE.pattern}'"))
            return _DROP
    if not ok:
        return _wrong_type(value, kind, path, out)
    return value


# JSON's type names by Python type; bool before int, since a bool is also an int.
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
    (list, "array"), (dict, "object"),
)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)),
                type(value).__name__)


@dataclass(frozen=True, slots=True)
class DocumentType:
    """What a document claims to be: kind, version and shape."""

    kind: str
    version: str
    parallel: bool

    @property
    def api_version(self) -> str:
        return f"{GROUP}/{self.version}"

    @property
    def shape(self) -> str:
        return "parallel" if self.parallel else self.version


def identify(obj: Any) -> DocumentType | None:
    """Recognise a ResourceClaim(Template) of a known resource.k8s.io version, else None."""
    head = _claim_head(obj)
    if head is None or head[1] not in API_VERSIONS:
        return None
    kind, version = head
    parallel = _has_parallel_list(obj, kind)
    if kind.__class__ is str:  # the usual plain string: one shared, immutable value
        return _document_type(kind, version, parallel)
    return DocumentType(kind, version, parallel)


@cache
def _document_type(kind: str, version: str, parallel: bool) -> DocumentType:
    return DocumentType(kind, version, parallel)


_API_VERSION = FieldPath.root("apiVersion")


def unserved_version(obj: Any, release: Release) -> FieldError | None:
    """The answer for a claim or template of resource.k8s.io in a version that `identify`
    does not know (v1alpha3, v1alpha2, a typo such as v2): no release serves it, so the
    apiserver has no such kind there (issue 17). None for anything else.

    The one place every product asks (lint through `validate_object`, skew, convert,
    roundtrip), so that such a document is never skipped in silence.
    """
    head = _claim_head(obj)
    if head is None or head[1] in API_VERSIONS:
        return None
    kind, version = head
    return unknown_field(_API_VERSION, release.no_such_version(str(kind), version))


def _claim_head(obj: Any) -> tuple[str, str] | None:
    """The kind and version of a claim or template of resource.k8s.io (any version)."""
    if not isinstance(obj, dict):
        return None
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if kind not in KINDS or not isinstance(api_version, str):
        return None
    group, _, version = api_version.partition("/")
    return (kind, version) if group == GROUP else None


def _has_parallel_list(obj: dict[str, Any], kind: str) -> bool:
    spec = obj.get("spec")
    if kind == "ResourceClaimTemplate" and isinstance(spec, dict):
        spec = spec.get("spec")
    devices = spec.get("devices") if isinstance(spec, dict) else None
    return isinstance(devices, dict) and PARALLEL_KEY in devices
