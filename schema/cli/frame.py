"""What the commands share: a parser that raises on bad usage, writing to a pipe, patch levels."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from draguard.schema.model.options import Options
from draguard.schema.model.releases import ALPHA_GATES, Release, parse_feature_gates, release

FEATURE_GATES_HELP = ("kube style KEY=true|false,...: the DRA feature gates of the chosen "
                      "release as its kube-apiserver takes them, e.g. DRADerivedAttributes=true")


class UsageError(Exception):
    """Bad usage: the command prints it and exits 2."""


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so `main` stays callable in-process."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def parse_with_release(
    parser: argparse.ArgumentParser, argv: Sequence[str], prog: str
) -> tuple[argparse.Namespace, Options] | int:
    """Parse `argv` and its `--kubernetes-version`; an exit code instead on --help or bad usage.

    For the commands built on plain argparse (convert, roundtrip): argparse has printed
    the help or the usage error already; a bad version is printed here as `prog: …`.
    """
    try:
        args = parser.parse_args(list(argv))
        chosen, gates = release_with_gates(args.kubernetes_version, args.feature_gates)
        return args, Options(release=chosen, feature_gates=gates)
    except UsageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2


def add_feature_gates(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`--feature-gates`, beside `--kubernetes-version` on every command that has it."""
    parser.add_argument("--feature-gates", default="", metavar="KEY=VALUE,...",
                        help=FEATURE_GATES_HELP)


def release_with_gates(version: str, gates_text: str) -> tuple[Release, frozenset[str]]:
    """The release `--kubernetes-version` names, with `--feature-gates` applied, and the
    alpha gates turned on (`Options.feature_gates`); UsageError naming the version or
    the gate otherwise (`Release.with_gates` words a refused gate as kube-apiserver)."""
    try:
        chosen = release(version)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    values = parse_feature_gates(gates_text)
    if isinstance(values, str):
        raise UsageError(f"--feature-gates: {values}")
    applied = chosen.with_gates(values)
    if isinstance(applied, str):
        raise UsageError(f"--feature-gates: {applied}")
    alpha = set(ALPHA_GATES.values())
    return applied, frozenset(gate for gate, on in values.items() if on and gate in alpha)


def parse_patch(version: str) -> int | None:
    """The patch level of `1.35.2` (release notes name patch ranges); None for `1.35`."""
    parts = version.strip().lstrip("v").split(".")
    return int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None


def write(stream: TextIO, text: str) -> None:
    """Write text whatever the terminal's encoding (file names and values may be any text)."""
    try:
        try:
            stream.write(text)
        except UnicodeEncodeError:
            encoding = getattr(stream, "encoding", None) or "ascii"
            stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
        stream.flush()
    except BrokenPipeError:
        quiet(stream)


def quiet(stream: TextIO | None = None) -> None:
    """The reader went away (`draguard lint … | head`): stop quietly, exit code kept.

    The stream (stdout by default) is pointed at /dev/null so that later writes and
    Python's flush at exit do not complain either.
    """
    target = sys.stdout if stream is None else stream
    with contextlib.suppress(AttributeError, OSError, ValueError, io.UnsupportedOperation):
        os.dup2(os.open(os.devnull, os.O_WRONLY), target.fileno())


WORKER_DIED = "a worker process died; try again without --jobs"
"""What a command with `--jobs` says when `pool.WorkerDied` (killed, out of memory, a crash
in C code, or no process could start), after its own name."""


def add_jobs(parser: argparse.ArgumentParser) -> None:
    """`-j/--jobs` as `draguard lint` has it (`pool.jobs_for` reads it)."""
    from draguard.schema.model.pool import AUTO_DOCUMENTS

    parser.add_argument("-j", "--jobs", type=int, default=None,
                        help="processes to use (0: one per core; default: one per core "
                             f"for {AUTO_DOCUMENTS:,} documents or more, else 1)")
