"""Reading manifests: splitting into documents, parse problems, node positions, inputs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from draguard.schema.model.paths import FieldPath
from draguard.schema.read.jsondecode import loads_checked
from draguard.schema.read.offsets import LineIndex
from draguard.schema.read.sources import (
    STDIN_NAME,
    Chunk,
    Parsed,
    Position,
    Source,
    SyntaxProblem,
    Unreadable,
    expand_paths,
    load,
    locate,
    parse,
    positions,
    read_source,
    split_documents,
    split_exactly,
)


def _yaml(text: str) -> list[Chunk]:
    return split_documents(Source("f.yaml", text, "yaml"))


def _values(text: str, fmt: str = "yaml") -> list[object]:
    return [load(c) for c in split_documents(Source("f", text, fmt))]  # type: ignore[arg-type]


# --- splitting ---------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "values", "lines"),
    [
        pytest.param("a: 1\n", [{"a": 1}], [0], id="one-bare-document"),
        pytest.param("a: 1\n---\nb: 2\n", [{"a": 1}, {"b": 2}], [0, 1], id="two-documents"),
        pytest.param("---\na: 1\n---\n", [{"a": 1}], [0], id="leading-and-trailing-marker"),
        pytest.param("# head\n---\n# only a comment\n---\nb: 2\n", [{"b": 2}], [3],
                     id="comment-only-pieces-are-not-documents"),
        pytest.param("%YAML 1.1\n---\na: 1\n", [{"a": 1}], [0], id="directive-joins-its-document"),
        pytest.param("a: 1\n...\n---\nb: 2\n", [{"a": 1}, {"b": 2}], [0, 2],
                     id="document-end-marker"),
        pytest.param("--- {a: 1}\n--- [x]\n", [{"a": 1}, ["x"]], [0, 1],
                     id="content-on-the-marker-line"),
        pytest.param("a: |\n  ---\n  x\n", [{"a": "---\nx\n"}], [0],
                     id="indented-marker-text-is-content"),
        pytest.param("a: |\n  x\n---x: 1\n", [{"a": "x\n", "---x": 1}], [0],
                     id="dashes-glued-to-text-are-no-marker"),
    ],
)
def test_split_yaml(text: str, values: list[object], lines: list[int]) -> None:
    """A YAML file is cut at `---`/`...` lines; empty pieces are dropped and the rest numbered."""
    chunks = _yaml(text)
    assert [load(c) for c in chunks] == values
    assert [c.line for c in chunks] == lines
    assert [c.index for c in chunks] == list(range(len(chunks)))


def test_broken_document_does_not_hide_the_next() -> None:
    """A document that does not parse is a problem at its line; the following one still loads."""
    chunks = _yaml("a: 1\n---\nb: [1, 2\n---\nd: 4\n")
    results = [load(c) for c in chunks]
    assert results[0] == {"a": 1} and results[2] == {"d": 4}
    problem = results[1]
    assert isinstance(problem, SyntaxProblem)
    assert problem.line == 3 and problem.column == 4  # where the unclosed `[` opened
    assert problem.detail.startswith("cannot parse YAML: ")


# Nine times nine times … references: a few lines that expand to billions of nodes.
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        pytest.param("a: 1\n b: 2\n", 2, 3, "mapping values", id="bad-indentation"),
        pytest.param("a: b: c\n", 1, 5, "mapping values", id="value-in-plain-scalar"),
        pytest.param("a: *nope\n", 1, 4, "undefined alias", id="undefined-alias"),
        pytest.param("a: &x [1, *x]\n", 1, 11, "recursive alias", id="recursive-alias"),
        pytest.param("a: \"x\n", 1, 4, "quoted scalar", id="unclosed-quote"),
        pytest.param("a:\n\t- b\n", 2, 1, "cannot start any token", id="tab-indentation"),
        pytest.param("a: !!set {x}\n", 1, 1, "cannot be represented in JSON", id="yaml-set"),
        pytest.param("? [a]\n: 1\n", 1, 3, "mapping keys must be scalars", id="list-as-key"),
        pytest.param(LAUGHS, 4, 20, "excessive aliasing", id="billion-laughs"),
        pytest.param("m: {<<: {z: 1}}\n" + LAUGHS, 1, 1, "excessive aliasing",
                     id="billion-laughs-after-a-merge-key"),
    ],
)
def test_parse_problem_position(text: str, line: int, column: int, words: str) -> None:
    """Parse problems carry a 1-based line and column in the file and say what is wrong."""
    problem = load(_yaml(text)[0])
    assert isinstance(problem, SyntaxProblem)
    assert (problem.line, problem.column) == (line, column)
    assert words in problem.detail


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("d: 2024-01-01\n", {"d": "2024-01-01"}, id="timestamps-stay-text"),
        pytest.param("1: a\ntrue: b\n", {"1": "a", "true": "b"}, id="keys-are-strings"),
        pytest.param("a: &x {b: 1}\nc: *x\n", {"a": {"b": 1}, "c": {"b": 1}}, id="alias"),
        pytest.param("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n",
                     {"base": {"x": 1, "y": 2}, "m": {"x": 1, "y": 3}}, id="merge-key"),
        pytest.param("a: [yes, No, ~, 0x10, 1_000, .5, '1', \"t\"]\n",
                     {"a": [True, False, None, 16, 1000, 0.5, "1", "t"]}, id="yaml-1.1-scalars"),
        pytest.param("a:\n", {"a": None}, id="empty-value"),
    ],
)
def test_yaml_values(text: str, value: object) -> None:
    """Documents become JSON-like values, as kubectl's YAML-to-JSON decoding has them."""
    assert _values(text) == [value]


def test_crlf_and_bom_are_read() -> None:
    """Windows line ends and a UTF-8 byte order mark do not change values or lines."""
    source = read_source("-", io.BytesIO(b"\xef\xbb\xbfa: 1\r\n---\r\nb: 2\r\n"))
    assert isinstance(source, Source)
    chunks = split_documents(source)
    assert [load(c) for c in chunks] == [{"a": 1}, {"b": 2}]
    assert [c.line for c in chunks] == [0, 1]


# --- JSON --------------------------------------------------------------------------

def test_json_stream_is_split_into_values() -> None:
    """A JSON file may hold several concatenated values, each one document."""
    chunks = split_documents(Source("f.json", '{"a": 1}\n{"b":\n [2]}  {"c": 3}', "json"))
    assert [load(c) for c in chunks] == [{"a": 1}, {"b": [2]}, {"c": 3}]
    assert [(c.line, c.column) for c in chunks] == [(0, 0), (1, 0), (2, 7)]


def test_broken_json_reports_its_position() -> None:
    """Invalid JSON after a good value is one broken document located in the file."""
    chunks = split_documents(Source("f.json", '{"a": 1}\n{"b": tru}\n', "json"))
    assert load(chunks[0]) == {"a": 1}
    problem = load(chunks[1])
    assert isinstance(problem, SyntaxProblem)
    assert (problem.line, problem.column) == (2, 7)
    assert problem.detail.startswith("cannot parse JSON: ")


def test_stdin_json_is_sniffed() -> None:
    """Standard input that starts with `{` is read as JSON (a stream of values)."""
    source = read_source("-", io.BytesIO(b' {"a": 1}{"b": 2}'))
    assert isinstance(source, Source) and source.format == "json" and source.name == STDIN_NAME
    assert [load(c) for c in split_documents(source)] == [{"a": 1}, {"b": 2}]


# --- positions ---------------------------------------------------------------------

CLAIM = """\
# a comment
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - {name: a, deviceClassName: x}
      - name: b
        deviceClassName: y
"""


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param((), Position(2, 1), id="document"),
        pytest.param(("kind",), Position(3, 1), id="mapping-entry-at-its-key"),
        pytest.param(("spec", "devices", "requests", 0), Position(7, 7), id="list-item"),
        pytest.param(("spec", "devices", "requests", 0, "firstAvailable", 0, "deviceClassName"),
                     Position(9, 19), id="flow-mapping-key"),
        pytest.param(("spec", "devices", "requests", 0, "firstAvailable", 1),
                     Position(10, 9), id="nested-item"),
        pytest.param(("spec", "devices", "requests", 0, "exactly", "count"),
                     Position(7, 7, exact=False), id="missing-field-nearest-parent"),
        pytest.param(("spec", "devices", "requests", 5), Position(6, 5, exact=False),
                     id="index-out-of-range"),
    ],
)
def test_locate(path: tuple[str | int, ...], expected: Position) -> None:
    """A path is found at its key (map) or item (list), else at its deepest existing parent."""
    chunk = _yaml("x: 1\n---\n" + CLAIM)[1]
    shifted = Position(expected.line + 2, expected.column, expected.exact)
    assert locate(chunk, positions(chunk), [FieldPath(path)]) == shifted


def test_locate_prefers_the_first_complete_candidate() -> None:
    """Of several candidate paths, the first that exists wins; else the deepest partial one."""
    chunk = _yaml(CLAIM)[0]
    root = positions(chunk)
    missing = ("spec", "nope")
    assert locate(chunk, root, [FieldPath(missing), FieldPath(("kind",))]) == Position(3, 1)
    partial = FieldPath(("spec", "devices", "x"))
    assert locate(chunk, root, [FieldPath(missing), partial]) == Position(5, 3, exact=False)


def test_locate_in_json_value_that_starts_mid_line() -> None:
    """Columns in a JSON value that does not start a line are counted from the line start."""
    chunks = split_documents(Source("f.json", '{"a": 1} {"b": {"c": [1, 2]}}', "json"))
    chunk = chunks[1]
    assert locate(chunk, positions(chunk), [FieldPath(("b", "c", 1))]) == Position(1, 26)


# --- inputs ------------------------------------------------------------------------

def test_expand_paths_walks_folders(tmp_path: Path) -> None:
    """Folders yield their *.yaml, *.yml and *.json files recursively, sorted, hidden ones left out."""
    for name in ("b.yaml", "a.yml", "sub/c.json", "notes.txt", ".hidden.yaml", ".git/d.yaml"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("a: 1\n")
    named = tmp_path / "notes.txt"
    found = list(expand_paths([str(tmp_path), str(named), "-"]))
    rel = [str(Path(p).relative_to(tmp_path)) if p != "-" else p for p in found]
    assert rel == ["a.yml", "b.yaml", "sub/c.json", "notes.txt", "-"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        pytest.param(None, "No such file", id="missing"),
        pytest.param(b"a: \xff\xfe\n", "not UTF-8", id="undecodable-bytes"),
    ],
)
def test_unreadable_inputs(tmp_path: Path, content: bytes | None, reason: str) -> None:
    """A missing file or bytes that are not UTF-8 make an Unreadable naming the input."""
    path = tmp_path / "x.yaml"
    if content is not None:
        path.write_bytes(content)
    result = read_source(str(path))
    assert isinstance(result, Unreadable)
    assert result.name == str(path) and reason in result.reason


def test_yaml_positions_come_with_the_value() -> None:
    """Parsing YAML records node positions in the same pass; an alias item sits where it is used."""
    chunk = _yaml("a: &x {b: 1}\nlist:\n- *x\n- {c: 2}\n")[0]
    parsed = parse(chunk)
    assert isinstance(parsed, Parsed)
    assert parsed.value == {"a": {"b": 1}, "list": [{"b": 1}, {"c": 2}]}
    assert locate(chunk, parsed.positions, [FieldPath(("list", 0))]) == Position(3, 3)
    assert locate(chunk, parsed.positions, [FieldPath(("list", 0, "b"))]) == Position(1, 8)
    assert locate(chunk, parsed.positions, [FieldPath(("list", 1, "c"))]) == Position(4, 4)


def test_json_positions_are_read_on_request() -> None:
    """JSON is decoded without positions; `positions` reads them when a finding needs one."""
    chunk = split_documents(Source("f.json", '{"a": {"b": [1, 2]}}', "json"))[0]
    parsed = parse(chunk)
    assert isinstance(parsed, Parsed) and parsed.positions is None
    assert locate(chunk, positions(chunk), [FieldPath(("a", "b", 1))]) == Position(1, 17)


# --- linear work --------------------------------------------------------------------

class _CountingText(str):
    """A text that adds up the spans its line-break searches cover."""

    scanned = 0

    def count(self, sub: str, start: int | None = 0, end: int | None = None) -> int:  # type: ignore[override]
        self._add(start, end)
        return super().count(sub, start, end)

    def rfind(self, sub: str, start: int | None = 0, end: int | None = None) -> int:  # type: ignore[override]
        self._add(start, end)
        return super().rfind(sub, start, end)

    def find(self, sub: str, start: int | None = 0, end: int | None = None) -> int:  # type: ignore[override]
        self._add(start, end)
        return super().find(sub, start, end)

    def _add(self, start: int | None, end: int | None) -> None:
        type(self).scanned += (len(self) if end is None else end) - (start or 0)


@pytest.mark.parametrize("n", [1_000, 4_000])
def test_splitting_a_json_stream_reads_the_text_a_bounded_number_of_times(n: int) -> None:
    """Lines and columns of a stream of JSON values are counted in one pass, not per value."""
    text = _CountingText("".join(f'{{"a": [\n {k},\n 2]}} {{"b": {k}}}\n' for k in range(n)))
    _CountingText.scanned = 0
    chunks = split_documents(Source("f.json", text, "json"))
    assert len(chunks) == 2 * n
    assert (chunks[-1].line, chunks[-1].column) == (3 * n - 1, 5)
    assert _CountingText.scanned <= 2 * len(text)


# Values, blanks and pieces that break a stream or put brackets where a cut may look:
# inside strings, between values on one line, broken values, scalars.
_STREAM_PARTS = st.sampled_from([
    '{"a": 1}', '{"a": [\n 1,\n {"b": 2}\n]\n}', "[1, 2]", '{"s": "} {"}', '{"s": "]\\n["}',
    '{"a": }', "{", "}", "1", '"x"', "null", "[[]]", '{"a": {"b": {}}}', "xyz",
    '{"a": [\n{"b": 1}\n{"c": 2}]}', "[\n[1]\n]", "]\n{", "}\n[",
])
_BLANKS = st.sampled_from(["", " ", "\n", "\t\n  ", "\n\n"])


@given(st.lists(st.tuples(_BLANKS, _STREAM_PARTS), max_size=6), _BLANKS, _BLANKS)
def test_a_json_stream_cut_provisionally_is_split_exactly_when_each_piece_decodes(
    parts: list[tuple[str, str]], tail: str, lead: str
) -> None:
    """The provisional cuts (no decoding) are the exact split's whenever every piece
    decodes whole, which lint checks; otherwise lint splits the source exactly."""
    source = Source("f.json", lead + "".join(b + part for b, part in parts) + tail, "json")
    exact = split_documents(source)
    cut = split_documents(source, provisional=True)
    assert all(c.provisional for c in cut) and not any(c.provisional for c in exact)
    decodes = True
    for chunk in cut:
        try:
            loads_checked(chunk.text)
        except ValueError:
            decodes = False
    if decodes:
        assert [(c.index, c.text, c.line, c.column) for c in cut] == [
            (c.index, c.text, c.line, c.column) for c in exact]
    # Otherwise lint splits again, from the chunks alone (the text is not kept).
    other = Chunk("g.yaml", 0, "a: 1", 0, 0, "yaml")
    assert split_exactly([other, *cut, *cut, other]) == [other, *exact, *exact, other]


def test_line_index_of_a_big_text_agrees_with_counting() -> None:
    """Past the size where lines are counted directly, the index gives the same answers."""
    text = "".join(f"{'x' * (k % 7)}\n" for k in range(20_000))
    index = LineIndex(text)
    for offset in (0, 1, 5, len(text) // 2, len(text) - 1, len(text)):
        line = text.count("\n", 0, offset)
        assert index.line_column(offset) == (line, offset - text.rfind("\n", 0, offset) - 1)
