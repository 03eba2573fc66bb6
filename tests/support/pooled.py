"""The same input files run with `--jobs 1` and with `--jobs 2` (a pool), for commands that
must say and write exactly what one process does (convert, fix)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def by_jobs(tmp_path: Path, files: dict[str, str],
            run: Callable[[str, list[str], Path], T]) -> list[T]:
    """`run(jobs, paths, folder)` for jobs "1" then "2", each on its own copy of `files`
    (in folder `tmp_path/<jobs>`) with a missing file named last."""
    outcomes = []
    for jobs in ("1", "2"):
        folder = tmp_path / jobs
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
        paths = [str(folder / name) for name in files] + [str(folder / "missing.yaml")]
        outcomes.append(run(jobs, paths, folder))
    return outcomes
