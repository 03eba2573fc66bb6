"""Lone surrogates in JSON text are read as Go's encoding/json reads them (U+FFFD)."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from draguard.schema import jsondecode


def test_lone_surrogates_become_the_replacement_character_in_keys_and_values() -> None:
    text = r'{"a\ud800": ["x\udfffy", {"k": "\ud83d"}], "b": "\ud83d\ude00", "c": 1}'
    assert jsondecode.loads(text) == {
        "a\ufffd": ["x\ufffdy", {"k": "\ufffd"}],
        "b": "\U0001f600",  # a valid pair stays one character
        "c": 1,
    }
    assert list(jsondecode.loads(text)) == ["a\ufffd", "b", "c"]  # key order kept


def test_the_result_always_encodes_as_utf8() -> None:
    value = jsondecode.loads(r'[{"\udc80": "\ud800\ud800"}]')
    json.dumps(value, ensure_ascii=False).encode("utf-8")


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=15,
))
def test_values_without_lone_surrogates_are_read_as_json_reads_them(value: object) -> None:
    text = json.dumps(value)  # text() may hold lone surrogates: escaped, then replaced
    decoded = jsondecode.loads(text)
    json.dumps(decoded, ensure_ascii=False).encode("utf-8")
    if not re.search("[\ud800-\udfff]", json.dumps(value, ensure_ascii=False)):
        assert decoded == json.loads(text)
