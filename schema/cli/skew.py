"""`draguard skew PATH… [--from 1.33] [--to 1.39] [--output text|json]`.

Per DRA document and Kubernetes release: served or not, fields dropped while their
gate is off by default, that release's verdict, and the changed meaning in words
Exit 0 when every release in the range accepts the document as
written, 1 when any rejects or changes it, 2 for usage or unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from draguard.schema.cli.documents import DocumentReader
from draguard.schema.cli.frame import quiet
from draguard.schema.model.errors import FieldError
from draguard.schema.model.releases import NEWEST, OLDEST, RELEASES, Release
from draguard.schema.read.sources import STDIN_NAME
from draguard.schema.skew import ReleaseView, releases_between, skew_advice, skew_document

EXIT_OK, EXIT_CHANGED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="draguard skew", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or - for stdin")
    parser.add_argument("--from", dest="first", default=f"1.{OLDEST}", choices=list(RELEASES),
                        metavar="RELEASE",
                        help="oldest Kubernetes release to show (default %(default)s)")
    parser.add_argument("--to", dest="last", default="1.39", choices=list(RELEASES),
                        metavar="RELEASE",
                        help="newest Kubernetes release to show (default %(default)s); "
                             f"releases known: {', '.join(RELEASES)}")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text",
                        help="text table (default) or one JSON object for other tools")
    return parser


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
        releases = releases_between(args.first, args.last)
    except SystemExit as exc:
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    except ValueError as exc:
        print(f"draguard skew: {exc}", file=sys.stderr)
        return EXIT_USAGE
    results, status = [], EXIT_OK
    reader = DocumentReader("draguard skew")
    for chunk, obj in reader.documents(args.paths):
        views = skew_document(obj, releases)
        if views is None:
            continue
        results.append(_result(chunk.file, chunk.index, obj, views, releases))
        if status == EXIT_OK and not all(v.fine for v in views):
            status = EXIT_CHANGED
    if reader.failed:
        status = EXIT_USAGE
    if reader.summary() is not None:
        print(reader.summary(), file=sys.stderr)
    text = json.dumps({"results": results}, indent=2) if args.output == "json" else render_text(
        results
    )
    try:
        print(text, flush=True)
    except BrokenPipeError:  # `draguard skew … | head`: the exit code still tells
        quiet()
    return status


def _result(
    file: str, index: int, obj: dict[str, Any], views: list[ReleaseView], releases: list[Release]
) -> dict[str, Any]:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return {
        "file": STDIN_NAME if file == "-" else file,
        "document": index,
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": meta.get("name") if isinstance(meta, dict) else None,
        "releases": [_view_json(v) for v in views],
        "warnings": [
            {"field": item.field, "code": item.code, "message": item.message}
            # Over the releases shown: each one's version-skew window (issue 17).
            for item in skew_advice(obj, releases)
        ],
    }


def _view_json(view: ReleaseView) -> dict[str, Any]:
    out: dict[str, Any] = {
        "version": view.version,
        "served": view.served,
        "dropped": [str(p) for p in view.dropped],
        "verdict": view.verdict,
        "errors": [_error_json(e) for e in view.errors],
        "explanation": view.explanation,
    }
    out["notes"] = list(view.notes)  # always present, empty when none apply
    if not view.served:
        out["if_enabled"] = (
            None
            if view.if_enabled is None
            else {
                "dropped": [str(p) for p in view.if_enabled.dropped],
                "verdict": view.if_enabled.verdict,
                "errors": [_error_json(e) for e in view.if_enabled.errors],
            }
        )
    return out


def _error_json(err: FieldError) -> dict[str, Any]:
    return {"field": err.field, "type": err.type.value, "message": err.message}


# Column widths of the text table: the longest value of each column, plus two spaces.
_COLUMNS = (("release", 9), ("served", 8), ("verdict", 10), ("if enabled", 12))


def render_text(results: list[dict[str, Any]]) -> str:
    """One table per document: release, served, verdict, the verdict if enabled, words."""
    lines: list[str] = []
    for result in results:
        lines.append(
            f"{result['file']} document {result['document']}: {result['kind']} {result['name']} "
            f"({result['apiVersion']})"
        )
        lines.append(_row([name for name, _ in _COLUMNS], "explanation"))
        for view in result["releases"]:
            lines.append(_row(_cells(view), view["explanation"]))
            indent = "  " + " " * sum(width for _, width in _COLUMNS)
            lines.extend(f"{indent}note: {note}" for note in view["notes"])
        for warn in result["warnings"]:
            lines.append(f"  {warn['field']}: warning {warn['code']}: {warn['message']}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") if lines else "no DRA claims or templates found"


def _cells(view: dict[str, Any]) -> list[str]:
    """`if enabled` is the verdict with the beta API switched on; `-` where no such API exists."""
    enabled = ""
    if not view["served"]:
        enabled = view["if_enabled"]["verdict"] if view["if_enabled"] is not None else "-"
    return [view["version"], "yes" if view["served"] else "no", view["verdict"], enabled]


def _row(cells: list[str], explanation: str) -> str:
    text = "".join(cell.ljust(width) for cell, (_, width) in zip(cells, _COLUMNS, strict=True))
    return f"  {text}{explanation}".rstrip()


__all__ = ["NEWEST", "main", "render_text"]
