"""Edit YAML documents in place while keeping what a person wrote (ruamel.yaml round trip).

`load_documents` / `dump_documents` read and write a multi-document file with its
comments, key order and flow styles; `apply` makes a loaded document equal to a plain
converted value while touching only what differs, so untouched parts keep their
comments and layout. New keys go after the nearest preceding key of the new value
(which is in Go struct order when it comes from the converter).
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString


def round_trip_yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap long strings such as CEL expressions
    yaml.indent(mapping=2, sequence=2, offset=0)
    return yaml


def load_documents(text: str) -> list[Any]:
    """All documents of a YAML (or JSON) text, as round-trip nodes."""
    return list(round_trip_yaml().load_all(text))


def dump_documents(documents: list[Any]) -> str:
    out = io.StringIO()
    round_trip_yaml().dump_all(documents, out)
    return out.getvalue()


def apply(node: Any, new: Any, donors: Donors | None = None) -> Any:
    """Make `node` equal to `new`, editing containers in place; returns the value to store.

    With `donors` (see `Donors`), a value that already exists somewhere in the original
    document (a list of subrequests moved from `firstAvailable` to `options`, say) is
    taken from there, with its comments and flow style, instead of being written anew.
    """
    if donors is not None and isinstance(new, dict | list) and new:
        donor = donors.find(new)
        if donor is not None:
            return node if donors.equal(node, new) else copy.deepcopy(donor)
    if isinstance(node, CommentedMap) and isinstance(new, dict):
        _apply_map(node, new, donors)
        return node
    if isinstance(node, CommentedSeq) and isinstance(new, list):
        _apply_seq(node, new, donors)
        return node
    if _same_scalar(node, new):
        return node  # keep the original scalar's quoting style
    return _plain_to_node(new, donors)


class Donors:
    """The containers of an original document by value, to be reused where a value moved."""

    def __init__(self, root: Any) -> None:
        self._by_value: dict[str, Any] = {}
        # A snapshot: `apply` edits the original in place, and a donor must still hold
        # the value it was filed under when it is taken.
        stack = [copy.deepcopy(root)]
        while stack:
            node = stack.pop()
            if isinstance(node, CommentedMap | CommentedSeq) and node:
                self._by_value.setdefault(_canonical(to_plain(node)), node)
                stack.extend(node.values() if isinstance(node, CommentedMap) else node)

    def find(self, value: Any) -> Any:
        return self._by_value.get(_canonical(value))

    def equal(self, node: Any, value: Any) -> bool:
        return isinstance(node, CommentedMap | CommentedSeq) and to_plain(node) == value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _apply_map(node: CommentedMap, new: dict[str, Any], donors: Donors | None) -> None:
    for key in [k for k in node if k not in new]:
        del node[key]
    previous: str | None = None
    for key, value in new.items():
        if key in node:
            node[key] = apply(node[key], value, donors)
        else:
            position = 0 if previous is None else list(node).index(previous) + 1
            node.insert(position, key, _plain_to_node(value, donors))
        previous = key


def _apply_seq(node: CommentedSeq, new: list[Any], donors: Donors | None) -> None:
    for i, value in enumerate(new):
        if i < len(node):
            node[i] = apply(node[i], value, donors)
        else:
            node.append(_plain_to_node(value, donors))
    del node[len(new) :]


def _same_scalar(old: Any, new: Any) -> bool:
    if isinstance(old, dict | list) or isinstance(new, dict | list):
        return False
    return (type(old) is type(new) and old == new) or (isinstance(old, str) and old == new)


# kubectl reads YAML with go-yaml's YAML 1.1 rules, where `yes`, `off`, `0777` or `1:20`
# are not strings; ruamel writes YAML 1.2 and would leave them plain. PyYAML resolves
# plain scalars by the 1.1 rules, so it says which new strings need quotes.
_resolve_yaml11: Callable[[type[yaml.Node], str, tuple[bool, bool]], str] = (
    yaml.resolver.Resolver().resolve
)
_STR_TAG = "tag:yaml.org,2002:str"


def _quoted_if_ambiguous(value: str) -> Any:
    if _resolve_yaml11(yaml.ScalarNode, value, (True, False)) == _STR_TAG:
        return value
    return DoubleQuotedScalarString(value)


def _plain_to_node(value: Any, donors: Donors | None = None) -> Any:
    """Plain containers become round-trip containers so later edits can keep styles."""
    if type(value) is str:  # not a ruamel scalar that keeps its own quoting
        return _quoted_if_ambiguous(value)
    if donors is not None and isinstance(value, dict | list) and value:
        donor = donors.find(value)
        if donor is not None:
            return copy.deepcopy(donor)
    if isinstance(value, dict) and not isinstance(value, CommentedMap):
        out = CommentedMap()
        for k, v in value.items():
            out[k] = _plain_to_node(v, donors)
        return out
    if isinstance(value, list) and not isinstance(value, CommentedSeq):
        seq = CommentedSeq()
        seq.extend(_plain_to_node(v, donors) for v in value)
        return seq
    return value


class ExcessiveAliasing(ValueError):
    """Expanding a document's aliases would make more nodes than its text can justify."""


def check_expansion(node: Any, budget: int) -> None:
    """Raise ExcessiveAliasing when `node` expands to more than `budget` nodes.

    ruamel keeps an alias as a shared object, so a few lines of nested aliases (the
    "billion laughs") cost nothing to load but billions of nodes to `to_plain`; lint's
    parser has the same guard (`draguard.schema.read.yamlevents`). Iterative, so a deeply
    nested document cannot exhaust the stack here either.
    """
    stack = [node]
    while stack:
        budget -= 1
        if budget < 0:
            raise ExcessiveAliasing("document contains excessive aliasing")
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def to_plain(node: Any) -> Any:
    """A round-trip node as plain dicts, lists and scalars (for the rule set)."""
    if isinstance(node, dict):
        return {str(k): to_plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [to_plain(v) for v in node]
    if isinstance(node, str):
        return str(node)
    if isinstance(node, bool):
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return node
