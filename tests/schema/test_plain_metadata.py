"""`plain_metadata`, the metadata shortcut of a remembered spec, gives what reading gives.

The webhook reads each claim's metadata again on top of a remembered spec verdict;
`plain_metadata` stands in for `read(…, OBJECT_META, …)` when it can. It must give the
same dict (same keys, values and types) whenever it gives one, and only when reading
would find nothing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import RELEASES
from draguard.schema.model.shapes import OBJECT_META, document_node, plain_metadata, read

META = FieldPath.root("metadata")
FIELDS = sorted(OBJECT_META.fields)
scalars = st.one_of(st.text(max_size=8), st.integers(-3, 3), st.none(), st.booleans(),
                    st.floats(allow_nan=False, width=32))
values = st.one_of(
    scalars,
    st.dictionaries(st.text(max_size=5), st.one_of(st.text(max_size=5), scalars), max_size=3),
    st.lists(st.one_of(st.text(max_size=5), st.dictionaries(st.text(max_size=3), scalars)),
             max_size=2),
)
metadata = st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=6)), values,
                           max_size=6)
# Only the fields the shortcut takes, holding anything: where it must tell the types apart.
near_plain = st.dictionaries(
    st.sampled_from(["name", "namespace", "uid", "labels", "annotations"]), values, max_size=3)
plain = st.dictionaries(
    st.sampled_from(["name", "generateName", "namespace", "uid", "resourceVersion"]),
    st.text(max_size=10), max_size=4,
).flatmap(lambda base: st.fixed_dictionaries(
    {}, optional={"labels": st.dictionaries(st.text(max_size=6), st.text(max_size=6)),
                  "annotations": st.dictionaries(st.text(max_size=6), st.text(max_size=20))},
).map(lambda maps: {**base, **maps}))


def typed(value: Any) -> Any:
    """A value with the type of every part spelled out (1 == True == 1.0 otherwise)."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


@given(st.one_of(metadata, near_plain, plain))
@example({"name": 1})
@example({"labels": {"a": None}})
@example({"namespace": None})
@example({"creationTimestamp": "2026-12-03T00:00:00Z"})
def test_plain_metadata_is_reading_or_nothing(meta: dict[str, Any]) -> None:
    shortcut = plain_metadata(meta)
    if shortcut is None:
        return
    reading = read(meta, OBJECT_META, META, "resource.k8s.io/v1")
    assert reading.findings == []
    assert typed(shortcut) == typed(reading.value)
    for key in ("labels", "annotations"):
        if key in meta:
            assert shortcut[key] is not meta[key]  # a copy, as reading makes


@given(plain)
def test_plain_metadata_takes_the_usual_claim_metadata(meta: dict[str, Any]) -> None:
    assert plain_metadata(meta) == meta


def test_every_document_shape_reads_metadata_as_object_meta() -> None:
    """The shortcut assumes it: claims and templates, every version, shape and release."""
    for release in RELEASES.values():
        for kind in ("ResourceClaim", "ResourceClaimTemplate"):
            for version in ("v1", "v1beta2", "v1beta1"):
                for parallel in (False, True):
                    node = document_node(kind, version, release, parallel)
                    assert node.fields["metadata"] is OBJECT_META
