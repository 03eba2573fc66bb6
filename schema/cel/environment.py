"""The DRA selector CEL environment, declared for the CEL C++ checker (`cel-expr-python`).

Mirrors upstream `dynamic-resource-allocation/cel/compile.go` (see
`shared/spec/cel-environment.md`, `upstream-rules.md` §3.3 rule 14) on top of the
Kubernetes base environment:

* `device` is an object type `kubernetes.DRADevice`. The binding only knows object
  types through protobuf descriptors, so one is built here at run time. Protobuf maps
  cannot hold maps, so the descriptor types `attributes`/`capacity` loosely, and two
  variables named `device.attributes` and `device.capacity` give them their exact
  types: CEL resolves the longest declared qualified name first, so `device.capacity`
  is `map(string, map(string, kubernetes.Quantity))` while `device.drivr` is still an
  "undefined field" of the object type.
* Attribute values are the `any` type (upstream's `AnyType`), so they compare with
  anything and a bare attribute is an acceptable result.
* The Kubernetes libraries (quantity, semver, lists, regex, URLs, IP, CIDR, format)
  are declared as functions over opaque types; the checker needs no implementations
  because selectors are only compiled here, never evaluated.
* `CrossTypeNumericComparisons`: the standard `<`, `<=`, `>`, `>=` are replaced by the
  same overloads plus the int/uint/double mixes, as upstream's base environment does.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, struct_pb2

DEVICE_TYPE = "kubernetes.DRADevice"
QUANTITY = "kubernetes.Quantity"
SEMVER = "kubernetes.Semver"
URL = "kubernetes.URL"
IP = "net.IP"
CIDR = "net.CIDR"
NAMED_FORMAT = "kubernetes.NamedFormat"


@dataclass(frozen=True, slots=True)
class EnvFlags:
    """The feature gates that change the selector environment (cel-environment.md)."""

    consumable_capacity: bool  # adds `device.allowMultipleAllocations`


# --- the `device` object type --------------------------------------------------------

_F = descriptor_pb2.FieldDescriptorProto


def _device_file(flags: EnvFlags) -> descriptor_pb2.FileDescriptorProto:
    """`kubernetes.DRADevice` as a proto3 message; map values are loose (see module doc)."""
    fdp = descriptor_pb2.FileDescriptorProto(
        name="draguard/dra_device.proto", package="kubernetes", syntax="proto3",
        dependency=["google/protobuf/struct.proto"])
    msg = fdp.message_type.add(name="DRADevice")
    fields: list[tuple[str, int, str]] = [
        ("driver", _F.TYPE_STRING, ""),
        ("attributes", _F.TYPE_MESSAGE, ".kubernetes.DRADevice.AttributesEntry"),
        ("capacity", _F.TYPE_MESSAGE, ".kubernetes.DRADevice.CapacityEntry"),
    ]
    if flags.consumable_capacity:
        fields.append(("allowMultipleAllocations", _F.TYPE_BOOL, ""))
    for number, (name, kind, type_name) in enumerate(fields, start=1):
        label = _F.LABEL_REPEATED if type_name else _F.LABEL_OPTIONAL
        added = msg.field.add(name=name, number=number, type=kind, label=label, json_name=name)
        if type_name:
            added.type_name = type_name
    for entry_name in ("AttributesEntry", "CapacityEntry"):
        entry = msg.nested_type.add(name=entry_name)
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
        entry.field.add(name="value", number=2, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                        type_name=".google.protobuf.Struct")
    return fdp


def _pool(flags: EnvFlags) -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(struct_pb2.DESCRIPTOR.serialized_pb))
    pool.Add(_device_file(flags))
    return pool


# --- declarations, written as the binding's YAML environment config --------------------

TypeInfo = dict[str, Any]


def _t(name: str, *params: TypeInfo) -> TypeInfo:
    out: TypeInfo = {"type_name": name}
    if params:
        out["params"] = list(params)
    return out


T_PARAM: TypeInfo = {"type_name": "T", "is_type_param": True}
STRING, INT, UINT, DOUBLE, BOOL, BYTES = (_t(n) for n in ("string", "int", "uint", "double",
                                                        "bool", "bytes"))
TIMESTAMP, DURATION = _t("google.protobuf.Timestamp"), _t("google.protobuf.Duration")


def _list(elem: TypeInfo) -> TypeInfo:
    return _t("list", elem)


def _map(key: TypeInfo, value: TypeInfo) -> TypeInfo:
    return _t("map", key, value)


def _optional(inner: TypeInfo) -> TypeInfo:
    return _t("optional_type", inner)


# (function, overload id, target or None, args, result)
Overload = tuple[str, str, TypeInfo | None, tuple[TypeInfo, ...], TypeInfo]


def _parsed_from_string(function: str, kind: TypeInfo, check: str, check_id: str) -> list[Overload]:
    """A type read from a string: its constructor (`quantity("1Gi")`) and its test (`isQuantity`)."""
    return [
        (function, f"string_to_{function}", None, (STRING,), kind),
        (check, check_id, None, (STRING,), BOOL),
    ]


def _comparisons(prefix: str, kind: TypeInfo) -> list[Overload]:
    """The ordering methods Kubernetes' quantity and semver libraries both declare."""
    return [
        ("isGreaterThan", f"{prefix}_is_greater_than", kind, (kind,), BOOL),
        ("isLessThan", f"{prefix}_is_less_than", kind, (kind,), BOOL),
        ("compareTo", f"{prefix}_compare_to", kind, (kind,), INT),
    ]


def _quantity_overloads() -> list[Overload]:
    q = _t(QUANTITY)
    return [
        *_parsed_from_string("quantity", q, "isQuantity", "is_quantity_string"),
        ("sign", "quantity_sign", q, (), INT),
        *_comparisons("quantity", q),
        ("add", "quantity_add", q, (q,), q),
        ("add", "quantity_add_int", q, (INT,), q),
        ("sub", "quantity_sub", q, (q,), q),
        ("sub", "quantity_sub_int", q, (INT,), q),
        ("asInteger", "quantity_as_integer", q, (), INT),
        ("isInteger", "quantity_is_integer", q, (), BOOL),
        ("asApproximateFloat", "quantity_as_float", q, (), DOUBLE),
    ]


def _semver_overloads() -> list[Overload]:
    s = _t(SEMVER)
    return [
        *_parsed_from_string("semver", s, "isSemver", "is_semver_string"),
        ("semver", "string_bool_to_semver", None, (STRING, BOOL), s),
        ("isSemver", "is_semver_string_bool", None, (STRING, BOOL), BOOL),
        *_comparisons("semver", s),
        ("major", "semver_major", s, (), INT),
        ("minor", "semver_minor", s, (), INT),
        ("patch", "semver_patch", s, (), INT),
    ]


def _lists_regex_overloads() -> list[Overload]:
    lt = _list(T_PARAM)
    out: list[Overload] = [
        ("isSorted", "list_is_sorted", lt, (), BOOL),
        ("min", "list_min", lt, (), T_PARAM),
        ("max", "list_max", lt, (), T_PARAM),
        # list indexOf/lastIndexOf are left out: the strings extension already owns
        # those names and the C++ checker refuses a second declaration (docs/cel.md).
        ("find", "string_find", STRING, (STRING,), STRING),
        ("findAll", "string_find_all", STRING, (STRING,), _list(STRING)),
        ("findAll", "string_find_all_n", STRING, (STRING, INT), _list(STRING)),
    ]
    for name, elem in (("int", INT), ("uint", UINT), ("double", DOUBLE), ("duration", DURATION)):
        out.append(("sum", f"list_{name}_sum", _list(elem), (), elem))
    return out


def _network_overloads() -> list[Overload]:
    url, ip, cidr = _t(URL), _t(IP), _t(CIDR)
    out: list[Overload] = [
        *_parsed_from_string("url", url, "isURL", "is_url_string"),
        ("getQuery", "url_get_query", url, (), _map(STRING, _list(STRING))),
        *_parsed_from_string("ip", ip, "isIP", "is_ip"),
        ("ip.isCanonical", "ip_is_canonical", None, (STRING,), BOOL),
        ("family", "ip_family", ip, (), INT),
        *_parsed_from_string("cidr", cidr, "isCIDR", "is_cidr"),
        ("containsIP", "cidr_contains_ip_ip", cidr, (ip,), BOOL),
        ("containsIP", "cidr_contains_ip_string", cidr, (STRING,), BOOL),
        ("containsCIDR", "cidr_contains_cidr", cidr, (cidr,), BOOL),
        ("containsCIDR", "cidr_contains_cidr_string", cidr, (STRING,), BOOL),
        ("ip", "cidr_ip", cidr, (), ip),
        ("masked", "cidr_masked", cidr, (), cidr),
        ("prefixLength", "cidr_prefix_length", cidr, (), INT),
    ]
    for getter in ("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath"):
        out.append((getter, f"url_{getter}", url, (), STRING))
    for test in ("isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
                 "isGlobalUnicast"):
        out.append((test, f"ip_{test}", ip, (), BOOL))
    return out


_NAMED_FORMATS = ("dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName",
                  "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix",
                  "labelValue", "uri", "uuid", "byte", "date", "datetime")


def _format_overloads() -> list[Overload]:
    fmt = _t(NAMED_FORMAT)
    out: list[Overload] = [
        ("format.named", "format_named", None, (STRING,), _optional(fmt)),
        ("validate", "format_validate", fmt, (STRING,), _optional(_list(STRING))),
    ]
    out.extend((f"format.{name}", f"format_{name}", None, (), fmt) for name in _NAMED_FORMATS)
    return out


def _string_conversion_overloads() -> list[Overload]:
    """`string()` redeclared whole, because IP and CIDR add overloads to it."""
    sources = (("int64", INT), ("uint64", UINT), ("double", DOUBLE), ("bytes", BYTES),
               ("string", STRING), ("bool", BOOL), ("timestamp", TIMESTAMP),
               ("duration", DURATION), ("ip", _t(IP)), ("cidr", _t(CIDR)))
    return [("string", f"{name}_to_string", None, (arg,), STRING) for name, arg in sources]


_ORDERED = (("bool", BOOL), ("int64", INT), ("uint64", UINT), ("double", DOUBLE),
            ("string", STRING), ("bytes", BYTES), ("timestamp", TIMESTAMP),
            ("duration", DURATION))
_NUMERIC = (("int64", INT), ("uint64", UINT), ("double", DOUBLE))
COMPARISONS = {"_<_": "less", "_<=_": "less_equals", "_>_": "greater", "_>=_": "greater_equals"}


def _comparison_overloads() -> list[Overload]:
    out: list[Overload] = []
    for function, stem in COMPARISONS.items():
        for name, arg in _ORDERED:
            out.append((function, f"{stem}_{name}", None, (arg, arg), BOOL))
        for left_name, left in _NUMERIC:
            for right_name, right in _NUMERIC:
                if left_name != right_name:
                    out.append((function, f"{stem}_{left_name}_{right_name}", None,
                                (left, right), BOOL))
    return out


def _all_overloads() -> list[Overload]:
    return (_quantity_overloads() + _semver_overloads() + _lists_regex_overloads()
            + _network_overloads() + _format_overloads() + _string_conversion_overloads()
            + _comparison_overloads())


def _function_configs() -> list[dict[str, Any]]:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for function, overload_id, target, args, result in _all_overloads():
        overload: dict[str, Any] = {"id": overload_id, "return": result}
        if target is not None:
            overload["target"] = target
        if args:
            overload["args"] = list(args)
        by_name.setdefault(function, []).append(overload)
    return [{"name": name, "overloads": overloads} for name, overloads in by_name.items()]


# Upstream attribute maps hold `AnyType` values (compile.go `attributeType`).
_ATTRIBUTES = _map(STRING, _map(STRING, _t("any")))
_CAPACITY = _map(STRING, _map(STRING, _t(QUANTITY)))


@functools.lru_cache(maxsize=1)  # a constant: lint's checker and explain's runtime both read it
def config_yaml() -> str:
    """The binding's environment config: extensions, variables and declarations.

    Written as JSON, which is YAML (flow style) to the binding's parser and to PyYAML
    (`cluster/selectors.py` reads it back): no YAML library is loaded to check a selector.
    """
    config = {
        # Upstream: ext.Strings(v2), ext.Sets, cel.OptionalTypes, ext.TwoVarComprehensions,
        # ext.Bindings(v0) (the DRA environment adds cel.bind).
        "extensions": [{"name": "strings", "version": 2}, {"name": "sets"},
                       {"name": "optional"}, {"name": "two-var-comprehensions"},
                       {"name": "bindings"}],
        "stdlib": {"exclude_functions": [{"name": name} for name in (*COMPARISONS, "string")]},
        "variables": [
            {"name": "device", **_t(DEVICE_TYPE)},
            {"name": "device.attributes", **_ATTRIBUTES},
            {"name": "device.capacity", **_CAPACITY},
        ],
        "functions": _function_configs(),
    }
    return json.dumps(config, separators=(",", ":"))


@functools.lru_cache(maxsize=4)
def environment(flags: EnvFlags) -> cel.Env:
    """One compiled environment per flag set (built once, about a millisecond)."""
    config = cel.NewEnvConfigFromYaml(config_yaml())
    return cel.NewEnv(_pool(flags), config=config)
