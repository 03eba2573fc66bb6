"""The policy in force: read from a file, reloaded when it changes, the last good one kept."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from draguard.schema.policy.file import parse_policy
from draguard.schema.policy.model import Policy, PolicyError


@dataclass(frozen=True, slots=True)
class PolicyStatus:
    """What the store knows, for `/metrics` and logs: last good load and last failure."""

    path: str | None
    generation: int
    sha256: str | None
    failures: int
    error: str | None


log = logging.getLogger("draguard.policy")

_FileSignature = tuple[int, int, int, int]
# Files modified this recently are re-read even when their stat looks unchanged: on a
# file system with coarse timestamps a second same-size write would be invisible
# (git's "racily clean" index entries, same cure).
_RACY_SECONDS = 2.0


class PolicyStore:
    """The current policy from a file, reloaded when it changes, keeping the last good one.

    `current()` costs one `stat` at most every `check_interval` seconds. A change of
    inode, size or modification time (a ConfigMap update swaps a symlink, so the inode
    changes) triggers a read; a new SHA-256 triggers a parse. An unreadable or invalid
    file leaves the last good policy in force (`Policy.empty()` if there never was
    one) and is recorded in `status()` for the metric and the log. Thread-safe.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None, *, check_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        on_failure: Callable[[], None] | None = None,
    ) -> None:
        self._path = os.fspath(path) if path is not None else None
        self._on_failure = on_failure  # e.g. a metric's inc(): once per distinct failure
        self._interval = check_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._policy = Policy.empty()
        self._generation = 0
        self._good_digest: str | None = None
        self._seen_digest: str | None = None
        self._signature: _FileSignature | None = None
        self._racy = False
        self._checked_at: float | None = None
        self._failures = 0
        self._error: str | None = None

    def current(self) -> Policy:
        if self._path is None:
            return self._policy
        with self._lock:
            now = self._clock()
            if self._checked_at is None or now - self._checked_at >= self._interval:
                self._checked_at = now
                self._refresh(self._path)
            return self._policy

    def status(self) -> PolicyStatus:
        with self._lock:
            return PolicyStatus(self._path, self._generation, self._good_digest,
                                self._failures, self._error)

    def _refresh(self, path: str) -> None:
        try:
            st = os.stat(path)
        except OSError as exc:
            self._signature = None
            self._seen_digest = None
            self._fail(f"{path}: cannot read the policy: {exc.strerror or exc}")
            return
        signature = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        if signature == self._signature and not self._racy:
            return
        self._signature = signature
        self._racy = time.time() - st.st_mtime_ns / 1e9 < _RACY_SECONDS
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            self._signature = None
            self._fail(f"{path}: cannot read the policy: {exc.strerror or exc}")
            return
        digest = hashlib.sha256(data).hexdigest()
        if digest == self._seen_digest:
            return  # same bytes as last time: same outcome, already recorded
        self._seen_digest = digest
        if digest == self._good_digest:
            self._error = None  # back to the policy in force
            return
        try:
            policy = parse_policy(data, source=path)
        except PolicyError as exc:
            self._fail(str(exc))
            return
        self._policy = policy
        self._good_digest = digest
        self._generation += 1
        self._error = None
        log.info("policy %s loaded: generation %d, sha256 %s", path, self._generation, digest)

    def _fail(self, message: str) -> None:
        # Count a failure once per distinct problem, not once per check of the same file.
        if message != self._error:
            self._failures += 1
            log.error("policy not loaded, keeping generation %d: %s", self._generation, message)
            if self._on_failure is not None:
                self._on_failure()
        self._error = message
