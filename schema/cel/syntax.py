"""The checked CEL syntax tree, decoded from the bytes `cel-expr-python` serialises.

`Expression.serialize()` returns a `google.protobuf.Any` holding a
`cel.expr.CheckedExpr` (cel-spec `checked.proto`/`syntax.proto`). No Python
package ships those message classes, so this module reads the few fields the
selector checks need straight from the protobuf wire format: the expression tree
and the checker's type of every node. Everything else in the message is skipped.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

# --- the wire format ------------------------------------------------------------

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class WireError(ValueError):
    """The bytes are not the protobuf message this module expects."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    if pos < len(data) and data[pos] < 0x80:  # the common one-byte case
        return data[pos], pos + 1
    result = shift = 0
    while True:
        if pos >= len(data):
            raise WireError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise WireError("varint too long")


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield (field number, wire type, value) for one message's bytes."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _I64:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == _LEN:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == _I32:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise WireError(f"unsupported wire type {wire}")
        if pos > end:
            raise WireError("truncated field")
        yield number, wire, value


def _signed(value: int) -> int:
    """An int64 field read as a varint (two's complement in 64 bits)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: int | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else ""


def _blob(value: int | bytes) -> bytes:
    return value if isinstance(value, bytes) else b""


# --- types (cel.expr.Type) --------------------------------------------------------

_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "any", 2: "google.protobuf.Timestamp", 3: "google.protobuf.Duration"}


@dataclass(frozen=True, slots=True)
class CelType:
    """A checker type: `kind` is bool/int/…/list/map/message/opaque/dyn/any/…."""

    kind: str
    name: str = ""
    params: tuple[CelType, ...] = ()

    def render(self) -> str:
        """cel-go's `FormatCELType` text: `list(int)`, `map(string, dyn)`, `kubernetes.Quantity`."""
        if self.kind in ("list", "map", "type", "wrapper", "opaque") and self.params:
            inner = ", ".join(p.render() for p in self.params)
            head = self.name if self.kind == "opaque" else self.kind
            return f"{head}({inner})"
        if self.kind in ("message", "opaque", "param", "well_known"):
            return self.name
        if self.kind == "null":
            return "null_type"
        if self.kind == "any":
            return "google.protobuf.Any"
        return self.kind


DYN = CelType("dyn")


def _decode_type(data: bytes) -> CelType:
    for number, _, value in _fields(data):
        if number == 1:
            return DYN
        if number == 2:
            return CelType("null")
        if number == 3 and isinstance(value, int):
            return CelType(_PRIMITIVES.get(value, "dyn"))
        if number == 4 and isinstance(value, int):
            return CelType("wrapper", params=(CelType(_PRIMITIVES.get(value, "dyn")),))
        if number == 5 and isinstance(value, int):
            name = _WELL_KNOWN.get(value, "dyn")
            return CelType("any") if name == "any" else CelType("well_known", name)
        if number == 6:
            elems = [_decode_type(_blob(v)) for n, _, v in _fields(_blob(value)) if n == 1]
            return CelType("list", params=(elems[0] if elems else DYN,))
        if number == 7:
            key, val = DYN, DYN
            for n, _, v in _fields(_blob(value)):
                if n == 1:
                    key = _decode_type(_blob(v))
                elif n == 2:
                    val = _decode_type(_blob(v))
            return CelType("map", params=(key, val))
        if number == 9:
            return CelType("message", _text(value))
        if number == 10:
            return CelType("param", _text(value))
        if number == 11:
            return CelType("type", params=(_decode_type(_blob(value)),))
        if number == 12:
            return CelType("error")
        if number == 14:
            return _decode_abstract(_blob(value))
    return DYN


def _decode_abstract(data: bytes) -> CelType:
    name, params = "", []
    for number, _, value in _fields(data):
        if number == 1:
            name = _text(value)
        elif number == 2:
            params.append(_decode_type(_blob(value)))
    if name == "optional_type":
        return CelType("opaque", "optional_type", tuple(params))
    return CelType("opaque", name, tuple(params))


# --- expressions (cel.expr.Expr) --------------------------------------------------


@dataclass(slots=True, eq=False)
class Node:
    """One expression node; only the fields of its `kind` are filled in.

    kind: const, ident, select, call, list, map, struct, comprehension. Not frozen on
    purpose: a frozen dataclass sets its 15 fields through `object.__setattr__`, which
    made decoding three times slower; nothing mutates a node after decoding.
    """

    id: int
    kind: str
    name: str = ""  # ident name, select field, call function, struct message name
    const: object = None  # const value (str/bytes/int/float/bool/None)
    operand: Node | None = None  # select operand, call target
    args: tuple[Node, ...] = ()  # call args, list elements, map keys/values interleaved
    test_only: bool = False
    iter_var: str = ""
    iter_var2: str = ""
    accu_var: str = ""
    iter_range: Node | None = None
    accu_init: Node | None = None
    loop_condition: Node | None = None
    loop_step: Node | None = None
    result: Node | None = None

    def children(self) -> Iterator[Node]:
        for child in (self.operand, self.iter_range, self.accu_init, self.loop_condition,
                      self.loop_step, self.result):
            if child is not None:
                yield child
        yield from self.args


@dataclass(frozen=True, slots=True)
class CheckedAst:
    """The root expression and, per node id, the checker's type (decoded on demand).

    Types and source positions stay encoded until asked for: most checks need the
    type of one node, and decoding every entry would dominate the checking time.
    """

    root: Node
    type_blobs: dict[int, bytes] = field(default_factory=dict)
    source_info: bytes = b""

    def type_of(self, node: Node) -> CelType:
        blob = self.type_blobs.get(node.id)
        return DYN if blob is None else _decode_type_cached(blob)

    @property
    def positions(self) -> dict[int, int]:
        """Node id → code point offset into the expression."""
        return _decode_positions(self.source_info)


@functools.lru_cache(maxsize=1024)
def _decode_type_cached(blob: bytes) -> CelType:
    return _decode_type(blob)


def _decode_constant(data: bytes) -> object:
    for number, _, value in _fields(data):
        if number == 1:
            return None
        if number == 2:
            return bool(value)
        if number == 3 and isinstance(value, int):
            return _signed(value)
        if number == 4:
            return value
        if number == 5 and isinstance(value, bytes) and len(value) == 8:
            return float(struct.unpack("<d", value)[0])
        if number == 6:
            return _text(value)
        if number == 7:
            return _blob(value)
    return None


def _decode_expr(data: bytes, depth: int = 0) -> Node:
    if depth > 1000:
        raise WireError("expression nested too deeply")
    node_id, kind = 0, "const"
    parts: dict[str, object] = {}
    for number, _, value in _fields(data):
        if number == 2 and isinstance(value, int):
            node_id = _signed(value)
        elif number == 3:
            kind, parts = "const", {"const": _decode_constant(_blob(value))}
        elif number == 4:
            kind, parts = "ident", _decode_ident(_blob(value))
        elif number == 5:
            kind, parts = "select", _decode_select(_blob(value), depth)
        elif number == 6:
            kind, parts = "call", _decode_call(_blob(value), depth)
        elif number == 7:
            kind, parts = "list", _decode_list(_blob(value), depth)
        elif number == 8:
            kind, parts = _decode_struct(_blob(value), depth)
        elif number == 9:
            kind, parts = "comprehension", _decode_comprehension(_blob(value), depth)
    return Node(id=node_id, kind=kind, **parts)  # type: ignore[arg-type]


def _decode_ident(data: bytes) -> dict[str, object]:
    return {"name": next((_text(v) for n, _, v in _fields(data) if n == 1), "")}


def _decode_select(data: bytes, depth: int) -> dict[str, object]:
    out: dict[str, object] = {}
    for number, _, value in _fields(data):
        if number == 3:
            out["test_only"] = bool(value)
        else:
            _decode_operand_or_name(out, number, value, depth)
    return out


def _decode_call(data: bytes, depth: int) -> dict[str, object]:
    out: dict[str, object] = {}
    args: list[Node] = []
    for number, _, value in _fields(data):
        if number == 3:
            args.append(_decode_expr(_blob(value), depth + 1))
        else:
            _decode_operand_or_name(out, number, value, depth)
    out["args"] = tuple(args)
    return out


def _decode_operand_or_name(
    out: dict[str, object], number: int, value: int | bytes, depth: int
) -> None:
    """Fields 1 and 2, which Select and Call share (cel-spec syntax.proto: operand, name)."""
    if number == 1:
        out["operand"] = _decode_expr(_blob(value), depth + 1)
    elif number == 2:
        out["name"] = _text(value)


def _decode_list(data: bytes, depth: int) -> dict[str, object]:
    elems = [_decode_expr(_blob(v), depth + 1) for n, _, v in _fields(data) if n == 1]
    return {"args": tuple(elems)}


def _decode_struct(data: bytes, depth: int) -> tuple[str, dict[str, object]]:
    """A map literal keeps keys and values interleaved in `args`; a message keeps values."""
    message, args = "", []
    for number, _, value in _fields(data):
        if number == 1:
            message = _text(value)
        elif number == 2:
            for n, _, v in _fields(_blob(value)):
                if n in (3, 4):  # map_key, value
                    args.append(_decode_expr(_blob(v), depth + 1))
    return ("struct" if message else "map"), {"name": message, "args": tuple(args)}


_COMPREHENSION_FIELDS = {2: "iter_range", 4: "accu_init", 5: "loop_condition", 6: "loop_step",
                         7: "result"}


def _decode_comprehension(data: bytes, depth: int) -> dict[str, object]:
    out: dict[str, object] = {}
    for number, _, value in _fields(data):
        if number == 1:
            out["iter_var"] = _text(value)
        elif number == 3:
            out["accu_var"] = _text(value)
        elif number == 8:
            out["iter_var2"] = _text(value)
        elif number in _COMPREHENSION_FIELDS:
            out[_COMPREHENSION_FIELDS[number]] = _decode_expr(_blob(value), depth + 1)
    return out


def decode_checked(serialized: bytes) -> CheckedAst:
    """Decode `Expression.serialize()` output (an Any wrapping a CheckedExpr)."""
    payload = serialized
    for number, _, value in _fields(serialized):
        if number == 2 and isinstance(value, bytes):
            payload = value
    root: Node | None = None
    type_blobs: dict[int, bytes] = {}
    source_info = b""
    for number, _, value in _fields(payload):
        if number == 4:
            root = _decode_expr(_blob(value))
        elif number == 3:
            key, blob = _map_entry(_blob(value))
            type_blobs[key] = blob
        elif number == 5:
            source_info = _blob(value)
    if root is None:
        raise WireError("no expression in CheckedExpr")
    return CheckedAst(root, type_blobs, source_info)


def _map_entry(entry: bytes) -> tuple[int, bytes]:
    """A map<int64, message> entry: key (field 1) and the value's bytes (field 2)."""
    key, blob = 0, b""
    for number, _, value in _fields(entry):
        if number == 1 and isinstance(value, int):
            key = _signed(value)
        elif number == 2:
            blob = _blob(value)
    return key, blob


def _decode_positions(source_info: bytes) -> dict[int, int]:
    """SourceInfo.positions: node id → offset (code points) into the expression."""
    positions: dict[int, int] = {}
    for number, _, value in _fields(source_info):
        if number != 4:
            continue
        key = offset = 0
        for n, _, v in _fields(_blob(value)):
            if n == 1 and isinstance(v, int):
                key = _signed(v)
            elif n == 2 and isinstance(v, int):
                offset = _signed(v)
        positions[key] = offset
    return positions
