"""The installed build: the modules setup.py compiles are the compiled ones, where promised.

setup.py falls back to pure Python with only a warning when mypyc or a C compiler fails,
which would silently halve lint's and the webhook's speed. CI sets
`DRAGUARD_EXPECT_COMPILED=1` (.ci/run), so a build that fell back fails there.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import os
from pathlib import Path

import pytest

SETUP = Path(__file__).resolve().parents[1] / "setup.py"


def compiled_modules() -> list[str]:
    """The module names of setup.py's `COMPILED` paths (read, not run: it calls setup())."""
    tree = ast.parse(SETUP.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "COMPILED" for t in node.targets
        ):
            paths = ast.literal_eval(node.value)
            return ["draguard." + p.removesuffix(".py").replace("/", ".") for p in paths]
    raise AssertionError("setup.py has no COMPILED")


def test_compiled_paths_exist() -> None:
    root = SETUP.parent
    for name in compiled_modules():
        path = root.joinpath(*name.split(".")[1:]).with_suffix(".py")
        assert path.is_file(), name


@pytest.mark.skipif(os.environ.get("DRAGUARD_EXPECT_COMPILED") != "1",
                    reason="only where the build promises compiled modules (CI)")
@pytest.mark.parametrize("name", compiled_modules())
def test_module_is_compiled(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert module.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), module.__file__
