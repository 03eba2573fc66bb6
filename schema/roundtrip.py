"""The round-trip proof: every shape there and back keeps the meaning (issue 3 §2).

For a document and an ordered pair of shapes (A, B): take the document to A, then
A → B → A, and compare with the document in A. The comparison is on meaning: both
sides are read as the apiserver reads them (defaults applied, v1beta1 and parallel
mapped to the hub shape, nil and empty lists equal), so a round trip may add
defaults but never change what is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations
from typing import Any

from draguard.schema.convert import Conversion, convert_document, plain_copy
from draguard.schema.model.defaults import default_claim_spec
from draguard.schema.model.diff import Change, diff, without_empties
from draguard.schema.model.fieldmap import ORDER_ANNOTATION
from draguard.schema.model.options import DEFAULT_OPTIONS, Options
from draguard.schema.model.shapes import DocumentType, identify, unserved_version
from draguard.schema.read.textedit import exact_text
from draguard.schema.validate import Prepared, prepare

SHAPES = ("v1", "v1beta2", "v1beta1", "parallel")


@dataclass(frozen=True, slots=True)
class Trip:
    """One A → B → A trip: the differences in meaning (empty: lossless) or why it could not run."""

    start: str
    via: str
    differences: tuple[Change, ...] = ()
    refused: str = ""

    @property
    def lossless(self) -> bool:
        return not self.differences and not self.refused


def round_trips(obj: Any, *, options: Options = DEFAULT_OPTIONS) -> list[Trip] | None:
    """Every ordered pair of distinct shapes; None when `obj` is not a DRA claim or template."""
    if identify(obj) is None:
        err = unserved_version(obj, options.release)
        if err is None:
            return None
        # No shape to start from (issue 17): every trip is refused with the one reason.
        return [Trip(a, b, refused=f"cannot reach {a}: {err}") for a, b in permutations(SHAPES, 2)]
    memo = _Memo(options)
    return [_round_trip(obj, a, b, memo) for a, b in permutations(SHAPES, 2)]


def round_trip(obj: Any, start: str, via: str, *, options: Options = DEFAULT_OPTIONS) -> Trip:
    return _round_trip(obj, start, via, _Memo(options))


class _Memo:
    """Conversions and meanings already computed for one document's trips.

    The 12 trips of `round_trips` start from 4 shapes and pass through documents that
    often recur (A → B of one trip is the B of another), so most conversions repeat.
    Documents are keyed by their text (`textedit.exact_text`), which tells 1, 1.0 and
    True apart and keeps key order;
    results are never mutated (conversion copies what it changes, `meaning` its claim
    spec). A document read through the create pipeline (`prepare`) is kept too: the 15
    conversions of one document's trips start from about 6 distinct documents.
    """

    def __init__(self, options: Options) -> None:
        self.options = options
        self._conversions: dict[tuple[bytes | str, str], Conversion] = {}
        self._prepared: dict[bytes | str, Prepared] = {}
        self._meanings: dict[bytes | str, dict[str, Any]] = {}
        self._by_content: dict[tuple[str, bytes | str], dict[str, Any]] = {}
        # repr of each document seen, by identity (the document is kept alive beside it).
        self._keys: dict[int, tuple[Any, bytes | str]] = {}

    def _key(self, obj: Any) -> bytes | str:
        known = self._keys.get(id(obj))
        if known is None or known[0] is not obj:
            known = self._keys[id(obj)] = (obj, exact_text(obj))
        return known[1]

    def convert(self, obj: Any, shape: str) -> Conversion:
        key = (self._key(obj), shape)
        if key not in self._conversions:
            self._conversions[key] = convert_document(
                obj, shape, options=self.options, prepare=self.prepare)
        return self._conversions[key]

    def prepare(self, obj: dict[str, Any], doc_type: DocumentType, options: Options
                ) -> Prepared:
        """`validate.prepare`, once per document (`doc_type` follows from `obj`)."""
        assert options is self.options
        key = self._key(obj)
        if key not in self._prepared:
            self._prepared[key] = prepare(obj, doc_type, options)
        return self._prepared[key]

    def differences(self, before: dict[str, Any], after: dict[str, Any]) -> tuple[Change, ...]:
        """`diff` of the two documents' meanings; none for the same text of a document."""
        key_before, key_after = self._key(before), self._key(after)
        if key_before == key_after:
            return ()
        old, new = self._meaning(key_before, before), self._meaning(key_after, after)
        # Meanings written alike are equal, types included: nothing for `diff` to find
        # (most trips that change a document's text keep its meaning).
        if old is new or exact_text(old) == exact_text(new):
            return ()
        return tuple(diff(old, new))

    def _meaning(self, key: bytes | str, obj: dict[str, Any]) -> dict[str, Any]:
        found = self._meanings.get(key)
        if found is None:
            doc_type = identify(obj)
            found = obj if doc_type is None else self._meaning_of(
                self.prepare(obj, doc_type, self.options))
            self._meanings[key] = found
        return found

    def _meaning_of(self, prepared: Prepared) -> dict[str, Any]:
        """`_meaning_of`, once per prepared document but its apiVersion, which a meaning
        drops (and the kind): a trip through a layout often comes back in another
        version (parallel → v1 → parallel keeps v1's apiVersion) with the same content."""
        document = prepared.document
        same = (prepared.doc_type.kind,
                exact_text({k: v for k, v in document.items() if k != "apiVersion"}))
        found = self._by_content.get(same)
        if found is None:
            found = self._by_content[same] = _meaning_of(prepared)
        return found


def _round_trip(obj: Any, start: str, via: str, memo: _Memo) -> Trip:
    base = memo.convert(obj, start)
    if not base.lossless or base.document is None:
        return Trip(
            start, via, refused=f"cannot reach {start}: " + "; ".join(map(str, base.losses))
        )
    there = memo.convert(base.document, via)
    if not there.lossless or there.document is None:
        return Trip(start, via, refused=f"{start} → {via}: " + "; ".join(map(str, there.losses)))
    back = memo.convert(there.document, start)
    if not back.lossless or back.document is None:
        return Trip(start, via, refused=f"{via} → {start}: " + "; ".join(map(str, back.losses)))
    return Trip(start, via, memo.differences(base.document, back.document))


def meaning(obj: dict[str, Any], options: Options = DEFAULT_OPTIONS) -> dict[str, Any]:
    """The document as the apiserver understands it: hub shape, defaulted, empties dropped."""
    doc_type = identify(obj)
    if doc_type is None:
        return obj
    return _meaning_of(prepare(obj, doc_type, options))


def _meaning_of(prepared: Prepared) -> dict[str, Any]:
    """`meaning` of a prepared document, which is left as it is (`_Memo` shares it)."""
    claim_spec = plain_copy(prepared.claim_spec)
    # Every read from storage passes the hub version's defaulter (§4: "also when reading
    # from storage"), so a default another version adds is not a change of meaning.
    default_claim_spec(claim_spec, "v1")
    _drop_go_zero_values(claim_spec.get("devices"))
    document = prepared.document
    meta = dict(document.get("metadata", {}))
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k != ORDER_ANNOTATION
    }
    meta.pop("annotations", None)
    if annotations:
        meta["annotations"] = annotations
    out = {**document, "metadata": meta}
    # The claim spec sits in `document` (`prepare` puts it there): its copy replaces it.
    if prepared.doc_type.kind == "ResourceClaimTemplate":
        out["spec"] = {**document["spec"], "spec": claim_spec}
    else:
        out["spec"] = claim_spec
    out.pop("apiVersion", None)
    result: dict[str, Any] = without_empties(out)
    return result


# Fields that are plain Go values, not pointers: once decoded, `""` or `0` and absence
# are the same value (e.g. v1beta1 writes `deviceClassName: ""` for a prioritized
# request, §2.2 / §5.3, which reads back into v1 as an empty class, not a missing one).
_VALUE_FIELDS = frozenset(
    {"name", "deviceClassName", "allocationMode", "count", "expression", "key", "operator"}
    | {"value", "effect", "driver"}
)
# Maps and raw JSON, where an empty string or a zero is data, not a Go zero value.
_DATA_FIELDS = frozenset({"capacity", "parameters"})


def _drop_go_zero_values(value: Any) -> None:
    """Remove zero-valued non-pointer fields of the claim spec's structs, in place."""
    if isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list):
                _drop_go_zero_values(item)
    elif isinstance(value, dict):
        for key, item in list(value.items()):
            if key in _VALUE_FIELDS and item in ("", 0) and item is not False:
                del value[key]
            elif key not in _DATA_FIELDS and isinstance(item, dict | list):
                _drop_go_zero_values(item)

