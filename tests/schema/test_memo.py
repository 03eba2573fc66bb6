"""The spec memo: claims that share a spec (one per pod from a template) get exact verdicts."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import API_VERSIONS, KINDS, RELEASES, release
from draguard.schema.model.shapes import OBJECT_META, document_node, read
from draguard.schema.validate import validate_object

SPEC = {
    "devices": {
        "requests": [
            {
                "name": "gpu",
                "firstAvailable": [
                    {"name": "a", "deviceClassName": "a.example.com"},
                    {"name": "b", "deviceClassName": "b.example.com", "count": 2},
                ],
            },
            {"name": "adm", "exactly": {"deviceClassName": "c.example.com", "adminAccess": True}},
        ],
        "config": [{"requests": ["gpu"], "opaque": {"driver": "a.example.com", "parameters": {}}}],
    }
}


MEMO = Options(remember_specs=True)


def claim(meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": copy.deepcopy(SPEC),
    }


def pairs(obj: dict[str, Any], **options: Any) -> list[tuple[str, str]]:
    verdict = validate_object(obj, options=Options(remember_specs=True, **options))
    return [(e.type.value, e.field) for e in verdict.errors]


def test_metadata_is_checked_on_every_call() -> None:
    """A remembered spec does not hide the next claim's own metadata errors."""
    assert pairs(claim({"name": "pod-a-gpu", "namespace": "ml"})) == []
    assert pairs(claim({"name": "Bad_Name", "namespace": "ml"})) == [("Invalid", "metadata.name")]
    assert pairs(claim({"name": "pod-b-gpu"})) == [("Required", "metadata.namespace")]
    verdict = validate_object(claim({"name": "pod-c-gpu", "namespace": "ml"}), options=MEMO)
    assert (verdict.name, verdict.namespace) == ("pod-c-gpu", "ml")


def test_malformed_metadata_after_a_remembered_spec() -> None:
    """A metadata decoding error still stops the rules, as on the first call."""
    validate_object(claim({"name": "x", "namespace": "ml"}), options=MEMO)
    assert pairs(claim({"name": 5, "namespace": "ml"})) == [("Malformed", "metadata.name")]


def test_ignore_annotation_is_part_of_the_key() -> None:
    """Silencing a warning on one claim does not silence it on the next."""
    codes = lambda meta: {w.code for w in validate_object(claim(meta), options=MEMO).warnings}  # noqa: E731
    silenced = {
        "name": "x",
        "namespace": "ml",
        "annotations": {"draguard.io/ignore": "config-names-parent"},
    }
    assert "config-names-parent" not in codes(silenced)
    assert "config-names-parent" in codes({"name": "y", "namespace": "ml"})


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, [("Forbidden", "spec.devices.requests[1].adminAccess")]),
        ({"resource.kubernetes.io/admin-access": "true"}, []),
        (None, []),
    ],
)
def test_options_are_part_of_the_key(
    labels: dict[str, str] | None, expected: list[tuple[str, str]]
) -> None:
    """Namespace labels and releases give their own verdicts for the same spec."""
    assert pairs(claim({"name": "x", "namespace": "ml"}), namespace_labels=labels) == expected


def test_release_is_part_of_the_key() -> None:
    """The same spec is judged by each release's own rules."""
    obj = claim({"name": "x", "namespace": "ml"})
    obj["apiVersion"] = "resource.k8s.io/v1beta2"
    assert pairs(obj) == []
    assert pairs(obj, release=release("1.33")) == [("Required", "spec.devices.requests[0]")]


def test_memo_is_off_unless_asked() -> None:
    """Without `remember_specs` nothing is remembered (lint: every document differs)."""
    from draguard.schema.validate import _MEMO

    _MEMO._entries.clear()
    validate_object(claim({"name": "x", "namespace": "ml"}))
    assert _MEMO._entries == {}


# Values that JSON or Python equality would confuse; each needs its own verdict.
LOOKALIKE_COUNTS = [2, 2.0, True, "2", 2**70, None, [2], {"n": 2}, 0, 0.0, -0.0, False,
                   float("nan"), float("inf"), "null", 1e16, 10**16, "\ud800"]


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.sampled_from(LOOKALIKE_COUNTS), min_size=1, max_size=12),
       st.booleans())
def test_remembered_verdicts_equal_fresh_ones(counts: list[Any], reorder: bool) -> None:
    """However specs come and go, a verdict from the memo is the one without it."""
    for count in counts:
        obj = claim({"name": "x", "namespace": "ml"})
        sub = obj["spec"]["devices"]["requests"][0]["firstAvailable"][1]
        sub["count"] = count
        if reorder:  # the same content in another key order
            obj["spec"]["devices"] = dict(reversed(obj["spec"]["devices"].items()))
        fresh = validate_object(copy.deepcopy(obj))
        remembered = validate_object(obj, options=MEMO)
        assert remembered.errors == fresh.errors
        assert remembered.warnings == fresh.warnings


@pytest.mark.parametrize("order", [["gpu"], {"a": "gpu"}, 2, None, "gpu"])
def test_relevant_annotation_of_any_type_is_part_of_the_key(order: Any) -> None:
    """A request-order annotation that is not text (hostile input) neither crashes the
    memo nor shares an entry with text or with its absence."""
    from draguard.schema.validate import ORDER_ANNOTATION

    for value in (order, "gpu", None):
        meta: dict[str, Any] = {"name": "x", "namespace": "ml", "annotations": {"o": "1"}}
        if value is not None:
            meta["annotations"][ORDER_ANNOTATION] = value
        obj = claim(meta)
        fresh = validate_object(copy.deepcopy(obj))
        remembered = validate_object(obj, options=MEMO)
        assert (remembered.errors, remembered.warnings) == (fresh.errors, fresh.warnings)


def test_annotations_beyond_the_relevant_ones_share_the_entry() -> None:
    """Claims differing only in other annotations reuse the memo (and stay exact)."""
    from draguard.schema.validate import _MEMO

    _MEMO._entries.clear()
    for value in ("a", "b", "c"):
        validate_object(claim({"name": "x", "namespace": "ml", "annotations": {"o": value}}),
                        options=MEMO)
    assert len(_MEMO._entries) == 1


def test_equal_specs_share_the_entry_however_their_objects_are_shared() -> None:
    """The key depends on the values alone: not on which objects are shared or referenced
    elsewhere (as a remembered verdict references the first claim's strings)."""
    import json

    from draguard.schema.validate import _MEMO

    _MEMO._entries.clear()
    first = claim({"name": "x", "namespace": "ml"})
    kept = validate_object(first, options=MEMO)
    shared = claim({"name": "y", "namespace": "ml"})
    shared["spec"]["devices"]["requests"][0]["name"] = first["spec"]["devices"]["requests"][0]["name"]
    for obj in (json.loads(json.dumps(first)), shared, first):
        validate_object(obj, options=MEMO)
    assert len(_MEMO._entries) == 1
    assert kept.errors == ()


def test_every_document_shape_reads_metadata_as_object_meta() -> None:
    """A remembered spec's metadata is read as OBJECT_META: claims, templates, every shape."""
    for known in RELEASES.values():
        for kind in KINDS:
            for version in API_VERSIONS:
                for parallel in (False, True):
                    node = document_node(kind, version, known, parallel)
                    assert node.fields["metadata"] is OBJECT_META


def test_reading_metadata_copies_labels_and_annotations() -> None:
    """The memo adds a namespace to the metadata it reads: the caller's maps stay untouched."""
    meta = {"name": "c", "labels": {"a": "b"}, "annotations": {"k": "v"}}
    reading = read(meta, OBJECT_META, FieldPath.root("metadata"), "resource.k8s.io/v1")
    assert reading.findings == [] and reading.value == meta
    assert reading.value is not meta
    assert reading.value["labels"] is not meta["labels"]
    assert reading.value["annotations"] is not meta["annotations"]


def test_memo_is_bounded_in_bytes() -> None:
    """Large specs are not remembered; the total remembered content stays under the budget
    (issue 15 §3: 200 distinct large claims once held 1.3 GiB in one worker)."""
    from draguard.schema.validate import _MEMO, _SpecMemo

    memo = _SpecMemo()
    for _ in range(2):  # each put twice: a spec is remembered on its second sight
        memo.put((b"x" * (_SpecMemo.MAX_ENTRY_BYTES + 1), None), object())  # type: ignore[arg-type]
    assert memo._entries == {}
    entry = b"y" * (_SpecMemo.MAX_ENTRY_BYTES - 16)
    for n in range(2 * _SpecMemo.MAX_BYTES // len(entry)):
        for _ in range(2):
            memo.put((entry + str(n).encode(), None), object())  # type: ignore[arg-type]
        assert memo._bytes <= _SpecMemo.MAX_BYTES and memo._entries
    assert _MEMO is not memo


def test_a_spec_is_remembered_on_its_second_sight() -> None:
    """A spec judged once keeps nothing but its key's hash (most claims are distinct);
    the second claim with it is remembered, the third is answered from the memo."""
    from draguard.schema.validate import _MEMO

    _MEMO._entries.clear()
    _MEMO._seen.clear()
    validate_object(claim({"name": "x", "namespace": "ml"}), options=MEMO)
    assert _MEMO._entries == {} and len(_MEMO._seen) == 1
    validate_object(claim({"name": "y", "namespace": "ml"}), options=MEMO)
    assert len(_MEMO._entries) == 1
    third = validate_object(claim({"name": "z", "namespace": "ml"}), options=MEMO)
    assert (third.name, third.errors) == ("z", ())
    assert len(_MEMO._entries) == 1


def test_seen_hashes_are_bounded() -> None:
    """Distinct specs without end keep at most MAX_SEEN hashes."""
    from draguard.schema.validate import _SpecMemo

    memo = _SpecMemo()
    for n in range(_SpecMemo.MAX_SEEN + 10):
        memo.put((str(n).encode(), None), object())  # type: ignore[arg-type]
        assert len(memo._seen) <= _SpecMemo.MAX_SEEN
    assert memo._entries == {}


def test_options_with_huge_namespaces_are_not_remembered() -> None:
    """Options carrying a namespace longer than a DNS label are keyed, never held."""
    from draguard.schema.validate import _MEMO

    before = len(_MEMO._options_keys)
    for index in range(5):
        options = Options(default_namespace=f"{index}" + "n" * 100_000, remember_specs=True)
        validate_object({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"name": "c"}, "spec": SPEC}, options=options)
    assert len(_MEMO._options_keys) <= before
