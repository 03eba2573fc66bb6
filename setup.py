"""The build: the rule set's hot modules compiled to C with mypyc, where it can.

Everything else (metadata, packages, dependencies) is in pyproject.toml. The modules in
`COMPILED` are plain, type-checked Python that mypyc turns into C extensions; each
still ships its `.py` beside the extension. Compiled, lint runs about 1.5 times as
fast (README, "Speed"). The build falls back to pure Python, with a warning, when mypyc or
a C compiler is missing or the compilation fails; `DRAGUARD_PURE_PYTHON=1` asks for
pure Python outright. An editable install (`pip install -e`) is always pure Python:
extensions built in place would shadow the sources being edited.

The sources live in top-level folders that install as `draguard.<folder>`, while mypyc
names a module after its path, so they are staged as `draguard/<folder>/...` first.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
STAGE = ROOT / "build" / "mypyc-src"
PACKAGES = ("schema", "webhook", "certs")
COMPILED = (
    "schema/advice.py",
    "schema/blockyaml.py",
    "schema/conversion.py",
    "schema/defaults.py",
    "schema/errors.py",
    "schema/formats.py",
    "schema/gates.py",
    "schema/jsondecode.py",
    "schema/lint.py",
    "schema/meta.py",
    "schema/options.py",
    "schema/paths.py",
    "schema/records.py",
    "schema/releases.py",
    "schema/report.py",
    "schema/rules.py",
    "schema/shapes.py",
    "schema/skew.py",
    "schema/sources.py",
    "schema/validate.py",
    "schema/workloads.py",
    "webhook/review.py",
    "webhook/skew.py",
)


def _stage() -> list[str]:
    """Copy the packages' sources to `build/mypyc-src/draguard/`; the compiled ones' paths."""
    shutil.rmtree(STAGE, ignore_errors=True)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, STAGE / "draguard" / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return [str(STAGE / "draguard" / path) for path in COMPILED]


def _extensions() -> list[Any]:
    if os.environ.get("DRAGUARD_PURE_PYTHON") or "editable_wheel" in sys.argv:
        return []
    try:
        from mypyc.build import mypycify

        paths = _stage()
        # Its own settings, not pyproject's strict ones: the build environment has no
        # third-party packages, whose types are then Any (fine to compile against).
        config = STAGE / "mypy.ini"
        config.write_text("[mypy]\nexplicit_package_bases = True\nignore_missing_imports = True\n"
                          f"mypy_path = {STAGE}\ncache_dir = {STAGE / '.mypy_cache'}\n")
        extensions: list[Any] = mypycify(
            ["--config-file", str(config), *paths],
            opt_level="3",
            group_name="draguard",
        )
        return extensions
    except (Exception, SystemExit) as exc:  # mypyc exits on a type error
        print(f"draguard: building pure Python, mypyc failed: {exc!r}", file=sys.stderr)
        return []


class _BuildExt(build_ext):
    """build_ext that builds either every extension or none (pure Python, with a warning).

    A module's extension without the shared library of the group cannot import, so a
    failure part way leaves nothing of the compiled build behind.
    """

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, headers or memory: distutils' errors
            for ext in self.extensions:
                Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
            print(f"draguard: building pure Python, compiling failed: {exc!r}", file=sys.stderr)


setup(ext_modules=_extensions(), cmdclass={"build_ext": _BuildExt})
