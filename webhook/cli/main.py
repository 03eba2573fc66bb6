"""The `draguard` console command: dispatches to each package's own `main(argv)`.

Subcommand modules are imported lazily so that `draguard lint` never pays for
Flask or gunicorn, and `draguard serve` never parses YAML it does not need.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

COMMANDS: dict[str, tuple[str, str]] = {
    "lint": ("draguard.schema.cli.lint", "validate DRA claims and templates like the apiserver"),
    "convert": ("draguard.schema.cli.convert", "convert claims between v1beta1, v1beta2, v1, parallel, nested"),
    "roundtrip": ("draguard.schema.cli.roundtrip", "prove that conversions there and back lose nothing"),
    "skew": ("draguard.schema.cli.skew", "what each Kubernetes release does with a claim"),
    "explain": ("draguard.schema.cli.explain", "which alternative each node would give a Pod, and why"),
    "fix": ("draguard.schema.cli.fix", "rewrite fixable warnings in place"),
    "schema": ("draguard.schema.cli.export", "write JSON Schemas per kind and version"),
    "certs": ("draguard.certs.cli", "CA and serving certificates for the webhook"),
    "serve": ("draguard.webhook.cli.serve", "run the admission webhook over TLS"),
    "deploy": ("draguard.deploy.cli", "render the cluster manifests"),
}


def usage() -> str:
    lines = ["usage: draguard COMMAND [ARGS…]", "", "commands:"]
    width = max(len(name) for name in COMMANDS)
    for name, (_, summary) in COMMANDS.items():
        lines.append(f"  {name.ljust(width)}  {summary}")
    lines.append("")
    lines.append("Run `draguard COMMAND --help` for a command's options.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"draguard: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    result: int = module.main(rest)
    return result


if __name__ == "__main__":
    sys.exit(main())
