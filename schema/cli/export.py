"""`draguard schema`: write the JSON Schemas (draft 2020-12) per kind and version.

With `--out DIR` each schema becomes a file named as kubeconform looks for it
(`resourceclaim-resource-v1.json`, see `draguard.schema.export`) and the paths are
printed; without it one JSON object `{file name: schema}` goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from draguard.schema.cli.frame import UsageError, add_feature_gates, release_with_gates
from draguard.schema.export import export_schemas, write_schemas
from draguard.schema.model.releases import DEFAULT_RELEASE, Release, release

EPILOG = """\
kubeconform (ours first: it uses the first location that has a schema):
  kubeconform -schema-location 'DIR/{{ .ResourceKind }}{{ .KindSuffix }}.json' \\
    -schema-location default claim.yaml
parallel shape (draguard only):
  kubeconform -schema-location 'DIR/{{ .ResourceKind }}{{ .KindSuffix }}-parallel.json' …
See docs/schema.md for what the schemas check and what stays in `draguard lint`.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="draguard schema",
        description="Write JSON Schemas (draft 2020-12) for ResourceClaim and "
        "ResourceClaimTemplate in every resource.k8s.io version of a release.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="write one file per schema into DIR"
    )
    parser.add_argument(
        "--kubernetes-version",
        type=_release,
        default=DEFAULT_RELEASE,
        metavar="1.X",
        help="the release whose fields and gate defaults to encode "
        f"(default {DEFAULT_RELEASE.name})",
    )
    add_feature_gates(parser)
    parser.add_argument(
        "--no-parallel", action="store_true", help="leave out the parallel-shape schemas"
    )
    return parser


def _release(text: str) -> Release:
    try:
        return release(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exit_:
        # argparse exits 0 for --help and 2 for usage errors; keep those codes.
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        chosen, _ = release_with_gates(args.kubernetes_version.name, args.feature_gates)
    except UsageError as exc:
        print(f"draguard schema: {exc}", file=sys.stderr)
        return 2
    parallel = not args.no_parallel
    if args.out is None:
        schemas = export_schemas(chosen, parallel=parallel)
        sys.stdout.write(json.dumps(schemas, indent=2, ensure_ascii=False) + "\n")
        return 0
    try:
        written = write_schemas(args.out, chosen, parallel=parallel)
    except OSError as err:
        print(f"draguard schema: cannot write to {args.out}: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0
