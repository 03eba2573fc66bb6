"""`draguard fix PATH…`: rewrite fixable warnings in place, keeping comments and layout.

Today one warning is fixable: `config-names-parent`. A `config[].requests` entry naming
a prioritized parent becomes the explicit `parent/sub` list, which the allocator treats
the same and every driver understands — but only when the result stays within
upstream's 32 references. A second run changes nothing.

Exit codes are about what `fix` rewrites, so that it can gate CI and run as a
pre-commit hook: 0 nothing (left) to rewrite; 1 a rewrite is pending (`--dry-run`) or
cannot be made (over 32 references); 2 usage or unreadable input. Warnings that no
rewrite can fix (such as `quota-charge`) are `draguard lint`'s: there
`--fail-on-warning` makes them fail a build.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from draguard.schema.advice.claims import config_reference_rewrites
from draguard.schema.cli.frame import WORKER_DIED, add_jobs
from draguard.schema.model import pool
from draguard.schema.model.shapes import identify
from draguard.schema.read import sources
from draguard.schema.read.textedit import Declined, edit_document, located, read

EXIT_OK, EXIT_LEFT, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="draguard fix",
        description=__doc__.splitlines()[0],
        epilog="exit codes: 0 nothing left to rewrite, 1 a rewrite pending (--dry-run) or "
        "impossible, 2 usage or unreadable input",
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="files or folders to rewrite in place"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="say what would change, write nothing; exit 1 when something would",
    )
    add_jobs(parser)
    return parser


def main(argv: Sequence[str]) -> int:
    try:
        args = build_parser().parse_args(list(argv))
    except SystemExit as exc:
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    try:
        return fix_files(list(sources.expand_paths(args.paths)), dry_run=args.dry_run,
                         jobs=args.jobs)
    except pool.WorkerDied:  # a worker killed (out of memory, a crash in C): nothing written
        print(f"draguard fix: {WORKER_DIED}", file=sys.stderr)
        return EXIT_USAGE


def fix_files(paths: Sequence[str], *, dry_run: bool = False, jobs: int | None = 1) -> int:
    """`fix_file` of each path, in order; their exit code. The documents of all files are
    read and edited in `jobs` processes (`pool.jobs_for`) before any file is written."""
    loaded = [None if path == sources.STDIN else sources.read_source(path) for path in paths]
    found = [located(s) if isinstance(s, sources.Source) else [] for s in loaded]
    chunks = [chunk for pieces in found for chunk, _ in pieces]
    # All done before the first file is written: a worker that dies leaves every file as it was.
    edits = iter(list(pool.run(_fix_batch, chunks, jobs=pool.jobs_for(jobs, len(chunks)))))
    status = EXIT_OK
    for path, source, pieces in zip(paths, loaded, found, strict=True):
        outcomes = [next(edits) for _ in pieces]
        if source is None:
            print("draguard fix: stdin cannot be rewritten in place; name a file", file=sys.stderr)
            status = EXIT_USAGE
            continue
        status = max(status, _fix_source(path, source, pieces, outcomes, dry_run=dry_run))
    return status


def fix_file(path: str, *, dry_run: bool = False) -> int:
    """Rewrite one file; print each change as `file: field: old → new`; return its exit code."""
    return fix_files([path], dry_run=dry_run)


def _fix_source(
    path: str, source: sources.Source | sources.Unreadable, pieces: list[tuple[sources.Chunk, int]],
    outcomes: list[_Edit | None], *, dry_run: bool,
) -> int:
    if isinstance(source, sources.Unreadable):
        print(f"draguard fix: {source.name}: {source.reason}", file=sys.stderr)
        return EXIT_USAGE
    by_text = _fix_by_text(source, pieces, outcomes)
    if by_text is not None:
        text, rewrites = by_text
        return _report(path, text, rewrites, dry_run=dry_run)
    # ruamel only for a file the text path declined: its import is a share of the start.
    from ruamel.yaml.error import YAMLError

    from draguard.schema.read.yamledit import dump_documents, load_documents

    try:
        documents = load_documents(source.text)
    except YAMLError as exc:
        print(
            f"draguard fix: {path}: not valid YAML, left unchanged: {exc}".replace("\n", " "),
            file=sys.stderr,
        )
        return EXIT_USAGE
    rewrites = [
        (number, field, old, new, fits)
        for number, document in enumerate(documents)
        for field, old, new, fits in _fix_document(document)
    ]
    text = dump_documents(documents) if any(r[4] for r in rewrites) else None
    return _report(path, text, rewrites, dry_run=dry_run)


_Rewrite = tuple[int, str, list[str], list[str], bool]
"""A document's number, the field, the old and the new list, and whether the new fits."""

_Edit = tuple[list[_Rewrite], str | None]
"""A document's rewrites and its new text (None: unchanged), as a worker sends them."""

# A `---` line: between documents, it may open one that holds only comments (which the
# round-trip reader counts and `split_documents` does not).
_MARKER_LINE = re.compile(r"^---(?:[ \t]|$)", re.M)


def _fix_by_text(
    source: sources.Source, pieces: list[tuple[sources.Chunk, int]],
    outcomes: list[_Edit | None],
) -> tuple[str | None, list[_Rewrite]] | None:
    """The file's new text (None: nothing to write) and its rewrites, edited as text at
    lint's reading of each document (`_fix_chunk`); None when the text path cannot be
    sure of some document (then the whole file takes the round-trip way, as before).
    A file with nothing to fix (most files, on a second run always) is left without
    ruamel reading it, which is most of fix's time.
    """
    parts, done, previous_end, rewrites = [], 0, 0, []
    for (chunk, start), outcome in zip(pieces, outcomes, strict=True):
        if _MARKER_LINE.search(source.text, previous_end, start):
            return None  # a document of comments only: numbered apart by ruamel
        previous_end = start + len(chunk.text)
        if outcome is None:
            return None
        found, text = outcome
        rewrites += found
        if text is not None:
            parts += [source.text[done:start], text]
            done = previous_end
    if not parts:
        return None, rewrites
    return "".join([*parts, source.text[done:]]), rewrites


def _fix_batch(chunks: Sequence[sources.Chunk]) -> list[_Edit | None]:
    return [_fix_chunk(chunk) for chunk in chunks]


def _fix_chunk(chunk: sources.Chunk) -> _Edit | None:
    """One document's rewrites and new text by text edits; None when the text path
    cannot be sure of it."""
    value = read(chunk.text) if chunk.format == "yaml" else None
    if value is None:
        parsed = sources.parse(chunk)
        if not isinstance(parsed, sources.Parsed) or parsed.duplicates:
            return None
        value = parsed.value
    devices = _devices(value)
    found = config_reference_rewrites(devices) if devices is not None else []
    if devices is None or not found:
        return [], None
    if chunk.format != "yaml":
        return None
    rewrites: list[_Rewrite] = []
    new_config = list(devices["config"])  # what changes is copied, not the rest
    for rewrite in found:
        rewrites.append((chunk.index, f"{_prefix(value)}.devices.config[{rewrite.index}]"
                         ".requests", list(rewrite.old), list(rewrite.new), rewrite.fits))
        if rewrite.fits:
            new_config[rewrite.index] = {**new_config[rewrite.index],
                                         "requests": list(rewrite.new)}
    new = _with_devices(value, {**devices, "config": new_config})
    if new == value:
        return rewrites, None
    text = edit_document(chunk.text, value, new)
    if isinstance(text, Declined):
        return None
    return rewrites, text


def _report(path: str, text: str | None, rewrites: list[_Rewrite], *, dry_run: bool) -> int:
    """Say each rewrite (`file: document N: field: old → new`), write the file; the exit code."""
    changed = unfixable = False
    for number, field, old, new, fits in rewrites:
        if fits:
            print(f"{path}: document {number}: {field}: {old} → {new}")
            changed = True
        else:
            print(
                f"{path}: document {number}: {field}: not fixable: naming every alternative needs "
                f"{len(new)} entries, over upstream's 32",
                file=sys.stderr,
            )
            unfixable = True
    if changed and dry_run:
        print(f"draguard fix: {path}: not written (--dry-run)", file=sys.stderr)
    elif changed and text is not None:
        _write_atomically(path, text)
    return EXIT_LEFT if unfixable or (changed and dry_run) else EXIT_OK


def _devices(document: Any) -> dict[str, Any] | None:
    """`spec.devices` (`spec.spec.devices` in a template) of a plain DRA document."""
    doc_type = identify(document) if isinstance(document, dict) else None
    if doc_type is None:
        return None
    spec = document.get("spec")
    if doc_type.kind == "ResourceClaimTemplate":
        spec = spec.get("spec") if isinstance(spec, dict) else None
    devices = spec.get("devices") if isinstance(spec, dict) else None
    return devices if isinstance(devices, dict) else None


def _with_devices(document: dict[str, Any], devices: dict[str, Any]) -> dict[str, Any]:
    """A copy of `document` (of what leads to `spec.devices` only) holding `devices`."""
    spec = document["spec"]
    if _prefix(document) == "spec.spec":
        return {**document, "spec": {**spec, "spec": {**spec["spec"], "devices": devices}}}
    return {**document, "spec": {**spec, "devices": devices}}


def _prefix(document: dict[str, Any]) -> str:
    """Where `spec.devices` sits: under `spec.spec` in a template."""
    doc_type = identify(document)
    return "spec.spec" if doc_type is not None and doc_type.kind == "ResourceClaimTemplate" \
        else "spec"


def _fix_document(document: Any) -> list[tuple[str, list[str], list[str], bool]]:
    from draguard.schema.read.yamledit import to_plain  # ruamel: see `fix_file`

    doc_type = identify(to_plain(document)) if isinstance(document, dict) else None
    if doc_type is None:
        return []
    spec, prefix = document.get("spec"), "spec"
    if doc_type.kind == "ResourceClaimTemplate":
        spec, prefix = (spec.get("spec") if isinstance(spec, dict) else None), "spec.spec"
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if not isinstance(devices, dict):
        return []
    results = []
    for rewrite in config_reference_rewrites(to_plain(devices)):
        field = f"{prefix}.devices.config[{rewrite.index}].requests"
        results.append((field, list(rewrite.old), list(rewrite.new), rewrite.fits))
        if rewrite.fits:
            _replace_list(devices["config"][rewrite.index], "requests", list(rewrite.new))
    return results


def _replace_list(config: Any, key: str, values: list[str]) -> None:
    """Replace the list's items in place, so its flow or block style and comments stay."""
    from ruamel.yaml.comments import CommentedSeq  # see `fix_file`

    current = config[key]
    if isinstance(current, CommentedSeq):
        current[:] = values
    else:
        config[key] = values


def _write_atomically(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".draguard-fix-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
