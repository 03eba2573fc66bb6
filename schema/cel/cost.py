"""An estimate of upstream's worst-case CEL cost for a selector (`upstream-rules.md` §3.3 rule 14).

Upstream runs cel-go's `checker.Cost` with Kubernetes' `library.CostEstimator` and a
size estimator that knows the maximum size of everything reachable from `device`
(`compile.go`). This module follows the same recipe on the checked tree decoded by
`cel_ast`, keeping only the maximum:

* identifiers and field selections cost 1, constants 0, `has()` 0 (upstream turns
  presence-test cost off); list literals 10, map literals 30, messages 40, plus
  their elements;
* a call costs its operands plus the function's own cost: 1 for most functions;
  string work is `ceil(size × 0.1)`; `matches`/`find` are string × `ceil(regex ×
  0.25)`; `in` on a list and the list library functions are linear in the list;
* `&&`, `||` and `?:` add both branches (worst case); a comprehension costs
  range + init + result + size(range) × (condition + step), which is what makes
  nested comprehensions over large lists explode;
* sizes: literals have their length; `device.driver` 63, attribute domains 63, ids 32,
  attribute values 64, every attribute/capacity map 32 entries; results the estimator
  cannot bound are unbounded, and any cost involving them saturates.

It is an approximation (see docs/cel.md): typical selectors land within a few units of
upstream, and the 1,000,000 limit is far from any of them, so only deliberately
expensive expressions are affected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from draguard.schema.cel.syntax import CheckedAst, Node
from draguard.schema.model.releases import (
    ATTRIBUTE_VALUE_MAX,
    C_IDENTIFIER_MAX,
    DEVICE_ATTRIBUTES_MAX,
    DEVICE_DOMAIN_MAX,
    DRIVER_NAME_MAX,
)

UNBOUNDED = (1 << 64) - 1
COST_LIMIT = 1_000_000

# cel-go `common` cost constants.
STRING_TRAVERSAL_FACTOR = 0.1
REGEX_LENGTH_FACTOR = 0.25
LIST_CREATE_COST = 10
MAP_CREATE_COST = 30
STRUCT_CREATE_COST = 40


@dataclass(frozen=True, slots=True)
class Shape:
    """What the estimator knows about a value reachable from `device`: its size and children."""

    max_size: int
    key: Shape | None = None
    value: Shape | None = None
    fields: tuple[tuple[str, Shape], ...] = ()

    def field(self, name: str) -> Shape | None:
        return dict(self.fields).get(name)


# compile.go sizes the device by the API's limits (model/releases.py, §2.4).
_DOMAIN = Shape(DEVICE_DOMAIN_MAX)
_ID = Shape(C_IDENTIFIER_MAX)
_ATTRIBUTE = Shape(ATTRIBUTE_VALUE_MAX)
_INNER_ATTRIBUTES = Shape(DEVICE_ATTRIBUTES_MAX, key=_ID, value=_ATTRIBUTE)
_INNER_CAPACITY = Shape(DEVICE_ATTRIBUTES_MAX, key=_ID, value=Shape(1))
DEVICE = Shape(1, fields=(
    ("driver", Shape(DRIVER_NAME_MAX)),
    ("allowMultipleAllocations", Shape(1)),
    ("attributes", Shape(DEVICE_ATTRIBUTES_MAX, key=_DOMAIN, value=_INNER_ATTRIBUTES)),
    ("capacity", Shape(DEVICE_ATTRIBUTES_MAX, key=_DOMAIN, value=_INNER_CAPACITY)),
))

_SPLIT_JOIN = {"split", "join"}
_SIZE_PRESERVING = {"lowerAscii", "upperAscii", "trim", "substring", "find", "findAll", "split"}
_LINEAR_STRING = {"contains", "startsWith", "endsWith", "lowerAscii", "upperAscii", "trim",
                  "replace", "substring", "charAt", "indexOf", "lastIndexOf", "quote",
                  "strings.quote", "format", "url", "isURL", "ip", "isIP",
                  "cidr", "isCIDR", "quantity", "isQuantity", "semver", "isSemver",
                  "string", "bytes", "ip.isCanonical"}
_LINEAR_LIST = {"isSorted", "sum", "min", "max", "@in", "sets.contains", "sets.equivalent",
                "sets.intersects"}
_REGEX = {"matches", "find", "findAll"}
_LOGICAL = {"_&&_", "_||_"}


def _add(*costs: int) -> int:
    return min(UNBOUNDED, sum(costs))


def _mul(a: int, b: int) -> int:
    return UNBOUNDED if a and b and a > UNBOUNDED // b else a * b


def _factor(size: int, factor: float) -> int:
    if size >= UNBOUNDED:
        return UNBOUNDED
    return math.ceil(size * factor)


class _Estimator:
    """One walk over one checked tree; `scopes` maps comprehension variables to shapes."""

    def __init__(self, ast: CheckedAst) -> None:
        self.ast = ast
        self.scopes: list[dict[str, Shape]] = []

    # -- sizes ------------------------------------------------------------------

    def shape(self, node: Node) -> Shape | None:
        """The shape of a value, when the estimator can bound it."""
        if node.kind == "ident":
            for scope in reversed(self.scopes):
                if node.name in scope:
                    return scope[node.name]
            return self._device_path(node.name)
        if node.kind == "const":
            return _const_shape(node.const)
        if node.kind == "list":
            return Shape(len(node.args), value=self._union(node.args))
        if node.kind == "map":
            return Shape(len(node.args) // 2, key=self._union(node.args[0::2]),
                         value=self._union(node.args[1::2]))
        if node.kind == "select" and node.operand is not None and not node.test_only:
            return self._member(self.shape(node.operand), node.name)
        if node.kind == "call":
            return self._call_shape(node)
        if node.kind == "comprehension" and node.iter_range is not None:
            return self._comprehension_shape(node)
        return None

    def _device_path(self, name: str) -> Shape | None:
        parts = name.split(".")
        if parts[0] != "device":
            return None
        shape: Shape | None = DEVICE
        for part in parts[1:]:
            shape = self._member(shape, part)
        return shape

    @staticmethod
    def _member(parent: Shape | None, name: str) -> Shape | None:
        if parent is None:
            return None
        return parent.field(name) or parent.value

    def _union(self, nodes: tuple[Node, ...]) -> Shape | None:
        sizes = [self.shape(n) for n in nodes]
        if not sizes or any(s is None for s in sizes):
            return None
        return Shape(max(s.max_size for s in sizes if s is not None))

    def _call_shape(self, node: Node) -> Shape | None:
        if node.name == "_[_]" and len(node.args) == 2:
            return self._member(self.shape(node.args[0]), "")
        if node.name == "_+_" and len(node.args) == 2:
            left, right = self.shape(node.args[0]), self.shape(node.args[1])
            if left is None or right is None:
                return None
            return Shape(_add(left.max_size, right.max_size), value=left.value or right.value)
        if node.name in _SIZE_PRESERVING and node.operand is not None:
            # Result sizes the Kubernetes estimator reports: never longer than the input,
            # and `split`/`findAll` give at most one element per input character.
            source = self.shape(node.operand)
            if source is None:
                return None
            if node.name in ("split", "findAll"):
                return Shape(source.max_size, value=Shape(source.max_size))
            return Shape(source.max_size)
        return None

    def _comprehension_shape(self, node: Node) -> Shape | None:
        """`map`/`filter` results are at most as long as their range; `cel.bind` is its body."""
        assert node.iter_range is not None
        if node.result is not None and node.result.kind == "ident" and \
                node.result.name == node.accu_var and node.accu_init is not None and \
                node.accu_init.kind == "list":
            return self.shape(node.iter_range)
        if node.result is not None:
            with_scope = self._bind_scope(node)
            self.scopes.append(with_scope)
            try:
                return self.shape(node.result)
            finally:
                self.scopes.pop()
        return None

    def _bind_scope(self, node: Node) -> dict[str, Shape]:
        scope: dict[str, Shape] = {}
        if node.accu_init is not None:
            init = self.shape(node.accu_init)
            if init is not None:
                scope[node.accu_var] = init
        return scope

    def size(self, node: Node) -> int:
        shape = self.shape(node)
        return UNBOUNDED if shape is None else shape.max_size

    # -- costs ------------------------------------------------------------------

    def cost(self, node: Node) -> int:
        if node.kind == "const":
            return 0
        if node.kind == "ident":
            # `device.attributes` is one declared name here but two selections upstream.
            return node.name.count(".") + 1 if node.name.startswith("device.") else 1
        if node.kind == "select":
            operand = self.cost(node.operand) if node.operand is not None else 0
            return operand if node.test_only else _add(operand, 1)
        if node.kind == "list":
            return _add(LIST_CREATE_COST, *(self.cost(a) for a in node.args))
        if node.kind == "map":
            return _add(MAP_CREATE_COST, *(self.cost(a) for a in node.args))
        if node.kind == "struct":
            return _add(STRUCT_CREATE_COST, *(self.cost(a) for a in node.args))
        if node.kind == "comprehension":
            return self._comprehension_cost(node)
        return self._call_cost(node)

    def _call_cost(self, node: Node) -> int:
        if node.name == "_?_:_" and len(node.args) == 3:
            # Only one branch runs: the worst case is the dearer one.
            condition, if_true, if_false = (self.cost(a) for a in node.args)
            return _add(condition, max(if_true, if_false))
        operands = [*([node.operand] if node.operand is not None else []), *node.args]
        inputs = _add(*(self.cost(a) for a in operands))
        return _add(inputs, self._function_cost(node, operands))

    def _function_cost(self, node: Node, operands: list[Node]) -> int:
        name = node.name
        if name in _LOGICAL:
            return 0
        if name in _REGEX and len(operands) >= 2:
            text = _factor(self.size(operands[0]), STRING_TRAVERSAL_FACTOR)
            regex = _factor(self.size(operands[1]), REGEX_LENGTH_FACTOR)
            return _mul(text, regex)
        if name == "@in" and len(operands) == 2:
            container = self.ast.type_of(operands[1])
            return 1 if container.kind == "map" else max(1, self.size(operands[1]))
        if name in _LINEAR_LIST and operands:
            return max(1, self.size(operands[0]))
        if name in ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "_+_") and len(operands) == 2:
            return self._binary_cost(name, operands)
        if name in _SPLIT_JOIN and operands:
            # Traversal plus building the result (Kubernetes library.CostEstimator).
            return max(1, _factor(self.size(operands[0]), 2 * STRING_TRAVERSAL_FACTOR))
        if name in _LINEAR_STRING and operands:
            return max(1, _factor(max(self.size(o) for o in operands), STRING_TRAVERSAL_FACTOR))
        return 1

    def _binary_cost(self, name: str, operands: list[Node]) -> int:
        kind = self.ast.type_of(operands[0]).kind
        if kind not in ("string", "bytes", "list", "map"):
            return 1
        left, right = self.size(operands[0]), self.size(operands[1])
        if name == "_+_":
            return 1 if kind == "list" else max(1, _factor(_add(left, right),
                                                           STRING_TRAVERSAL_FACTOR))
        if kind in ("string", "bytes"):
            # Linear in the shorter operand; comparing with "" is free.
            return _factor(min(left, right), STRING_TRAVERSAL_FACTOR)
        return max(1, min(left, right))

    def _comprehension_cost(self, node: Node) -> int:
        assert node.iter_range is not None
        range_shape = self.shape(node.iter_range)
        range_count = UNBOUNDED if range_shape is None else range_shape.max_size
        scope = self._bind_scope(node)
        element = self._element(range_shape, node)
        if element is not None:
            scope[node.iter_var] = element
        self.scopes.append(scope)
        try:
            loop = _add(self._optional_cost(node.loop_condition),
                        self._optional_cost(node.loop_step))
            result = self._optional_cost(node.result)
        finally:
            self.scopes.pop()
        fixed = _add(self.cost(node.iter_range), self._optional_cost(node.accu_init), result)
        return _add(fixed, _mul(range_count, loop))

    def _element(self, range_shape: Shape | None, node: Node) -> Shape | None:
        """Iterating a map yields its keys, a list its elements."""
        if range_shape is None or node.iter_range is None:
            return None
        if self.ast.type_of(node.iter_range).kind == "map":
            return range_shape.key
        return range_shape.value

    def _optional_cost(self, node: Node | None) -> int:
        return 0 if node is None else self.cost(node)


def _const_shape(value: object) -> Shape:
    if isinstance(value, str | bytes):
        return Shape(len(value))
    return Shape(1)


def estimate_max_cost(ast: CheckedAst) -> int:
    """The estimated worst-case cost of one evaluation, saturating at 2**64 - 1."""
    return _Estimator(ast).cost(ast.root)
