"""The one entry point every front end uses: read → default → convert → drop → rules.

`validate_object` follows the apiserver's create pipeline (`upstream-rules.md` §3.0);
`validate_update` its update pipeline (§3.6). Both accept any JSON-like value and
never raise for bad input. The webhook, the linter and the converter all call these.
"""

from __future__ import annotations

import marshal
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from draguard.schema.advice.claims import (
    IGNORE_ANNOTATION,
    Advice,
    Version,
    advise_claim_spec,
    check_dropped_fields,
    ignored_codes,
)
from draguard.schema.model.defaults import default_claim_spec, default_claim_status
from draguard.schema.model.diff import without_empties
from draguard.schema.model.errors import (
    ErrorType,
    FieldError,
    forbidden,
    invalid,
    required,
    too_many,
    unknown_field,
)
from draguard.schema.model.fieldmap import (
    ORDER_ANNOTATION,
    Origin,
    decode_order,
    parallel_to_nested,
    spec_v1beta1_to_hub,
)
from draguard.schema.model.fieldmap import PARALLEL_KEY as _PARALLEL
from draguard.schema.model.formats import DNS1123_LABEL_MAX
from draguard.schema.model.gates import drop_disabled_fields
from draguard.schema.model.options import DEFAULT_OPTIONS, Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import KINDS, REQUESTS_MAX, Release
from draguard.schema.model.shapes import (
    OBJECT_META,
    DocumentType,
    Obj,
    document_node,
    identify,
    read,
)
from draguard.schema.rules.declarative import merge_declarative
from draguard.schema.rules.metadata import validate_object_meta, validate_template_meta
from draguard.schema.rules.spec import ONE_OF_REQUIRED, rules_for

__all__ = ["ORDER_ANNOTATION", "Verdict", "prepare", "validate_object", "validate_update"]

# Paths are immutable, so the fixed ones are made once rather than per document.
_ROOT = FieldPath()
_METADATA = FieldPath.root("metadata")
_CLAIM_SPEC = FieldPath.root("spec")
_TEMPLATE_CLAIM_SPEC = FieldPath.root("spec", "spec")
_TEMPLATE_METADATA = FieldPath.root("spec", "metadata")


@dataclass(slots=True)
class Verdict:
    """The outcome for one document (not changed after it is made).

    Not a frozen dataclass: the webhook makes one per request, and a frozen dataclass
    sets each of its twelve fields through `object.__setattr__`, where plain slots are
    set directly.

    `skipped` is true for anything that is not a ResourceClaim or ResourceClaimTemplate
    of a known resource.k8s.io version; such documents carry no errors.
    `shape` is `v1`, `v1beta2`, `v1beta1` or `parallel`. `internal` is the object in the
    hub (v1) shape after defaulting, conversion and gate drops, when it could be built;
    `dropped` lists what the release's disabled gates removed (§3.8).
    `derived` is where a caller keeps what it works out from the spec alone (the
    webhook's warnings): verdicts on one remembered spec (`Options.remember_specs`)
    share one dict, so that work is done once per spec; any other verdict has its own.
    """

    kind: str | None
    api_version: str | None
    name: str | None
    namespace: str | None
    shape: str | None
    errors: tuple[FieldError, ...] = ()
    skipped: bool = False
    skip_reason: str = ""
    internal: dict[str, Any] | None = field(default=None, compare=False)
    dropped: tuple[FieldPath, ...] = ()
    warnings: tuple[Advice, ...] = ()
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def valid(self) -> bool:
        return not self.skipped and not self.errors


@dataclass(slots=True)
class Prepared:
    """A document taken through the create pipeline up to (not including) the rules."""

    doc_type: DocumentType
    document: dict[str, Any]  # the clean copy; for parallel input its spec is nested
    claim_spec: dict[str, Any]  # hub shape, defaulted, gate-dropped (inside `document`)
    spec_path: FieldPath
    findings: list[FieldError]  # Unknown / Malformed from reading
    origins: list[Origin] | None  # parallel input: where each nested request came from
    dropped: tuple[FieldPath, ...]


def prepare(obj: dict[str, Any], doc_type: DocumentType, options: Options) -> Prepared:
    """Read, default (§4), convert (§5.2) and drop gated fields (§3.8), as the apiserver does."""
    release = options.release
    node, api_version, known = _plan(doc_type, release)
    reading = read(obj, node, _ROOT, api_version)
    document: dict[str, Any] = reading.value if isinstance(reading.value, dict) else {}
    findings = reading.findings
    if not known:
        findings.insert(
            0,
            unknown_field(
                FieldPath.root("apiVersion"),
                f"{doc_type.api_version} does not exist in Kubernetes {release.name}",
            ),
        )
    meta = document.setdefault("metadata", {})
    if options.default_namespace and not meta.get("namespace"):
        meta["namespace"] = options.default_namespace
    holder, spec_path = _spec_holder(document, doc_type.kind)
    claim_spec: dict[str, Any] = holder.setdefault("spec", {})
    default_claim_spec(claim_spec, doc_type.version)
    status = document.get("status")
    if status and doc_type.kind == "ResourceClaim":  # (a create rarely carries a status)
        default_claim_status(status)
    origins = None
    if doc_type.parallel:
        devices = claim_spec.get("devices", {})
        nested, origins = parallel_to_nested(devices, decode_order(meta.get("annotations")))
        claim_spec["devices"] = nested
    if doc_type.version == "v1beta1":
        claim_spec = spec_v1beta1_to_hub(claim_spec)
        holder["spec"] = claim_spec
    dropped = tuple(drop_disabled_fields(claim_spec, spec_path, release, options.feature_gates))
    return Prepared(doc_type, document, claim_spec, spec_path, findings, origins, dropped)


@cache
def _plan(doc_type: DocumentType, release: Release) -> tuple[Obj, str, bool]:
    """The shape to read, the apiVersion and whether the release has that version."""
    node = document_node(doc_type.kind, doc_type.version, release, doc_type.parallel)
    return node, doc_type.api_version, release.has_api_version(doc_type.version)


def _spec_holder(document: dict[str, Any], kind: str) -> tuple[dict[str, Any], FieldPath]:
    """The mapping that holds the claim spec under key `spec`, and the spec's path."""
    if kind == "ResourceClaimTemplate":
        return document.setdefault("spec", {}), _TEMPLATE_CLAIM_SPEC
    return document, _CLAIM_SPEC


def validate_object(obj: Any, *, options: Options = DEFAULT_OPTIONS) -> Verdict:
    """Validate one object as the apiserver would on create.

    The verdict on everything but `metadata` is remembered per distinct content (see
    `_SpecMemo`): the claims a controller makes from one template, one per pod,
    differ only in their metadata, so only that is validated again.
    """
    doc_type = identify(obj)
    if doc_type is None:
        return _skipped(obj)
    key = _MEMO.key(obj, options) if options.remember_specs else None
    remembered = _MEMO.get(key)
    if remembered is not None:
        verdict = _from_memo(obj, doc_type, options, remembered)
        if verdict is not None:
            return verdict
    prepared = prepare(obj, doc_type, options)
    if prepared.findings:
        # §3.0 step 1: the apiserver answers a decoding error (400) before any rule runs.
        return _verdict(prepared, list(prepared.findings))
    # Without namespace labels (lint) there is no admin-access check (§3.7) to run.
    admin = (
        tuple(_admin_access_errors(prepared.claim_spec, options))
        if options.namespace_labels is not None
        else ()
    )
    spec_errors = tuple(_spec_errors(prepared, options))
    warnings = tuple(advise(prepared, options))
    derived: dict[str, Any] = {}
    if key is not None and _MEMO.admits(key):
        _MEMO.store(key, _Remembered(admin, spec_errors, warnings, prepared, derived))
    meta_errors = validate_object_meta(prepared.document["metadata"], _METADATA)
    return _verdict(prepared, [*admin, *meta_errors, *spec_errors], warnings, derived)


@dataclass(frozen=True, slots=True)
class _Remembered:
    """What a verdict holds that depends on nothing in `metadata` (but the annotations in the key)."""

    admin_errors: tuple[FieldError, ...]
    spec_errors: tuple[FieldError, ...]  # template spec.metadata, then the claim spec
    warnings: tuple[Advice, ...]
    prepared: Prepared  # read-only from here on
    derived: dict[str, Any]  # `Verdict.derived` of every verdict on this spec


_MARSHAL_VERSION = 2  # see `_SpecMemo`
# Release minor and gates, patch, profiles, namespace labels, alpha gates turned on.
_OptionsKey = tuple[
    int, tuple[tuple[str, bool], ...], int | None, tuple[str, ...],
    tuple[tuple[str, str], ...] | None, tuple[str, ...],
]
# The content of all but metadata (see `_SpecMemo`), the relevant annotations, options.
_Key = tuple[Any, ...]


class _SpecMemo:
    """A bounded memo of spec verdicts, keyed by the content of all but `metadata`.

    The key also holds the annotations that change a verdict (request order, ignored
    codes) and every option except the default namespace. Plain dict operations only,
    so concurrent threads need no lock; when full it starts again.

    The content is written as JSON by orjson, or else by `marshal` (see `_content`):
    either way equal bytes mean equal values with equal types. The same spec with its
    keys in another order makes other bytes: only a miss, never a wrong verdict.
    """

    MAX_ENTRIES = 1024
    # Bounded in bytes too (issue 15 §3): an entry holds its content (the key) and the
    # prepared document read from the same spec, about as large again, so it is counted
    # as twice its content (tests/hostile/test_memory.py measures a worker's RSS); a spec
    # larger than MAX_ENTRY_BYTES (no real claim comes near) is not remembered at all.
    MAX_BYTES = 32 * 1024 * 1024
    MAX_ENTRY_BYTES = 256 * 1024
    _ENTRY_FACTOR = 2

    # Admission on the second sight: a spec is remembered the second time it is judged
    # (its key's hash seen before), not the first. Claims made from one template hit from
    # the third on; a stream of distinct specs (what most claims are) no longer keeps each
    # one's prepared document alive until the memo starts again, which cost a distinct
    # claim more CPU than its key and insert (the objects kept, the collector walking them,
    # freeing a full memo at once: bench/RESULTS.md, issue 21 `rulecost`). Only hashes are
    # kept here: a collision admits a spec early, never gives a wrong verdict.
    MAX_SEEN = 4 * MAX_ENTRIES

    def __init__(self) -> None:
        self._entries: dict[_Key, _Remembered] = {}
        self._bytes = 0
        self._seen: set[int] = set()
        self._options_keys: dict[int, tuple[Options, _OptionsKey]] = {}

    def key(self, obj: dict[str, Any], options: Options) -> _Key | None:
        meta = obj.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        relevant: Any = None
        if isinstance(annotations, dict):
            relevant = (annotations.get(ORDER_ANNOTATION), annotations.get(IGNORE_ANNOTATION))
            if not all(value is None or type(value) is str for value in relevant):
                relevant = _content(relevant)  # not text: bytes, which no tuple equals
                if relevant is None:
                    return None
        rest = dict(obj)  # all but metadata, in the object's order
        rest.pop("metadata", None)
        content = _content(rest)
        if content is None:
            return None
        return (content, relevant, *self._options_key(options))

    def _options_key(self, options: Options) -> _OptionsKey:
        # Per Options object (callers reuse theirs), checked by identity, not rebuilt.
        known = self._options_keys.get(id(options))
        if known is not None and known[0] is options:
            return known[1]
        labels = options.namespace_labels
        release = options.release
        key = (
            # The release's fields (what its equality compares), not the Release: a tuple
            # of plain values hashes in C, where a dataclass's __hash__ is a Python call.
            release.minor,
            release.gates,  # its --feature-gates
            options.kubernetes_patch,
            tuple(sorted(options.profiles)),
            None if labels is None else tuple(sorted(labels.items())),
            tuple(sorted(options.feature_gates)),
        )
        # Remembering holds the Options, and with it the request's namespace: a client's
        # namespace may be megabytes long, real ones are DNS labels (issue 15 §3).
        if len(options.default_namespace or "") > DNS1123_LABEL_MAX:
            return key
        if len(self._options_keys) >= self.MAX_ENTRIES:
            self._options_keys = {}
        self._options_keys[id(options)] = (options, key)
        return key

    def get(self, key: _Key | None) -> _Remembered | None:
        return None if key is None else self._entries.get(key)

    def put(self, key: _Key | None, remembered: _Remembered) -> None:
        if key is not None and self.admits(key):
            self.store(key, remembered)

    def admits(self, key: _Key) -> bool:
        """Whether the spec of `key` is to be remembered now (its second sight, see
        MAX_SEEN); a first sight is recorded. Asked before the entry is made, since
        most distinct specs are seen once."""
        if len(key[0]) > self.MAX_ENTRY_BYTES:
            return False
        seen, digest = self._seen, hash(key)
        if digest not in seen:  # the first sight
            if len(seen) >= self.MAX_SEEN:
                seen.clear()
            seen.add(digest)
            return False
        return True

    def store(self, key: _Key, remembered: _Remembered) -> None:
        """Remember `remembered` under `key` (one that `admits` let in)."""
        size = self._ENTRY_FACTOR * len(key[0])
        if len(self._entries) >= self.MAX_ENTRIES or self._bytes + size > self.MAX_BYTES:
            self._entries, self._bytes = {}, 0
        # orjson leaves its output in a buffer up to about twice its length (a 224 KB
        # spec held 507 KiB): the key kept is an exact copy, so that `size` is true.
        key = (bytes(memoryview(key[0])), *key[1:])
        self._entries[key] = remembered
        self._bytes += size


_MEMO = _SpecMemo()


def _content(value: Any) -> bytes | None:
    """Bytes that only an equal value with equal types writes; None when there are none.

    orjson's JSON first (four times faster than marshal): over what JSON gives (str
    keys; str, bool, list, dict, ints within 64 bits and finite floats) it is
    one-to-one: a float always has a `.` or an exponent, an int never, `true` is not
    `1`, and a string is quoted. It writes NaN and infinities as `null`, the same as
    None, so output with `null` anywhere (even inside a string) goes to marshal, as
    does what orjson refuses (ints beyond 64 bits, lone surrogates). marshal's format
    version 2, because later ones mark objects by their reference counts and
    interning, which would make the bytes of equal specs differ between requests.
    """
    import orjson  # here: only the webhook keeps a memo, and orjson imports uuid and platform

    try:
        content = orjson.dumps(value)
        if b"null" not in content:
            return content
    except TypeError:
        pass
    try:
        return b"m" + marshal.dumps(value, _MARSHAL_VERSION)  # never equal to JSON bytes
    except ValueError:  # not plain data, or nested too deep: validate without the memo
        return None


def _from_memo(
    obj: dict[str, Any], doc_type: DocumentType, options: Options, remembered: _Remembered
) -> Verdict | None:
    """A verdict from the memo plus fresh metadata checks; None when metadata needs the full path."""
    # Every kind, version and shape has this metadata node (tests/schema/test_memo.py).
    reading = read(obj.get("metadata", {}), OBJECT_META, _METADATA, doc_type.api_version)
    if reading.findings or not isinstance(reading.value, dict):
        return None
    meta = reading.value
    if options.default_namespace and not meta.get("namespace"):
        meta["namespace"] = options.default_namespace
    prepared = remembered.prepared
    document = {**prepared.document, "metadata": meta}
    meta_errors = validate_object_meta(meta, _METADATA)
    errors = (*remembered.admin_errors, *meta_errors, *remembered.spec_errors)
    return _verdict_of(doc_type, document, prepared.dropped, errors, remembered.warnings,
                       remembered.derived)


def advise(prepared: Prepared, options: Options) -> list[Advice]:
    """Issue 7's warnings at the user's paths, less the codes the object silences."""
    # (No dropped field, the usual case: no generator to start.)
    advice = list(check_dropped_fields(prepared.dropped, options.release)) if prepared.dropped else []
    advice += advise_claim_spec(
        prepared.claim_spec,
        prepared.spec_path,
        version=_version(options.release, options.kubernetes_patch),
        profiles=options.profiles,
        per_pod=prepared.doc_type.kind == "ResourceClaimTemplate",
    )
    if not advice:
        return advice
    ignored = ignored_codes(prepared.document.get("metadata"))
    if ignored:
        advice = [item for item in advice if item.code not in ignored]
    if prepared.origins is not None:
        advice = [_at_parallel_path(item, prepared.spec_path, prepared.origins) for item in advice]
    return advice


def _at_parallel_path(item: Advice, spec_path: FieldPath, origins: list[Origin]) -> Advice:
    devices_path = spec_path.child("devices")
    mapped = _map_parallel_path(item.path, devices_path.child("requests"), devices_path, origins)
    if mapped is None:
        return item
    return Advice(mapped[1], item.code, item.message, item.release_note)


@cache
def _version(release: Release, patch: int | None) -> Version:
    return Version(release, patch)


def _create_errors(prepared: Prepared, options: Options) -> Iterator[FieldError]:
    """§3.0 step 5, in upstream's order (§3.4)."""
    yield from _admin_access_errors(prepared.claim_spec, options)
    yield from validate_object_meta(prepared.document["metadata"], _METADATA)
    yield from _spec_errors(prepared, options)


def _spec_errors(prepared: Prepared, options: Options) -> list[FieldError]:
    """Template `spec.metadata`, then the claim spec (at the parallel paths for that shape)."""
    rules = rules_for(options.release, options.feature_gates)
    document, kind = prepared.document, prepared.doc_type.kind
    errors: list[FieldError] = []
    if kind == "ResourceClaimTemplate":
        errors += validate_template_meta(document["spec"].get("metadata", {}), _TEMPLATE_METADATA)
    spec_errors = rules.validate_claim_spec(prepared.claim_spec, prepared.spec_path)
    if spec_errors and options.release.declarative_beta:  # (nothing to merge in a valid spec)
        spec_errors = merge_declarative(list(spec_errors), prepared.claim_spec,
                                        prepared.spec_path, prepared.doc_type.version)
    if prepared.origins is None:
        errors += spec_errors
    else:
        errors += _parallel_errors(prepared, spec_errors)
    return errors


def _admin_access_errors(spec: dict[str, Any], options: Options) -> Iterator[FieldError]:
    """§3.7: only the first request with adminAccess is checked, at a path without `exactly`."""
    labels, release = options.namespace_labels, options.release
    if labels is None or not release.admin_access:
        return
    for i, request in enumerate(spec.get("devices", {}).get("requests", [])):
        exactly = request.get("exactly") if isinstance(request, dict) else None
        if isinstance(exactly, dict) and exactly.get("adminAccess") is True:
            label = release.admin_access_label
            if labels.get(label) != "true":
                yield forbidden(
                    FieldPath.root("spec", "devices", "requests").index(i).child("adminAccess"),
                    f"admin access to devices requires the `{label}: true` label on the containing namespace",
                )
            return


def _parallel_errors(prepared: Prepared, errors: Iterable[FieldError]) -> Iterator[FieldError]:
    """Contract §2: the nested rules at the parallel document's own paths, plus its own rules."""
    origins = prepared.origins or []
    devices_path = prepared.spec_path.child("devices")
    entries = _parallel_entries(prepared)
    if len(entries) > REQUESTS_MAX:
        yield too_many(devices_path.child(_PARALLEL), len(entries), REQUESTS_MAX)
    requests_path = devices_path.child("requests")
    for err in errors:
        mapped = _map_parallel_path(err.path, requests_path, devices_path, origins)
        if mapped is None:
            yield err
            continue
        origin, path = mapped
        if (
            origin.list_name == _PARALLEL
            and err.type is ErrorType.REQUIRED
            and err.detail == ONE_OF_REQUIRED
        ):
            yield required(path.child("options"))  # contract §2: an entry without options
            continue
        yield err.with_path(path)


def _parallel_entries(prepared: Prepared) -> list[Any]:
    return [o for o in prepared.origins or [] if o.list_name == _PARALLEL]


def _map_parallel_path(
    path: FieldPath, requests_path: FieldPath, devices_path: FieldPath, origins: list[Origin]
) -> tuple[Origin, FieldPath] | None:
    parts, base = path.parts, requests_path.parts
    if len(parts) <= len(base) or parts[: len(base)] != base:
        return None
    index = parts[len(base)]
    if not isinstance(index, int) or index >= len(origins):
        return None
    origin = origins[index]
    rest = list(parts[len(base) + 1 :])
    if origin.list_name == _PARALLEL and rest and rest[0] == "firstAvailable":
        rest[0] = "options"
    new = devices_path.child(origin.list_name).index(origin.index)
    return origin, FieldPath(new.parts + tuple(rest))


def validate_update(old: Any, new: Any, *, options: Options = DEFAULT_OPTIONS) -> Verdict:
    """Validate an update: metadata rules, immutable metadata identity, immutable spec (§3.6)."""
    new_type, old_type = identify(new), identify(old)
    if new_type is None:
        return _skipped(new)
    prepared = prepare(new, new_type, options)
    errors: list[FieldError] = list(prepared.findings)
    meta_path = FieldPath.root("metadata")
    errors += validate_object_meta(prepared.document["metadata"], meta_path)
    if old_type is None or old_type.kind != new_type.kind:
        errors.append(invalid(FieldPath.root("kind"), new_type.kind, "field is immutable"))
        return _verdict(prepared, errors)
    old_prepared = prepare(old, old_type, options)
    errors += _immutable_meta(
        old_prepared.document["metadata"], prepared.document["metadata"], meta_path
    )
    old_spec, new_spec = _comparable_spec(old_prepared), _comparable_spec(prepared)
    if without_empties(old_spec) != without_empties(new_spec):
        errors.append(
            invalid(FieldPath.root("spec"), _go_field_names(new_spec), "field is immutable")
        )
    if new_type.kind == "ResourceClaimTemplate" and options.release.minor == 34:
        # The 1.34-era template strategy re-ran the full create validation (§3.6).
        errors += _create_errors(prepared, options)
    return _verdict(prepared, errors)


def _immutable_meta(
    old: dict[str, Any], new: dict[str, Any], path: FieldPath
) -> Iterator[FieldError]:
    for key in ("name", "namespace", "uid"):
        if old.get(key, "") and new.get(key, "") != old.get(key, ""):
            yield invalid(path.child(key), new.get(key, ""), "field is immutable")


def _comparable_spec(prepared: Prepared) -> dict[str, Any]:
    """The whole `spec` in the hub shape (for templates including `spec.metadata`)."""
    spec = prepared.document.get("spec", {})
    return spec if isinstance(spec, dict) else {}


def _go_field_names(value: Any) -> Any:
    """Render like the apiserver's JSON of the internal Go struct (capitalised names, §6.7)."""
    if isinstance(value, dict):
        return {k[:1].upper() + k[1:]: _go_field_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go_field_names(v) for v in value]
    return value


def _verdict(
    prepared: Prepared,
    errors: list[FieldError],
    warnings: tuple[Advice, ...] = (),
    derived: dict[str, Any] | None = None,
) -> Verdict:
    return _verdict_of(prepared.doc_type, prepared.document, prepared.dropped,
                       tuple(errors), warnings, derived)


def _verdict_of(
    doc_type: DocumentType,
    document: dict[str, Any],
    dropped: tuple[FieldPath, ...],
    errors: tuple[FieldError, ...],
    warnings: tuple[Advice, ...],
    derived: dict[str, Any] | None,
) -> Verdict:
    meta = document.get("metadata", {})
    return Verdict(doc_type.kind, doc_type.api_version,
                   meta.get("name") or meta.get("generateName"), meta.get("namespace"),
                   doc_type.shape, errors, False, "", document, dropped, warnings,
                   {} if derived is None else derived)


def _skipped(obj: Any) -> Verdict:
    kind = obj.get("kind") if isinstance(obj, dict) else None
    api_version = obj.get("apiVersion") if isinstance(obj, dict) else None
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return Verdict(
        kind=kind if isinstance(kind, str) else None,
        api_version=api_version if isinstance(api_version, str) else None,
        name=name if isinstance(name, str) else None,
        namespace=namespace if isinstance(namespace, str) else None,
        shape=None,
        skipped=True,
        skip_reason=_skip_reason(kind, api_version),
    )


def _skip_reason(kind: Any, api_version: Any) -> str:
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return "not a Kubernetes object (no kind/apiVersion)"
    if kind in KINDS:
        return f"{kind} in {api_version} is not a version draguard knows (v1, v1beta2, v1beta1)"
    return f"{kind} is not a DRA claim or template"
