"""The event-driven YAML reader agrees with PyYAML's own loader on JSON-like documents."""

from __future__ import annotations

import gc
import math
from typing import Any

import yaml
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from draguard.schema.read.yamlevents import TextLoader, load_with_positions

_scalars = (
    st.none() | st.booleans() | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=20,
)


@settings(max_examples=examples(150), deadline=None)
@given(value=json_values, flow=st.sampled_from([None, True, False]))
def test_round_trip_of_json_values(value: Any, flow: bool | None) -> None:
    """Any JSON value dumped as YAML (block or flow) reads back as PyYAML reads it."""
    text = yaml.safe_dump(value, default_flow_style=flow, allow_unicode=True)
    # Not always `value` itself: PyYAML writes a NEL (U+0085) that reads back as a space.
    assert load_with_positions(text)[0] == yaml.load(text, Loader=TextLoader)


def _plain(value: Any) -> bool:
    """PyYAML's value is one our reader must reproduce: JSON types, string keys, no NaN."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, float):
        return not math.isnan(value)
    return value is None or isinstance(value, str | int)


_yamlish = st.text(alphabet=st.sampled_from(list("ab01:-[]{},&*!? \n\"'#~.yYnN<")), max_size=40)


@settings(max_examples=examples(300), deadline=None)
@given(text=_yamlish)
def test_agrees_with_pyyaml_on_arbitrary_text(text: str) -> None:
    """Whenever PyYAML builds a plain JSON-like value from a text, the event reader builds the same."""
    try:
        expected = yaml.load(text, Loader=TextLoader)
    except (yaml.YAMLError, RecursionError):
        return
    try:
        if not _plain(expected):
            return
    except RecursionError:  # PyYAML built a cyclic value from a recursive alias
        return
    try:
        got = load_with_positions(text)[0]
    except yaml.YAMLError as exc:  # only for what JSON cannot hold (e.g. a recursive alias)
        assert "recursive alias" in str(exc) or "mapping keys" in str(exc)
        return
    assert got == expected


def test_reading_a_big_document_leaves_the_cycle_collector_as_it_was() -> None:
    """libyaml's reading pauses the collector for the build only, and restores its state."""
    assert gc.isenabled()
    load_with_positions("a: [1, {b: 2}]\n")
    assert gc.isenabled()
    gc.disable()
    try:
        load_with_positions("a: [1, {b: 2}]\n")
        assert not gc.isenabled()
    finally:
        gc.enable()
