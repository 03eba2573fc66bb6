"""The `draguard` dispatcher: --version, the command table, the kubectl plugin name."""

from __future__ import annotations

import importlib
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from draguard.webhook.cli.main import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_installed_version(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`draguard --version` prints the distribution's version and exits 0."""
    assert main([flag]) == 0
    assert capsys.readouterr().out == f"draguard {importlib.metadata.version('draguard')}\n"


def test_every_command_module_imports() -> None:
    """Each entry of the command table names a module with a `main`."""
    for name, (module, _) in COMMANDS.items():
        assert callable(importlib.import_module(module).main), name


def test_usage_names_kubectl_draguard_when_run_as_the_plugin(tmp_path: Path) -> None:
    """Started as `kubectl-draguard`, the usage text says `kubectl draguard`."""
    script = Path(sys.executable).parent / "kubectl-draguard"
    assert script.is_file(), "the kubectl-draguard console script is installed"
    run = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True)
    assert run.stdout.startswith("usage: kubectl draguard COMMAND")


def test_license_file_matches_the_declared_license() -> None:
    """pyproject declares Apache-2.0, and the LICENSE file is that licence's text."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'license = "Apache-2.0"' in pyproject
    assert "Apache License\n                           Version 2.0, January 2004" in (
        ROOT / "LICENSE"
    ).read_text()
