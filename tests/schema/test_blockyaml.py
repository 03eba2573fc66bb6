"""The plain-block fast path (`blockyaml`) against libyaml's reading (`yamlevents`).

Whatever `blockyaml.load` accepts must have the value `yamlevents` gives, and every
node must be located where libyaml's marks put it; whatever it declines goes to
`yamlevents` anyway, so declining is always safe. The cases below mix manifests (the
corpus, the golden files, PyYAML's own output in several styles) with texts built from
tokens that YAML 1.1 and 1.2 read differently.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from draguard.schema.model.paths import Segment
from draguard.schema.read import blockyaml, yamlevents
from draguard.schema.read.sources import Source, _walk, split_documents

TESTS = Path(__file__).resolve().parent.parent


def _manifests() -> list[str]:
    texts = []
    for path in sorted([*TESTS.glob("cases/*.yaml"), *TESTS.glob("golden/*.yaml")]):
        source = Source(str(path), path.read_text(encoding="utf-8"), "yaml")
        texts.extend(chunk.text for chunk in split_documents(source))
    return texts


MANIFESTS = _manifests()


def _paths(value: Any, prefix: tuple[Segment, ...] = ()) -> Iterator[tuple[Segment, ...]]:
    """Every node's path, and paths just past the ends (a missing key, an index too far)."""
    yield prefix
    if isinstance(value, dict):
        yield (*prefix, "no-such-key")
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        yield (*prefix, len(value))
        for k, child in enumerate(value):
            yield from _paths(child, (*prefix, k))
    else:
        yield (*prefix, "below-a-scalar")


def assert_agrees(text: str) -> bool:
    """True when the fast path took the text; then value and positions match libyaml's."""
    fast = blockyaml.load(text)
    if fast is None:
        return False
    value, marks = yamlevents.load_with_positions(text)
    assert fast == value
    assert [type(k) for k in _keys(fast)] == [type(k) for k in _keys(value)]
    remembering = blockyaml.Lines(text)  # walks after the first reuse the nodes found
    for path in _paths(value):
        expected = _walk(marks, path)
        assert remembering.walk(path) == expected, path
        assert blockyaml.Lines(text).walk(path) == expected, path
    return True


def _keys(value: Any) -> Iterator[Any]:
    """Keys and scalar types in document order (`==` says True == 1)."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield key
            yield from _keys(child)
    elif isinstance(value, list):
        for child in value:
            yield from _keys(child)
    else:
        yield value


def test_most_manifests_take_the_fast_path_and_agree() -> None:
    taken = [assert_agrees(text) for text in MANIFESTS]
    # Not a vacuous check: over a third of the corpus is plain block YAML (the rest is
    # written compactly, with flow mappings, which the fast path declines).
    assert sum(taken) > len(MANIFESTS) // 3, (sum(taken), len(MANIFESTS))


@pytest.mark.parametrize(
    "text",
    [
        "a: yes\n", "a: No\n", "a: on\n", "a: OFF\n", "a: yes # why\n", "- off\n",
        "a: 0777\n", "a: 1_000\n", "a: 1:20\n", "a: 1e3\n", "a: 0o17\n", "a: 0x1F\n",
        "a: 0b101\n", "a: .inf\n", "a: .5\n", "a: +12\n", "a: 2020-01-01\n", "a: 01\n",
        "1: x\n", "true: x\n", "null: x\n", "yes: x\n", "~: x\n", "a: &x b\nc: *x\n",
        "a: !!str 12\n", "<<: {a: 1}\n", "a: |\n  x\n", "a: >\n  x\n", 'a: "b\n  c"\n',
        "a: b\n  c\n", "a: [[1]]\n", "a: {b: {c: 1}}\n", "a: b\na: c\n",
        "a: {b: yes}\n", "a: [ on ]\n", "a: {b: 0777}\n", "a: [1e3]\n", "a: {b: c: d}\n",
        "a: {b: c:d}\n", "a: [a?b]\n", "a: {b: 1,}\n", "a: [1\n  , 2]\n", "a: {f:x: 1}\n",
        "a: {b: &x c}\n", "a: [!!str 1]\n", "a: {? b}\n", "a: [b #c]\n", "a: {b: 1}x\n", "a:\tb\n", "a: b\r\nc: d\r\n",
        "\ufeffa: b\n", "a: b\x85c\n", "a: 'b\u2028c'\n", 'a: "\\x41"\n', "? a\n: b\n",
        "%YAML 1.1\n---\na: b\n", "--- a\n", "- - a\n", "a: -b\n", "a: b: c\n", "a: @b\n",
        "a: 12345678901234567890\n", "a: 1.0000000000000000001\n",
        "f:a b: c\n", "a: 00000000-5f3c-4e8f-a7b6\n", "a: 1e-5\n",
        "...: x\n", ".a: b\n", "a: b # c\u2028d: e\n", "a: b # \ud800\n", "a: b\ufffe\n",
    ],
)
def test_texts_the_two_yaml_versions_read_differently_are_declined(text: str) -> None:
    assert blockyaml.load(text) is None


def test_text_beyond_ascii_takes_the_fast_path() -> None:
    assert blockyaml.load("a: café # ü\nb: 'ß'\n") == {"a": "café", "b": "ß"}


@pytest.mark.parametrize(
    "text",
    [
        "a: b\n", "a: true\n", "a: False\n", "a: null\n", "a: ~\n", "a:\n", "a: []\nb: {}\n",
        "a: -1\n", "a: 1.5\n", "a: 'it''s'\n", 'a: "x\\ty\\u00e9"\n', "a: b # c\n",
        "a: b:c\n", "a: http://x/y#z\n", "a: yesterday\n", "'a b': 1\n", '"a": 1\n',
        "---\na: 1\n...\n", "a:\n- b\n-\n  c: d\n- e: f\n  g: h\n", "a:\n  - 1\n  -   b: 2\n",
        "- a\n- b: c\n", "a:\n  b:\n    c: d\n  e: f\ng: h\n", "# only\na: 1 # x\n\n",
        # `kubectl get -o yaml`: managed fields' keys, UIDs
        "f:spec:\n  f:devices:\n    .: {}\n    f:requests: {}\n",
        'k:{"name":"gpu"}:\n  .: {}\n  f:count: {}\nv:"a": {}\ni:0: {}\n',
        "f: b\nf:a: 1\n", "uid: 00000000-5f3c-4e8f-a7b6-0123456789ab\nb: 9e8d7c6b-5a49-4382-a1b0-c9d8e7f6a5b4\n",
        # one-line flow collections of scalars, as PyYAML writes the innermost ones
        "a: [1]\n", "a: {b: 1}\n", "a: [x, 'y', \"z\", ~, -1.5, 80Gi]\n", "- [a, b]\n",
        "a: {b: c, 'd': e, \"f\": 2} # c\n", "- {name: x, count: 2}\n- { }\n- [ ]\n",
        '- cel: {expression: device.driver == "gpu.example.com"}\n', "a: {b: Yesterday}\n",
        "a: { b: c }\nd: [ e , f ]\n", "a: {b: null, c: true, d: False}\n",
        # quantities, as ResourceSlice capacities write them
        "memory:\n  value: 80Gi\ncpu: 500m\nsize: 1.5G\nbig: 1E\nodd: 0777Ki\n",
    ],
)
def test_plain_block_texts_take_the_fast_path_and_agree(text: str) -> None:
    assert assert_agrees(text)


# --- PyYAML's own output, in the styles people write ---------------------------------

_TRICKY = st.sampled_from(
    ["yes", "no", "on", "Off", "y", "n", "true", "null", "~", "0777", "1_000", "1:20",
     "1e3", "0o17", "0x1F", ".inf", "2020-01-01", "a: b", "a #b", "- a", "[a]", "{a}",
     "&a", "*a", "!a", "|", ">", "'", '"', "", " lead", "trail ", "é", "\t", "a\nb", "#",
     "f:x", 'k:{"a":"b"}', ".", "00000000-5f3c-4e8f-a7b6-0123456789ab", "80Gi", "1.5E",
     "1e3Ki", "0x1Fi"]
)
_KEYS = st.one_of(st.from_regex(r"[a-z][a-z0-9./-]{0,10}", fullmatch=True), _TRICKY)
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False), _TRICKY,
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)
    ),
    max_leaves=20,
)


class _IndentedDumper(yaml.SafeDumper):
    """Lists indented under their key, as most hand-written manifests have them."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


@given(
    value=st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=5),
    indent=st.sampled_from([2, 4]),
    indented_lists=st.booleans(),
    unicode=st.booleans(),
    flow=st.booleans(),
)
@settings(deadline=None)
def test_dumped_documents_agree_whenever_the_fast_path_takes_them(
    value: dict[str, Any], indent: int, indented_lists: bool, unicode: bool, flow: bool
) -> None:
    """Block style, and PyYAML's default style (innermost collections in flow style)."""
    dumper = _IndentedDumper if indented_lists else yaml.SafeDumper
    text = yaml.dump(value, Dumper=dumper, default_flow_style=None if flow else False,
                     sort_keys=False, indent=indent, allow_unicode=unicode, width=1000)
    assert_agrees(text)


# One-line flow collections whose scalars are tricky tokens, spaced in odd ways.
_FLOW_TEXTS = st.one_of(
    st.lists(st.tuples(_KEYS, _TRICKY), max_size=3).map(
        lambda ms: "{" + ", ".join(f"{k}: {v}" for k, v in ms) + "}"),
    st.lists(_TRICKY, max_size=3).map(lambda vs: "[" + " ,".join(vs) + " ]"),
)
_LINES = st.lists(
    st.tuples(
        st.sampled_from(["", "  ", "    ", "- ", "  - ", "    - ", "-   "]),
        st.one_of(_KEYS.map(lambda k: f"{k}:"), st.just("")),
        st.one_of(_TRICKY, st.sampled_from(["x", "1", "-1", "1.5", "[]", "{}", "# c", ""]),
                  _FLOW_TEXTS),
    ).map(lambda t: f"{t[0]}{t[1]} {t[2]}".rstrip() if t[1] else f"{t[0]}{t[2]}".rstrip()),
    min_size=1, max_size=8,
)


@given(lines=_LINES)
def test_texts_built_from_tricky_lines_agree_whenever_the_fast_path_takes_them(
    lines: list[str],
) -> None:
    text = "\n".join(lines) + "\n"
    try:
        yamlevents.load_with_positions(text)
    except yaml.YAMLError:
        assert blockyaml.load(text) is None  # a text libyaml refuses is never taken
        return
    assert_agrees(text)


# --- linear work ------------------------------------------------------------------------

class _CountingPattern:
    """Stands for a compiled pattern and counts its searches."""

    def __init__(self, pattern: Any, counter: list[int]) -> None:
        self._pattern, self._counter = pattern, counter

    def search(self, text: str, pos: int = 0) -> Any:
        self._counter[0] += 1
        return self._pattern.search(text, pos)


@pytest.mark.parametrize("n", [1_000, 4_000])
def test_placing_every_item_of_a_list_reads_the_list_once(
    n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Items found are remembered: item j is not looked for from the list's start again."""
    text = "kind: List\nitems:\n" + "".join(
        f"- kind: Pod\n  metadata:\n    name: p{j}\n" for j in range(n))
    searches = [0]
    real = blockyaml._indented_at_most
    monkeypatch.setattr(blockyaml, "_indented_at_most",
                        lambda column: _CountingPattern(real(column), searches))
    lines = blockyaml.Lines(text)
    for j in range(n):
        assert lines.walk(("items", j, "metadata", "name")) == (4, 3 * j + 4, 4)
    assert searches[0] <= n + 1


# --- the head, read without the value ---------------------------------------------------

def _any_kind(kind: str) -> bool:
    return True


def assert_head_agrees(text: str) -> bool:
    """True when `peek` read the head; then it is what the value and positions say."""
    head = blockyaml.peek(text, _any_kind)
    if head is None:
        return False
    value = yamlevents.load_with_positions(text)[0]
    assert isinstance(value, dict)
    meta = value.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    strings = [v if isinstance(v, str) else None for v in (meta.get("name"),
                                                           meta.get("namespace"))]
    assert (head.api_version, head.kind, head.name, head.namespace) == (
        value["apiVersion"], value["kind"], *strings)
    assert head.line == blockyaml.Lines(text).walk(())[1]
    return True


def test_the_head_of_most_manifests_is_read_and_agrees() -> None:
    taken = [assert_head_agrees(text) for text in MANIFESTS]
    assert sum(taken) > len(MANIFESTS) // 4, (sum(taken), len(MANIFESTS))


@pytest.mark.parametrize(
    ("text", "head"),
    [
        pytest.param("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    name: z\n"
                     "  name: x # c\ndata:\n  a: b\n", ("v1", "ConfigMap", "x", None, 0),
                     id="nested-name-is-not-the-name"),
        pytest.param("# c\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {}\n",
                     ("apps/v1", "Deployment", None, None, 2), id="comment-marker-flow-meta"),
        pytest.param("kind: Service\napiVersion: v1\nmetadata:\nspec: {}\n",
                     ("v1", "Service", None, None, 0), id="null-metadata"),
        pytest.param("apiVersion: v1\nkind: A\nmetadata:\n    namespace: team\n    name: web\n",
                     ("v1", "A", "web", "team", 0), id="four-spaces"),
    ],
)
def test_heads_written_plainly_are_read(text: str, head: tuple[object, ...]) -> None:
    assert tuple(blockyaml.peek(text, _any_kind) or ()) == head
    assert assert_head_agrees(text)


@pytest.mark.parametrize(
    "text",
    [
        "kind: ConfigMap\n",  # no apiVersion: the value says why it is skipped
        "apiVersion: v1\nkind: yes\n", "apiVersion: v1\nkind: 'ConfigMap'\n",
        "apiVersion: v1\nkind: A\nkind: B\n", '"kind": A\napiVersion: v1\nkind: B\n',
        "apiVersion: v1\nkind: A\nmetadata:\n  name: 'q'\n",
        "apiVersion: v1\nkind: A\nmetadata:\n  name: 12\n",
        "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  name: b\n",
        "apiVersion: v1\nkind: A\nmetadata:\n  \"name\": a\n",
        "apiVersion: v1\nkind: A\nmetadata:\n  name: null\n",
        "apiVersion: v1\nkind: A\nspec: [[1]]\n", "- kind: A\n", "  kind: A\n",
        "apiVersion: v1\nkind: A\nmetadata: {name: a, namespace: b}\n",
        "apiVersion: v1\nkind: A\nx: |\n  kind: B\n", "apiVersion: v1\nkind: A\nx: &a b\n",
    ],
)
def test_heads_not_written_plainly_are_left_to_the_value(text: str) -> None:
    assert blockyaml.peek(text, _any_kind) is None


def test_only_wanted_heads_are_read() -> None:
    text = "apiVersion: v1\nkind: ConfigMap\n"
    assert blockyaml.peek(text, lambda kind: kind != "ConfigMap") is None
    assert blockyaml.peek(text, lambda kind: kind == "ConfigMap") is not None


@settings(deadline=None)
@given(
    value=st.dictionaries(_KEYS, _VALUES, max_size=4),
    meta=st.dictionaries(st.sampled_from(["name", "namespace", "labels", "x"]), _VALUES,
                         max_size=3),
    kind=st.one_of(st.sampled_from(["ConfigMap", "Deployment", "yes", "1"]), _TRICKY),
    indent=st.sampled_from([2, 4]),
    flow=st.booleans(),
)
def test_dumped_heads_agree_whenever_they_are_read(
    value: dict[str, Any], meta: dict[str, Any], kind: str, indent: int, flow: bool
) -> None:
    document = {"apiVersion": "v1", "kind": kind, "metadata": meta, **value}
    text = yaml.safe_dump(document, default_flow_style=None if flow else False,
                          sort_keys=False, indent=indent, width=1000)
    assert_head_agrees(text)
