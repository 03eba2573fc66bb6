"""`draguard roundtrip PATH…`: prove that every conversion there and back keeps the meaning.

For every DRA document and every ordered pair of shapes (v1, v1beta2, v1beta1,
parallel) the document is taken to the first shape, through the second and back,
and compared on meaning (`draguard.schema.roundtrip`). Prints a table per document;
exit 0 lossless, 1 differences (each named by field), 2 usage or unreadable input.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from draguard.schema.cli.documents import DocumentReader, Read, pieces, read_piece
from draguard.schema.cli.frame import (
    WORKER_DIED,
    add_feature_gates,
    add_jobs,
    parse_with_release,
    quiet,
)
from draguard.schema.model import pool
from draguard.schema.model.options import Options
from draguard.schema.model.releases import DEFAULT_RELEASE
from draguard.schema.read.sources import Chunk, Unreadable
from draguard.schema.roundtrip import SHAPES, Trip, round_trips

EXIT_OK, EXIT_DIFFERENT, EXIT_USAGE = 0, 1, 2


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="draguard roundtrip",
        description=__doc__.splitlines()[0],
        epilog="exit codes: 0 lossless, 1 differences or refusals, 2 usage or unreadable input",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="files, folders (*.yaml *.yml *.json, recursively) or - for stdin")
    parser.add_argument("--kubernetes-version", default=DEFAULT_RELEASE.name, metavar="VERSION",
                        help="convert as this release does, e.g. 1.34 (default %(default)s)")
    add_feature_gates(parser)
    add_jobs(parser)
    parsed = parse_with_release(parser, argv, "draguard roundtrip")
    if isinstance(parsed, int):
        return parsed
    args, options = parsed
    status = EXIT_OK
    reader = DocumentReader("draguard roundtrip")
    # The documents are read and their trips made in `--jobs` processes (`pool.run`);
    # what each says and its tables are printed here, in the inputs' order.
    found = list(pieces(args.paths))
    try:
        done = pool.run(partial(_trips, reader.prog, options), found,
                        jobs=pool.jobs_for(args.jobs, len(found)))
        for read, tables in done:
            reader.take(read)
            for text, lossless in tables:
                _say(text)
                if not lossless and status == EXIT_OK:
                    status = EXIT_DIFFERENT
    except pool.WorkerDied:  # a worker killed (out of memory, a crash in C code)
        print(f"draguard roundtrip: {WORKER_DIED}", file=sys.stderr)
        return EXIT_USAGE
    if reader.summary() is not None:
        print(reader.summary(), file=sys.stderr)
    if reader.failed:
        return EXIT_USAGE
    return status


def _trips(
    prog: str, options: Options, found: Sequence[Chunk | Unreadable]
) -> list[tuple[Read, list[tuple[str, bool]]]]:
    """Each piece read (its value left out: it stays in the worker) and the table of each
    DRA object in it, with whether every trip was lossless."""
    out: list[tuple[Read, list[tuple[str, bool]]]] = []
    for piece in found:
        read = read_piece(prog, piece)
        tables = []
        if read.usable and isinstance(piece, Chunk):
            for title, item in _objects(f"{piece.file} document {piece.index}", read.value):
                trips = round_trips(item, options=options)
                if trips is not None:
                    tables.append((render_table(title, trips), all(t.lossless for t in trips)))
        out.append((replace(read, value=None), tables))
    return out


def _say(text: str) -> None:
    """Print; when the reader went away (`| head`) go on quietly so the exit code stays right."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        quiet()


def _objects(title: str, obj: Any) -> list[tuple[str, Any]]:
    """The document, or the items of a `kind: List` (what `kubectl get -o yaml` prints)."""
    items = obj.get("items") if isinstance(obj, dict) and obj.get("kind") == "List" else None
    if not isinstance(items, list):
        return [(title, obj)]
    return [(f"{title} item {j}", item) for j, item in enumerate(items)]


def render_table(title: str, trips: list[Trip]) -> str:
    """A start × via grid of ok/DIFF/refused, then every difference by field."""
    by_pair = {(t.start, t.via): t for t in trips}
    width, first = max(len(s) for s in SHAPES) + 2, 16
    lines = [
        title,
        "  start \\ via".ljust(first) + "".join(s.ljust(width) for s in SHAPES).rstrip(),
    ]
    for start in SHAPES:
        cells = []
        for via in SHAPES:
            trip = by_pair.get((start, via))
            cells.append(
                (
                    "-"
                    if trip is None
                    else "ok"
                    if trip.lossless
                    else "refused"
                    if trip.refused
                    else "DIFF"
                ).ljust(width)
            )
        lines.append((f"  {start}".ljust(first) + "".join(cells)).rstrip())
    lines.extend(_refusals(trips))
    for trip in trips:
        for change in trip.differences:
            lines.append(f"  {trip.start} → {trip.via} → {trip.start}: {change}")
    return "\n".join(lines)


# A refusal starts with the leg that failed ("cannot reach v1: ", "parallel → v1: "); the
# reason after it is what repeats from trip to trip.
_TARGET = re.compile(r"^(cannot reach \S+|\S+ → \S+): ")


def _refusals(trips: list[Trip]) -> list[str]:
    """Each distinct refusal once, with the trip it stopped or how many (the grid shows which)."""
    by_reason: dict[str, list[Trip]] = {}
    for trip in trips:
        if trip.refused:
            by_reason.setdefault(_TARGET.sub("", trip.refused), []).append(trip)
    lines = []
    for reason, refused in by_reason.items():
        if len(refused) == 1:
            (trip,) = refused
            lines.append(f"  {trip.start} → {trip.via} → {trip.start}: refused: {trip.refused}")
        else:
            lines.append(f"  refused ({len(refused)} trips): {reason}")
    return lines
