"""The per-worker cached TLS context and its reload rules (draguard.webhook.serving.tls)."""

from __future__ import annotations

import datetime as dt
import os
import ssl
from collections.abc import Callable
from pathlib import Path

import pytest

from draguard.certs.authority import PemPair, issue_ca, issue_serving_cert
from draguard.certs.files import StatePaths, create_certificates, renew, write_atomically
from draguard.certs.inspection import CertifiedKey
from draguard.webhook.serving.tls import (
    CertificateUnavailable,
    ContextCache,
    build_context,
)


@pytest.fixture
def state(tmp_path: Path) -> StatePaths:
    """A fresh state folder with a CA and a serving certificate."""
    return create_certificates(tmp_path / "state").paths


class CountingBuild:
    """Counts the contexts built, to prove that unchanged files cost no rebuild."""

    def __init__(self) -> None:
        self.fingerprints: list[str] = []

    def __call__(self, pair: CertifiedKey) -> ssl.SSLContext:
        self.fingerprints.append(pair.fingerprint)
        return build_context(pair)


def make_cache(state: StatePaths) -> tuple[ContextCache, CountingBuild]:
    build = CountingBuild()
    return ContextCache(state.tls_cert, state.tls_key, build=build), build


def test_unchanged_files_reuse_one_context(state: StatePaths) -> None:
    """Many connections with unchanged files get the same context, built once."""
    cache, build = make_cache(state)
    contexts = {id(cache.context()) for _ in range(50)}
    assert len(contexts) == 1 and len(build.fingerprints) == 1


def test_context_refuses_tls_below_1_2(state: StatePaths) -> None:
    """The server context's minimum protocol is TLS 1.2."""
    cache, _ = make_cache(state)
    assert cache.context().minimum_version == ssl.TLSVersion.TLSv1_2


def test_renewal_builds_a_new_context(state: StatePaths) -> None:
    """After a renewal the next connection gets a context for the new pair."""
    cache, build = make_cache(state)
    first = cache.context()
    renewed = renew(state.dir)
    second = cache.context()
    assert second is not first
    assert build.fingerprints[-1] == renewed.fingerprint == cache.fingerprint


def test_touch_without_change_keeps_context(state: StatePaths) -> None:
    """Files rewritten with identical bytes (new mtime) do not rebuild the context."""
    cache, build = make_cache(state)
    first = cache.context()
    for path in (state.tls_cert, state.tls_key):
        write_atomically(path, path.read_bytes(), mode=0o600)
    assert cache.context() is first and len(build.fingerprints) == 1


@pytest.mark.parametrize("breakage", [
    pytest.param(lambda s: write_atomically(s.tls_cert, b"garbage", mode=0o644), id="cert-garbage"),
    pytest.param(lambda s: write_atomically(s.tls_key, b"", mode=0o600), id="key-empty"),
    pytest.param(lambda s: s.tls_key.unlink(), id="key-missing"),
    pytest.param(lambda s: write_atomically(s.tls_key, s.ca_key.read_bytes(), mode=0o600),
                 id="key-mismatch"),
])
def test_broken_files_keep_last_good_context(state: StatePaths,
                                             breakage: Callable[[StatePaths], None]) -> None:
    """Broken replacement files are refused and the last good context keeps serving."""
    cache, _ = make_cache(state)
    good = cache.context()
    breakage(state)
    assert cache.context() is good
    assert cache.failures == 1


def test_recovers_after_broken_files(state: StatePaths) -> None:
    """Once good files return after broken ones, they are loaded."""
    cache, _ = make_cache(state)
    cache.context()
    write_atomically(state.tls_cert, b"garbage", mode=0o644)
    cache.context()
    renewed = renew(state.dir)
    cache.context()
    assert cache.fingerprint == renewed.fingerprint


def test_broken_files_are_not_reread_per_connection(state: StatePaths) -> None:
    """Unchanged broken files are looked at once, not on every connection."""
    cache, _ = make_cache(state)
    cache.context()
    write_atomically(state.tls_cert, b"garbage", mode=0o644)
    for _ in range(20):
        cache.context()
    assert cache.failures == 1


def test_no_good_pair_is_unavailable(tmp_path: Path) -> None:
    """Without any usable pair the cache raises CertificateUnavailable."""
    cache = ContextCache(tmp_path / "tls.crt", tmp_path / "tls.key")
    with pytest.raises(CertificateUnavailable):
        cache.context()
    assert not cache.loaded


def test_temporary_key_copy_is_removed(state: StatePaths, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The private copy of the key made for load_cert_chain does not outlive the build."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    make_cache(state)[0].context()
    assert os.listdir(scratch) == []


def test_no_stale_context_after_renewal_under_concurrency(state: StatePaths) -> None:
    """With threads asking all the time, the first look after a renewal gets the new pair."""
    import threading

    cache, _ = make_cache(state)
    cache.context()
    stop = threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            cache.context()

    threads = [threading.Thread(target=hammer) for _ in range(3)]
    for thread in threads:
        thread.start()
    stale = 0
    try:
        for _ in range(15):
            renewed = renew(state.dir)
            cache.context()
            stale += cache.fingerprint != renewed.fingerprint
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert stale == 0


def test_secret_volume_symlink_swap_is_seen(tmp_path: Path) -> None:
    """A Kubernetes Secret update (the `..data` symlink swapped to a new folder) is picked up."""
    first = create_certificates(tmp_path / "v1").paths
    second = renew(first.dir)  # same CA, new leaf, written in place in v1 …
    old = create_certificates(tmp_path / "v0").paths  # … and an older pair in v0
    mount = tmp_path / "mount"
    mount.mkdir()
    (mount / "..data").symlink_to(old.dir)
    for name in ("tls.crt", "tls.key"):
        (mount / name).symlink_to(Path("..data") / name)
    cache = ContextCache(mount / "tls.crt", mount / "tls.key")
    before = cache.context()
    (mount / "..data_tmp").symlink_to(first.dir)
    os.replace(mount / "..data_tmp", mount / "..data")  # what the kubelet does
    assert cache.context() is not before
    assert cache.fingerprint == second.fingerprint


SERVICE_DNS = "draguard.draguard-system.svc"


def swap_in(state: StatePaths, pair: PemPair) -> None:
    write_atomically(state.tls_key, pair.key_pem, mode=0o600)
    write_atomically(state.tls_cert, pair.cert_pem, mode=0o644)


def expired(ca: PemPair) -> PemPair:
    return issue_serving_cert(ca, valid_days=1,
                              now=dt.datetime.now(dt.UTC) - dt.timedelta(days=3))


def wrong_name(ca: PemPair) -> PemPair:
    return issue_serving_cert(ca, service="other", namespace="elsewhere")


@pytest.mark.parametrize("make", [expired, wrong_name], ids=["expired", "wrong-name"])
def test_unusable_pair_is_not_swapped_in(state: StatePaths,
                                         make: Callable[[PemPair], PemPair]) -> None:
    """An expired pair, or one not naming the service the last good pair named, keeps the
    last good pair serving (no names given: they come from the first pair)."""
    cache = ContextCache(state.tls_cert, state.tls_key)
    first = cache.context()
    good = cache.fingerprint
    swap_in(state, make(issue_ca()))
    assert cache.context() is first and cache.fingerprint == good
    assert cache.error is not None


def test_unusable_pair_at_start_is_unavailable_with_a_reason(state: StatePaths) -> None:
    swap_in(state, wrong_name(issue_ca()))
    cache = ContextCache(state.tls_cert, state.tls_key, names=(SERVICE_DNS,))
    with pytest.raises(CertificateUnavailable, match="does not name"):
        cache.context()
    assert not cache.loaded


def test_a_forked_process_serves_the_last_good_pair(state: StatePaths) -> None:
    """A worker forked after the files were deleted builds its context from the
    master's last good pair."""
    cache = ContextCache(state.tls_cert, state.tls_key, names=(SERVICE_DNS,))
    good = cache.context()
    os.unlink(state.tls_cert)
    os.unlink(state.tls_key)
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only with a fresh context for the same pair
        try:
            context = cache.context()
            os._exit(0 if context is not good and cache.loaded else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
