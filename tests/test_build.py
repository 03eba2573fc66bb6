"""The installed build: the modules setup.py compiles are the compiled ones, where promised.

setup.py falls back to pure Python with only a warning when mypyc or a C compiler fails,
which would silently cost lint a third of its speed. CI sets
`DRAGUARD_EXPECT_COMPILED=1` (.ci/run), so a build that fell back fails there; its
second pass over a pure-Python build sets it to 0, so that pass cannot test the
compiled modules by mistake.
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


@pytest.mark.skipif(os.environ.get("DRAGUARD_EXPECT_COMPILED") not in ("0", "1"),
                    reason="only where the build is known (CI): 1 compiled, 0 pure Python")
@pytest.mark.parametrize("name", compiled_modules())
def test_module_is_built_as_promised(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    compiled = module.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    assert compiled == (os.environ["DRAGUARD_EXPECT_COMPILED"] == "1"), module.__file__
