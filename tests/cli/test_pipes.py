"""A reader that goes away, or a closed stdout, never gives a traceback (`draguard … | head -1`).

The policy (webhook/cli/main.py): output that completes through the pipe-safe writer,
or argparse's help, keeps the command's exit code; a command the closed pipe stops
part-way exits 141, as a tool ended by SIGPIPE does. Real processes and real pipes:
the pipe's read end is closed before the command starts, so every write fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from draguard.webhook.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
DRAGUARD = str(Path(sys.executable).parent / "draguard")
CASES = str(ROOT / "tests" / "cases")


def run_into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `draguard ARGS` writing into a pipe nobody reads any more."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([DRAGUARD, *args], stdout=write_end, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, cwd=ROOT, check=False)
    finally:
        os.close(write_end)


def run_with_stdout_closed(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `draguard ARGS >&-`: file descriptor 1 is not open at all."""
    return subprocess.run([DRAGUARD, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, text=True, cwd=ROOT, check=False,
                          preexec_fn=lambda: os.close(1))


HELPS = [pytest.param(["--help"], id="draguard"), pytest.param(["--version"], id="version")] + [
    pytest.param([name, "--help"], id=name) for name in COMMANDS]


@pytest.mark.parametrize("args", HELPS)
def test_help_into_a_closed_pipe_exits_0_quietly(args: list[str]) -> None:
    """Help and version text into a pipe whose reader has gone: exit 0, nothing on stderr."""
    run = run_into_closed_pipe(*args)
    assert (run.returncode, run.stderr) == (0, "")


@pytest.mark.parametrize("args", HELPS)
def test_help_with_stdout_closed_exits_0_quietly(args: list[str]) -> None:
    """Help and version text with stdout closed (`>&-`): exit 0, nothing on stderr."""
    run = run_with_stdout_closed(*args)
    assert (run.returncode, run.stderr) == (0, "")


@pytest.mark.parametrize(("args", "status"), [
    pytest.param(["lint", CASES], 1, id="lint-keeps-its-findings-status"),
    pytest.param(["convert", "--to", "v1", CASES], 1, id="convert-keeps-its-refusals-status"),
    pytest.param(["skew", CASES], 1, id="skew"),
    pytest.param(["lint", "-o", "sarif", CASES], 1, id="lint-sarif"),
    pytest.param(["schema"], 141, id="schema-stopped-part-way"),
    pytest.param(["deploy", "render"], 141, id="deploy-stopped-part-way"),
])
def test_large_output_into_a_closed_pipe_gives_no_traceback(args: list[str], status: int) -> None:
    """Pages of output into a closed pipe: no traceback, and the exit code says what happened."""
    run = run_into_closed_pipe(*args)
    assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr
    assert run.returncode == status


def test_help_through_head_prints_one_line() -> None:
    """`draguard --help | head -1` prints the usage line and nothing else."""
    run = subprocess.run(["bash", "-c", f"'{DRAGUARD}' --help | head -1; echo $PIPESTATUS"],
                         capture_output=True, text=True, check=True)
    assert run.stdout == "usage: draguard COMMAND [ARGS…]\n0\n"
    assert run.stderr == ""
