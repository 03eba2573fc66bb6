"""The checked-tree decoder and cel-go's type names, checked against the C++ compiler."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from draguard.schema.cel.environment import EnvFlags, environment
from draguard.schema.cel.syntax import CelType, WireError, decode_checked

ENV = environment(EnvFlags(consumable_capacity=True))


def checked(expression: str) -> tuple[str, str]:
    """The root node's kind and the cel-go name of its type."""
    ast = decode_checked(ENV.compile(expression).serialize())
    return ast.root.kind, ast.type_of(ast.root).render()


TYPE_NAMES = [
    pytest.param("true", "const", "bool", id="bool"),
    pytest.param("1", "const", "int", id="int"),
    pytest.param("1u", "const", "uint", id="uint"),
    pytest.param("1.5", "const", "double", id="double"),
    pytest.param("'s'", "const", "string", id="string"),
    pytest.param("b'x'", "const", "bytes", id="bytes"),
    pytest.param("null", "const", "null_type", id="null"),
    pytest.param("[1]", "list", "list(int)", id="list"),
    pytest.param("{'a': [1u]}", "map", "map(string, list(uint))", id="map"),
    pytest.param("device", "ident", "kubernetes.DRADevice", id="object"),
    pytest.param('device.capacity["d"].m', "select", "kubernetes.Quantity", id="opaque"),
    pytest.param('device.attributes["d"].a', "select", "google.protobuf.Any", id="any"),
    pytest.param("dyn(1)", "call", "dyn", id="dyn"),
    pytest.param("type(1)", "call", "type(int)", id="type"),
    pytest.param("optional.of(1)", "call", "optional_type(int)", id="optional"),
    pytest.param("duration('1s')", "call", "google.protobuf.Duration", id="duration"),
    pytest.param("[1].all(x, x > 0)", "comprehension", "bool", id="comprehension"),
]


@pytest.mark.parametrize(("expression", "kind", "type_name"), TYPE_NAMES)
def test_root_kind_and_type_name(expression: str, kind: str, type_name: str) -> None:
    """The decoded root has the expected node kind and cel-go's name for its type."""
    assert checked(expression) == (kind, type_name)


def test_literals_and_structure_are_decoded() -> None:
    """Call names, operands and constant values survive decoding."""
    ast = decode_checked(ENV.compile('device.driver == "gpu" && 2 > -1').serialize())
    root = ast.root
    assert (root.kind, root.name) == ("call", "_&&_")
    left, right = root.args
    assert left.name == "_==_" and [a.kind for a in left.args] == ["select", "const"]
    assert left.args[1].const == "gpu"
    assert right.args[1].const == -1


def test_positions_are_code_point_offsets() -> None:
    """Source positions count code points, so a node after `é` is one step further."""
    ast = decode_checked(ENV.compile('"é" == "b"').serialize())
    right = ast.root.args[1]
    assert ast.positions[right.id] == len('"é" == ')


def test_nested_type_render() -> None:
    """Parameterised opaque types render with their parameters, as cel-go prints them."""
    quantity = CelType("opaque", "kubernetes.Quantity")
    assert CelType("map", params=(CelType("string"), CelType("list", params=(quantity,)))
                   ).render() == "map(string, list(kubernetes.Quantity))"


@given(st.binary(max_size=64))
def test_garbage_bytes_raise_only_wire_errors(data: bytes) -> None:
    """Arbitrary bytes either decode or raise WireError, never anything else."""
    with contextlib.suppress(WireError):
        decode_checked(data)
