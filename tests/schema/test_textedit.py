"""Text edits (`read/textedit`) against ruamel's round trip (`read/yamledit`): same values, comments kept (issue 21)."""

from __future__ import annotations

import io
import re
from collections import Counter
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest
import strategies
import yaml
from budget import examples
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from draguard.schema.cli import convert as convert_cli
from draguard.schema.convert import TARGETS, convert_document
from draguard.schema.model.options import DEFAULT_OPTIONS
from draguard.schema.read.textedit import Declined, edit, edit_document, read
from draguard.schema.read.yamledit import Donors, apply, dump_documents, load_documents

_COMMENT = re.compile(r"(?:^| )(#.*)$")

CONFIG_MAP = """\
# not DRA: every byte stays
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}   # odd spacing
data:
  mode: "on"
"""


@st.composite
def commented(draw: st.DrawFn, text: str) -> str:
    """`text` with comments: at the end of some lines, and on lines of their own."""
    lines = text.split("\n")[:-1]
    picks = draw(st.lists(st.integers(0, len(lines) - 1), max_size=4, unique=True))
    for n, i in enumerate(sorted(picks, reverse=True)):
        line = lines[i]
        if draw(st.booleans()):
            lines[i] = f"{line}{' ' * draw(st.integers(1, 3))}# trailing {n}"
        else:
            indent = len(line) - len(line.lstrip(" "))
            lines.insert(i, f"{' ' * draw(st.sampled_from([0, indent]))}# own line {n}")
    return "\n".join(lines) + "\n"


def dumped(doc: dict[str, Any], flow: bool) -> str:
    return yaml.safe_dump(doc, default_flow_style=None if flow else False, sort_keys=False,
                          width=4096)


def by_ruamel(text: str, new: Any) -> str:
    (node,) = load_documents(text)
    return dump_documents([apply(node, new, Donors(node))])


def comments(text: str) -> Counter[str]:
    """Comments, as the test writes them (never inside a quoted string)."""
    return Counter(m[1] for line in text.split("\n") if (m := _COMMENT.search(line)))


@settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    doc=strategies.documents(),
    target=st.sampled_from(TARGETS),
    flow=st.booleans(),
    data=st.data(),
)
def test_text_and_ruamel_give_the_same_document(
    doc: dict[str, Any], target: str, flow: bool, data: st.DataObject
) -> None:
    """Where the text path edits, it reads back as ruamel's edit and the converter's value, with every comment."""
    text = data.draw(commented(dumped(doc, flow)))
    new = convert_document(doc, target, options=DEFAULT_OPTIONS).document
    if new is None:
        return
    result = edit(text, doc, new)
    event("declined" if isinstance(result, Declined) else "edited as text")
    if isinstance(result, Declined):
        return
    assert yaml.safe_load(result) == new
    assert comments(result) >= comments(text)
    try:
        ruamel = yaml.safe_load(by_ruamel(text, new))
    except yaml.YAMLError:
        # ruamel writes `requests: -` for a list emptied below a comment at column 0
        # (found by this test): the text path is the one that is right there.
        event("ruamel wrote YAML that does not parse")
        return
    assert ruamel == new


@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(doc=strategies.documents(), target=st.sampled_from(TARGETS), data=st.data())
def test_unchanged_top_level_fields_keep_their_bytes(
    doc: dict[str, Any], target: str, data: st.DataObject
) -> None:
    """A top-level field the conversion leaves alone (say metadata) comes out as its very lines."""
    text = data.draw(commented(dumped(doc, flow=data.draw(st.booleans()))))
    new = convert_document(doc, target, options=DEFAULT_OPTIONS).document
    result = edit(text, doc, new) if new is not None else None
    if result is None or isinstance(result, Declined):
        return
    blocks = re.split(r"\n(?=[^ #\n])", text)  # the lines of each top-level field
    for block in blocks:
        key = block.split(":", 1)[0]
        if key in doc and key in new and doc[key] == new[key]:
            assert block.rstrip("\n") in result


def run_file(tmp_path: Path, text: str, target: str) -> tuple[str, Counter[str]]:
    path = tmp_path / "f.yaml"
    path.write_text(text)
    convert_cli.PATHS.clear()
    with redirect_stderr(io.StringIO()):
        result = convert_cli.convert_file(str(path), target, options=DEFAULT_OPTIONS,
                                          allow_loss=False)
    assert result is not None
    return result.text, Counter(convert_cli.PATHS)


@settings(max_examples=examples(50), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=strategies.documents(), target=st.sampled_from(TARGETS), data=st.data())
def test_other_documents_of_the_file_are_byte_identical(
    tmp_path: Path, doc: dict[str, Any], target: str, data: st.DataObject
) -> None:
    """Documents with nothing to convert keep every byte, whichever path the claim took."""
    claim = data.draw(commented(dumped(doc, flow=data.draw(st.booleans()))))
    out, _ = run_file(tmp_path, f"{CONFIG_MAP}---\n{claim}---\n{CONFIG_MAP}", target)
    assert out.startswith(f"{CONFIG_MAP}---\n") and out.endswith(f"---\n{CONFIG_MAP}")


MOVING = """\
# the claim
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata:
  name: c     # keep
  namespace: ns
spec:
  devices:
    requests:
    # the network card
    - name: nic   # the NIC
      deviceClassName: nic.example.com   # its class
      selectors: [{cel: {expression: 'device.driver == "nic"'}}]  # only ours
    - name: gpu
      firstAvailable:
      # best first
      - name: h100   # fastest
        deviceClassName: h100.nvidia.com
      - {name: a100, deviceClassName: a100.nvidia.com, count: 2}
"""


@pytest.mark.parametrize("target", ["v1", "v1beta2", "parallel"])
def test_moved_fields_keep_their_comments_and_style(tmp_path: Path, target: str) -> None:
    """Flat fields wrapped into `exactly:`, subrequests moved to `options`: their lines move whole."""
    out, paths = run_file(tmp_path, MOVING, target)
    assert paths == Counter({"text": 1})
    for kept in ("# the claim", "name: c     # keep", "# the network card",
                 "- name: nic   # the NIC", "deviceClassName: nic.example.com   # its class",
                 "# only ours", "# best first", "- name: h100   # fastest",
                 "{name: a100, deviceClassName: a100.nvidia.com, "):
        assert kept in out
    assert yaml.safe_load(out) == convert_document(yaml.safe_load(MOVING), target).document


def test_v1_wraps_flat_fields_in_exactly_at_their_column(tmp_path: Path) -> None:
    """The v1beta1 → v1 edit, line by line: `exactly:` inserted, the moved lines indented by two."""
    out, _ = run_file(tmp_path, MOVING, "v1")
    assert out.split("    requests:\n")[1].startswith(
        "    # the network card\n"
        "    - name: nic   # the NIC\n"
        "      exactly:\n"
        "        deviceClassName: nic.example.com   # its class\n"
        "        selectors: [{cel: {expression: 'device.driver == \"nic\"'}}]  # only ours\n"
        "        allocationMode: ExactCount\n"
        "        count: 1\n"
        "    - name: gpu\n"
    )


@pytest.mark.parametrize(
    ("why", "text", "old"),
    [
        ("block scalar", "a: |\n  x\n", {"a": "x\n"}),
        ("anchor", "a: &x 1\nb: *x\n", {"a": 1, "b": 1}),
        ("tag", "a: !!str 1\n", {"a": "1"}),
        ("flow over lines", "a: [1,\n  2]\n", {"a": [1, 2]}),
        ("multi-line plain", "a: one\n  two\n", {"a": "one two"}),
        ("tab", "a:\t1\n", {"a": 1}),
        ("crlf", "a: 1\r\n", {"a": 1}),
        ("quoted over lines", 'a: "one\n  two"\n', {"a": "one two"}),
        ("value differs from the text", "a: 1\n", {"a": 2}),
    ],
)
def test_what_the_text_path_cannot_be_sure_of_is_declined(why: str, text: str, old: Any) -> None:
    """Anything beyond one-line scalars and flow collections goes the ruamel way."""
    assert isinstance(edit(text, old, {**old, "z": 1}), Declined), why


def test_a_comment_inside_a_replaced_value_is_declined() -> None:
    """A mapping that becomes a scalar would lose the comment on a line of it: declined."""
    text = "a:\n  b: 1   # about b\n"
    assert isinstance(edit(text, {"a": {"b": 1}}, {"a": 5}), Declined)


def test_new_strings_are_quoted_for_yaml_1_1() -> None:
    """`on`, `yes`, numbers-as-strings: written so that kubectl's YAML 1.1 reads strings."""
    result = edit("a: 1\n", {"a": 1}, {"a": 1, "b": "on", "c": "0777", "d": "y", "e": "x: y"})
    assert isinstance(result, str)
    assert yaml.safe_load(result) == {"a": 1, "b": "on", "c": "0777", "d": "y", "e": "x: y"}


def test_documents_markers_stay() -> None:
    """The `---` line (with its comment) and a `...` line around the edited body stay."""
    result = edit_document("--- # one\na: 1\n...\n", {"a": 1}, {"a": 2})
    assert result == "--- # one\na: 2\n...\n"


@pytest.mark.parametrize("text", ["a: on\n", "a: [yes]\n", "a: 0777\n", "a: 1e3\n", "a: 1:20\n",
                                  "a: 2024-01-01\n"])
def test_scalars_yaml_1_1_reads_apart_are_left_to_lint_s_reader(text: str) -> None:
    """`read` answers only where YAML 1.1 and 1.2 agree; else lint's reader decides."""
    assert read(text) is None


@pytest.mark.parametrize(
    ("text", "same"),
    [
        pytest.param("a: -5\nb: [1, -0, 12]\n", True, id="decimal-integers"),
        pytest.param("a: +5\n", False, id="signed-plus"),
        pytest.param("a: -.5\n", False, id="sign-then-dot"),
        pytest.param("a: {b: .5}\n", False, id="after-a-brace"),
        pytest.param("a: x:012\n", False, id="after-a-colon-in-a-word"),
        pytest.param("a: v1.2-3\nb: x-1\nc: nic.example.com\n", True, id="inside-words"),
        pytest.param("a: -x\nb: - 1\n", True, id="a-dash-before-no-digit"),
        pytest.param("a: 1_000\n", False, id="underscore"),
        pytest.param("1.5: a\n", False, id="at-the-start"),
    ],
)
def test_number_like_words_are_found_where_yaml_1_1_reads_them(text: str, same: bool) -> None:
    """A word that starts like a number (after a blank, `[`, `{`, `,`, `:` or the start)
    must be a plain decimal integer for `read` to answer without lint's reader."""
    from draguard.schema.read import textedit

    assert textedit._same_in_1_1(text) is same


def test_located_gives_each_document_its_offset() -> None:
    """Documents (with comment-only pieces and blank lines between) start where `located` says."""
    from draguard.schema.read.sources import Source
    from draguard.schema.read.textedit import located

    text = "# head\na: 1\n---\n# only a comment\n---\n\n\nb: 2\nc: 3\n---\nd: 4\n"
    found = located(Source("x.yaml", text, "yaml"))
    assert [text[start:start + len(chunk.text)] for chunk, start in found] == [
        chunk.text for chunk, _ in found]
    assert [start for _, start in found] == [0, text.index("---\n\n"), text.rindex("---")]
    stream = '{"a": 1}\n{"b":\n 2} {"c": 3}\n\n{"d": 4}'
    found = located(Source("x.json", stream, "json"))
    assert [start for _, start in found] == [stream.index(k) - 1 for k in ('"a', '"b', '"c', '"d')]


def test_sequence_indentation_follows_the_document() -> None:
    """A new list under a key is indented as the document indents its lists."""
    text = "a:\n  - x\nb: 1\n"
    result = edit(text, {"a": ["x"], "b": 1}, {"a": ["x"], "b": 1, "c": ["z"]})
    assert result == "a:\n  - x\nb: 1\nc:\n  - z\n"


CASES = Path(__file__).resolve().parents[1] / "cases"


def test_the_one_pass_tokenizer_agrees_with_the_line_reader() -> None:
    """`_tokenize`'s one regular expression reads every corpus line as `_token` does."""
    from draguard.schema.read import textedit

    checked = 0
    for path in sorted(CASES.rglob("*.yaml")):
        for line in path.read_text().split("\n"):
            try:
                slow = textedit._token(line)
            except textedit._Unsure:
                continue
            assert textedit._tokenize(line) == [slow], line
            checked += 1
    assert checked > 1000


def test_a_list_emptied_is_written_as_brackets() -> None:
    """`requests: []` (every request prioritized, in the parallel shape) is `[]`, not a null."""
    text = "requests:\n- name: a\nother: 1\n"
    result = edit(text, {"requests": [{"name": "a"}], "other": 1}, {"requests": [], "other": 1})
    assert result == "requests: []\nother: 1\n"


def test_block_lists_and_integers_are_read_by_yaml_rs() -> None:
    """Dashes, plain integers and words are the same in both versions: `read` answers."""
    assert read("a:\n- 1\n- -2\n- {b: [x, 0]}\n") == {"a": [1, -2, {"b": ["x", 0]}]}


def test_a_comment_lost_while_another_is_copied_is_declined() -> None:
    """The comment check counts each comment: one copied twice does not make up for one lost."""
    text = "a:\n  b:\n  - x  # one\n  c: 1  # two\n"
    old = {"a": {"b": ["x"], "c": 1}}
    assert isinstance(edit(text, old, {"a": {"b": ["x"]}, "d": ["x"]}), Declined)
