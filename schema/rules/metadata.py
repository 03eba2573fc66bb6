"""ObjectMeta rules for claims and templates (`upstream-rules.md` §3.3 rules 1–2).

`validate_object_meta` runs for every claim the webhook judges, a remembered spec's too
(`validate._from_memo`), so these return a list that their helpers append to, as the
claim-spec rules do (rules/spec.py): two generators per claim cost more than the checks
of a valid name, namespace and label.
"""

from __future__ import annotations

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


def validate_object_meta(meta: dict[str, Any], path: FieldPath) -> list[FieldError]:
    """`ValidateObjectMeta` with a required namespace and a DNS-subdomain name (rule 1)."""
    out: list[FieldError] = []
    generate_name = meta.get("generateName", "")
    if generate_name:
        # A generateName prefix may end in '-' (apimachinery masks the trailing dash).
        masked = generate_name[:-1] + "a" if generate_name.endswith("-") else generate_name
        if not formats.is_dns1123_subdomain(masked):
            for msg in formats.dns1123_subdomain_messages(masked):
                out.append(invalid(path.child("generateName"), generate_name, msg))
    name = meta.get("name", "")
    if not name:
        # On create the apiserver fills the name from generateName before validating.
        if not generate_name:
            out.append(required(path.child("name"), "name or generateName is required"))
    elif not formats.is_dns1123_subdomain(name):
        for msg in formats.dns1123_subdomain_messages(name):
            out.append(invalid(path.child("name"), name, msg))
    namespace = meta.get("namespace", "")
    if not namespace:
        out.append(required(path.child("namespace")))
    elif not formats.is_dns1123_label(namespace):
        for msg in formats.dns1123_label_messages(namespace):
            out.append(invalid(path.child("namespace"), namespace, msg))
    if meta.get("generation", 0) < 0:
        out.append(invalid(path.child("generation"), meta["generation"],
                           "must be greater than or equal to 0"))
    labels, annotations = meta.get("labels"), meta.get("annotations")
    if labels:  # absent or empty (the common cases) has nothing to check
        _check_labels(labels, path, out)
    if annotations:
        _check_annotations(annotations, path, out)
    return out


def _check_labels(labels: dict[str, str], meta_path: FieldPath, out: list[FieldError]) -> None:
    """Errors are reported at `<meta_path>.labels` itself, not per key, as upstream does
    (the path is built only for an error: nearly every label map has none)."""
    for key, value in labels.items():
        if not formats.is_qualified_name(key):
            for msg in formats.qualified_name_messages(key):
                out.append(invalid(meta_path.child("labels"), key, msg))
        if not formats.is_label_value(value):
            for msg in formats.label_value_messages(value):
                out.append(invalid(meta_path.child("labels"), value, msg))


def _check_annotations(
    annotations: dict[str, str], meta_path: FieldPath, out: list[FieldError]
) -> None:
    """Errors at `<meta_path>.annotations`, the path built only for an error."""
    total = 0
    for key, value in annotations.items():
        lowered = key.lower()
        if not formats.is_qualified_name(lowered):
            for msg in formats.qualified_name_messages(lowered):
                out.append(invalid(meta_path.child("annotations"), key, msg))
        total += _utf8_size(key) + _utf8_size(value)
    if total > TOTAL_ANNOTATION_SIZE:
        out.append(too_long(meta_path.child("annotations"), TOTAL_ANNOTATION_SIZE))


def _utf8_size(text: str) -> int:
    # An ASCII string (nearly all) is its own encoding; `isascii` reads a flag, no scan.
    return len(text) if text.isascii() else len(text.encode())


def validate_template_meta(meta: dict[str, Any], path: FieldPath) -> list[FieldError]:
    """Rule 2: a template's `spec.metadata` may hold only labels and annotations."""
    out: list[FieldError] = []
    labels, annotations = meta.get("labels"), meta.get("annotations")
    if annotations:
        _check_annotations(annotations, path, out)
    if labels:
        _check_labels(labels, path, out)
    if meta.keys() <= _LABELS_AND_ANNOTATIONS:
        return out  # the common template: no other field to forbid
    for json_name, go_name in _TEMPLATE_META_FIELDS:
        if _non_zero(meta.get(json_name)):
            out.append(forbidden(path.child(go_name), "cannot be set"))
    return out


def _non_zero(value: Any) -> bool:
    return value not in (None, "", 0, [], {})
