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

from draguard.schema.convert import Conversion, convert_document
from draguard.schema.model.defaults import default_claim_spec
from draguard.schema.model.diff import Change, diff, without_empties
from draguard.schema.model.fieldmap import ORDER_ANNOTATION
from draguard.schema.model.options import DEFAULT_OPTIONS, Options
from draguard.schema.model.shapes import identify, unserved_version
from draguard.schema.validate import prepare

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
    return [round_trip(obj, a, b, options=options) for a, b in permutations(SHAPES, 2)]


def round_trip(obj: Any, start: str, via: str, *, options: Options = DEFAULT_OPTIONS) -> Trip:
    base = _to_shape(obj, start, options)
    if not base.lossless or base.document is None:
        return Trip(
            start, via, refused=f"cannot reach {start}: " + "; ".join(map(str, base.losses))
        )
    there = _to_shape(base.document, via, options)
    if not there.lossless or there.document is None:
        return Trip(start, via, refused=f"{start} → {via}: " + "; ".join(map(str, there.losses)))
    back = _to_shape(there.document, start, options)
    if not back.lossless or back.document is None:
        return Trip(start, via, refused=f"{via} → {start}: " + "; ".join(map(str, back.losses)))
    return Trip(
        start, via, tuple(diff(meaning(base.document, options), meaning(back.document, options)))
    )


def _to_shape(obj: Any, shape: str, options: Options) -> Conversion:
    return convert_document(obj, shape, options=options)


def meaning(obj: dict[str, Any], options: Options = DEFAULT_OPTIONS) -> dict[str, Any]:
    """The document as the apiserver understands it: hub shape, defaulted, empties dropped."""
    doc_type = identify(obj)
    if doc_type is None:
        return obj
    prepared = prepare(obj, doc_type, options)
    # Every read from storage passes the hub version's defaulter (§4: "also when reading
    # from storage"), so a default another version adds is not a change of meaning.
    default_claim_spec(prepared.claim_spec, "v1")
    _drop_go_zero_values(prepared.claim_spec.get("devices"))
    document = prepared.document
    meta = dict(document.get("metadata", {}))
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k != ORDER_ANNOTATION
    }
    meta.pop("annotations", None)
    if annotations:
        meta["annotations"] = annotations
    out = {**document, "metadata": meta}
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
            _drop_go_zero_values(item)
    elif isinstance(value, dict):
        for key in list(value):
            if key in _VALUE_FIELDS and value[key] in ("", 0) and value[key] is not False:
                del value[key]
            elif key not in _DATA_FIELDS:
                _drop_go_zero_values(value[key])

