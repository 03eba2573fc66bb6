"""Reading manifests: files, folders and stdin, split into documents, parsed, located.

The reader follows kubectl's `yaml.NewYAMLReader`: a YAML file is cut into documents
at document-start lines (`---`, possibly followed by content or a comment) and after
document-end lines (`...`), and every piece is parsed on its own, so that one broken
document is reported with its line while the rest of the file is still checked. A JSON file holds one or more concatenated JSON values.

Numbering: `Chunk.index` is the 0-based position of a document among the file's
non-empty documents (a piece with nothing but comments, blank lines, markers or
directives is not a document, as kubectl skips it).

Speed: plain block-style YAML documents are parsed by yaml-rs (`blockyaml`), other
YAML with libyaml, its events going straight into values and node positions in one
pass (`yamlevents`); JSON with the C `json` module, its nodes located from the text
on demand (`jsondecode.Nodes`).
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, NamedTuple

from draguard.schema.model.paths import FieldPath, Segment
from draguard.schema.read import blockyaml, jsondecode
from draguard.schema.read.blockyaml import Head, Lines
from draguard.schema.read.duplicates import Duplicate
from draguard.schema.read.jsondecode import Nodes

if TYPE_CHECKING:
    import yaml

    from draguard.schema.read.yamlevents import Positions

Format = Literal["yaml", "json"]

STDIN = "-"
STDIN_NAME = "<stdin>"
SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True, slots=True)
class Source:
    """The decoded text of one input file (or stdin) and how to read it."""

    name: str
    text: str
    format: Format


@dataclass(frozen=True, slots=True)
class Unreadable:
    """An input that could not be read at all: missing, a directory error, bad bytes."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class Chunk:
    """One document's text and where its first character sits in its file (0-based)."""

    file: str
    index: int
    text: str
    line: int
    column: int
    format: Format
    # For a JSON value cut where it seemed to end (`split_documents(provisional=True)`),
    # the blanks after it up to the next value or the end, so that its file's text can
    # be made again (`split_exactly`); None for a chunk of an exact split.
    after: str | None = None

    @property
    def provisional(self) -> bool:
        """Cut without decoding: right exactly when the text decodes whole."""
        return self.after is not None


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """A document that does not parse, with the 1-based position of the problem."""

    detail: str
    line: int
    column: int


class Position(NamedTuple):
    """A 1-based line and column, and whether the node asked for exists itself.

    A named tuple: lint locates every finding, and a frozen dataclass costs more to make.
    """

    line: int
    column: int
    exact: bool = True


# --- finding and reading inputs ------------------------------------------------------

def expand_paths(paths: Iterable[str]) -> Iterator[str]:
    """Each argument as given, folders replaced by their manifests (recursively, sorted).

    A file named explicitly is read whatever its suffix; inside folders only `*.yaml`,
    `*.yml` and `*.json` are taken, and hidden entries (`.git`) are left out.
    """
    for path in paths:
        if path == STDIN or not os.path.isdir(path):
            yield path
            continue
        yield from sorted(_walk_manifests(path))


def _walk_manifests(folder: str) -> Iterator[str]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.endswith(SUFFIXES) and not name.startswith("."):
                yield os.path.join(root, name)


def read_source(path: str, stdin: BinaryIO | None = None) -> Source | Unreadable:
    """Read and decode one input; UTF-8 (with or without BOM) is the only encoding accepted."""
    name = STDIN_NAME if path == STDIN else path
    try:
        if path == STDIN:
            data = (stdin if stdin is not None else sys.stdin.buffer).read()
        else:
            with open(path, "rb") as handle:
                data = handle.read()
    except OSError as exc:
        return Unreadable(name, exc.strerror or str(exc))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Unreadable(name, f"not UTF-8 text (byte {exc.start}: {data[exc.start]:#04x})")
    # YAML counts \r\n and a lone \r as one line break; editors do too. Looked for
    # first: a one-character `in` is a memchr, each `replace` a pass and a copy.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return Source(name, text, _sniff_format(path, text))


def _sniff_format(path: str, text: str) -> Format:
    if path.endswith(".json"):
        return "json"
    if path == STDIN and text.lstrip()[:1] in ("{", "["):
        return "json"
    return "yaml"


# --- splitting into documents ---------------------------------------------------------

# A document marker: `---` or `...` at column 0, then nothing or whitespace. YAML forbids
# both inside any scalar at column 0, so cutting the text at them is exact.
# A marker line, found by the line break before it (a literal the engine can skip to).
_MARKER = re.compile(r"\n(---|\.\.\.)(?=[ \t\n]|\Z)")
# A line that holds something besides blanks, comments, bare markers and directives.
_CONTENT = re.compile(r"^(?![ \t]*(?:#|$))(?!(?:---|\.\.\.)[ \t]*(?:#|$))(?!%)", re.M)
_DIRECTIVE = re.compile(r"^%", re.M)


def split_documents(source: Source, *, provisional: bool = False) -> list[Chunk]:
    """Cut a source into its documents, each with its place in the file.

    `provisional`: a JSON source is cut without decoding it (`_cut_json`), for a caller
    that decodes every chunk anyway and splits the source again, exactly, when one of
    them does not decode whole (`Chunk.provisional`).
    """
    if source.format == "json":
        return _cut_json(source) if provisional else _split_json(source)
    return _split_yaml(source)


def _split_yaml(source: Source) -> list[Chunk]:
    text = source.text
    cuts = [0]
    # In the text with a line break in front, a match starts where its line does in `text`.
    for match in _MARKER.finditer("\n" + text):
        if match.group(1) == "---":
            cuts.append(match.start())
        else:  # `...` ends the document; the next one starts on the following line
            end = text.find("\n", match.start())
            cuts.append(len(text) if end < 0 else end + 1)
    cuts.append(len(text))
    chunks: list[Chunk] = []
    pending_start: int | None = None  # a directives-only piece joins the next document
    line, counted_to = 0, 0  # newlines are counted once, left to right
    for start, end in itertools.pairwise(cuts):
        if end <= start:
            continue
        piece_start = start if pending_start is None else pending_start
        if _CONTENT.search(text, start, end) is None:
            has_directive = _DIRECTIVE.search(text, start, end) is not None
            pending_start = piece_start if has_directive else None
            continue
        line += text.count("\n", counted_to, piece_start)
        counted_to = piece_start
        chunks.append(Chunk(source.name, len(chunks), text[piece_start:end], line, 0, "yaml"))
        pending_start = None
    return chunks


def _split_json(source: Source) -> list[Chunk]:
    """Each value's end from the decoder; the rest is one broken document when it fails."""
    return _json_chunks(source, list(_decoded_spans(source.text)), provisional=False)


def _decoded_spans(text: str) -> Iterator[tuple[int, int]]:
    decoder = json.JSONDecoder()
    pos = _skip_space(text, 0)
    while pos < len(text):
        try:
            _, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            end = len(text)  # the rest is one broken document; parsing it reports where
        yield pos, end
        pos = _skip_space(text, end)


# A value that starts a line (as each does in a stream that `json.dumps(indent=…)`,
# `jq` or `kubectl` writes), found by a literal the engine skips to: a pattern that
# started at a closing bracket would try a match at each of the many more brackets
# that close nested values.
_OBJECT_LINE = re.compile(r"\n\{")
_ARRAY_LINE = re.compile(r"\n\[")


def _cut_json(source: Source) -> list[Chunk]:
    """`_split_json`'s chunks when each piece decodes whole, found without decoding.

    The text is cut before each line that starts with `{` (or `[`, in a text that
    starts with one) after a closing bracket and blanks: in valid JSON that is only
    found between two values (inside a collection a comma or a colon would come
    between; a string holds no line break). Such a piece, which ends in a closing
    bracket (or is the text's last), is then one value that the decoder would end
    there too, so the cuts are the decoder's. A piece that does not decode (broken
    JSON, values on one line) shows the cuts may be wrong: the source is then split
    again by decoding (`split_exactly`).
    """
    text = source.text
    starts = [line.start() for line in _OBJECT_LINE.finditer(text)]
    if text.startswith("[", _skip_space(text, 0)):  # arrays too: looked for only then
        starts = sorted([*starts, *(line.start() for line in _ARRAY_LINE.finditer(text))])
    ends = [end for end in map(functools.partial(_value_end, text), starts) if end > 0]
    ends.append(len(text.rstrip(" \t\n")))
    return _json_chunks(source, list(_cut_spans(text, ends)), provisional=True)


def _value_end(text: str, line: int) -> int:
    """Just past the closing bracket before the blanks that end at `line`, else 0."""
    end = line
    while end > 0 and text[end - 1] in " \t\n":
        end -= 1
    return end if end > 0 and text[end - 1] in "}]" else 0


def split_exactly(chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks with those cut provisionally replaced by the exact split of their
    sources (each source's chunks in a row, from its first), made again from the chunks:
    blanks before the first chunk only count as lines and columns, the rest is kept."""
    out: list[Chunk] = []
    run: list[Chunk] = []
    for chunk in [*chunks, None]:
        if run and (chunk is None or not chunk.provisional or chunk.index == 0):
            first = run[0]
            text = "".join([first.line * "\n", first.column * " ",
                            *(piece for c in run for piece in (c.text, c.after or ""))])
            out.extend(_split_json(Source(first.file, text, "json")))
            run = []
        if chunk is not None and chunk.provisional:
            run.append(chunk)
        elif chunk is not None:
            out.append(chunk)
    return out


def _cut_spans(text: str, ends: list[int]) -> Iterator[tuple[int, int]]:
    pos = _skip_space(text, 0)
    for end in ends:
        if pos < end:
            yield pos, end
            pos = _skip_space(text, end)


def _json_chunks(
    source: Source, spans: list[tuple[int, int]], *, provisional: bool
) -> list[Chunk]:
    """One chunk per span of the text, lines counted from the previous span."""
    text = source.text
    chunks: list[Chunk] = []
    line, line_start, counted_to = 0, 0, 0  # text before `counted_to` is counted once
    starts = [pos for pos, _ in spans[1:]] + [len(text)] if spans else []  # each next one's
    for (pos, end), following in zip(spans, starts, strict=True):
        breaks = text.count("\n", counted_to, pos)
        if breaks:
            line += breaks
            line_start = text.rfind("\n", counted_to, pos) + 1
        counted_to = pos
        chunks.append(Chunk(source.name, len(chunks), text[pos:end], line, pos - line_start,
                            "json", text[end:following] if provisional else None))
    return chunks


_SPACE = re.compile(r"[ \t\n]*+")


def _skip_space(text: str, pos: int) -> int:
    space = _SPACE.match(text, pos)
    return space.end() if space is not None else pos


# --- parsing ---------------------------------------------------------------------------

# Errors a parser raises for bad input; RecursionError for absurdly deep nesting.
_PARSE_ERRORS = (ValueError, TypeError, OverflowError, RecursionError)


@dataclass(frozen=True, slots=True)
class Parsed:
    """A document's value and, for YAML, where its nodes start: libyaml's marks
    (`yamlevents.Positions`), or for plain block YAML its lines (`blockyaml.Lines`).
    JSON gets its positions on request (`positions`)."""

    value: Any
    positions: Positions | Lines | Nodes | None
    # Keys written twice (issue 17): the value holds the last, as kubectl sends it.
    duplicates: tuple[Duplicate, ...] = ()


def parse(chunk: Chunk) -> Parsed | SyntaxProblem:
    """The document's value (and positions), or where and why it does not parse; never raises.

    Plain block YAML (most manifests) is read by `blockyaml`, its nodes located from
    its lines when asked; other YAML by libyaml's events, positions recorded in the same
    pass (most documents get a warning or an error, so a second pass would cost more);
    JSON by the C `json` module, located only on request (`positions`).
    """
    if chunk.format == "yaml":
        value = blockyaml.load(chunk.text)
        if value is not None:
            return Parsed(value, Lines(chunk.text))
        return _parse_yaml_events(chunk)
    try:
        value, duplicates = jsondecode.loads_checked(chunk.text)
        return Parsed(value, None, tuple(duplicates))
    except json.JSONDecodeError as exc:
        return _problem(chunk, f"cannot parse JSON: {exc.msg}", exc.lineno - 1, exc.colno - 1)
    except _PARSE_ERRORS as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return _problem(chunk, f"cannot parse JSON: {reason}", 0, 0)


def _parse_yaml_events(chunk: Chunk) -> Parsed | SyntaxProblem:
    # Loaded on the first document that is not plain block YAML: PyYAML costs a start.
    import yaml

    from draguard.schema.read.yamlevents import load_with_positions

    duplicates: list[Duplicate] = []
    try:
        return Parsed(*load_with_positions(chunk.text, duplicates), tuple(duplicates))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # An unclosed bracket or quote is noticed at the end of the document; the place
        # where the unfinished construct started helps more.
        if mark is not None and exc.context_mark is not None and mark.index >= _end(chunk):
            mark = exc.context_mark
        line, column = (mark.line, mark.column) if mark is not None else (0, 0)
        return _problem(chunk, f"cannot parse YAML: {_yaml_reason(exc)}", line, column)
    except (yaml.YAMLError, *_PARSE_ERRORS) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return _problem(chunk, f"cannot parse YAML: {reason}", 0, 0)


def peek(chunk: Chunk, wanted: Callable[[str], bool]) -> Head | None:
    """The document's apiVersion, kind, name and namespace, read without building its
    value, when its kind is `wanted` and it is plain block YAML that writes them
    plainly (`blockyaml.peek`)."""
    return blockyaml.peek(chunk.text, wanted) if chunk.format == "yaml" else None


def load(chunk: Chunk) -> Any | SyntaxProblem:
    """The document's value, or where and why it does not parse; never raises."""
    parsed = parse(chunk)
    return parsed.value if isinstance(parsed, Parsed) else parsed


def _end(chunk: Chunk) -> int:
    return chunk.column + len(chunk.text.rstrip())


def _yaml_reason(exc: yaml.MarkedYAMLError) -> str:
    parts = [p for p in (exc.context, exc.problem) if p]
    return ": ".join(parts) if parts else "invalid YAML"


def _problem(chunk: Chunk, detail: str, line: int, column: int) -> SyntaxProblem:
    """Turn a position inside the chunk into a 1-based position in the file."""
    if line == 0:
        column += chunk.column
    return SyntaxProblem(detail, chunk.line + line + 1, column + 1)


# --- positions -------------------------------------------------------------------------

def positions(chunk: Chunk, *, unique: bool = False) -> Positions | Nodes | None:
    """Where the nodes of a document start: for JSON read from its text on demand (a
    document that decoded; `unique` when it writes no key twice, `Parsed.duplicates`),
    for YAML read again by libyaml (None if it fails)."""
    if chunk.format == "json":
        # Columns of a JSON value that starts mid-line count from the line's start.
        return Nodes(chunk.text, chunk.column, unique=unique)
    parsed = _parse_yaml_events(chunk)
    return parsed.positions if isinstance(parsed, Parsed) else None


def locate(
    chunk: Chunk, root: Positions | Lines | Nodes | None,
    candidates: Sequence[FieldPath],
) -> Position:
    """Where the first candidate path that exists starts; else the deepest existing parent.

    A mapping entry is located at its key, a list item at the item; an empty path at the
    document's top node.
    """
    if root is None:
        return Position(chunk.line + 1, chunk.column + 1, exact=False)
    walk = root.walk if isinstance(root, Lines | Nodes) else functools.partial(_walk, root)
    best: tuple[int, int, int] | None = None
    for path in candidates:
        depth, line, column = walk(path.parts)
        if depth == len(path):
            return _position(chunk, line, column, exact=True)
        if best is None or depth > best[0]:
            best = (depth, line, column)
    _, line, column = best if best is not None else walk(())
    return _position(chunk, line, column, exact=False)


def _mark_of(node: Positions) -> Any:
    return node[0] if type(node) is tuple else node


def _walk(root: Positions, parts: Sequence[Segment]) -> tuple[int, int, int]:
    """`Lines.walk` over libyaml's marks: parts found, and the deepest one's line and column."""
    node, mark = root, _mark_of(root)
    depth = 0
    for part in parts:
        children = node[1] if type(node) is tuple else None
        if isinstance(part, int):
            if type(children) is not list or not 0 <= part < len(children):
                break
            node = children[part]
            mark = _mark_of(node)
        else:
            if type(children) is not dict or part not in children:
                break
            mark, node = children[part]
        depth += 1
    return depth, mark.line, mark.column


def _position(chunk: Chunk, line: int, column: int, *, exact: bool) -> Position:
    # Lines and columns are 0-based and count from the chunk's start (a JSON value's
    # first line from the start of its line in the file).
    return Position(chunk.line + line + 1, column + 1, exact)
