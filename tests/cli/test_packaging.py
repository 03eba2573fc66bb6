"""Packaging: every folder a build would take for a package is declared, so pip is quiet."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> tuple[set[str], dict[str, str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    tool = config["tool"]["setuptools"]
    return set(tool["packages"]), dict(tool["package-dir"])


def test_data_folders_with_importable_names_are_listed_as_packages() -> None:
    """A sub-folder of a package whose name could be imported is in `packages`.

    setuptools warns at length ("Package 'draguard.deploy.base' is absent from the
    `packages` configuration") for every such folder that carries package data.
    """
    packages, dirs = _declared()
    missing = []
    for package in packages:
        top = ".".join(package.split(".")[:2])
        folder = ROOT / dirs[top] / Path(*package.split(".")[2:])
        for child in folder.iterdir():
            name = f"{package}.{child.name}"
            importable = child.name.isidentifier() and child.name != "__pycache__"
            if child.is_dir() and importable and any(child.rglob("*.*")) and name not in packages:
                missing.append(name)
    assert missing == []
