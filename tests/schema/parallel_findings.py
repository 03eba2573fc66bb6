"""Findings of the rule set in the nested layout, whatever the document's layout.

Shared by the conversion tests that compare findings before and after a conversion
(test_convert_properties.py, test_convert_corpus.py): paths of a parallel document
are mapped to where the same field sits once nested (contract §2).
"""

from __future__ import annotations

from typing import Any

from draguard.schema.model.errors import ErrorType
from draguard.schema.model.fieldmap import decode_order, parallel_to_nested
from draguard.schema.model.options import DEFAULT_OPTIONS, Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.shapes import identify
from draguard.schema.rules.spec import ONE_OF_REQUIRED
from draguard.schema.validate import validate_object


def _spec_path(doc: dict[str, Any]) -> FieldPath:
    if doc["kind"] == "ResourceClaimTemplate":
        return FieldPath.root("spec", "spec")
    return FieldPath.root("spec")


def hub_findings(
    doc: dict[str, Any], options: Options = DEFAULT_OPTIONS
) -> list[tuple[str, str, str]]:
    """The rule set's findings as (type, path in the nested layout, detail), sorted.

    Paths of a parallel document (`prioritizedRequests[p].options[j]`, `requests[e]`)
    are mapped to the request each entry becomes when nested (contract §2), using the
    same placement rule as the converter's inverse: the order annotation, else exact
    requests first.
    """
    verdict = validate_object(doc, options=options)
    to_nested: dict[tuple[str, int], int] = {}
    doc_type = identify(doc)
    devices_path = _spec_path(doc).child("devices")
    if doc_type is not None and doc_type.parallel:
        holder = doc["spec"]["spec"] if doc["kind"] == "ResourceClaimTemplate" else doc["spec"]
        _, origins = parallel_to_nested(
            holder["devices"], decode_order(doc["metadata"].get("annotations"))
        )
        to_nested = {(o.list_name, o.index): k for k, o in enumerate(origins)}
    out = []
    for error in verdict.errors:
        parts, detail = list(error.path.parts), error.detail
        base = len(devices_path.parts)
        if to_nested and len(parts) > base + 1 and (parts[base], parts[base + 1]) in to_nested:
            index = to_nested[(str(parts[base]), int(parts[base + 1]))]
            rest = ["firstAvailable" if p == "options" else p for p in parts[base + 2 :]]
            parts = [*parts[:base], "requests", index, *rest]
            if rest == ["firstAvailable"] and error.type is ErrorType.REQUIRED:
                # An entry without options is the nested one-of's Required (contract §2).
                parts, detail = parts[:-1], ONE_OF_REQUIRED
        out.append((error.type.value, str(FieldPath(tuple(parts))), detail))
    return sorted(out)
