"""Document-level conversion between every claim shape (issue 3; `upstream-rules.md` §4–§5).

Version targets (`v1`, `v1beta2`, `v1beta1`) give what the apiserver returns when the
object, created in its own version, is read back in the target version: the source
version's defaults, the gate drops of the release, upstream's conversion with its
asymmetries (§5.4), and the JSON encoder's omission of empty lists. Layout targets
(`parallel`, `nested`) only move requests (contract §2): no defaults, apiVersion kept.

Conversion never raises for bad input. What the target cannot hold is a `Loss`;
callers refuse the document unless they were told to allow loss.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from draguard.schema.model.errors import FieldError
from draguard.schema.model.fieldmap import (
    ORDER_ANNOTATION,
    PARALLEL_KEY,
    decode_order,
    encode_order,
    main_fields_set,
    nested_to_parallel,
    parallel_to_nested,
    spec_hub_to_v1beta1,
)
from draguard.schema.model.options import DEFAULT_OPTIONS, Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import GROUP, gate_of
from draguard.schema.model.shapes import (
    DocumentType,
    document_node,
    identify,
    read,
    unserved_version,
)
from draguard.schema.validate import Prepared, prepare
from draguard.schema.validate import prepare as validate_prepare

# How a conversion gets its source read through the create pipeline (`validate.prepare`);
# `roundtrip` passes one that remembers each document's, shared by its trips. The
# `Prepared` it gives is only read here, never changed.
Preparer = Callable[[dict[str, Any], DocumentType, Options], Prepared]

VERSION_TARGETS = ("v1", "v1beta2", "v1beta1")
LAYOUT_TARGETS = ("parallel", "nested")
TARGETS = VERSION_TARGETS + LAYOUT_TARGETS

# Lists whose Go field has `omitempty`: an empty one is not written on read-back (contract §4).
_OMITEMPTY_LISTS = frozenset(
    {"selectors", "tolerations", "firstAvailable", "constraints", "config"}
)


@dataclass(frozen=True, slots=True)
class Loss:
    """Something of the source the target cannot hold, at the source document's path."""

    path: FieldPath
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Conversion:
    """The converted document (None when the input is not a DRA claim or template)."""

    document: dict[str, Any] | None
    source_shape: str | None
    target: str
    losses: tuple[Loss, ...] = ()

    @property
    def is_dra(self) -> bool:
        return self.document is not None

    @property
    def lossless(self) -> bool:
        return not self.losses

    @property
    def convertible(self) -> bool:
        """False for a claim in a version no release serves: refused even with loss allowed."""
        return self.source_shape is not None


def convert_document(
    obj: Any, target: str, *, options: Options = DEFAULT_OPTIONS, prepare: Preparer = prepare
) -> Conversion:
    """Convert one document to `target` (a version or a layout); see the module docstring.

    `obj` is left as it is, and the converted document shares with it what did not
    change (copies only what it changes): neither is to be changed afterwards."""
    if target not in TARGETS:
        raise ValueError(
            f"unknown conversion target {target!r}: expected one of {', '.join(TARGETS)}"
        )
    doc_type = identify(obj)
    if doc_type is None:
        err = unserved_version(obj, options.release)
        if err is None:
            return Conversion(None, None, target)
        # A claim in a version no release serves (issue 17): nothing to convert from,
        # and no `--allow-loss` makes it convertible (`source_shape` None says so).
        return Conversion(plain_copy(obj), None, target, (Loss(err.path, err.detail),))
    if target in LAYOUT_TARGETS:
        document, losses = _convert_layout(obj, doc_type, target, options, prepare)
    else:
        document, losses = _convert_version(prepare(obj, doc_type, options), target, options)
    return Conversion(document, doc_type.shape, target, tuple(losses))


def _convert_layout(
    obj: dict[str, Any], doc_type: DocumentType, target: str, options: Options,
    prepare: Preparer,
) -> tuple[dict[str, Any], list[Loss]]:
    """`obj` in the other layout. What changes is copied (the mappings down to the
    devices, the metadata and its annotations), the rest shared with `obj`, which is
    left as it is: moving requests touches a few keys of a whole document."""
    document = dict(obj)
    holder, spec_path = _claim_spec_holder(document, doc_type.kind)
    devices = (
        holder.get("spec", {}).get("devices") if isinstance(holder.get("spec"), dict) else None
    )
    if not isinstance(devices, dict) or doc_type.parallel == (target == "parallel"):
        return document, []
    # Moving requests needs a document that reads cleanly: a request list that is not a
    # list, or a field no shape has (`adminAccess` on a prioritized entry), would be
    # dropped by the move without a word.
    losses = _unreadable(obj, doc_type, options, prepare)
    if losses:
        return document, losses
    if target == "parallel" and not _mentions_first_available(devices):
        # Nothing to move: no empty `prioritizedRequests`, no order annotation (issue 17).
        return document, []
    # `metadata: null` and `annotations: null` read as absent, as the apiserver reads them.
    meta = document.setdefault("metadata", {})
    if target == "nested":
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        nested, _ = parallel_to_nested(devices, decode_order(annotations))
        _put_devices(document, doc_type.kind, nested)
        document["metadata"] = _without_order_annotation(meta)
        return document, []
    losses = _ambiguous_requests(devices, spec_path.child("devices"), doc_type.version)
    losses += _duplicate_names(devices, spec_path.child("devices"))
    if losses:
        return document, losses
    parallel, order = nested_to_parallel(devices)
    _put_devices(document, doc_type.kind, parallel)
    meta = document["metadata"] = dict(meta) if isinstance(meta, dict) else {}
    known = meta.get("annotations")
    annotations = meta["annotations"] = dict(known) if isinstance(known, dict) else {}
    annotations[ORDER_ANNOTATION] = encode_order(order)
    return document, []


def _put_devices(document: dict[str, Any], kind: str, devices: dict[str, Any]) -> None:
    """Set the claim spec's devices in `document` (a copy of its own at the top), copying
    the mappings on the way (a template's spec, the claim spec) rather than changing them."""
    if kind == "ResourceClaimTemplate":
        template = document["spec"] = dict(document["spec"])
        template["spec"] = {**template["spec"], "devices": devices}
    else:
        document["spec"] = {**document["spec"], "devices": devices}


def _mentions_first_available(devices: dict[str, Any]) -> bool:
    """Some request has the key (`firstAvailable: []` too: the move then drops it, rule 7)."""
    requests = devices.get("requests")
    return any(
        isinstance(r, dict) and "firstAvailable" in r
        for r in (requests if isinstance(requests, list) else ())
    )


def _unreadable(
    obj: dict[str, Any], doc_type: DocumentType, options: Options, prepare: Preparer
) -> list[Loss]:
    """What the apiserver's strict decoding would reject (Unknown, Malformed), as losses.

    A caller's own `prepare` (`roundtrip`'s, which keeps each document's) has read the
    document already, against the same shape: its findings are the reading's, after
    the one it puts first for a version the release lacks. Else the document is only
    read here, which costs less than the whole `validate.prepare`."""
    if prepare is not validate_prepare:
        findings = prepare(obj, doc_type, options).findings
        if not options.release.has_api_version(doc_type.version):
            findings = findings[1:]  # `prepare`'s "does not exist in Kubernetes …"
    else:
        node = document_node(doc_type.kind, doc_type.version, options.release,
                             doc_type.parallel)
        findings = read(obj, node, FieldPath(), doc_type.api_version).findings
    return [Loss(f.path, f"{f.type.value}: {f.detail}") for f in findings]


def _ambiguous_requests(devices: dict[str, Any], path: FieldPath, version: str) -> list[Loss]:
    """Requests with both exact fields and `firstAvailable` fit neither a request nor an entry."""
    losses = []
    for i, request in enumerate(devices.get("requests", []) or []):
        if (
            isinstance(request, dict)
            and request.get("firstAvailable")
            and _has_exact(request, version)
        ):
            losses.append(
                Loss(
                    path.child("requests").index(i),
                    "has both exact fields and firstAvailable (invalid): the conversion is ambiguous",
                )
            )
    return losses


def _duplicate_names(devices: dict[str, Any], path: FieldPath) -> list[Loss]:
    """Requests sharing a name (invalid, rule 4) cannot be put back in order from names."""
    seen, losses = set(), []
    for i, request in enumerate(devices.get("requests", []) or []):
        name = request.get("name") if isinstance(request, dict) else None
        if name in seen:
            losses.append(
                Loss(
                    path.child("requests").index(i),
                    f"duplicate request name {name!r} (invalid): the order annotation, a list "
                    "of names, could not put it back in its place",
                )
            )
        seen.add(name)
    return losses


def _has_exact(request: dict[str, Any], version: str) -> bool:
    """Whether the request has an exact member, by upstream's own test (§5.2 for v1beta1)."""
    if version != "v1beta1":
        return "exactly" in request
    return main_fields_set(request)


def _convert_version(
    prepared: Prepared, target: str, options: Options
) -> tuple[dict[str, Any], list[Loss]]:
    """`prepared` written in `target`: what changes is copied, the rest shared with it."""
    doc_type = prepared.doc_type
    losses = [_reading_loss(f, options) for f in prepared.findings]
    losses += [
        Loss(p, f"feature gate {gate_of(str(p.parts[-1]))} is off by default in Kubernetes "
                f"{options.release.name}, whose apiserver drops this field on create")
        for p in prepared.dropped
    ]
    document = dict(prepared.document)
    if doc_type.parallel:
        document["metadata"] = _without_order_annotation(document.setdefault("metadata", {}))
    holder, spec_path = _claim_spec_holder(document, doc_type.kind)
    if holder is document.get("spec"):  # a template: its spec is copied, not changed
        holder = document["spec"] = dict(holder)
    spec = prepared.claim_spec
    losses += _ambiguous_requests(spec.get("devices", {}), spec_path.child("devices"), "v1")
    spec = spec_hub_to_v1beta1(spec) if target == "v1beta1" else _with_class_names(spec)
    holder["spec"] = _without_empty_lists(spec)
    document["apiVersion"] = f"{GROUP}/{target}"
    # No second read against the target: reading the source kept only fields its version
    # has in this release, and every version of a release has the same fields, moved
    # (§2.1, §2.2, §5.0); the property tests validate every conversion's output.
    # Reading already reported a source version the release lacks; say it once.
    release = options.release
    if target != doc_type.version:
        gate = release.api_gate(target)
        if not release.has_api_version(target):
            reason = f"{GROUP}/{target} does not exist in Kubernetes {release.name}"
        elif gate is not None:  # 1.38's v1beta1 (issue 17)
            reason = (f"Kubernetes {release.name} installs {GROUP}/{target} only with the "
                      f"{gate} feature gate, off by default")
        else:
            reason = ""
        if reason:
            losses.append(Loss(FieldPath.root("apiVersion"), reason))
    return document, losses


def _reading_loss(finding: FieldError, options: Options) -> Loss:
    """A decoding finding as a loss; a source version the release lacks said as such."""
    if finding.path == _API_VERSION:
        return Loss(finding.path, f"{finding.detail}: that apiserver cannot read the source")
    return Loss(finding.path, f"{finding.type.value}: {finding.detail}")


_API_VERSION = FieldPath.root("apiVersion")


def _with_class_names(spec: dict[str, Any]) -> dict[str, Any]:
    """`deviceClassName` has no omitempty in ExactDeviceRequest and DeviceSubRequest (v1,
    v1beta2 types.go: `json:"deviceClassName"`), so a class-less one reads back as "".
    `spec` is left as it is: what gains a class name is copied, the rest shared."""
    devices = spec.get("devices")
    requests = devices.get("requests") if isinstance(devices, dict) else None
    if not isinstance(requests, list):
        return spec
    written = [_request_with_class_names(r) if isinstance(r, dict) else r for r in requests]
    if all(new is old for new, old in zip(written, requests, strict=True)):
        return spec
    assert isinstance(devices, dict)
    return {**spec, "devices": {**devices, "requests": written}}


def _request_with_class_names(request: dict[str, Any]) -> dict[str, Any]:
    out = request
    exactly = request.get("exactly")
    if isinstance(exactly, dict) and "deviceClassName" not in exactly:
        # The first field of ExactDeviceRequest, as the encoder writes it.
        out = {**request, "exactly": {"deviceClassName": "", **exactly}}
    subs = request.get("firstAvailable")
    if not isinstance(subs, list):
        return out
    written = [_sub_with_class_name(sub) if isinstance(sub, dict) else sub for sub in subs]
    if all(new is old for new, old in zip(written, subs, strict=True)):
        return out
    return {**out, "firstAvailable": written}


def _sub_with_class_name(sub: dict[str, Any]) -> dict[str, Any]:
    if "deviceClassName" in sub:
        return sub
    # DeviceSubRequest: name, then deviceClassName.
    rest = {k: v for k, v in sub.items() if k != "name"}
    head = {"name": sub["name"]} if "name" in sub else {}
    return {**head, "deviceClassName": "", **rest}


def plain_copy(value: Any) -> Any:
    """A deep copy of JSON-like data (copy.deepcopy is several times slower for it)."""
    if isinstance(value, dict):
        return {k: plain_copy(v) if isinstance(v, dict | list) else v for k, v in value.items()}
    if isinstance(value, list):
        return [plain_copy(v) if isinstance(v, dict | list) else v for v in value]
    return value


def _without_empty_lists(spec: dict[str, Any]) -> dict[str, Any]:
    """`_omit_empty_lists` of a claim spec; most specs have no empty list at all, and
    their JSON then has no `[]` (an empty list always writes one; a `[]` in a string
    only costs the walk): such a spec is returned as it is, as the walk would return
    it, found in C rather than by visiting every mapping in Python."""
    try:
        if b"[]" not in orjson.dumps(spec):
            return spec
    except TypeError:  # not JSON (a key that is not a string, a huge integer): walked
        pass
    return _omit_empty_lists(spec)


def _omit_empty_lists(value: dict[str, Any], key: str = "") -> dict[str, Any]:
    """Mapping `value` without the empty `omitempty` lists the apiserver's JSON encoder
    drops, reference lists included (`requests` anywhere but under `devices`); opaque
    `parameters` are left whole.

    `value` is left as it is: a container with nothing to drop below it is returned
    itself (shared), others are copied; scalars are never passed to a call."""
    changes: dict[str, Any] | None = None
    for k, v in value.items():
        if k == "parameters":
            # `opaque.parameters` is a runtime.RawExtension: the driver's bytes, kept as
            # sent (the apiserver's encoder never looks inside them).
            continue
        if isinstance(v, dict):
            new: Any = _omit_empty_lists(v, k)
        elif isinstance(v, list):
            if not v and (k in _OMITEMPTY_LISTS or (k == "requests" and key != "devices")):
                new = _DROP
            else:
                new = _omit_in_list(v, k)
        else:
            continue
        if new is not v:
            changes = {} if changes is None else changes
            changes[k] = new
    if changes is None:
        return value
    return {k: changes.get(k, v) for k, v in value.items() if changes.get(k) is not _DROP}


_DROP = object()


def _omit_in_list(items: list[Any], key: str) -> list[Any]:
    """`_omit_empty_lists` for a list's items (which take the list's key)."""
    out: list[Any] | None = None
    for i, v in enumerate(items):
        if isinstance(v, dict):
            new: Any = _omit_empty_lists(v, key)
        elif isinstance(v, list):
            new = _omit_in_list(v, key)
        else:
            continue
        if new is not v:
            out = list(items) if out is None else out
            out[i] = new
    return items if out is None else out


def _claim_spec_holder(document: dict[str, Any], kind: str) -> tuple[dict[str, Any], FieldPath]:
    if kind == "ResourceClaimTemplate":
        spec = document.setdefault("spec", {})
        return (spec if isinstance(spec, dict) else {}), FieldPath.root("spec", "spec")
    return document, FieldPath.root("spec")


def _without_order_annotation(meta: Any) -> Any:
    """`meta` without the order annotation: a copy when it has one, else `meta` itself."""
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict) or ORDER_ANNOTATION not in annotations:
        return meta
    out = dict(meta)
    rest = {k: v for k, v in annotations.items() if k != ORDER_ANNOTATION}
    if rest:
        out["annotations"] = rest
    else:
        del out["annotations"]
    return out


__all__ = [
    "LAYOUT_TARGETS",
    "PARALLEL_KEY",
    "TARGETS",
    "VERSION_TARGETS",
    "Conversion",
    "Loss",
    "convert_document",
    "plain_copy",
]
