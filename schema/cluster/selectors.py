"""Evaluating selector CEL against one device, with cel-go's semantics where they matter.

The checker's environment (`cel.environment`) types attribute values as `any` and
capacities as the opaque `kubernetes.Quantity`, which the binding cannot hold at run
time; evaluation uses the same declarations with attribute values as `dyn` and
quantities as integers of thousandths (upstream compares `Quantity` values exactly,
and thousandths are exact for every capacity a driver publishes in practice), and
semantic versions as marked strings (`SEMVER_MARK` + canonical text, so that a plain
string attribute is not taken for one). The quantity, semver, lists and regex
functions get implementations through the binding's public `function_impls`. The
URL, IP, CIDR and format functions do not: a selector calling one is not evaluated
(`Outcome.unknown` names the function) and counts as matching nothing, and the
reasons say that alternative's outcome is unknown (docs: README "explain").

cel-go semantics kept: a missing attribute is a runtime error ("no such key") that
aborts the Pod (`structured/internal/stable/allocator_stable.go` `selectorsMatch`);
an unknown attribute domain is an empty map (upstream `cel/compile.go` gives every
domain a map); `&&` and `||` absorb an error when the other side decides.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from draguard.schema.cel import environment as checker
from draguard.schema.cluster import semver
from draguard.schema.cluster.quantity import milli_value, parse_quantity
from draguard.schema.cluster.semver import SEMVER_MARK

_DOMAIN = re.compile(r"""device\.(?:attributes|capacity)\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\]""")
_DROPPED = frozenset({"quantity_add_int", "quantity_sub_int"})  # ambiguous over thousandths


@dataclass(frozen=True, slots=True)
class Outcome:
    """True/False, or the runtime error text (upstream wording after `CEL runtime error:`)."""

    matches: bool
    error: str | None = None
    unknown: str | None = None  # a function draguard cannot evaluate, e.g. `ip()`


# Functions without an implementation here; URL, IP and CIDR values only come from
# the first six, so a selector without these calls never meets the others. The
# lists library's `min` and `max` return the element type, which the binding's
# implementations cannot (a type parameter).
_UNEVALUABLE = re.compile(
    r"(?<![\w.])(url|isURL|ip\.isCanonical|ip|isIP|cidr|isCIDR|format\.\w+)\s*\("
    r"|\.(min|max)\s*\(\s*\)")


def unevaluable(expression: str) -> str | None:
    """The first function of the expression that draguard cannot evaluate, as `name()`."""
    found = _UNEVALUABLE.search(expression)
    return None if found is None else f"{found.group(1) or found.group(2)}()"




def _retyped(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get("type_name") == checker.QUANTITY:
            return {"type_name": "int"}
        if value.get("type_name") == checker.SEMVER:
            return {"type_name": "string"}
        if value.get("type_name") == "any":
            return {"type_name": "dyn"}
        return {k: _retyped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_retyped(v) for v in value]
    return value


def _quantity(text: str) -> int:
    parsed = parse_quantity(text)
    if parsed is None:
        raise ValueError(f"quantities must match the regular expression: {text!r}")
    return milli_value(parsed)


def _version(value: str) -> semver.Version:
    if not isinstance(value, str) or not value.startswith(SEMVER_MARK):
        raise ValueError("no such overload")  # a plain string is no semver (cel-go)
    return semver.parse(value[len(SEMVER_MARK):])


def _to_semver(text: str, normalize: bool = False) -> str:
    parsed = semver.parse_normalized(text) if normalize else semver.parse(text)
    return SEMVER_MARK + parsed.text()


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _to_semver(text, normalize)
    except semver.SemverError:
        return False
    return True


def _sum(values: list[Any]) -> int:
    if not all(isinstance(v, int) for v in values):
        # The binding takes one `sum` implementation, declared int (see _IMPLS).
        raise ValueError("draguard cannot evaluate sum() over doubles or durations")
    return sum(values)


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, text)]
    return found if limit < 0 else found[:limit]


def _find(text: str, pattern: str) -> str:
    match = re.search(pattern, text)
    return "" if match is None else match.group(0)


_IMPLS: dict[str, Any] = {
    "string_to_quantity": _quantity,
    "is_quantity_string": lambda text: parse_quantity(text) is not None,
    "quantity_sign": lambda q: (q > 0) - (q < 0),
    "quantity_is_greater_than": lambda a, b: a > b,
    "quantity_is_less_than": lambda a, b: a < b,
    "quantity_compare_to": lambda a, b: (a > b) - (a < b),
    "quantity_add": lambda a, b: a + b,
    "quantity_sub": lambda a, b: a - b,
    "quantity_as_integer": lambda q: q // 1000,
    "quantity_is_integer": lambda q: q % 1000 == 0,
    "quantity_as_float": lambda q: q / 1000,
    # semverlib.go
    "string_to_semver": _to_semver,
    "string_bool_to_semver": _to_semver,
    "is_semver_string": _is_semver,
    "is_semver_string_bool": _is_semver,
    "semver_is_greater_than": lambda a, b: semver.compare(_version(a), _version(b)) == 1,
    "semver_is_less_than": lambda a, b: semver.compare(_version(a), _version(b)) == -1,
    "semver_compare_to": lambda a, b: semver.compare(_version(a), _version(b)),
    "semver_major": lambda v: _version(v).major,
    "semver_minor": lambda v: _version(v).minor,
    "semver_patch": lambda v: _version(v).patch,
    # lists.go and regex.go (Python's `re` for RE2: the same on the patterns selectors use)
    "list_is_sorted": lambda values: all(a <= b for a, b in itertools.pairwise(values)),
    # One implementation serves every `sum` overload: the runtime dispatches on the
    # argument's kind (list) and refuses a second function of the same kinds.
    "list_int_sum": _sum,
    "string_find": _find,
    "string_find_all": _find_all,
    "string_find_all_n": _find_all,
}


@functools.lru_cache(maxsize=2)
def _environment(consumable_capacity: bool) -> cel.Env:
    # The checker's config is written as JSON (`config_yaml`): read back as JSON, with no
    # YAML library imported for it (PyYAML's import and load were a tenth of a 5,000-node
    # explain's fixed cost, bench/RESULTS.md issue 19).
    config = _retyped(json.loads(checker.config_yaml()))
    for function in config["functions"]:
        function["overloads"] = [o for o in function["overloads"] if o["id"] not in _DROPPED]
    config["variables"] = [v for v in config["variables"] if v["name"] != "device"]
    config["variables"].append({"name": "device.driver", "type_name": "string"})
    if consumable_capacity:
        config["variables"].append({"name": "device.allowMultipleAllocations", "type_name": "bool"})
    return cel.NewEnv(checker._pool(checker.EnvFlags(consumable_capacity)),
                      # JSON is YAML, and written without PyYAML's representer (Python
                      # even under libyaml's dumper: most of this environment's build).
                      config=cel.NewEnvConfigFromYaml(json.dumps(config)),
                      function_impls=_IMPLS)


@functools.lru_cache(maxsize=1024)
def _compile(expression: str, consumable_capacity: bool) -> tuple[Any, tuple[str, ...]]:
    """The program and the attribute domains the expression names literally."""
    program = _environment(consumable_capacity).compile(expression)
    domains = tuple(sorted({a or b for a, b in _DOMAIN.findall(expression)}))
    return program, domains


def compile_error(expression: str, *, consumable_capacity: bool) -> str | None:
    try:
        _compile(expression, consumable_capacity)
    except RuntimeError as exc:
        return str(exc)
    return None


def evaluate(expression: str, *, driver: str, attributes: dict[str, dict[str, Any]],
             capacity: dict[str, dict[str, int]], allow_multiple: bool = False,
             consumable_capacity: bool = False) -> Outcome:
    """Whether the device matches; an error is upstream's runtime error (never raised)."""
    function = unevaluable(expression)
    if function is not None:
        return Outcome(False, unknown=function)
    try:
        program, domains = _compile(expression, consumable_capacity)
    except RuntimeError as exc:
        return Outcome(False, f"compilation failed: {exc}")
    if any(d not in attributes or d not in capacity for d in domains):
        attributes = {**{d: {} for d in domains}, **attributes}
        capacity = {**{d: {} for d in domains}, **capacity}
    data: dict[str, Any] = {"device.attributes": attributes, "device.capacity": capacity,
                            "device.driver": driver}
    if consumable_capacity:
        data["device.allowMultipleAllocations"] = allow_multiple
    try:
        value = program.eval(data=data)
    except Exception as exc:  # the binding raises for what cel-go returns as an error value
        return Outcome(False, _go_wording(str(exc)))
    if value.type() == cel.Type.ERROR:
        return Outcome(False, _go_wording(str(value.plain_value())))
    result = value.plain_value()
    if not isinstance(result, bool):
        return Outcome(False, f"expression result must be bool, got {type(result).__name__}")
    return Outcome(result)


def _go_wording(text: str) -> str:
    """cel-go's text for the C++ runtime's errors, where they differ."""
    match = re.search(r'Key not found in map : "?([^"]*)"?', text)
    if match:
        return f"no such key: {match.group(1)}"
    return re.sub(r"^[A-Z_]+: ", "", text)
