"""The `draguard` console command: dispatches to each package's own `main(argv)`.

Subcommand modules are imported lazily so that `draguard lint` never pays for
Flask or gunicorn, and `draguard serve` never parses YAML it does not need. The same
function is installed as `kubectl-draguard`, which kubectl runs for `kubectl draguard …`.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

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


def usage(prog: str = "draguard") -> str:
    lines = [f"usage: {prog} COMMAND [ARGS…]", f"       {prog} --version", "", "commands:"]
    width = max(len(name) for name in COMMANDS)
    for name, (_, summary) in COMMANDS.items():
        lines.append(f"  {name.ljust(width)}  {summary}")
    lines.append("")
    lines.append(f"Run `{prog} COMMAND --help` for a command's options.")
    return "\n".join(lines)


def version() -> str:
    """The installed distribution's version, as `pip show draguard` gives it."""
    import importlib.metadata  # only for --version: it costs every other command's start

    try:
        return importlib.metadata.version("draguard")
    except importlib.metadata.PackageNotFoundError:  # run from a bare source tree
        return "unknown"


def program_name() -> str:
    """`kubectl draguard` when kubectl started us as its plugin, else `draguard`."""
    invoked = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "kubectl draguard" if invoked == "kubectl-draguard" else "draguard"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a reader that goes away (`draguard … | head -1`) gives no traceback.

    Output written through `frame.write` (and argparse's help, which ignores write
    errors) stops quietly and the command's own exit code is kept; a command that the
    closed pipe stops part-way exits 141, what a shell reports for a tool ended by
    SIGPIPE (`yes | head`).

    Run from the command line (`argv` None), a command whose module sets
    `EXIT_WITHOUT_FREEING` ends the process here with `os._exit`, once stdout and
    stderr are flushed, with its exit code: what it built lives until exit anyway, and
    freeing it object by object only costs time (as mypy exits).
    """
    if sys.stdout is None:  # started with stdout closed (`draguard … >&-`)
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (lives until exit)
    keep: list[object] | None = [] if argv is None else None
    try:
        status = _dispatch(list(sys.argv[1:] if argv is None else argv), keep)
    except BrokenPipeError:
        _quiet()
        return 141
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet()
    if keep:
        _exit_now(status)
    return status


def _exit_now(status: int) -> NoReturn:
    """Flush what Python would flush at exit, then end without freeing anything."""
    for stream in (sys.stdout, sys.stderr):
        # A closed or gone reader: nothing more can be written anyway.
        with contextlib.suppress(OSError, AttributeError, ValueError):
            stream.flush()
    os._exit(status)


def _quiet() -> None:
    from draguard.schema.cli.frame import quiet  # loaded by then: `_dispatch` needs it

    quiet()


def _load(name: str, *, freeze: bool = False) -> ModuleType:
    """A module imported with the cycle collector paused.

    An import allocates many objects and keeps nearly all of them (modules, classes,
    functions, tables), so collections during it walk them for nothing. With `freeze`
    (a process of its own: the command line) they are also kept out of every later
    collection's sight (`gc.freeze`); not in a process that calls `main` again and
    again (tests), where it would keep pending garbage for good. The command itself
    runs with the collector as it was.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(name)
    finally:
        if collecting:
            if freeze:
                gc.freeze()
            gc.enable()


def _dispatch(args: list[str], keep: list[object] | None = None) -> int:
    write = _load("draguard.schema.cli.frame", freeze=keep is not None).write
    prog = program_name()
    if not args or args[0] in ("-h", "--help", "help"):
        write(sys.stdout, usage(prog) + "\n")
        return 0 if args else 2
    if args[0] in ("-V", "--version", "version"):
        write(sys.stdout, f"draguard {version()}\n")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"{prog}: unknown command {name!r}\n\n{usage(prog)}", file=sys.stderr)
        return 2
    module = _load(COMMANDS[name][0], freeze=keep is not None)
    if keep is not None and getattr(module, "EXIT_WITHOUT_FREEING", False):
        keep.append(module)  # a non-empty `keep`: main() ends the process itself
        fast: int = module.main(rest, keep=keep)
        return fast
    result: int = module.main(rest)
    return result


if __name__ == "__main__":
    sys.exit(main())
