"""One cached TLS server context per worker, rebuilt only when the key pair changes.

Each new connection is wrapped with this cache's context
(`draguard.webhook.serving.worker.deadline_context`); building a context per
connection, reading and parsing the key files, would cost most of the throughput over
TLS (issue 4 §5). A cheap `stat` of both files (inode, size, mtime) decides whether to look closer; only then are the files read, checked with
`draguard.certs.files.load_pair` (parse + key matches certificate) and, when their
fingerprint differs, turned into a new context. Broken or half-renewed files are
logged and the last good context keeps serving; the next change of the files is
looked at again. Because the cache is asked per connection, new connections get the new
certificate at once while established keep-alive connections finish undisturbed.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import os
import ssl
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from draguard.certs.errors import CertificateFileError
from draguard.certs.files import load_pair
from draguard.certs.inspection import CertifiedKey

log = logging.getLogger("draguard.webhook.serving.tls")

Stamp = tuple[tuple[int, int, int], tuple[int, int, int]]


class CertificateUnavailable(RuntimeError):
    """No usable key pair has been loaded yet, so no TLS connection can be served."""


def build_context(pair: CertifiedKey, client_ca: Path | None = None) -> ssl.SSLContext:
    """A TLS 1.2+ server context holding exactly the bytes that were checked; with
    `client_ca`, it requires a client certificate signed by that CA (mutual TLS).

    `load_cert_chain` only reads files, so the checked PEM is written to a private
    temporary folder: reading the live files again could pick up a newer, unchecked pair.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    with tempfile.TemporaryDirectory(prefix="draguard-tls-") as folder:
        cert, key = Path(folder, "tls.crt"), Path(folder, "tls.key")
        cert.write_bytes(pair.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(pair.key_pem)
        context.load_cert_chain(cert, key)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=str(client_ca))
    return context


class ContextCache:
    """The current context for one cert/key pair of files, reloaded on change.

    A pair is refused (and the last good one kept) when it does not parse, the key does
    not match, it is not valid now, or it does not name every one of `names` and every
    service name (`*.svc`) the last good pair named (the apiserver verifies that name). The last good pair survives
    fork: a worker started after the files broke builds its context from the pair its
    master loaded (`draguard.webhook.serving.laststate`), not from what is on disk.
    """

    def __init__(self, cert: Path, key: Path, *, names: tuple[str, ...] = (),
                 client_ca: Path | None = None,
                 build: Callable[[CertifiedKey], ssl.SSLContext] | None = None) -> None:
        self.cert, self.key, self.names = cert, key, names
        self._build = build or functools.partial(build_context, client_ca=client_ca)
        self._lock = threading.Lock()
        self._stamp: Stamp | None = None
        self._context: ssl.SSLContext | None = None
        self._pair: CertifiedKey | None = None
        self._pid = os.getpid()  # the process the context was built in
        self.fingerprint: str | None = None
        self.error: str | None = None  # why the files on disk are not in use, if they are not
        self.loads = 0  # contexts built
        self.failures = 0  # looks at changed files that were unusable

    def context(self) -> ssl.SSLContext:
        """The context to wrap a new connection with; raises CertificateUnavailable."""
        stamp = self._stat()
        if stamp != self._stamp or self._context is None or self._pid != os.getpid():
            with self._lock:
                if stamp != self._stamp or self._context is None or self._pid != os.getpid():
                    self._refresh(stamp)
        if self._context is None:
            raise CertificateUnavailable(
                f"no usable certificate in {self.cert} / {self.key}: {self.error}")
        return self._context

    @property
    def loaded(self) -> bool:
        """A good pair has been loaded (it may since have been replaced by broken files)."""
        return self._context is not None or self._pair is not None

    def _stat(self) -> Stamp | None:
        try:
            c, k = os.stat(self.cert), os.stat(self.key)
        except OSError:
            return None
        return (c.st_ino, c.st_size, c.st_mtime_ns), (k.st_ino, k.st_size, k.st_mtime_ns)

    def _refresh(self, stamp: Stamp | None) -> None:
        # `stamp` was taken before the files are read, so a change landing while we
        # read shows up as a new stamp on the next connection. It is published last:
        # other threads compare it without the lock, and must not see the new stamp
        # while the context still belongs to the old files.
        if self._pid != os.getpid():
            self._inherited()
        try:
            pair = load_pair(self.cert, self.key, now=dt.datetime.now(dt.UTC))
            missing = [name for name in self._required_names() if not _names(pair, name)]
            if missing:
                raise CertificateFileError(self.cert, f"does not name {', '.join(missing)}")
            if pair.fingerprint != self.fingerprint:
                context = self._build(pair)
                self._context, self._pair, self.fingerprint = context, pair, pair.fingerprint
                self.loads += 1
                if self.loads > 1:
                    log.info("TLS certificate reloaded from %s (%s)", self.cert,
                             pair.fingerprint[:12])
            self.error = None
        except (CertificateFileError, ssl.SSLError, OSError) as exc:
            self.failures += 1
            self.error = str(exc)
            for callback in on_failure:  # this process's metric (`laststate`)
                callback()
            keeping = "keeping the last good pair" if self._context else "no pair loaded yet"
            log.warning("TLS files unusable, %s: %s", keeping, exc)
        self._stamp = stamp

    def _required_names(self) -> list[str]:
        """`names`, and every service name (`*.svc`) of the last good pair: the apiserver
        calls the service by that name, so a replacement that drops it is refused."""
        last = [] if self._pair is None else [n for n in self._pair.sans if n.endswith(".svc")]
        return sorted({*self.names, *last})

    def _inherited(self) -> None:
        """After fork: rebuild the last good pair's context in this process (a worker's
        context must come from its own, monkey-patched, `ssl`)."""
        self._pid, self._context = os.getpid(), None
        if self._pair is not None:
            try:
                self._context = self._build(self._pair)
            except ssl.SSLError as exc:
                log.warning("last good TLS pair unusable in this worker: %s", exc)


def _names(pair: CertifiedKey, name: str) -> bool:
    """True when the certificate names `name`, directly or by a one-label wildcard."""
    parent = name.partition(".")[2]
    return any(san == name or (san.startswith("*.") and san[2:] == parent) for san in pair.sans)


# Called on each refused look at changed files; a worker's app puts its metric here.
on_failure: list[Callable[[], None]] = []
_caches: dict[tuple[Path, Path], ContextCache] = {}
_caches_lock = threading.Lock()


def cache_for(cert: Path, key: Path, *, names: tuple[str, ...] = (),
              client_ca: Path | None = None) -> ContextCache:
    """This process's cache for the pair of files; made in the master, a worker inherits
    it with the last good pair. `names` and `client_ca` count on first use only."""
    ident = (Path(cert).absolute(), Path(key).absolute())
    with _caches_lock:
        cache = _caches.get(ident)
        if cache is None:
            cache = _caches[ident] = ContextCache(*ident, names=names, client_ca=client_ca)
        return cache
