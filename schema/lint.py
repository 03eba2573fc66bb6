"""Lint: each document through the rule set, its findings placed in the user's own file.

`check_chunk` is pure (a chunk in, results out) so that `run` can spread documents over
processes. YAML positions come from the parse itself (`sources.parse`); a JSON
document's text is walked for positions only when it has findings (`jsondecode.Nodes`).

Where a finding points (`contract.md` §3): rule paths are those of the internal shape,
so for v1beta1 input `requests[i].exactly.X` is looked up as the flat `requests[i].X`
(`upstream-rules.md` §5.0); parallel-shape and v1/v1beta2 paths are already the user's.
The §3.7 admin-access error has neither `.exactly` nor a template's `spec.spec` (an
upstream quirk), so both are tried. A path that does not exist (a Required field) points
at its nearest existing parent.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from draguard.schema.advice.claims import Version, ignored_codes
from draguard.schema.advice.workloads import POD_SPEC_PATHS, check_workload, index_claims
from draguard.schema.model import errors, pool
from draguard.schema.model.errors import FieldError
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath, Segment
from draguard.schema.model.pool import (  # re-exported: `draguard lint` names them here
    AUTO_DOCUMENTS as AUTO_DOCUMENTS,
)
from draguard.schema.model.pool import WorkerDied as WorkerDied
from draguard.schema.model.pool import auto_jobs as auto_jobs
from draguard.schema.model.pool import usable_cores as usable_cores
from draguard.schema.model.releases import KINDS
from draguard.schema.model.shapes import json_type, unserved_version
from draguard.schema.read import templates
from draguard.schema.read.blockyaml import Head, Lines
from draguard.schema.read.duplicates import Duplicate
from draguard.schema.read.jsondecode import Nodes
from draguard.schema.read.lists import Item, cut_list
from draguard.schema.read.sources import (
    Chunk,
    Parsed,
    SyntaxProblem,
    Unreadable,
    expand_paths,
    locate,
    parse,
    peek,
    positions,
    read_source,
    split_documents,
)
from draguard.schema.report import DocumentResult, Finding, LintWarning, Parts
from draguard.schema.validate import Verdict, validate_object

if TYPE_CHECKING:

    from draguard.schema.cluster.checks import CheckSettings
    from draguard.schema.cluster.facts import ClusterFacts
    from draguard.schema.read.yamlevents import Positions

Validator = Callable[..., Verdict]
"""`validate_object`'s signature: `(obj, *, options) -> Verdict`."""

_TOP = FieldPath()  # where a document's own object sits (a List's items: `_item`)


class _Located:
    """Places paths in a chunk; JSON positions are read only when first needed."""

    __slots__ = ("_pending", "_root", "_unique", "_walk", "chunk")

    def __init__(self, chunk: Chunk, parsed: Parsed) -> None:
        self.chunk = chunk
        self._root: Positions | Lines | Nodes | None = parsed.positions
        self._pending = parsed.positions is None and chunk.format == "json"
        self._unique = not parsed.duplicates  # JSON: read lazily (`Nodes`)
        self._walk = self._root.walk if isinstance(self._root, Lines) else None

    def place(self, candidates: Sequence[FieldPath]) -> tuple[int, int]:
        if self._pending:
            self._root = positions(self.chunk, unique=self._unique)
            self._pending = False
            self._walk = self._root.walk if isinstance(self._root, Nodes) else None
        walk = self._walk
        if walk is not None and len(candidates) == 1:
            # Nearly every finding: `locate` without its loop and Position, which for a
            # lone candidate places it at the deepest node found either way.
            _, line, column = walk(candidates[0].parts)
            return self.chunk.line + line + 1, column + 1
        position = locate(self.chunk, self._root, candidates)
        return position.line, position.column

    def start(self, prefix: FieldPath) -> int:
        """The line where the object starts (a JSON document's first line, unread)."""
        if self._pending:
            return self.chunk.line + 1
        return self.place([prefix])[0]


def check_chunk(
    chunk: Chunk, *, options: Options, validate: Validator = validate_object
) -> list[DocumentResult]:
    """Every object of one document (one, or the items of a list), checked and located.

    A document of a kind lint does not check is recognised from its head when it can
    be (`sources.peek`) and skipped without building its value.

    The cycle collector is paused meanwhile: a document's values are trees, and the
    collector's passes over them (a `kind: List` of thousands of claims is one value,
    alive until its last item is checked) took as long as checking them. Cyclic
    garbage made meanwhile is collected once it runs again.

    Raises `Recut` for a chunk cut provisionally that does not decode whole.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return _check_chunk(chunk, options, validate)
    finally:
        if paused:
            gc.enable()


class Recut(Exception):
    """A chunk cut provisionally (`Chunk.provisional`) does not decode whole: its source
    is to be split exactly (`sources.split_exactly`) and checked again."""


def _check_chunk(chunk: Chunk, options: Options, validate: Validator) -> list[DocumentResult]:
    placeholder = templates.find(chunk.text)
    if placeholder is not None:
        if chunk.provisional and isinstance(parse(chunk), SyntaxProblem):
            raise Recut(chunk.file)
        return [_templated(chunk, placeholder)]
    head = peek(chunk, _unchecked_kind)
    if head is not None:
        skipped = _skip_unread(chunk, head, options, validate)
        if skipped is not None:
            return [skipped]
    parsed = parse(chunk)
    if isinstance(parsed, SyntaxProblem):
        if chunk.provisional:
            raise Recut(chunk.file)
        return [_broken(chunk, parsed)]
    value = parsed.value
    if value is None:  # `---` followed by nothing but `null` or `~`
        return []
    located = _Located(chunk, parsed)
    items = _list_items(value)
    if items is None:
        results = [_check_object(located, value, _TOP, None, options, validate)]
    else:
        results = [
            _check_object(located, item, _item(j), j, options, validate)
            for j, item in enumerate(items)
        ]
    if parsed.duplicates:
        results = [_with_duplicates(r, parsed.duplicates, chunk) for r in results]
    return results


def _with_duplicates(
    result: DocumentResult, duplicates: tuple[Duplicate, ...], chunk: Chunk
) -> DocumentResult:
    """Issue 17: each key written twice in a claim or template is an error at its second
    place, naming both lines; the rest was checked on the last value, as kubectl sends it."""
    if result.kind not in KINDS:
        return result
    prefix = (_TOP if result.item is None else _item(result.item)).parts
    found = tuple(
        Finding(FieldPath(d.path[len(prefix):]), errors.ErrorType.MALFORMED.value,
                errors.malformed(FieldPath(), d.message(chunk.line)).message,
                chunk.line + d.line + 1, d.column + 1 + (chunk.column if d.line == 0 else 0))
        for d in duplicates if d.path[: len(prefix)] == prefix and len(d.path) > len(prefix)
    )
    if not found:
        return result
    return result._replace(errors=found + result.errors, skipped=False, skip_reason="")


def _templated(chunk: Chunk, placeholder: templates.Placeholder) -> DocumentResult:
    """A template is not read at all: one answer, counted apart (issue 17)."""
    line = chunk.line + placeholder.line + 1
    column = placeholder.column + 1 + (chunk.column if placeholder.line == 0 else 0)
    return DocumentResult(chunk.file, chunk.index, None, None, None, None, skipped=True,
                          skip_reason=placeholder.message, line=line, column=column,
                          templated=True)


def _unchecked_kind(kind: str) -> bool:
    """A kind whose documents lint only counts (a list's items may be claims)."""
    return kind not in KINDS and not kind.endswith("List")


def _skip_unread(
    chunk: Chunk, head: Head, options: Options, validate: Validator
) -> DocumentResult | None:
    """The skipped result of a document known by its head; None if the rule set checks
    its kind after all (then the document is read in full)."""
    meta = {k: v for k, v in (("name", head.name), ("namespace", head.namespace)) if v}
    obj = {"apiVersion": head.api_version, "kind": head.kind, "metadata": meta}
    if unserved_version(obj, options.release) is not None:
        return None  # a claim in a version no release serves: reported in full
    try:
        verdict = validate(obj, options=options)
    except Exception:  # the full reading reports it as this object's crash
        return None
    if not verdict.skipped:
        return None
    return DocumentResult(chunk.file, chunk.index, verdict.api_version, verdict.kind,
                          verdict.name, verdict.namespace, skipped=True,
                          skip_reason=verdict.skip_reason, line=chunk.line + head.line + 1)


def _list_items(value: Any) -> list[Any] | None:
    """The items of a `kind: List` (or `<Kind>List`) document, else None.

    Items of a typed list such as `ResourceClaimList` often omit their own
    apiVersion and kind, as the apiserver returns them; they inherit the list's.
    """
    if not isinstance(value, dict):
        return None
    kind, items = value.get("kind"), value.get("items")
    if not isinstance(kind, str) or not kind.endswith("List") or not isinstance(items, list):
        return None
    if kind == "List":
        return items
    inherited = {"apiVersion": value.get("apiVersion"), "kind": kind[: -len("List")]}
    return [{**inherited, **item} if isinstance(item, dict) else item for item in items]


def _check_object(
    located: _Located, obj: Any, prefix: FieldPath, item: int | None,
    options: Options, validate: Validator,
) -> DocumentResult:
    chunk = located.chunk
    if not isinstance(obj, dict):
        # The rule set's wording for a wrong JSON type (`shapes.read`).
        err = errors.malformed(FieldPath(), f"expected object, got {json_type(obj)}")
        line, column = located.place([prefix])
        return DocumentResult(chunk.file, chunk.index, None, None, None, None,
                              (_finding(err, line, column),), item=item, line=line)
    try:
        verdict = validate(obj, options=options)
    except Exception as exc:  # a bug in the rule set must not hide the other documents
        return _crashed(located, obj, prefix, item, exc)
    unserved = unserved_version(obj, options.release) if verdict.skipped else None
    if unserved is not None:
        # Issue 17: a claim in v1alpha3 (or any version no release serves) is what the
        # apiserver refuses, not something to skip. Lint only: the webhook never sees one.
        line, column = located.place([prefix.child("apiVersion")])
        return DocumentResult(chunk.file, chunk.index, verdict.api_version, verdict.kind,
                              verdict.name, verdict.namespace,
                              (_finding(unserved, line, column),), item=item,
                              line=located.start(prefix))
    if verdict.skipped:
        return DocumentResult(chunk.file, chunk.index, verdict.api_version, verdict.kind,
                              verdict.name, verdict.namespace, item=item, skipped=True,
                              skip_reason=verdict.skip_reason, line=located.start(prefix))
    warnings = verdict.warnings
    if not verdict.errors and not warnings:
        return DocumentResult(chunk.file, chunk.index, verdict.api_version, verdict.kind,
                              verdict.name, verdict.namespace, item=item,
                              line=located.start(prefix))
    found = tuple(
        _finding(err, *located.place(candidate_paths(err.path, verdict.shape, prefix)))
        for err in verdict.errors
    ) if verdict.errors else ()  # most findings are warnings: no generator for none
    advice = tuple(
        LintWarning(w.path, w.code, w.message,
                    *located.place(candidate_paths(w.path, verdict.shape, prefix)))
        for w in warnings
    )
    return DocumentResult(chunk.file, chunk.index, verdict.api_version, verdict.kind,
                          verdict.name, verdict.namespace, found, advice, item=item,
                          line=located.start(prefix))


def candidate_paths(
    path: FieldPath, shape: str | None, prefix: FieldPath = _TOP
) -> list[FieldPath]:
    """The node paths in the user's document that a rule path may stand for, best first."""
    parts = path.parts
    flat = shape == "v1beta1" and "exactly" in parts
    if not flat and parts[-1:] != ("adminAccess",):  # nearly every path: itself only
        return [FieldPath(prefix.parts + parts) if prefix.parts else path]
    out: list[tuple[Segment, ...]] = []
    if flat:
        out.append(_flatten_exactly(parts))
    out.append(parts)
    out.extend(_admin_access_variants(parts))
    return [FieldPath(prefix.parts + p) for p in dict.fromkeys(out)]


def _flatten_exactly(parts: tuple[Segment, ...]) -> tuple[Segment, ...]:
    """`…requests[i].exactly.X` → `…requests[i].X` (v1beta1 is flat, §5.0)."""
    return tuple(
        part for k, part in enumerate(parts)
        if not (part == "exactly" and k >= 2 and isinstance(parts[k - 1], int)
                and parts[k - 2] == "requests")
    )


_ADMIN_ACCESS_PATH = ("spec", "devices", "requests")


def _admin_access_variants(parts: tuple[Segment, ...]) -> list[tuple[Segment, ...]]:
    """§3.7: `spec.devices.requests[i].adminAccess` for claims and templates in any shape."""
    if len(parts) != 5 or parts[:3] != _ADMIN_ACCESS_PATH or parts[4] != "adminAccess":
        return []
    i = parts[3]
    nested = ("spec", "devices", "requests", i, "exactly", "adminAccess")
    return [nested, ("spec", *parts), ("spec", *nested)]


def _finding(err: FieldError, line: int, column: int) -> Finding:
    return Finding(err.path, err.type.value, err.message, line, column)


def _broken(chunk: Chunk, problem: SyntaxProblem) -> DocumentResult:
    err = errors.malformed(FieldPath(), problem.detail)
    return DocumentResult(chunk.file, chunk.index, None, None, None, None,
                          (_finding(err, problem.line, problem.column),), line=problem.line)


def _crashed(
    located: _Located, obj: dict[Any, Any], prefix: FieldPath, item: int | None,
    exc: Exception,
) -> DocumentResult:
    chunk = located.chunk
    err = errors.internal_error(
        FieldPath(), f"draguard could not check this object ({type(exc).__name__}: {exc})")
    line, column = located.place([prefix])
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return DocumentResult(chunk.file, chunk.index, _text(obj.get("apiVersion")),
                          _text(obj.get("kind")), _text(meta.get("name")),
                          _text(meta.get("namespace")), (_finding(err, line, column),),
                          item=item, line=line)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# --- running over many documents ------------------------------------------------------

def run(
    chunks: Sequence[Chunk], *, options: Options, validate: Validator = validate_object,
    jobs: int | None = 1, parts: Parts | None = None,
) -> list[DocumentResult]:
    """Check the chunks (in `jobs` processes when there is enough to share; as
    `pool.jobs_for`: None decides by the input's size, 0 or less takes every core), then
    the Pods and workload controllers among them against the claims of the same input.

    With `parts` (`Report.parts_for`), each result that comes from the pool's workers
    is rendered as it comes in, while they still run, and is returned as the report
    keeps it (`Parts.made_from`); in one process nothing is rendered ahead (the report
    renders its results itself, on the same core, either way).

    A block-style `kind: List` is checked item by item (`lists.cut_list`): its items are
    shared out like documents, and no value of the whole List is ever built. When one
    of its items does not parse, the List is checked whole again, so that the syntax
    error is reported as it would be otherwise.
    """
    units, origins = _units(chunks)
    jobs = pool.jobs_for(jobs, len(units))
    groups: list[list[DocumentResult] | None] = [[] for _ in chunks]
    checked = _check_all(units, options=options, validate=validate, jobs=jobs, parts=parts)
    for origin, found in zip(origins, checked, strict=True):
        group = groups[origin]
        if group is not None and found is not None:
            group.extend(found)
        else:
            groups[origin] = None
    results = [r for k, group in enumerate(groups) for r in (
        group if group is not None else check_chunk(chunks[k], options=options,
                                                    validate=validate))]
    return cross_check(chunks, results, options=options)


class _Item(NamedTuple):
    """One item of a List cut by `lists.cut_list`: the List's chunk, the item's place in
    it, its index, and the apiVersion and kind it inherits. Its text is sliced from the
    List where it is checked (`chunk`), so that cutting a List in the main process only
    finds where its items are, and the pool's workers (forked) slice their own."""

    document: Chunk
    place: Item
    item: int
    inherited: dict[str, Any] | None

    def chunk(self) -> Chunk:
        """The item as a chunk placed in the file (numbered as its List)."""
        document, place = self.document, self.place
        return Chunk(document.file, document.index, place.text(document.text),
                     document.line + place.line, document.column, document.format)

    def detached(self) -> _Item:
        """The same item holding only its own text (to send it to a process that did
        not fork: the List's text is not copied once per item)."""
        text = self.place.text(self.document.text)
        return self._replace(document=replace(self.document, text=text),
                             place=Item(self.place.line, 0, len(text), self.place.column))


_Unit = Chunk | _Item


def _units(chunks: Sequence[Chunk]) -> tuple[list[_Unit], list[int]]:
    """The chunks with the Lists among them replaced by their items, and for each unit
    the position of the chunk it comes from."""
    units: list[_Unit] = []
    origins: list[int] = []
    for k, chunk in enumerate(chunks):
        items = _cut(chunk)
        if items is None:
            units.append(chunk)
            origins.append(k)
        else:
            units.extend(items)
            origins.extend([k] * len(items))
    return units, origins


def _cut(chunk: Chunk) -> list[_Item] | None:
    """The items of a List chunk that can be read one by one, else None."""
    if chunk.format != "yaml" or "List" not in chunk.text:
        return None
    cut = cut_list(chunk.text)
    if cut is None or not cut.items:
        return None
    head = parse(replace(chunk, text=cut.head))
    if isinstance(head, SyntaxProblem) or not isinstance(head.value, dict):
        return None
    value = head.value
    kind = value.get("kind")
    if not isinstance(kind, str) or not kind.endswith("List") or value.get("items") != []:
        return None
    inherited = None if kind == "List" else {"apiVersion": value.get("apiVersion"),
                                             "kind": kind[: -len("List")]}
    return [_Item(chunk, place, j, inherited) for j, place in enumerate(cut.items)]


def _check_unit(
    unit: _Unit, options: Options, validate: Validator
) -> list[DocumentResult] | None:
    """`check_chunk`, or for a List's item its result; None for an item that does not
    parse as a mapping, writes a key twice or looks like a template (its List is then
    checked whole, where those are reported as for any document)."""
    if isinstance(unit, Chunk):
        return check_chunk(unit, options=options, validate=validate)
    chunk = unit.chunk()
    if templates.find(chunk.text) is not None:
        return None
    paused = gc.isenabled()
    gc.disable()  # as `check_chunk` does
    try:
        parsed = parse(chunk)
        if (isinstance(parsed, SyntaxProblem) or not isinstance(parsed.value, dict)
                or parsed.duplicates):
            return None
        value = parsed.value if unit.inherited is None else {**unit.inherited, **parsed.value}
        located = _Located(chunk, parsed)
        return [_check_object(located, value, _TOP, unit.item, options, validate)]
    finally:
        if paused:
            gc.enable()


def _check_all(
    units: Sequence[_Unit], *, options: Options, validate: Validator, jobs: int,
    parts: Parts | None = None,
) -> Iterator[list[DocumentResult] | None]:
    """Each unit's results (`_check_unit`), in order; from the pool's workers, each
    rendered into `parts` as it comes in."""
    if jobs <= 1 or len(units) < 2 * pool.BATCH:
        for unit in units:
            yield _check_unit(unit, options, validate)
        return
    for found in pool.run(partial(_check_batch, options, validate), units, jobs=jobs,
                          detach=_detached):
        if found is None:
            yield None
        elif parts is None:
            yield [_from_wire(w) for w in found]
        else:
            yield [parts.made_from(_from_wire(w)) for w in found]


def _detached(unit: _Unit) -> _Unit:
    return unit.detached() if isinstance(unit, _Item) else unit


# --- workloads against the claims of the same input (issue 7 `pod-names-subrequest`) ---

def cross_check(
    chunks: Sequence[Chunk], results: list[DocumentResult], *, options: Options
) -> list[DocumentResult]:
    """Add the warnings of Pods and workload controllers, whose claims are in the input.

    Runs only when the input has such objects; it then reads their documents and those
    of the claims and templates again, in this process (the first pass keeps no values,
    so that it can run anywhere). A workload with warnings becomes a result of its own;
    one without stays a skipped document.
    """
    workload_docs = {(r.file, r.document) for r in results if r.kind in POD_SPEC_PATHS}
    workload_docs = {(c.file, c.index) for c in chunks
                     if (c.file, c.index) in workload_docs and _may_name_claims(c.text)}
    if not workload_docs:
        return results
    claim_docs = {(r.file, r.document) for r in results if r.kind in KINDS}
    wanted = workload_docs | claim_docs
    objects = [o for chunk in chunks if (chunk.file, chunk.index) in wanted
               for o in _objects(chunk)]
    namespace = options.default_namespace or "default"
    index = index_claims((obj for _, _, _, obj in objects), default_namespace=namespace)
    version = Version(options.release, options.kubernetes_patch)
    by_key = {(r.file, r.document, r.item): k for k, r in enumerate(results)}
    out = list(results)
    for located, item, prefix, obj in objects:
        k = by_key.get((located.chunk.file, located.chunk.index, item))
        if k is None or out[k].kind not in POD_SPEC_PATHS:
            continue
        ignored = ignored_codes(obj.get("metadata"))
        advice = [a for a in check_workload(obj, index, version=version,
                                            default_namespace=namespace)
                  if a.code not in ignored]
        if advice:
            warnings = tuple(
                LintWarning(a.path, a.code, a.message, *located.place([FieldPath(prefix.parts + a.path.parts)]))
                for a in advice
            )
            out[k] = out[k]._replace(warnings=warnings, skipped=False, skip_reason="")
    return out


def _may_name_claims(text: str) -> bool:
    """False when a workload's document cannot have a `resourceClaims` key, so that
    `check_workload` has nothing to say about it (both its checks start there).

    A key reads as it is written unless it is escaped (a backslash: double-quoted
    YAML, JSON's `\\u`); a key folded over lines gets a space where they join; an
    alias repeats a key written elsewhere in the same text. So a text with neither the
    name nor a backslash has no such key, and most workloads are not read again.
    """
    return "resourceClaims" in text or "\\" in text


def _objects(chunk: Chunk) -> Iterator[tuple[_Located, int | None, FieldPath, Any]]:
    """Each object of a document that parses, with its place (as `check_chunk` sees them)."""
    parsed = parse(chunk)
    if isinstance(parsed, SyntaxProblem):
        return
    located = _Located(chunk, parsed)
    items = _list_items(parsed.value)
    if items is None:
        yield located, None, _TOP, parsed.value
    else:
        for j, item in enumerate(items):
            yield located, j, _item(j), item


def _item(j: int) -> FieldPath:
    """Where item j of a List document sits: findings inside it are placed below."""
    return FieldPath(("items", j))


def _check_batch(
    options: Options, validate: Validator, batch: Sequence[_Unit]
) -> list[list[_Wire] | None]:
    """A batch of units checked in a worker (`pool.run`), its results as they cross back."""
    out: list[list[_Wire] | None] = []
    for unit in batch:
        found = _check_unit(unit, options, validate)
        out.append(None if found is None else [_to_wire(r) for r in found])
    return out


_Wire = tuple[Any, ...]
"""A `DocumentResult` as a worker sends it back: plain tuples, its findings' paths as
their parts. Pickle rebuilds named tuples and `FieldPath`s (a class with slots)
through generic hooks; as plain tuples the results cross the pipe in less than half
the CPU time (bench/RESULTS.md), which was most of the pool's own cost."""


def _to_wire(result: DocumentResult) -> _Wire:
    errors = tuple((f.field.parts, *f[1:]) for f in result.errors) if result.errors else ()
    warnings = (tuple((w.field.parts, *w[1:]) for w in result.warnings)
                if result.warnings else ())
    return (*result[:6], errors, warnings, *result[8:])


def _from_wire(wire: _Wire) -> DocumentResult:
    errors = tuple([Finding._make((FieldPath(f[0]), *f[1:])) for f in wire[6]]) if wire[6] else ()
    warnings = (tuple([LintWarning._make((FieldPath(w[0]), *w[1:])) for w in wire[7]])
                if wire[7] else ())
    return DocumentResult._make((*wire[:6], errors, warnings, *wire[8:]))


# --- the cluster-aware checks (issue 20; Namespaces among the inputs, issue 17) ---------

@dataclass(slots=True)
class ClusterInput:
    """The cluster view for lint and what went wrong reading it (as lint results)."""

    facts: ClusterFacts
    results: list[DocumentResult] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)


def read_cluster_files(paths: Sequence[str]) -> ClusterInput:
    """`--cluster-objects`: the WATCHED kinds from files; bad documents are findings with lines.

    Other kinds in the files are left alone. An object the facts cannot use (a slice the
    apiserver would refuse) is a finding at its place in its file.
    """
    from draguard.schema.cluster.facts import KINDS as CLUSTER_KINDS
    from draguard.schema.cluster.facts import ClusterFacts, facts_from_objects

    objects: list[Mapping[str, Any]] = []
    places: dict[tuple[str, str], tuple[_Located, FieldPath, Mapping[str, Any]]] = {}
    out = ClusterInput(ClusterFacts())
    for path in expand_paths(paths):
        source = read_source(path)
        if isinstance(source, Unreadable):
            out.unreadable.append(source)
            continue
        for chunk in split_documents(source):
            parsed = parse(chunk)
            if isinstance(parsed, SyntaxProblem):
                out.results.append(_broken(chunk, parsed))
                continue
            located = _Located(chunk, parsed)
            items = _list_items(parsed.value)
            listed: list[tuple[FieldPath, Any]] = [(_TOP, parsed.value)] if items is None else [
                (_item(j), item) for j, item in enumerate(items)]
            for prefix, obj in listed:
                if isinstance(obj, dict) and obj.get("kind") in CLUSTER_KINDS:
                    objects.append(obj)
                    places[(str(obj["kind"]), _text(_meta(obj).get("name")) or "")] = (
                        located, prefix, obj)
    out.facts = facts_from_objects(objects)
    for problem in out.facts.problems():
        place = places.get((problem.kind, problem.name))
        if place is None:
            continue
        located, prefix, obj = place
        line, column = located.place([FieldPath(prefix.parts + problem.path.parts)])
        out.results.append(_cluster_result(located.chunk, obj, Finding(
            problem.path, "Invalid", problem.message, line, column), line))
    return out


def cluster_from_objects(objects: Iterable[Mapping[str, Any]], *, source: str) -> ClusterInput:
    """`--from-cluster`: objects from a live list; a finding names the object, not a line."""
    from draguard.schema.cluster.facts import facts_from_objects

    out = ClusterInput(facts_from_objects(objects))
    for problem in out.facts.problems():
        name = f"{source}/{problem.kind}/{problem.name}"
        finding = Finding(problem.path, "Invalid", problem.message, 0, 0)
        out.results.append(DocumentResult(name, 0, None, problem.kind, problem.name or None,
                                          None, (finding,), line=0))
    return out


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _cluster_result(chunk: Chunk, obj: Mapping[str, Any], finding: Finding, line: int) -> DocumentResult:
    meta = _meta(obj)
    return DocumentResult(chunk.file, chunk.index, _text(obj.get("apiVersion")),
                          _text(obj.get("kind")), _text(meta.get("name")),
                          _text(meta.get("namespace")), (finding,), line=line)


def add_input_namespaces(chunks: Sequence[Chunk], results: Sequence[DocumentResult],
                         facts: ClusterFacts | None) -> ClusterFacts | None:
    """The inputs' Namespaces added to `facts` (issue 17); new facts when None and some exist.

    New facts hold only the Namespace kind, so only the admin-access check can use
    them; the checks that need DeviceClasses or ResourceSlices stay silent without those.
    """
    wanted = {(r.file, r.document) for r in results if r.kind == "Namespace"}
    found = [obj for chunk in chunks if (chunk.file, chunk.index) in wanted
             for _, _, _, obj in _objects(chunk)
             if isinstance(obj, dict) and obj.get("kind") == "Namespace"
             and obj.get("apiVersion") == "v1"]
    if not found:
        return facts
    from draguard.schema.cluster.facts import ClusterFacts

    if facts is None:
        facts = ClusterFacts()
        facts.replace("Namespace", found)
        return facts
    for obj in found:
        facts.apply("Namespace", "ADDED", obj)
    return facts


def cluster_check(
    chunks: Sequence[Chunk], results: list[DocumentResult], *, facts: ClusterFacts,
    settings: CheckSettings, options: Options,
) -> list[DocumentResult]:
    """Add the cluster checks' findings to the claims and templates among the results.

    Denials become errors (type Forbidden, the code in the message), warnings keep
    their code; both are placed in the user's file as the rule findings are.
    """
    # Only claims the apiserver would accept: a refused one never reaches the cluster.
    claim_docs = {(r.file, r.document) for r in results
                  if r.kind in KINDS and not r.skipped and not r.errors}
    if not claim_docs:
        return results
    from draguard.schema.cluster.checks import check_object  # CEL and the client: only here

    by_key = {(r.file, r.document, r.item): k for k, r in enumerate(results)}
    out = list(results)
    for chunk in chunks:
        if (chunk.file, chunk.index) not in claim_docs:
            continue
        for located, item, prefix, obj in _objects(chunk):
            k = by_key.get((chunk.file, chunk.index, item))
            if (k is None or out[k].kind not in KINDS or out[k].errors or out[k].skipped
                    or not isinstance(obj, dict)):
                continue
            try:
                verdict = check_object(obj, facts, settings, options=options)
            except Exception as exc:  # a bug here must not hide the other documents
                out[k] = _crashed(located, obj, prefix, item, exc)
                continue
            shape = "v1beta1" if obj.get("apiVersion") == "resource.k8s.io/v1beta1" else None
            denials = tuple(
                Finding(a.path, "Forbidden", f"{a.message} (draguard {a.code})",
                        *located.place(candidate_paths(a.path, shape, prefix)))
                for a in verdict.denials)
            warnings = tuple(
                LintWarning(a.path, a.code, a.message,
                            *located.place(candidate_paths(a.path, shape, prefix)))
                for a in verdict.warnings)
            if denials or warnings:
                out[k] = out[k]._replace(errors=out[k].errors + denials,
                                         warnings=out[k].warnings + warnings)
    return out
