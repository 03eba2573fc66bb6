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
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from draguard.schema.cli.fix import _write_atomically
from draguard.schema.convert import TARGETS, convert_document
from draguard.schema.options import Options
from draguard.schema.releases import DEFAULT_RELEASE, release
from draguard.schema.sources import STDIN, STDIN_NAME, Unreadable, expand_paths, read_source
from draguard.schema.yamledit import (
    apply,
    check_expansion,
    dump_documents,
    load_documents,
    to_plain,
)
from ruamel.yaml.error import YAMLError

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
    return parser


@dataclass
class FileResult:
    name: str
    text: str
    changed: bool
    refused: bool


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
        options = Options(release=release(args.kubernetes_version))
    except SystemExit as exc:
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    except ValueError as exc:
        print(f"draguard convert: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.in_place and STDIN in args.paths:
        print("draguard convert: --in-place cannot rewrite stdin", file=sys.stderr)
        return EXIT_USAGE
    status, results = EXIT_OK, []
    for path in expand_paths(args.paths):
        result = convert_file(path, args.to, options=options, allow_loss=args.allow_loss)
        if result is None:
            status = EXIT_USAGE
            continue
        results.append((path, result))
        if result.refused:
            status = max(status, EXIT_REFUSED)
    _emit(results, in_place=args.in_place)
    return status


def convert_file(
    path: str, target: str, *, options: Options, allow_loss: bool
) -> FileResult | None:
    """Convert the DRA documents of one file; None when it cannot be read (named on stderr)."""
    source = read_source(path)
    if isinstance(source, Unreadable):
        print(f"draguard convert: cannot read {source.name}: {source.reason}", file=sys.stderr)
        return None
    try:
        documents = load_documents(source.text)
        for document in documents:
            check_expansion(document, 10_000 + 10 * len(source.text))
    # Besides YAMLError: ruamel lets Python's ValueError (an integer over 4,300 digits)
    # and RecursionError (thousands of nesting levels) through; found by tests/hostile.
    except (YAMLError, ValueError, RecursionError) as exc:
        print(
            f"draguard convert: {source.name}: not valid YAML: {exc}".replace("\n", " "),
            file=sys.stderr,
        )
        return None
    changed = refused = False
    for number, document in enumerate(documents):
        outcome = _convert_one(source.name, number, document, target, options, allow_loss)
        if outcome is None:
            continue
        if outcome == "refused":
            refused = True
        else:
            documents[number] = outcome
            changed = True
    if source.format == "json" and len(documents) == 1:
        text = json.dumps(to_plain(documents[0]), indent=2, ensure_ascii=False) + "\n"
    else:
        text = dump_documents(documents) if changed else source.text
    return FileResult(source.name, text, changed, refused)


def _convert_one(
    name: str, number: int, document: Any, target: str, options: Options, allow_loss: bool
) -> Any:
    conversion = convert_document(to_plain(document), target, options=options)
    if not conversion.is_dra or conversion.document is None:
        return None
    if conversion.losses and not allow_loss:
        for loss in conversion.losses:
            print(f"{name}: document {number}: refused: {loss}", file=sys.stderr)
        return "refused"
    for loss in conversion.losses:
        print(f"{name}: document {number}: dropped: {loss}", file=sys.stderr)
    return apply(document, conversion.document)


def _emit(results: list[tuple[str, FileResult]], *, in_place: bool) -> None:
    if in_place:
        for path, result in results:
            if result.changed:
                _write_atomically(path, result.text)
        return
    several = len(results) > 1
    for _, result in results:
        if several:
            sys.stdout.write(f"# file: {STDIN_NAME if result.name == STDIN else result.name}\n")
        sys.stdout.write(
            result.text if result.text.endswith("\n") or not result.text else result.text + "\n"
        )
