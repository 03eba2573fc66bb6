"""The prometheus multiprocess folder: made by the master, checked by each worker.

prometheus_client picks its value store (files or memory) when it is first imported,
from `PROMETHEUS_MULTIPROC_DIR`; so this module never imports it at load time, and
`draguard serve` exports the folder before anything that does is imported.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# prometheus_client grows each worker's files from 1 MiB; a worker with fewer free bytes
# than this for its files would die with SIGBUS on its first write to a sparse page.
PROBE_BYTES = 4 * 1024 * 1024


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


def prepare_multiprocess_dir(path: Path | None) -> Path:
    """Create (or empty) the folder for multiprocess samples and export it to the workers.

    Old files are removed because samples of a previous run would otherwise be added
    to this one's.
    """
    if path is None:
        path = Path(tempfile.mkdtemp(prefix="draguard-metrics-"))
    path.mkdir(parents=True, exist_ok=True)
    for entry in path.iterdir():
        if entry.suffix == ".db":
            entry.unlink()
    os.environ[MULTIPROC_ENV] = str(path)
    return path


def remove_multiprocess_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def usable(path: str) -> str | None:
    """None when `path` has room for a worker's metric files, else why not.

    The bytes are reserved for real (`posix_fallocate`), not as a sparse file, so a full
    volume answers ENOSPC here instead of SIGBUS later.
    """
    probe = Path(path, f".probe-{os.getpid()}")
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        try:
            os.posix_fallocate(fd, 0, PROBE_BYTES)
        finally:
            os.close(fd)
            probe.unlink(missing_ok=True)
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    return None


def child_exit(server: Any, worker: Any) -> None:
    """gunicorn `child_exit` hook (master): retire a dead worker's live gauges."""
    if multiprocess_dir() is not None:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]
