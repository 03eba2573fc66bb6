"""Reading a policy file into a `Policy`, with file:line:column and field for every error.

The file is read with ruamel.yaml's round-trip loader because it remembers where each
node came from; the format itself is documented in `draguard.schema.policy.model`.
A policy is strict: an unknown key is an error (a typo such as `maxAlternative`
would otherwise silently turn a limit off).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from draguard.schema.cluster.settings import CLUSTER_CODES, LEVELS, CheckSettings, Level
from draguard.schema.model.formats import is_dns1123_label, is_dns1123_subdomain
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import FIRST_AVAILABLE_MAX, SELECTORS_MAX
from draguard.schema.policy.model import (
    API_VERSION,
    KIND,
    Alternative,
    CatalogEntry,
    ConfigRewrite,
    Limits,
    Placement,
    Policy,
    PolicyError,
    Toleration,
)
from draguard.schema.validate import validate_object

_PLACEMENTS: tuple[Placement, ...] = ("first", "last", "replace")
_REWRITES: tuple[ConfigRewrite, ...] = ("rewrite", "keep")
_MODES = ("ExactCount", "All")
_OPERATORS = ("Equal", "Exists")
_EFFECTS = ("NoSchedule", "NoExecute", "None")
# Fields of ExactDeviceRequest that a DeviceSubRequest lacks (upstream-rules.md §1.3).
_NOT_IN_SUBREQUEST = {
    "adminAccess": "a subrequest cannot ask for admin access (upstream-rules.md §1.3)",
    "firstAvailable": "alternatives cannot be nested (upstream-rules.md §1.3)",
}


@dataclass(frozen=True, slots=True)
class _Node:
    """A value from the file with its field path and 1-based position."""

    source: str
    value: Any
    path: FieldPath
    line: int | None
    column: int | None

    def fail(self, message: str) -> NoReturn:
        raise PolicyError(self.source, message, field=self.path,
                          line=self.line, column=self.column)

    def fields(self, *allowed: str) -> dict[str, _Node]:
        """The children of a mapping, refusing keys outside `allowed`."""
        if not isinstance(self.value, dict):
            self.fail(f"must be a mapping, not {_kind(self.value)}")
        out: dict[str, _Node] = {}
        for key in self.value:
            if not isinstance(key, str):
                self.at_key(key).fail(f"keys must be strings, not {_kind(key)}")
            if key not in allowed:
                detail = _NOT_IN_SUBREQUEST.get(key, "supported fields: " + ", ".join(allowed))
                self.at_key(key).fail(f"unknown field: {detail}")
            out[key] = self.child(key)
        return out

    def entries(self) -> Iterator[tuple[str, _Node]]:
        """The (key, child) pairs of a mapping whose keys are free-form strings."""
        if not isinstance(self.value, dict):
            self.fail(f"must be a mapping, not {_kind(self.value)}")
        for key in self.value:
            if not isinstance(key, str):
                self.fail(f"keys must be strings, not {_kind(key)}")
            yield key, self.child(key, as_key=True)

    def items(self) -> list[_Node]:
        if not isinstance(self.value, list):
            self.fail(f"must be a list, not {_kind(self.value)}")
        return [self.item(i) for i in range(len(self.value))]

    def child(self, key: Any, *, as_key: bool = False) -> _Node:
        # A free-form key (a device class) is where its entry's errors belong.
        line, column = _position(self.value, key, value=not as_key)
        path = self.path.key(str(key)) if as_key else self.path.child(str(key))
        return _Node(self.source, self.value[key], path, line, column)

    def at_key(self, key: Any) -> _Node:
        """The child positioned at its key rather than its value (for unknown-field errors)."""
        line, column = _position(self.value, key, value=False)
        return _Node(self.source, self.value[key], self.path.child(str(key)), line, column)

    def item(self, i: int) -> _Node:
        line, column = _position(self.value, i, value=True)
        return _Node(self.source, self.value[i], self.path.index(i), line, column)

    def string(self) -> str:
        if not isinstance(self.value, str):
            self.fail(f"must be a string, not {_kind(self.value)}")
        return self.value

    def integer(self) -> int:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            self.fail(f"must be an integer, not {_kind(self.value)}")
        return int(self.value)

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            self.fail(f"must be true or false, not {_kind(self.value)}")
        return self.value

    def choice(self, options: tuple[str, ...]) -> str:
        text = self.string()
        if text not in options:
            self.fail(f"must be one of {', '.join(options)}, not {text!r}")
        return text


# What a policy error calls a YAML value (ruamel's nodes subclass dict and list).
_KIND_NAMES: tuple[tuple[type, str], ...] = ((bool, "a boolean"), (dict, "a mapping"),
                                             (list, "a list"))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the string {value!r}"
    for kind, name in _KIND_NAMES:
        if isinstance(value, kind):
            return name
    return f"{type(value).__name__} {value!r}"


def _position(container: Any, key: Any, *, value: bool) -> tuple[int | None, int | None]:
    """1-based line and column of a mapping value / sequence item, when ruamel knows it."""
    try:
        if isinstance(container, CommentedMap):
            line, col = container.lc.value(key) if value else container.lc.key(key)
        elif isinstance(container, CommentedSeq):
            line, col = container.lc.item(key)
        else:
            return None, None
    except (KeyError, IndexError, TypeError, AttributeError):
        return None, None
    return int(line) + 1, int(col) + 1


def read_policy(data: bytes | str, *, source: str) -> Policy:
    """Parse and validate one policy document."""
    root = _load(data, source)
    if root.value is None:
        # What a reader sees mid-way through a non-atomic rewrite; see the policy docstring.
        raise PolicyError(root.source, "the policy file holds no document; write {} for a "
                          "policy of defaults only")
    top = root.fields("apiVersion", "kind", "catalog", "limits", "defaults", "configNamesParent",
                      "clusterChecks")
    if "apiVersion" in top and top["apiVersion"].string() != API_VERSION:
        top["apiVersion"].fail(f"must be {API_VERSION}")
    if "kind" in top and top["kind"].string() != KIND:
        top["kind"].fail(f"must be {KIND}")
    limits = _limits(top["limits"]) if "limits" in top else Limits()
    catalog = _catalog(top["catalog"], limits) if "catalog" in top else {}
    rewrite = "rewrite"
    if "configNamesParent" in top:
        rewrite = top["configNamesParent"].choice(_REWRITES)
    return Policy(
        catalog=MappingProxyType(catalog),
        limits=limits,
        defaults=top["defaults"].boolean() if "defaults" in top else True,
        config_names_parent="keep" if rewrite == "keep" else "rewrite",
        cluster_checks=_cluster_checks(top["clusterChecks"]) if "clusterChecks" in top
        else CheckSettings(),
    )


def _cluster_checks(node: _Node) -> CheckSettings:
    """`clusterChecks:`: a level per cluster code (default warn) and `staleAfter` seconds."""
    fields = node.fields(*CLUSTER_CODES, "staleAfter")
    levels: dict[str, Level] = {}
    for code in CLUSTER_CODES:
        if code in fields:
            chosen = fields[code].choice(LEVELS)
            levels[code] = next(level for level in LEVELS if level == chosen)
    stale = 300.0
    if "staleAfter" in fields:
        value = fields["staleAfter"].value
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            fields["staleAfter"].fail(f"must be a number of seconds greater than zero, "
                                      f"not {_kind(value)}")
        stale = float(value)
    return CheckSettings(MappingProxyType(levels), stale)


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read and validate a policy file; raise PolicyError for anything unusable."""
    source = os.fspath(path)
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        raise PolicyError(source, f"cannot read the policy: {exc.strerror or exc}") from exc
    return parse_policy(data, source=source)


def parse_policy(data: bytes | str, *, source: str = "<policy>") -> Policy:
    """Parse policy text (YAML 1.2, so JSON too); raise PolicyError naming line and field."""
    return read_policy(data, source=source)


def _load(data: bytes | str, source: str) -> _Node:
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise PolicyError(source, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
    else:
        text = data
    try:
        value = YAML(typ="rt", pure=True).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or "not valid YAML"
        line = mark.line + 1 if mark is not None else None
        column = mark.column + 1 if mark is not None else None
        raise PolicyError(source, problem, line=line, column=column) from exc
    except YAMLError as exc:
        raise PolicyError(source, f"not valid YAML: {exc}") from exc
    return _Node(source, value, FieldPath(), 1 if value is not None else None, 1)


def _limits(node: _Node) -> Limits:
    fields = node.fields("maxAlternatives", "forbiddenClasses")
    cap: int | None = None
    if "maxAlternatives" in fields:
        cap = fields["maxAlternatives"].integer()
        if not 1 <= cap <= FIRST_AVAILABLE_MAX:
            fields["maxAlternatives"].fail(
                f"must be between 1 and {FIRST_AVAILABLE_MAX} (upstream's limit, §2.4)")
    patterns: list[str] = []
    for item in fields["forbiddenClasses"].items() if "forbiddenClasses" in fields else []:
        pattern = item.string()
        if not pattern:
            item.fail("must not be empty")
        patterns.append(pattern)
    return Limits(max_alternatives=cap, forbidden_classes=tuple(patterns))


def _catalog(node: _Node, limits: Limits) -> dict[str, CatalogEntry]:
    catalog: dict[str, CatalogEntry] = {}
    for device_class, entry_node in node.entries():
        if not is_dns1123_subdomain(device_class):
            entry_node.fail("a device class name must be a lowercase RFC 1123 subdomain")
        catalog[device_class] = _entry(device_class, entry_node, limits)
    return catalog


def _entry(device_class: str, node: _Node, limits: Limits) -> CatalogEntry:
    fields = node.fields("original", "originalName", "alternatives")
    original: Placement = "first"
    if "original" in fields:
        chosen = fields["original"].choice(_PLACEMENTS)
        original = "replace" if chosen == "replace" else "last" if chosen == "last" else "first"
    original_name = "requested"
    if "originalName" in fields:
        original_name = fields["originalName"].string()
        if not is_dns1123_label(original_name):
            fields["originalName"].fail("must be a lowercase RFC 1123 label (a subrequest name)")
    if "alternatives" not in fields:
        node.fail("alternatives: Required value")
    items = fields["alternatives"].items()
    if not items:
        fields["alternatives"].fail("must list at least one alternative")
    kept = 0 if original == "replace" else 1
    if len(items) + kept > FIRST_AVAILABLE_MAX:
        fields["alternatives"].fail(
            f"{len(items)} alternatives{' plus the original' if kept else ''} exceed upstream's "
            f"limit of {FIRST_AVAILABLE_MAX} (upstream-rules.md §2.4)")
    pattern = limits.forbidding_pattern(device_class)
    if pattern is not None and original != "replace":
        node.fail(f"the class is forbidden by limits.forbiddenClasses ({pattern!r}), so keeping "
                  "the original as an alternative would deny every expanded claim; "
                  "use original: replace")
    taken = set() if original == "replace" else {original_name}
    alternatives = []
    for item in items:
        alternative = _alternative(item, limits)
        if alternative.name in taken:
            also = " (also the originalName)" if alternative.name == original_name else ""
            item.child("name").fail(f"duplicate subrequest name {alternative.name!r}{also}")
        taken.add(alternative.name)
        alternatives.append(alternative)
    _check_with_rules(items, alternatives)
    return CatalogEntry(device_class, tuple(alternatives), original, original_name)


_PROBE_PATH = FieldPath.root("spec", "devices", "requests").index(0).child("firstAvailable")


def _check_with_rules(items: list[_Node], alternatives: list[Alternative]) -> None:
    """Run the rule set over the alternatives, so a bad CEL selector or toleration fails
    the policy load with its line instead of denying every claim it would expand.

    The probe is a v1 claim holding only these alternatives; its error paths are mapped
    back onto the policy (`…firstAvailable[j].x` → `…alternatives[j].x`).
    """
    probe = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "policy-probe", "namespace": "default"},
        "spec": {"devices": {"requests": [
            {"name": "probe", "firstAvailable": [a.to_json() for a in alternatives]}]}},
    }
    for error in validate_object(probe).errors:
        parts = error.path.parts
        if error.path.startswith(_PROBE_PATH) and len(parts) > len(_PROBE_PATH):
            j = parts[len(_PROBE_PATH)]
            if isinstance(j, int) and j < len(items):
                node = items[j]
                rest = parts[len(_PROBE_PATH) + 1:]
                raise PolicyError(node.source, error.message,
                                  field=FieldPath(node.path.parts + rest),
                                  line=node.line, column=node.column)
        items[0].fail(f"the alternatives fail upstream's rules: {error}")


def _alternative(node: _Node, limits: Limits) -> Alternative:
    fields = node.fields("name", "deviceClassName", "selectors", "allocationMode", "count",
                         "tolerations", "capacity")
    for required in ("name", "deviceClassName"):
        if required not in fields:
            node.fail(f"{required}: Required value")
    name = fields["name"].string()
    if not is_dns1123_label(name):
        fields["name"].fail("must be a lowercase RFC 1123 label (a subrequest name)")
    device_class = fields["deviceClassName"].string()
    if not is_dns1123_subdomain(device_class):
        fields["deviceClassName"].fail("a device class name must be a lowercase RFC 1123 subdomain")
    pattern = limits.forbidding_pattern(device_class)
    if pattern is not None:
        fields["deviceClassName"].fail(f"forbidden by limits.forbiddenClasses ({pattern!r})")
    mode = fields["allocationMode"].choice(_MODES) if "allocationMode" in fields else None
    count = fields["count"].integer() if "count" in fields else None
    if count is not None and count <= 0:
        fields["count"].fail("must be greater than zero")
    if count is not None and mode == "All":
        fields["count"].fail("must not be specified when allocationMode is 'All'")
    return Alternative(
        name=name,
        device_class_name=device_class,
        selectors=_selectors(fields["selectors"]) if "selectors" in fields else (),
        allocation_mode=mode,
        count=count,
        tolerations=tuple(_toleration(t) for t in fields["tolerations"].items())
        if "tolerations" in fields else (),
        capacity=_capacity(fields["capacity"]) if "capacity" in fields else (),
    )


def _selectors(node: _Node) -> tuple[str, ...]:
    """CEL expressions, written as strings or in the API's `{cel: {expression: …}}` form."""
    items = node.items()
    if len(items) > SELECTORS_MAX:
        node.fail(f"must have at most {SELECTORS_MAX} items (upstream-rules.md §2.4)")
    expressions = []
    for item in items:
        if isinstance(item.value, dict):
            cel = item.fields("cel")
            if "cel" not in cel:
                item.fail("cel: Required value")
            expression = cel["cel"].fields("expression")
            if "expression" not in expression:
                cel["cel"].fail("expression: Required value")
            text = expression["expression"].string()
        else:
            text = item.string()
        if not text.strip():
            item.fail("a CEL expression must not be empty")
        expressions.append(text)
    return tuple(expressions)


def _toleration(node: _Node) -> Toleration:
    fields = node.fields("key", "operator", "value", "effect", "tolerationSeconds")
    return Toleration(
        key=fields["key"].string() if "key" in fields else None,
        operator=fields["operator"].choice(_OPERATORS) if "operator" in fields else None,
        value=fields["value"].string() if "value" in fields else None,
        effect=fields["effect"].choice(_EFFECTS) if "effect" in fields else None,
        toleration_seconds=fields["tolerationSeconds"].integer()
        if "tolerationSeconds" in fields else None,
    )


def _capacity(node: _Node) -> tuple[tuple[str, str | int], ...]:
    fields = node.fields("requests")
    if "requests" not in fields:
        return ()
    out: list[tuple[str, str | int]] = []
    for name, quantity in fields["requests"].entries():
        if isinstance(quantity.value, bool) or not isinstance(quantity.value, str | int):
            quantity.fail("a quantity must be a string such as \"40Gi\" or an integer")
        value = quantity.value
        out.append((name, value if isinstance(value, int) else str(value)))
    return tuple(out)
