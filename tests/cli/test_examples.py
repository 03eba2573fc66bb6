"""The claims in examples/ lint as each one's `# expect:` line says (README "first five minutes")."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from draguard.schema.cli import lint

CLAIMS = Path(__file__).resolve().parents[2] / "examples" / "claims"


def expectations(path: Path) -> list[str]:
    return [line.removeprefix("# expect:").strip() for line in path.read_text().splitlines()
            if line.startswith("# expect:")]


def lint_json(path: Path) -> tuple[int, Any]:
    out = io.StringIO()
    code = lint.main(["-o", "json", str(path)], stdout=out, stderr=io.StringIO())
    (result,) = json.loads(out.getvalue())["results"]
    return code, result


def test_there_are_valid_and_mistaken_examples() -> None:
    """examples/claims has valid claims and at least four common mistakes."""
    names = [p.name for p in CLAIMS.glob("*.yaml")]
    assert sum(n.startswith("valid-") for n in names) >= 2
    assert sum(n.startswith("mistake-") for n in names) >= 4


@pytest.mark.parametrize("path", sorted(CLAIMS.glob("*.yaml")), ids=lambda p: p.stem)
def test_example_lints_as_it_says(path: Path) -> None:
    """Each example's exit code and findings are those its `# expect:` lines state."""
    expected = expectations(path)
    assert expected, f"{path.name} has no `# expect:` line"
    code, result = lint_json(path)
    errors = {f"{e['type']} {e['field']}" for e in result["errors"]}
    codes = {f"warning {w['code']}" for w in result.get("warnings", [])}
    for line in expected:
        if line == "valid":
            assert (code, errors) == (0, set())
        elif line.startswith("warning "):
            assert line in codes
        else:
            assert code == 1 and line in errors, errors
