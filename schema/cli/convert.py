"""`draguard convert --to v1|v1beta2|v1beta1|parallel|nested PATH…`.

Rewrites each DRA document into the target shape (`draguard.schema.convert`) and
leaves everything else as it was: other documents, comments, key order. Writes the
result to stdout (several files: each preceded by `# file: NAME`) or, with
`--in-place`, back to each file. A document the target cannot hold is refused and
named on stderr with every field, unless `--allow-loss`, which converts it and lists
what was dropped. Exit codes (`contract.md` §4): 0, 1 something not representable,
2 usage or unreadable input.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from draguard.schema.cli.fix import _write_atomically
from draguard.schema.cli.frame import (
    WORKER_DIED,
    add_feature_gates,
    add_jobs,
    parse_with_release,
    quiet,
)
from draguard.schema.convert import TARGETS, convert_document
from draguard.schema.model import pool
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.pool import WorkerDied
from draguard.schema.model.releases import DEFAULT_RELEASE, KINDS
from draguard.schema.read import templates
from draguard.schema.read.duplicates import Duplicate
from draguard.schema.read.jsondecode import loads_checked
from draguard.schema.read.sources import (
    STDIN,
    STDIN_NAME,
    Chunk,
    Parsed,
    Source,
    Unreadable,
    expand_paths,
    parse,
    read_source,
)
from draguard.schema.read.textedit import HEAD as _HEAD
from draguard.schema.read.textedit import Declined, edit_document, located, read, tail

EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="draguard convert", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or - for stdin")
    parser.add_argument("--to", required=True, choices=TARGETS, help="target version or layout")
    parser.add_argument(
        "--in-place", action="store_true", help="rewrite each file instead of printing"
    )
    parser.add_argument(
        "--allow-loss",
        action="store_true",
        help="convert documents the target cannot fully hold, listing what is dropped",
    )
    parser.add_argument(
        "--kubernetes-version",
        default=DEFAULT_RELEASE.name,
        help="the release whose defaults, gates and fields apply (default: %(default)s)",
    )
    add_feature_gates(parser)
    add_jobs(parser)
    return parser


@dataclass
class FileResult:
    name: str
    text: str
    changed: bool
    refused: bool


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    parsed = parse_with_release(parser, argv, "draguard convert")
    if isinstance(parsed, int):
        return parsed
    args, options = parsed
    if args.in_place and STDIN in args.paths:
        print("draguard convert: --in-place cannot rewrite stdin", file=sys.stderr)
        return EXIT_USAGE
    paths = list(expand_paths(args.paths))
    try:
        converted = convert_files(paths, args.to, options=options, allow_loss=args.allow_loss,
                                  keep_refused=args.in_place, jobs=args.jobs)
    except WorkerDied:  # a worker killed (out of memory, a crash in C code): nothing written
        print(f"draguard convert: {WORKER_DIED}", file=sys.stderr)
        return EXIT_USAGE
    status, results = EXIT_OK, []
    for path, result in zip(paths, converted, strict=True):
        if result is None:
            status = EXIT_USAGE
            continue
        results.append((path, result))
        if result.refused:
            status = max(status, EXIT_REFUSED)
    try:
        _emit(results, in_place=args.in_place)
        sys.stdout.flush()
    except BrokenPipeError:
        quiet()
    return status


def convert_file(
    path: str, target: str, *, options: Options, allow_loss: bool, keep_refused: bool = True
) -> FileResult | None:
    """`convert_files` of one file, in this process."""
    return convert_files([path], target, options=options, allow_loss=allow_loss,
                         keep_refused=keep_refused, jobs=1)[0]


def convert_files(
    paths: Sequence[str], target: str, *, options: Options, allow_loss: bool,
    keep_refused: bool = True, jobs: int | None = 1,
) -> list[FileResult | None]:
    """Convert the DRA documents of each file; None for a file that cannot be read
    (named on stderr). The documents of all files are converted in `jobs` processes
    (`pool.jobs_for`); what each says on stderr is said here, in the files' order.

    Only the text of a converted document is rewritten; everything between documents
    (markers, comment-only pieces, other documents) is copied byte for byte, so a
    file reads back exactly as before wherever nothing was converted. A refused
    document stays as it was with `keep_refused` (a file rewritten in place); without
    it (stdout) it is left out, a comment in its place, so that a pipe into kubectl
    does not apply it unconverted (issue 17).
    """
    sources = [read_source(path) for path in paths]
    found = [located(s) if isinstance(s, Source) else [] for s in sources]
    chunks = [chunk for pieces in found for chunk, _ in pieces]
    work = partial(_convert_batch, target, options, allow_loss)
    outcomes = pool.run(work, chunks, jobs=pool.jobs_for(jobs, len(chunks)))
    return [_assemble(source, pieces, [next(outcomes) for _ in pieces], keep_refused)
            for source, pieces in zip(sources, found, strict=True)]


class _Outcome(NamedTuple):
    """One document's conversion as a worker sends it back."""

    text: str | None  # its new text; None: left as it is
    refused: bool
    said: list[str]  # the lines for stderr
    paths: list[str]  # the `PATHS` keys it counts
    invalid: bool = False  # not valid YAML: the file cannot be converted


def _assemble(
    source: Source | Unreadable, pieces: list[tuple[Chunk, int]], outcomes: list[_Outcome],
    keep_refused: bool,
) -> FileResult | None:
    """One file's result from its documents' outcomes; what they say goes to stderr."""
    if isinstance(source, Unreadable):
        print(f"draguard convert: cannot read {source.name}: {source.reason}", file=sys.stderr)
        return None
    parts, done, changed, refused = [], 0, False, False
    for (chunk, start), outcome in zip(pieces, outcomes, strict=True):
        _say(outcome.said)
        PATHS.update(outcome.paths)
        if outcome.invalid:
            return None
        refused = refused or outcome.refused
        text = outcome.text
        if text is None and outcome.refused and not keep_refused:
            text = _left_out(chunk)
        if text is not None:
            parts += [source.text[done:start], text]
            done, changed = start + len(chunk.text), True
    parts.append(source.text[done:])
    return FileResult(source.name, "".join(parts), changed, refused)


def _convert_batch(
    target: str, options: Options, allow_loss: bool, chunks: Sequence[Chunk]
) -> list[_Outcome]:
    return [_convert_unit(chunk, target, options, allow_loss) for chunk in chunks]


def _convert_unit(chunk: Chunk, target: str, options: Options, allow_loss: bool) -> _Outcome:
    """One document converted (`_convert_chunk`), with all it says."""
    said: list[str] = []
    paths: list[str] = []
    placeholder = templates.find(chunk.text)
    if placeholder is not None:
        # Issue 17: not read, left as it is, named with its line (no exit 2).
        line = chunk.line + placeholder.line + 1
        said.append(f"{chunk.file}:{line}: document {chunk.index}: {placeholder.message}; "
                    "left as it is")
        return _Outcome(None, False, said, paths)
    try:
        text, refused = _convert_chunk(chunk, target, options, allow_loss, said, paths)
    except _Repeated as exc:  # refused whatever `--allow-loss` says (issue 17)
        said += [f"{chunk.file}: document {chunk.index}: refused: "
                 f"{FieldPath(duplicate.path)}: {duplicate.message(chunk.line)}"
                 for duplicate in exc.duplicates]
        return _Outcome(None, True, said, paths)
    except _round_trip_errors() as exc:
        said.append(f"draguard convert: {chunk.file}: not valid YAML: {exc}".replace("\n", " "))
        return _Outcome(None, False, said, paths, invalid=True)
    return _Outcome(text, refused, said, paths)


# The text starts with a `---` line, after blank, comment or directive lines.
_FIRST_MARKER = re.compile(r"(?:%[^\n]*\n|[ \t]*(?:#[^\n]*)?\n)*---(?:[ \t]|\n|\Z)")


def _convert_chunk(
    chunk: Chunk, target: str, options: Options, allow_loss: bool, said: list[str],
    paths: list[str],
) -> tuple[str | None, bool]:
    """The new text of one document (None: leave it as it is), and whether anything was refused."""
    if chunk.format == "json":
        from draguard.schema.read import yamledit  # ruamel: see `_round_trip_errors`

        document, duplicates = loads_checked(chunk.text)
        if duplicates and _checked_kind(document):
            raise _Repeated(duplicates)
        outcome, refused, notes = _convert_one(
            chunk.file, chunk.index, document, target, options, allow_loss
        )
        said += notes
        if outcome is None:
            return None, refused
        return json.dumps(yamledit.to_plain(outcome), indent=2, ensure_ascii=False), refused
    value = read(chunk.text)
    if value is None:  # lint's reader: a scalar YAML 1.1 reads apart, or a repeated key
        parsed = parse(chunk)
        if isinstance(parsed, Parsed) and not parsed.duplicates:
            value = parsed.value
    if value is not None:
        edited = _convert_text(chunk, value, target, options, allow_loss, said, paths)
        if edited is not None:
            return edited
    paths.append("ruamel")
    return _convert_round_trip(chunk, target, options, allow_loss, said)


# How many changed YAML documents took each path (the text edit or ruamel's round trip),
# and why the text path declined: counted for bench/convert.py.
PATHS: Counter[str] = Counter()


def _convert_text(
    chunk: Chunk, value: Any, target: str, options: Options, allow_loss: bool,
    said: list[str], paths: list[str],
) -> tuple[str | None, bool] | None:
    """The document converted by text edits at lint's reading of it (`textedit`); None
    when that path declines, and nothing was said yet (the round trip then says it)."""
    document = value
    items = value.get("items") if _kind(value) == "List" else None
    if isinstance(items, list):
        document = {**value, "items": list(items)}  # items are replaced, `value` kept
    outcome, refused, notes = _convert_one(
        chunk.file, chunk.index, document, target, options, allow_loss, node=False
    )
    if outcome is None:
        # Nothing to convert (another kind, or already in the target shape): the
        # document keeps its bytes; or refused: said here, and left as it is.
        said += notes
        return None, refused
    text = edit_document(chunk.text, value, outcome)
    if isinstance(text, Declined):
        paths.append(f"declined: {text.reason}")
        return None
    paths.append("text")
    said += notes
    return text, refused


def _say(notes: Sequence[str]) -> None:
    for note in notes:
        print(note, file=sys.stderr)


def _convert_round_trip(
    chunk: Chunk, target: str, options: Options, allow_loss: bool, said: list[str]
) -> tuple[str | None, bool]:
    """The document converted on ruamel's round-trip nodes, which keep comments anywhere."""
    from ruamel.yaml.constructor import DuplicateKeyError  # ruamel: see `_round_trip_errors`

    from draguard.schema.read import yamledit

    head = _HEAD.match(chunk.text)
    body_start = head.end() if head else 0
    found = tail(chunk.text, body_start)
    body_end = found.start() if found else len(chunk.text)
    try:
        documents = yamledit.load_documents(chunk.text[body_start:body_end])
    except DuplicateKeyError:
        # ruamel names the second key only: draguard's own reader has both places.
        parsed = parse(chunk)
        if not isinstance(parsed, Parsed) or not parsed.duplicates:
            raise
        if _checked_kind(parsed.value):
            raise _Repeated(list(parsed.duplicates)) from None
        return None, False  # not a claim: left as it is, as lint leaves it
    if len(documents) != 1:
        return None, False
    yamledit.check_expansion(documents[0], 10_000 + 10 * len(chunk.text))
    outcome, refused, notes = _convert_one(
        chunk.file, chunk.index, documents[0], target, options, allow_loss
    )
    said += notes
    if outcome is None:
        return None, refused
    before = chunk.text[:body_start]
    if not head and chunk.text.startswith("---"):
        before = "---\n"  # `--- {inline: document}`: the marker on a line of its own
    return before + yamledit.dump_documents([outcome]) + chunk.text[body_end:], refused


def _checked_kind(document: Any) -> bool:
    """A claim, a template or a list (which may hold them): what lint checks."""
    kind = _kind(document)
    return isinstance(kind, str) and (kind in KINDS or kind.endswith("List"))


class _Repeated(Exception):
    """A document with a key written twice: kubectl would send only the last value."""

    def __init__(self, duplicates: list[Duplicate]) -> None:
        super().__init__("duplicate keys")
        self.duplicates = duplicates


def _left_out(chunk: Chunk) -> str:
    """A refused document's place in stdout: its `---` line kept, a comment for the body."""
    head = _HEAD.match(chunk.text) if chunk.format == "yaml" else None
    before = chunk.text[: head.end()] if head else ""
    return f"{before}# draguard convert: document {chunk.index} refused (see stderr), not written\n"


def _convert_one(
    name: str, number: int, document: Any, target: str, options: Options, allow_loss: bool,
    *, node: bool = True,
) -> tuple[Any, bool, list[str]]:
    """The converted document (None: unchanged), whether something was refused, and the
    lines to say on stderr. With `node`, `document` is ruamel's and is edited in place
    (`yamledit.apply`); else it is plain and the converted values are plain too.

    The items of a `kind: List` (what `kubectl get -o yaml` prints for several objects)
    are converted one by one, as lint checks them; a refused item stays as it was.
    """
    items = document.get("items") if isinstance(document, dict) else None
    notes: list[str] = []
    if _kind(document) != "List" or not isinstance(items, list):
        outcome, refused = _convert_object(
            f"{name}: document {number}", document, target, options, allow_loss, notes, node
        )
        return outcome, refused, notes
    changed = refused = False
    for j, item in enumerate(items):
        where = f"{name}: document {number} item {j}"
        outcome, item_refused = _convert_object(
            where, item, target, options, allow_loss, notes, node
        )
        refused = refused or item_refused
        if outcome is not None:
            items[j], changed = outcome, True
    return (document if changed else None), refused, notes


def _kind(document: Any) -> Any:
    return document.get("kind") if isinstance(document, dict) else None


def _convert_object(
    where: str, node: Any, target: str, options: Options, allow_loss: bool,
    notes: list[str], round_trip: bool,
) -> tuple[Any, bool]:
    plain = node
    if round_trip:
        from draguard.schema.read import yamledit  # ruamel: see `_round_trip_errors`

        plain = yamledit.to_plain(node)
    conversion = convert_document(plain, target, options=options)
    if not conversion.is_dra or conversion.document is None:
        return None, False
    if conversion.losses and not (allow_loss and conversion.convertible):
        notes += [f"{where}: refused: {loss}" for loss in conversion.losses]
        return None, True
    notes += [f"{where}: dropped: {loss}" for loss in conversion.losses]
    if not round_trip:
        unchanged = not conversion.losses and conversion.document == node
        return (None if unchanged else conversion.document), False
    return yamledit.apply(node, conversion.document, yamledit.Donors(node)), False


def _round_trip_errors() -> tuple[type[Exception], ...]:
    """What reading a document may raise: ruamel's YAMLError, and Python's ValueError (an
    integer over 4,300 digits) and RecursionError (thousands of nesting levels), which
    ruamel lets through (found by tests/hostile).

    ruamel (and `yamledit`, built on it) is imported only when a document takes the
    round trip (the text path declined, or JSON): most runs never load it, and its
    import is a share of the command's start."""
    from ruamel.yaml.error import YAMLError

    return (YAMLError, ValueError, RecursionError)


def _emit(results: list[tuple[str, FileResult]], *, in_place: bool) -> None:
    if in_place:
        for path, result in results:
            if result.changed:
                _write_atomically(path, result.text)
        return
    several = len(results) > 1
    for k, (_, result) in enumerate(results):
        if several:
            # YAML tools read one stream: the files are its documents, `---` between them
            # (unless the file starts with its own marker), each named in a comment.
            separate = k > 0 and _FIRST_MARKER.match(result.text) is None
            name = STDIN_NAME if result.name == STDIN else result.name
            sys.stdout.write(("---\n" if separate else "") + f"# file: {name}\n")
        sys.stdout.write(
            result.text if result.text.endswith("\n") or not result.text else result.text + "\n"
        )
