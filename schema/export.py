"""JSON Schemas (draft 2020-12) for DRA claims and templates, per API version and release.

The structure (which fields exist, their JSON types) is not written down here: it is
walked from `draguard.schema.model.shapes`, the same description the reader uses, so the
schemas and `draguard lint` can never disagree on field names. This module only adds
what a schema can say about values: name patterns and lengths, enums, list limits,
required fields, the `exactly`/`firstAvailable` one-of and a few if/then rules. The
rest (unique names, references, CEL, byte sizes, …) stays in the rule set, and every
schema's `description` says so.

File names follow kubeconform's default template for built-in kinds,
`{{ .ResourceKind }}{{ .KindSuffix }}.json`, whose suffix is `-<first label of the
group>-<version>`: `resourceclaim-resource-v1.json`. The parallel shape (contract §2)
gets a `-parallel` suffix that no kubeconform template produces by itself, so it can
never be mistaken for an upstream shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from draguard.schema.model import formats, shapes
from draguard.schema.model.fieldmap import PARALLEL_KEY
from draguard.schema.model.releases import (
    API_VERSIONS,
    CONFIG_MAX,
    CONSTRAINTS_MAX,
    DEFAULT_RELEASE,
    DRIVER_NAME_MAX,
    EXPRESSION_MAX,
    FIRST_AVAILABLE_MAX,
    GROUP,
    KINDS,
    REQUESTS_MAX,
    SELECTORS_MAX,
    Release,
)

Schema = dict[str, Any]

DRAFT = "https://json-schema.org/draft/2020-12/schema"
ID_BASE = "https://draguard.io/schemas"

# §3.2 formats, anchored. No look-arounds: kubeconform compiles patterns with Go's RE2.
# The expressions are the rule set's own (`formats`); the two below are what a schema
# needs beyond them: a label whose {0,61} enforces the 63 limit inside a longer
# pattern (a reference is two labels), and the caseless subdomain of a driver name.
_LABEL = "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_CI_LABEL = "[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?"
_CI_SUBDOMAIN = f"{_CI_LABEL}(\\.{_CI_LABEL})*"
_QUANTITY = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[numkMGTPE]|[KMGTPE]i)?$"

REST_OF_THE_RULES = (
    "Everything else is checked by `draguard lint` (upstream-rules.md §3), not by this "
    "schema: unique request and subrequest names, that references name an existing "
    "request or subrequest, CEL compilation and cost, byte sizes of expressions and "
    "opaque parameters, the admin-access namespace label, and the total of requests "
    "plus prioritizedRequests."
)


@dataclass(frozen=True, slots=True)
class Variant:
    """One exported schema: a kind in one API version, nested (upstream) or parallel."""

    kind: str
    version: str
    parallel: bool = False

    @property
    def api_version(self) -> str:
        return f"{GROUP}/{self.version}"

    @property
    def file_name(self) -> str:
        group_label = GROUP.split(".", 1)[0]
        suffix = "-parallel" if self.parallel else ""
        return f"{self.kind.lower()}-{group_label}-{self.version}{suffix}.json"


def variants(release: Release = DEFAULT_RELEASE, *, parallel: bool = True) -> tuple[Variant, ...]:
    """Every kind × version that `release` has (§1.2), optionally with parallel twins."""
    layouts = (False, True) if parallel else (False,)
    return tuple(
        Variant(kind, version, layout)
        for kind in KINDS
        for version in API_VERSIONS
        if release.has_api_version(version)
        for layout in layouts
    )


# ---------------------------------------------------------------------------------------
# Value constraints, one row per (type, field) of the shapes description.


def _string(pattern: str | None = None, *, max_length: int | None = None) -> Schema:
    schema: Schema = {"type": "string"}
    if pattern is not None:
        schema["pattern"] = f"^{pattern}$"
    if max_length is not None:
        schema["maxLength"] = max_length
    return schema


def _dns_label() -> Schema:
    return _string(_LABEL, max_length=formats.DNS1123_LABEL_MAX)


def _dns_subdomain() -> Schema:
    return _string(formats.DNS1123_SUBDOMAIN_FMT, max_length=formats.DNS1123_SUBDOMAIN_MAX)


def _request_reference() -> Schema:
    """Rule 19: `request` or `request/subrequest`, each a DNS label."""
    return _string(f"{_LABEL}(/{_LABEL})?", max_length=127)


def _attribute_name(release: Release) -> Schema:
    """Rule 20: `domain/name`, a caseless subdomain ≤ 63 and a C identifier ≤ 32.

    Before 1.37 a name with two or more slashes was not checked at all.
    """
    two_parts: Schema = {
        "type": "string",
        "allOf": [
            {"pattern": f"^{_CI_SUBDOMAIN}/{formats.C_IDENTIFIER_FMT}$"},
            {"pattern": "^[^/]{1,63}/[^/]{1,32}$"},
        ],
    }
    if release.rejects_extra_slashes:
        return two_parts
    return {"anyOf": [two_parts, {"type": "string", "pattern": "/[^/]*/"}]}


def _driver_name() -> Schema:
    """§3.2 driver name: a DNS subdomain compared lower-cased, at most 63."""
    return {**_string(_CI_SUBDOMAIN, max_length=DRIVER_NAME_MAX), "minLength": 1}


def _label_key(*, case_insensitive_prefix: bool = False) -> Schema:
    """A qualified name: optional subdomain prefix ≤ 253, `/`, name ≤ 63."""
    prefix = _CI_SUBDOMAIN if case_insensitive_prefix else formats.DNS1123_SUBDOMAIN_FMT
    return {
        "type": "string",
        "allOf": [
            {"pattern": f"^({prefix}/)?{formats.QUALIFIED_NAME_FMT}$"},
            {"pattern": "^([^/]{1,253}/)?[^/]{1,63}$"},
        ],
    }


def _label_value() -> Schema:
    return _string(formats.LABEL_VALUE_FMT, max_length=formats.LABEL_VALUE_MAX)


def _toleration_key() -> Schema:
    """Rule 16: an empty key is allowed with any operator; otherwise a label key."""
    return {"anyOf": [{"const": ""}, _label_key()]}


def _expression() -> Schema:
    """Rule 14; the limit counts bytes upstream, characters here (equal for ASCII)."""
    return {"type": "string", "minLength": 1, "maxLength": EXPRESSION_MAX}


def _enum(*values: str) -> Callable[[Release], Schema]:
    return lambda _release: {"type": "string", "enum": list(values)}


def _effects(release: Release) -> Schema:
    """Rule 16: `None` joined in 1.35; "" means all effects."""
    return {"type": "string", "enum": ["", *release.toleration_effects]}


def _fixed(factory: Callable[[], Schema]) -> Callable[[Release], Schema]:
    return lambda _release: factory()


@dataclass(frozen=True, slots=True)
class Rule:
    """What the schema says about one field beyond its JSON type."""

    value: Callable[[Release], Schema] | None = None
    required: bool = False
    max_items: int | None = None
    min_items: int | None = None
    unique: bool = False
    keys: Callable[[], Schema] | None = None  # for maps: the key format
    gate: str | None = None  # a `Release` property: when off, the field is dropped (§3.8)


_REQUEST_BODY: dict[str, Rule] = {
    "deviceClassName": Rule(_fixed(_dns_subdomain), required=True),
    "selectors": Rule(max_items=SELECTORS_MAX),
    # "" is defaulted to ExactCount (§4), so it is accepted.
    "allocationMode": Rule(_enum("", "ExactCount", "All")),
    "count": Rule(lambda _r: {"type": "integer", "minimum": 0}),
    "adminAccess": Rule(gate="admin_access"),
    "tolerations": Rule(gate="keeps_tolerations"),
    "capacity": Rule(gate="consumable_capacity"),
}

RULES: dict[tuple[str, str], Rule] = {
    **{(kind, name): Rule(required=True) for kind in KINDS for name in ("apiVersion", "kind")},
    # Rule 1: a name is required, so metadata is too.
    **{(kind, "metadata"): Rule(required=True) for kind in KINDS},
    ("DeviceClaim", "requests"): Rule(max_items=REQUESTS_MAX),
    ("DeviceClaim", "constraints"): Rule(max_items=CONSTRAINTS_MAX),
    ("DeviceClaim", "config"): Rule(max_items=CONFIG_MAX),
    ("DeviceClaim", PARALLEL_KEY): Rule(max_items=REQUESTS_MAX),
    ("DeviceRequest", "name"): Rule(_fixed(_dns_label), required=True),
    ("DeviceRequest", "firstAvailable"): Rule(
        max_items=FIRST_AVAILABLE_MAX, gate="prioritized_list"
    ),
    **{("ExactDeviceRequest", name): rule for name, rule in _REQUEST_BODY.items()},
    **{
        ("DeviceSubRequest", name): rule
        for name, rule in _REQUEST_BODY.items()
        if name != "adminAccess"
    },
    ("DeviceSubRequest", "name"): Rule(_fixed(_dns_label), required=True),
    # v1beta1's flat request: the class is optional (a prioritized request has none).
    **{
        ("DeviceRequest", name): rule
        for name, rule in _REQUEST_BODY.items()
        if name != "deviceClassName"
    },
    ("DeviceRequest", "deviceClassName"): Rule(
        lambda _r: {"anyOf": [{"const": ""}, _dns_subdomain()]}
    ),
    ("PrioritizedDeviceRequest", "name"): Rule(_fixed(_dns_label), required=True),
    ("PrioritizedDeviceRequest", "options"): Rule(
        required=True, min_items=1, max_items=FIRST_AVAILABLE_MAX
    ),
    ("DeviceSelector", "cel"): Rule(required=True),
    ("CELDeviceSelector", "expression"): Rule(_fixed(_expression), required=True),
    ("DeviceToleration", "key"): Rule(_fixed(_toleration_key)),
    ("DeviceToleration", "operator"): Rule(_enum("", "Equal", "Exists")),
    ("DeviceToleration", "value"): Rule(_fixed(_label_value)),
    ("DeviceToleration", "effect"): Rule(_effects),
    ("DeviceConstraint", "requests"): Rule(
        _fixed(_request_reference), max_items=REQUESTS_MAX, unique=True
    ),
    ("DeviceConstraint", "matchAttribute"): Rule(_attribute_name),
    ("DeviceConstraint", "distinctAttribute"): Rule(gate="keeps_distinct_attribute"),
    ("DeviceClaimConfiguration", "requests"): Rule(
        _fixed(_request_reference), max_items=REQUESTS_MAX, unique=True
    ),
    ("DeviceClaimConfiguration", "opaque"): Rule(required=True),
    ("OpaqueDeviceConfiguration", "driver"): Rule(_fixed(_driver_name), required=True),
    ("OpaqueDeviceConfiguration", "parameters"): Rule(lambda _r: {"type": "object"}, required=True),
    ("ObjectMeta", "name"): Rule(_fixed(_dns_subdomain)),
    ("ObjectMeta", "namespace"): Rule(_fixed(_dns_label)),
    ("ObjectMeta", "generation"): Rule(lambda _r: {"type": "integer", "minimum": 0}),
    ("ObjectMeta", "labels"): Rule(_fixed(_label_value), keys=_label_key),
    ("ObjectMeta", "annotations"): Rule(keys=lambda: _label_key(case_insensitive_prefix=True)),
    # A template's `spec.metadata`: only labels and annotations may be non-zero (rule 2).
    ("TemplateObjectMeta", "labels"): Rule(_fixed(_label_value), keys=_label_key),
    ("TemplateObjectMeta", "annotations"): Rule(
        keys=lambda: _label_key(case_insensitive_prefix=True)
    ),
}


# ---------------------------------------------------------------------------------------
# Cross-field rules, per object type.


@dataclass(frozen=True, slots=True)
class Context:
    """Where the walk is: which variant, which release, whether rules apply here."""

    variant: Variant
    release: Release
    checked: bool = True  # False below a field that a disabled gate drops


def _present(name: str, schema: Schema | None = None) -> Schema:
    """`name` is there and not null (null counts as absent, as in Go's decoder)."""
    return {"required": [name], "properties": {name: schema or {"not": {"type": "null"}}}}


def _non_empty_list(name: str) -> Schema:
    return _present(name, {"type": "array", "minItems": 1})


def _all_means_no_count() -> Schema:
    """Rule 15: with allocationMode All, count must stay unset (0)."""
    return {
        "if": _present("allocationMode", {"const": "All"}),
        "then": {"properties": {"count": {"enum": [0, None]}}},
    }


def _v1beta1_main_fields_set(release: Release) -> Schema:
    """§5.2 step 2: any flat field set makes conversion build `exactly` ([] and false count)."""
    options = [
        _present("deviceClassName", {"type": "string", "minLength": 1}),
        _present("selectors", {"type": "array"}),
        _present("allocationMode", {"type": "string", "minLength": 1}),
        _present("count", {"type": "integer", "not": {"const": 0}}),
        _present("adminAccess", {"type": "boolean"}),
        _present("tolerations", {"type": "array"}),
    ]
    if release.has_capacity_fields:
        options.append(_present("capacity", {"type": "object"}))
    return {"anyOf": options}


def _request_rules(ctx: Context) -> list[Schema]:
    """Rule 7 (the one-of), as each shape spells it; §3.8 when DRAPrioritizedList is off.

    The parallel shape's `requests` follow the same rule: the rule set accepts a
    prioritized request left in place there, so the schema does too.
    """
    release = ctx.release
    if ctx.variant.version == "v1beta1":
        exact = _present("deviceClassName", {"type": "string", "minLength": 1})
        rules = [_all_means_no_count()]
        if not release.prioritized_list:
            # Conversion runs before the gate drop, so class + firstAvailable is fine then.
            return [exact, *rules]
        prioritized = {
            "allOf": [_non_empty_list("firstAvailable")],
            "not": _v1beta1_main_fields_set(release),
        }
        exact_only = {"allOf": [exact], "not": _non_empty_list("firstAvailable")}
        return [{"anyOf": [exact_only, prioritized]}, *rules]
    exact = _present("exactly", {"type": "object"})
    if not release.prioritized_list:
        return [exact]
    return [{"oneOf": [exact, _non_empty_list("firstAvailable")]}]


def _toleration_rules(_ctx: Context) -> list[Schema]:
    """Rule 16: operator Exists needs an empty value."""
    return [
        {
            "if": _present("operator", {"const": "Exists"}),
            "then": {"properties": {"value": {"enum": ["", None]}}},
        }
    ]


def _constraint_rules(ctx: Context) -> list[Schema]:
    """Rule 18: matchAttribute wins; else distinctAttribute (when the release keeps it) is required."""
    match = _present("matchAttribute", {"type": "string"})
    if not (ctx.release.has_capacity_fields and ctx.release.keeps_distinct_attribute):
        return [match]
    return [
        {
            "if": {"not": match},
            "then": _present("distinctAttribute", _attribute_name(ctx.release)),
        }
    ]


def _object_meta_rules(_ctx: Context) -> list[Schema]:
    """Rule 1: `name or generateName is required`."""
    non_empty = {"type": "string", "minLength": 1}
    return [{"anyOf": [_present("name", non_empty), _present("generateName", non_empty)]}]


def _template_meta_rules(_ctx: Context) -> list[Schema]:
    """Rule 2: besides labels and annotations, only zero values may appear."""
    zero: Schema = {"enum": [None, "", 0, [], {}]}
    names = [name for name in shapes.OBJECT_META.fields if name not in ("labels", "annotations")]
    return [{"properties": dict.fromkeys(names, zero)}]


OBJECT_RULES: dict[str, Callable[[Context], list[Schema]]] = {
    "ObjectMeta": _object_meta_rules,
    "TemplateObjectMeta": _template_meta_rules,
    "DeviceRequest": _request_rules,
    "ExactDeviceRequest": lambda _ctx: [_all_means_no_count()],
    "DeviceSubRequest": lambda _ctx: [_all_means_no_count()],
    "DeviceToleration": _toleration_rules,
    "DeviceConstraint": _constraint_rules,
}


# ---------------------------------------------------------------------------------------
# The walk over the shapes description.


def _nullable(schema: Schema) -> Schema:
    """An optional field may be null: the decoder treats it as absent."""
    result = dict(schema)
    if "const" in result:
        result["enum"] = [result.pop("const")]
    if "enum" in result:
        result["enum"] = [*result["enum"], None]
    if "anyOf" in result:
        result["anyOf"] = [*result["anyOf"], {"type": "null"}]
    if "type" in result:
        kinds = result["type"] if isinstance(result["type"], list) else [result["type"]]
        result["type"] = [*kinds, "null"]
    return result


def _is_raw(node: shapes.Node) -> bool:
    """A RawExtension (opaque parameters): JSON null is kept, so it is not "absent"."""
    return isinstance(node, shapes.Scalar) and node.kind == "raw"


def _scalar(node: shapes.Scalar) -> Schema:
    if node.kind == "string":
        return {"type": "string"}
    if node.kind == "integer":
        return {"type": "integer", "minimum": shapes.INT64_MIN, "maximum": shapes.INT64_MAX}
    if node.kind == "boolean":
        return {"type": "boolean"}
    if node.kind == "quantity":
        return {"anyOf": [{"type": "number"}, {"type": "string", "pattern": _QUANTITY}]}
    return {}  # any / raw: whatever JSON


def _node(node: shapes.Node, ctx: Context, owner: tuple[str, str] | None) -> Schema:
    if isinstance(node, shapes.Obj):
        return _object(node, ctx, owner)
    if isinstance(node, shapes.ListOf):
        return {"type": "array", "items": _node(node.item, ctx, owner)}
    if isinstance(node, shapes.MapOf):
        return {"type": "object", "additionalProperties": _node(node.value, ctx, owner)}
    return _scalar(node)


def _rule_type(node: shapes.Obj, owner: tuple[str, str] | None) -> str:
    """The key for RULES/OBJECT_RULES: a template's inner metadata has its own rules."""
    if node.type_name == "ObjectMeta" and owner == ("ResourceClaimTemplateSpec", "metadata"):
        return "TemplateObjectMeta"
    return node.type_name


def _object(node: shapes.Obj, ctx: Context, owner: tuple[str, str] | None) -> Schema:
    properties: Schema = {}
    required: list[str] = []
    type_name = _rule_type(node, owner)
    for name, child in node.fields.items():
        rule = RULES.get((type_name, name), Rule())
        child_ctx = ctx
        if rule.gate is not None and not getattr(ctx.release, rule.gate):
            child_ctx = Context(ctx.variant, ctx.release, checked=False)
        schema = _field(child, rule, child_ctx, (node.type_name, name))
        if rule.required and ctx.checked:
            required.append(name)
        elif not _is_raw(child):
            schema = _nullable(schema)
        properties[name] = schema
    schema = {"type": "object", "properties": properties}
    if not node.open:
        schema["additionalProperties"] = False
    if required:
        schema["required"] = required
    build = OBJECT_RULES.get(type_name)
    if build is not None and ctx.checked:
        schema["allOf"] = build(ctx)
    return schema


def _field(node: shapes.Node, rule: Rule, ctx: Context, owner: tuple[str, str]) -> Schema:
    """The structural schema of a field, tightened by its rule where rules apply."""
    schema = _node(node, ctx, owner)
    if not ctx.checked:
        return schema
    if isinstance(node, shapes.ListOf):
        if rule.value is not None:
            schema["items"] = {**schema["items"], **rule.value(ctx.release)}
        if rule.max_items is not None:
            schema["maxItems"] = rule.max_items
        if rule.min_items is not None:
            schema["minItems"] = rule.min_items
        if rule.unique:
            schema["uniqueItems"] = True
        return schema
    if isinstance(node, shapes.MapOf):
        if rule.value is not None:
            values = schema["additionalProperties"]
            schema["additionalProperties"] = {**values, **rule.value(ctx.release)}
        if rule.keys is not None:
            schema["propertyNames"] = rule.keys()
        return schema
    if rule.value is not None:
        if _is_raw(node):
            return rule.value(ctx.release)
        schema = {**schema, **rule.value(ctx.release)}
    return schema


# ---------------------------------------------------------------------------------------
# Whole documents.


def build_schema(variant: Variant, release: Release = DEFAULT_RELEASE) -> Schema:
    """The schema of one variant as `release` (default: the newest) accepts it on create."""
    node = shapes.document_node(variant.kind, variant.version, release, variant.parallel)
    ctx = Context(variant, release)
    body = _object(node, ctx, owner=None)
    body["properties"]["apiVersion"] = {"type": "string", "const": variant.api_version}
    body["properties"]["kind"] = {"type": "string", "const": variant.kind}
    shape = "upstream's shape"
    if variant.parallel:
        shape = "the parallel shape (draguard only, contract §2)"
    return {
        "$schema": DRAFT,
        "$id": f"{ID_BASE}/{release.name}/{variant.file_name}",
        "title": f"{variant.kind} {variant.api_version} ({shape}), Kubernetes {release.name}",
        "description": (
            f"What Kubernetes {release.name} accepts on create, as far as a schema can say: "
            "field names and JSON types, enums, list limits, name formats, required fields "
            "and the exactly/firstAvailable one-of. Fields that a disabled feature gate drops "
            "are only type-checked. " + REST_OF_THE_RULES
        ),
        **body,
    }


def export_schemas(
    release: Release = DEFAULT_RELEASE, *, parallel: bool = True
) -> dict[str, Schema]:
    """Every schema of `release`, keyed by file name."""
    return {v.file_name: build_schema(v, release) for v in variants(release, parallel=parallel)}


def render(schema: Mapping[str, Any]) -> str:
    """Stable text: sorted keys would scramble the field order editors show, so keep it."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_schemas(
    directory: Path, release: Release = DEFAULT_RELEASE, *, parallel: bool = True
) -> list[Path]:
    """Write every schema into `directory` (created if missing); return the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in export_schemas(release, parallel=parallel).items():
        path = directory / name
        path.write_text(render(schema), encoding="utf-8")
        written.append(path)
    return written
