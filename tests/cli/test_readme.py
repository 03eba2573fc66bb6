"""README drift check: its commands run as shown, its flags exist, its text stands alone."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from draguard.webhook.cli.main import COMMANDS, main
from draguard.webhook.config import build_parser as serve_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
# The part of the README about using the commands (the rest is about the rule set,
# the webhook's internals and benchmarks, each checked by its own tests).
USAGE = README[: README.index("## What is checked")]
BLOCK = re.compile(r"(?P<mark><!-- checked[^\n]*-->\n)?```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)
BIN = Path(sys.executable).parent


def blocks(text: str, *, checked: bool | None = None) -> list[str]:
    return [m["body"] for m in BLOCK.finditer(text)
            if m["lang"] in ("sh", "yaml") and (checked is None or bool(m["mark"]) == checked)]


def commands(body: str) -> list[str]:
    """The lines of a shell block, continuation lines joined."""
    return [line.strip() for line in body.replace("\\\n", " ").splitlines() if line.strip()]


def expected_exit(line: str) -> int:
    """The exit code a line's comment states (`# …: exit 1`); 0 when it states none."""
    comment = line.partition("  #")[2]
    found = re.search(r"\bexit (\d)\b", comment)
    return int(found[1]) if found else 0


CHECKED = [(n, line) for n, body in enumerate(blocks(USAGE, checked=True))
           for line in commands(body)]


def test_the_first_lines_serve_and_test() -> None:
    """The README opens with the serve command (no test tools) and CI's test command."""
    first = commands(blocks(README)[0])
    assert first[0] == (
        "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/draguard serve"
    )
    assert first[1] == (
        "python3 -m venv .venv && .venv/bin/pip install -q '.[test]' && .venv/bin/pytest"
    )


def test_checked_blocks_exist() -> None:
    """The first-five-minutes, lint and convert blocks are marked for running."""
    assert len(blocks(USAGE, checked=True)) >= 3
    assert len(CHECKED) >= 15


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a copy of examples/, where the commands run one after another."""
    folder = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "examples", folder / "examples")
    return folder


@pytest.mark.parametrize(("block", "line"), CHECKED, ids=[f"{n}:{x[:60]}" for n, x in CHECKED])
def test_checked_command_runs_as_shown(block: int, line: str, workdir: Path) -> None:
    """Each command of a checked block exits as its comment says, from a copy of examples/."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("DRAGUARD_STATE_DIR", None)
    run = subprocess.run(["bash", "-c", f"set -o pipefail; {line}"], cwd=workdir, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == expected_exit(line), run.stdout[-2000:] + run.stderr[-2000:]
    assert "Traceback" not in run.stderr


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    """`draguard COMMAND --help` in-process: the parser the installed command prints (the
    installed entry itself runs in test_checked_command_runs_as_shown)."""
    assert main([*command.split(), "--help"]) == 0
    return capsys.readouterr().out


def test_every_shown_flag_exists(capsys: pytest.CaptureFixture[str]) -> None:
    """Every `draguard COMMAND --flag` shown in the usage part is in that command's --help."""
    unknown = []
    helps: dict[str, str] = {}
    for body in blocks(USAGE):
        for line in commands(body):
            for part in re.split(r"[|;&]+|\$\(", line):
                words = shlex.split(part.partition("  #")[0].replace("run: ", ""))
                words = [w.removeprefix(".venv/bin/") for w in words]
                if "draguard" not in words:
                    continue
                rest = words[words.index("draguard") + 1:]
                if not rest or rest[0].startswith("-"):
                    continue
                name = " ".join(rest[:2]) if rest[0] in ("certs", "deploy") else rest[0]
                assert rest[0] in COMMANDS, line
                if name not in helps:
                    helps[name] = _help(name, capsys)
                text = helps[name]
                unknown += [f"{name} {w}" for w in rest if w.startswith("-") and w != "-"
                            and w.split("=")[0] not in text]
    assert unknown == []


def test_serve_synopsis_names_every_flag() -> None:
    """The README's `draguard serve` synopsis names every flag serve accepts."""
    synopsis = README[README.index("`draguard serve [--host"):]
    synopsis = synopsis[: synopsis.index("runs a Flask app")]
    flags = set(re.findall(r"--[a-z][a-z-]+", serve_parser().format_help())) - {"--help"}
    assert {flag for flag in flags if flag not in synopsis} == set()


@pytest.mark.parametrize("pattern", [r"shared/spec", r"upstream-rules", r"contract\.md",
                                     r"\bissue \d+", "§", r"mypyc"])
def test_usage_text_stands_alone(pattern: str) -> None:
    """The usage part names no internal spec file, spec section, issue or compiled build."""
    text = README[: README.index("## Benchmarks")]
    assert re.findall(pattern, text) == []
