"""User-facing text stands alone: no pointers to the project's internal specs or issues."""

from __future__ import annotations

import io
import re

import pytest

from draguard.schema.cli import lint
from draguard.webhook.cli.main import COMMANDS, main

# What a user of the installed command does not have: the design notes and the tracker.
INTERNAL = re.compile(r"upstream-rules|contract\.md|shared/spec|§|\bissue \d+", re.IGNORECASE)


SUBCOMMANDS = [f"certs {name}" for name in ("init", "renew", "check", "bundle", "publish")]


@pytest.mark.parametrize("command", [*sorted(COMMANDS), *SUBCOMMANDS, "deploy render"])
def test_help_cites_nothing_internal(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`draguard COMMAND --help` names no spec section, spec file or issue number."""
    assert main([*command.split(), "--help"]) == 0
    out = capsys.readouterr().out
    assert out.strip()
    assert INTERNAL.findall(out) == []


def test_verbose_lint_cites_nothing_internal() -> None:
    """`lint --verbose` explains a skipped check in words of its own."""
    err = io.StringIO()
    lint.main(["--verbose", "-"], stdin=io.BytesIO(b""), stdout=io.StringIO(), stderr=err)
    assert "admin-access namespace check skipped" in err.getvalue()
    assert INTERNAL.findall(err.getvalue()) == []
