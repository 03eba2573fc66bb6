"""ObjectMeta rules for claims and templates (`upstream-rules.md` §3.3 rules 1–2)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from draguard.schema.model import formats
from draguard.schema.model.errors import FieldError, forbidden, invalid, required, too_long
from draguard.schema.model.paths import FieldPath

TOTAL_ANNOTATION_SIZE = 256 * 1024

# ObjectMeta fields in Go struct order, with the path segment `validateFieldAllowList`
# prints (Go field name, first letter lower-cased: hence `uID`) — rule 2.
_TEMPLATE_META_FIELDS = (
    ("name", "name"),
    ("generateName", "generateName"),
    ("namespace", "namespace"),
    ("selfLink", "selfLink"),
    ("uid", "uID"),
    ("resourceVersion", "resourceVersion"),
    ("generation", "generation"),
    ("creationTimestamp", "creationTimestamp"),
    ("deletionTimestamp", "deletionTimestamp"),
    ("deletionGracePeriodSeconds", "deletionGracePeriodSeconds"),
    ("ownerReferences", "ownerReferences"),
    ("finalizers", "finalizers"),
    ("managedFields", "managedFields"),
)


_LABELS_AND_ANNOTATIONS = frozenset(("labels", "annotations"))


def validate_object_meta(meta: dict[str, Any], path: FieldPath) -> Iterator[FieldError]:
    """`ValidateObjectMeta` with a required namespace and a DNS-subdomain name (rule 1)."""
    generate_name = meta.get("generateName", "")
    if generate_name:
        # A generateName prefix may end in '-' (apimachinery masks the trailing dash).
        masked = generate_name[:-1] + "a" if generate_name.endswith("-") else generate_name
        if not formats.is_dns1123_subdomain(masked):
            for msg in formats.dns1123_subdomain_messages(masked):
                yield invalid(path.child("generateName"), generate_name, msg)
    name = meta.get("name", "")
    if not name:
        # On create the apiserver fills the name from generateName before validating.
        if not generate_name:
            yield required(path.child("name"), "name or generateName is required")
    elif not formats.is_dns1123_subdomain(name):
        for msg in formats.dns1123_subdomain_messages(name):
            yield invalid(path.child("name"), name, msg)
    namespace = meta.get("namespace", "")
    if not namespace:
        yield required(path.child("namespace"))
    elif not formats.is_dns1123_label(namespace):
        for msg in formats.dns1123_label_messages(namespace):
            yield invalid(path.child("namespace"), namespace, msg)
    if meta.get("generation", 0) < 0:
        yield invalid(path.child("generation"), meta["generation"],
                      "must be greater than or equal to 0")
    labels, annotations = meta.get("labels"), meta.get("annotations")
    if labels:  # absent or empty (the common cases) has nothing to check
        yield from validate_labels(labels, path)
    if annotations:
        yield from validate_annotations(annotations, path)


def validate_labels(labels: dict[str, str], meta_path: FieldPath) -> Iterator[FieldError]:
    """Errors are reported at `<meta_path>.labels` itself, not per key, as upstream does
    (the path is built only for an error: nearly every label map has none)."""
    for key, value in labels.items():
        if not formats.is_qualified_name(key):
            for msg in formats.qualified_name_messages(key):
                yield invalid(meta_path.child("labels"), key, msg)
        if not formats.is_label_value(value):
            for msg in formats.label_value_messages(value):
                yield invalid(meta_path.child("labels"), value, msg)


def validate_annotations(annotations: dict[str, str], meta_path: FieldPath) -> Iterator[FieldError]:
    """Errors at `<meta_path>.annotations`, the path built only for an error."""
    total = 0
    for key, value in annotations.items():
        lowered = key.lower()
        if not formats.is_qualified_name(lowered):
            for msg in formats.qualified_name_messages(lowered):
                yield invalid(meta_path.child("annotations"), key, msg)
        total += _utf8_size(key) + _utf8_size(value)
    if total > TOTAL_ANNOTATION_SIZE:
        yield too_long(meta_path.child("annotations"), TOTAL_ANNOTATION_SIZE)


def _utf8_size(text: str) -> int:
    # An ASCII string (nearly all) is its own encoding; `isascii` reads a flag, no scan.
    return len(text) if text.isascii() else len(text.encode())


def validate_template_meta(meta: dict[str, Any], path: FieldPath) -> Iterator[FieldError]:
    """Rule 2: a template's `spec.metadata` may hold only labels and annotations."""
    labels, annotations = meta.get("labels"), meta.get("annotations")
    if annotations:
        yield from validate_annotations(annotations, path)
    if labels:
        yield from validate_labels(labels, path)
    if meta.keys() <= _LABELS_AND_ANNOTATIONS:
        return  # the common template: no other field to forbid
    for json_name, go_name in _TEMPLATE_META_FIELDS:
        if _non_zero(meta.get(json_name)):
            yield forbidden(path.child(go_name), "cannot be set")


def _non_zero(value: Any) -> bool:
    return value not in (None, "", 0, [], {})
