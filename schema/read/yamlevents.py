"""YAML text → JSON-like values, built straight from libyaml's events.

PyYAML's `CSafeLoader` parses in C but builds values in Python through nodes, the
resolver and a generic constructor; for lint that was 2/3 of the time per document.
Here libyaml's events go straight into dicts and lists with a table lookup for plain
scalars, which is about twice as fast. Anything beyond JSON's data model (merge keys
`<<`, explicit tags other than the core scalars, `!!set`, `!!binary`, …) falls back to
the full PyYAML loader, so the result is always what `yaml.load` would give, except:

- timestamps stay strings, and mapping keys are always strings (the scalar as written),
  as kubectl's YAML→JSON decoding (`sigs.k8s.io/yaml`) has them;
- a recursive alias is an error rather than a cyclic structure.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import yaml
from yaml._yaml import CParser
from yaml.composer import ComposerError
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

from draguard.schema.model.paths import Segment
from draguard.schema.read.duplicates import Duplicate

_CORE = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL, NULL = (_CORE + t for t in ("str", "int", "float", "bool", "null"))
TIMESTAMP, MERGE = _CORE + "timestamp", _CORE + "merge"
_MAP, _SEQ = _CORE + "map", _CORE + "seq"


class TextLoader(yaml.CSafeLoader):
    """libyaml's safe loader, reading timestamps as strings (kubectl's YAML is JSON)."""


TextLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != TIMESTAMP]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


def _timestamp_as_text(loader: TextLoader, node: yaml.Node) -> Any:
    return node.value


TextLoader.add_constructor(TIMESTAMP, _timestamp_as_text)

_IMPLICIT = TextLoader.yaml_implicit_resolvers

Positions = Any
"""Where a node starts: a scalar's libyaml `Mark`; a collection's `(Mark, children)`, with
children `{key: (key Mark, Positions)}` for a mapping and `[Positions, …]` for a list."""
_BOOLS = {"yes": True, "true": True, "on": True, "no": False, "false": False, "off": False}
_CONSTRUCTOR = yaml.constructor.SafeConstructor()


class _Fallback(Exception):
    """The document uses YAML beyond JSON's data model: let PyYAML build it."""


def load_with_positions(
    text: str, duplicates: list[Duplicate] | None = None
) -> tuple[Any, Positions | None]:
    """The value and where each of its nodes starts (None when PyYAML had to build it).

    A key repeated in a mapping keeps its last value (as kubectl does) and, when
    `duplicates` is given, is recorded there, on the PyYAML fallback (merge keys, custom
    tags) too.
    """
    try:
        return _build(text, duplicates)
    except _Fallback:
        # Merge keys and the like may repeat nodes, but not without bound.
        budget = [10_000 + 10 * len(text)]
        return _as_json(_load_fallback(text, duplicates), budget), None


def _load_fallback(text: str, duplicates: list[Duplicate] | None) -> Any:
    """`yaml.load` in its two steps (compose, then construct, as `get_single_data`
    does), so that the composed nodes can be searched for repeated keys first."""
    loader = TextLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if duplicates is not None:
            duplicates.extend(_node_duplicates(loader, node))
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _node_duplicates(loader: TextLoader, root: yaml.Node) -> list[Duplicate]:
    """Keys written twice in a mapping of the composed document, with their paths.

    A merge key (`<<`) is not a repeat: a key written beside a merge overrides the merged
    value, as in YAML's merge semantics. Each node is visited once (an alias points at a
    node already seen), without recursion.
    """
    found: list[Duplicate] = []
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, tuple[Segment, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in enumerate(node.value))
        elif isinstance(node, yaml.MappingNode):
            first: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = _node_key(loader, key_node)
                if key is None:
                    continue
                mark = key_node.start_mark
                if key in first:
                    was = first[key]
                    found.append(Duplicate((*path, key), was.line, was.column,
                                           mark.line, mark.column))
                first[key] = mark
                stack.append((value_node, (*path, key)))
    return sorted(found, key=lambda d: (d.line, d.column))


def _node_key(loader: TextLoader, node: yaml.Node) -> str | None:
    """A scalar key as the value's JSON key; None for a merge key or a key that is not a
    scalar (refused when the value is copied, `_json_key`)."""
    if not isinstance(node, yaml.ScalarNode) or node.tag == "tag:yaml.org,2002:merge":
        return None
    try:
        return _json_key(loader.construct_object(node))
    except (yaml.YAMLError, ValueError, TypeError):
        return None


def _as_json(value: Any, budget: list[int]) -> Any:
    """PyYAML's value copied with string keys; a set, bytes or a custom type is a parse error.

    The copy expands shared (aliased) values, so it runs on a node budget: past it the
    document is refused as excessively aliased (see `_check_aliasing`).
    """
    budget[0] -= 1
    if budget[0] < 0:
        raise ComposerError(None, None, "document contains excessive aliasing", None)
    if isinstance(value, dict):
        return {_json_key(k): _as_json(v, budget) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_json(v, budget) for v in value]
    if value is None or isinstance(value, str | int | float):
        return value
    detail = f"a YAML {type(value).__name__} value cannot be represented in JSON"
    raise ComposerError(None, None, detail, None)


def _json_key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, str | int | float):
        return str(key)
    detail = f"a YAML {type(key).__name__} value cannot be a mapping key"
    raise ComposerError(None, None, detail, None)


def _build(text: str, duplicates: list[Duplicate] | None = None) -> tuple[Any, Positions]:
    # The bare C parser: events need neither a resolver nor a constructor set up.
    # The cycle collector is paused while a document is built: what is built is a tree
    # (a recursive alias is refused), so it has nothing to find there, and for a big
    # document (a `kind: List` of thousands of claims) its passes over the growing
    # heap made reading grow faster than the text.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _build_from(CParser(text).get_event, duplicates)
    finally:
        if paused:
            gc.enable()


def _build_from(
    get_event: Callable[[], Any], duplicates: list[Duplicate] | None = None
) -> tuple[Any, Positions]:
    # The innermost open collection is kept in locals: `container`, its pending `key`
    # when it is a mapping, and the same for positions (`children`, `key_mark`, and
    # `mark` where the collection starts); its parents wait on `stack`. This loop runs
    # once per event, so it avoids calls and attribute lookups where it can.
    stack: list[tuple[Any, Any, Any, Any, Any]] = []
    anchors: dict[str, tuple[Any, Positions]] = {}
    # Anchored collections still open (an alias to one is a cycle), with the node count
    # where they started; `sizes` holds the node count of each closed anchored one.
    open_ids: dict[int, tuple[str, int]] = {}
    sizes: dict[str, int] = {}
    nodes = aliased = 0  # nodes decoded, and how many of them an alias repeated
    container: Any = None
    children: Any = None
    key: Any = _NO_KEY
    key_mark: Any = None
    mark: Any = None
    in_map = False
    root: Any = None
    root_pos: Positions = None
    documents = 0
    while True:
        event = get_event()
        cls = event.__class__
        nodes += 1
        if cls is ScalarEvent:
            if in_map and key is _NO_KEY:
                key, key_mark = event.value, event.start_mark
                if event.tag is not None or key == "<<" or event.anchor is not None:
                    key = _key(event, anchors)
                continue
            value, pos = event.value, event.start_mark
            if event.tag is not None or event.anchor is not None:
                value = _scalar(event, anchors)
            # An untagged plain scalar is a string unless its first character can start an
            # implicit type; those (counts, booleans, names like `opt-0`) repeat a lot.
            elif event.implicit[0] and value[:1] in _IMPLICIT:
                value = _PLAIN[value] if value in _PLAIN else _plain(value)
        elif cls is MappingStartEvent or cls is SequenceStartEvent:
            if in_map and key is _NO_KEY:
                raise ComposerError(None, None, "mapping keys must be scalars", event.start_mark)
            is_map = cls is MappingStartEvent
            if event.tag is not None:
                _check_tag(event.tag, _MAP if is_map else _SEQ)
            stack.append((container, key, children, key_mark, mark))
            container, children = ({}, {}) if is_map else ([], [])
            key, key_mark, mark, in_map = _NO_KEY, None, event.start_mark, is_map
            if event.anchor is not None:
                anchors[event.anchor] = (container, (mark, children))
                open_ids[id(container)] = (event.anchor, nodes)
            continue
        elif cls is MappingEndEvent or cls is SequenceEndEvent:
            value, pos = container, (mark, children)
            if open_ids and id(value) in open_ids:
                anchor, start = open_ids.pop(id(value))
                sizes[anchor] = nodes - start
            container, key, children, key_mark, mark = stack.pop()
            in_map = type(container) is dict
        elif cls is AliasEvent:
            value, pos = _alias(event, anchors, open_ids)
            size = sizes.get(event.anchor, 1)
            nodes, aliased = nodes + size, aliased + size
            _check_aliasing(nodes, aliased, event)
            if in_map and key is _NO_KEY:
                key, key_mark = _alias_key(event, value), event.start_mark
                continue
        elif cls is StreamEndEvent:
            return root, root_pos
        else:  # document start and end
            if cls is DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise _Fallback  # PyYAML says "expected a single document"
            continue
        if container is None:
            root, root_pos = value, pos
        elif in_map:
            if key in children and duplicates is not None:  # rare: one lookup otherwise
                duplicates.append(_duplicate(stack, key, children[key][0], key_mark))
            container[key] = value
            children[key] = (key_mark, pos)
            key = _NO_KEY
        else:
            container.append(value)
            children.append(pos)


def _duplicate(stack: list[tuple[Any, ...]], key: str, first: Any, last: Any) -> Duplicate:
    """The repeated key's path, from the pending key (or index) of each open parent."""
    path = [parent_key if type(parent) is dict else len(parent)
            for parent, parent_key, *_ in stack[1:]]
    return Duplicate((*path, key), first.line, first.column, last.line, last.column)


def _alias_key(event: Any, value: Any) -> str:
    if isinstance(value, dict | list):
        raise ComposerError(None, None, "mapping keys must be scalars", event.start_mark)
    return _json_key(value)


class _NoKey:
    pass


_NO_KEY = _NoKey()


def _check_tag(tag: str | None, default: str) -> None:
    if tag is not None and tag != "!" and tag != default:
        raise _Fallback


def _alias(
    event: Any, anchors: dict[str, tuple[Any, Positions]], open_ids: dict[int, tuple[str, int]]
) -> tuple[Any, Positions]:
    """The anchored value, and its positions (a scalar alias is placed where it is used)."""
    if event.anchor not in anchors:
        raise ComposerError(None, None, f"found undefined alias {event.anchor!r}",
                            event.start_mark)
    value, pos = anchors[event.anchor]
    if id(value) in open_ids:
        raise ComposerError(None, None, f"found recursive alias {event.anchor!r}",
                            event.start_mark)
    return value, ((event.start_mark, pos[1]) if type(pos) is tuple else event.start_mark)


def _check_aliasing(nodes: int, aliased: int, event: Any) -> None:
    """Refuse a "billion laughs" document the way kubectl's YAML decoder (go-yaml) does.

    Values are shared, not copied, so reading is cheap, but the rule set walks them:
    a few lines of nested aliases would expand to billions of nodes there. go-yaml's
    `allowedAliasRatio`: past 100 repeated nodes in 1,000, the share of repeated nodes
    may be at most 99% up to 400,000 nodes, falling to 10% at 4,000,000.
    """
    if aliased <= 100 or nodes <= 1000:
        return
    if nodes <= 400_000:
        allowed = 0.99
    elif nodes >= 4_000_000:
        allowed = 0.10
    else:
        allowed = 0.99 - 0.89 * (nodes - 400_000) / 3_600_000
    if aliased / nodes > allowed:
        raise ComposerError(None, None, "document contains excessive aliasing", event.start_mark)


def _key(event: Any, anchors: dict[str, tuple[Any, Positions]]) -> str:
    """A mapping key: the scalar as written (JSON keys are strings); `<<` merges fall back."""
    value: str = event.value
    if value == "<<" and event.implicit[0] and _resolve(value) == MERGE:
        raise _Fallback
    if event.tag not in (None, "!", STR, INT, FLOAT, BOOL, NULL):
        raise _Fallback
    if event.anchor is not None:
        anchors[event.anchor] = (value, event.start_mark)
    return value


def _scalar(event: Any, anchors: dict[str, tuple[Any, Positions]]) -> Any:
    value = _scalar_value(event)
    if event.anchor is not None:
        anchors[event.anchor] = (value, event.start_mark)
    return value


# Plain scalar text → its value; only immutable values, so they can be shared.
_PLAIN: dict[str, Any] = {}
_PLAIN_MAX = 4096


def _plain(text: str) -> Any:
    tag = _resolve(text)
    if tag == STR:
        value: Any = text
    elif tag == NULL:
        value = None
    elif tag == BOOL and text.lower() in _BOOLS:
        value = _BOOLS[text.lower()]
    elif tag == INT:
        value = _CONSTRUCTOR.construct_yaml_int(ScalarNode(tag, text))
    elif tag == FLOAT:
        value = _CONSTRUCTOR.construct_yaml_float(ScalarNode(tag, text))
    else:
        raise _Fallback  # e.g. `<<` outside a key, or `=`
    if len(_PLAIN) < _PLAIN_MAX and len(text) < 64:
        _PLAIN[text] = value
    return value


def _scalar_value(event: Any) -> Any:
    tag = event.tag
    if tag is None or tag == "!":
        value: str = event.value
        return _plain(value) if event.implicit[0] else value  # quoted: always a string
    if tag == STR:
        return event.value
    if tag == NULL:
        return None
    if tag == BOOL and event.value.lower() in _BOOLS:
        return _BOOLS[event.value.lower()]
    if tag == INT:
        return _CONSTRUCTOR.construct_yaml_int(ScalarNode(tag, event.value))
    if tag == FLOAT:
        return _CONSTRUCTOR.construct_yaml_float(ScalarNode(tag, event.value))
    raise _Fallback


def _resolve(value: str) -> str:
    """The implicit tag of a plain scalar (PyYAML's `BaseResolver.resolve`, minus timestamps)."""
    for tag, regexp in _IMPLICIT.get(value[:1] if value else "", ()):
        if regexp.match(value):
            return str(tag)
    for tag, regexp in _IMPLICIT.get(None, ()):
        if regexp.match(value):
            return str(tag)
    return STR
