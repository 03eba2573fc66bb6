"""The import contracts in pyproject.toml (`[tool.importlinter]`) hold: layering and no cycles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The console script installed beside this interpreter (the venv's bin/).
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_import_contracts_are_kept() -> None:
    """`lint-imports` exits 0: every layer imports only those below it, and nothing cycles."""
    assert LINT_IMPORTS.exists(), f"{LINT_IMPORTS} missing: install the test extra"
    done = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
