"""The state folder: atomic writes, key modes, reuse versus reissue, renewal, load and check."""

from __future__ import annotations

import base64
import datetime as dt
import os
import shutil
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from budget import examples
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from draguard.certs import files
from draguard.certs.authority import KeyType, issue_ca, issue_serving_cert, service_dns_names
from draguard.certs.errors import CertificateFileError, KeyMismatchError
from draguard.certs.files import (
    CheckReport,
    StatePaths,
    ca_bundle_b64,
    check,
    create_certificates,
    ensure_certificates,
    load_authority,
    load_pair,
    needs_renewal,
    renew,
    renewal_reason,
    write_atomically,
)

DAY = dt.timedelta(days=1)
FOUR_FILES = {"ca.crt", "ca.key", "tls.crt", "tls.key"}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- writing ---------------------------------------------------------------------------


def test_keys_are_private_and_certificates_readable(tmp_path: Path) -> None:
    """Keys are written 0600, certificates 0644, and a new state folder is 0700."""
    paths = create_certificates(tmp_path / "new").paths
    assert {name: _mode(paths.dir / name) for name in sorted(FOUR_FILES)} == {
        "ca.crt": 0o644,
        "ca.key": 0o600,
        "tls.crt": 0o644,
        "tls.key": 0o600,
    }
    assert _mode(paths.dir) == 0o700


def test_rewriting_a_loose_key_makes_it_private(state: StatePaths, now: dt.datetime) -> None:
    """A key file that was world-readable is 0600 again after a renewal replaces it."""
    state.tls_key.chmod(0o644)
    renew(state.dir, now=now)
    assert _mode(state.tls_key) == 0o600


def test_no_temporary_files_are_left(tmp_path: Path) -> None:
    """After creating and renewing, the folder holds the four files and the lock only."""
    paths = create_certificates(tmp_path / "s").paths
    renew(paths.dir)
    assert set(os.listdir(paths.dir)) == {*FOUR_FILES, ".lock"}


def test_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the final rename fails, the old content stays and the temporary file is removed."""
    target = tmp_path / "tls.key"
    target.write_bytes(b"old")

    def fail(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_atomically(target, b"new", mode=0o600)
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["tls.key"]


# --- ensure: reuse or reissue ----------------------------------------------------------


def _garbage(name: str) -> Callable[[StatePaths], None]:
    def mutate(paths: StatePaths) -> None:
        (paths.dir / name).write_bytes(b"not pem\n")

    return mutate


def _remove(*names: str) -> Callable[[StatePaths], None]:
    def mutate(paths: StatePaths) -> None:
        for name in names:
            (paths.dir / name).unlink()

    return mutate


def _foreign_leaf(paths: StatePaths) -> None:
    leaf = issue_serving_cert(issue_ca(), now=dt.datetime(2030, 1, 1, 12, tzinfo=dt.UTC))
    paths.tls_cert.write_bytes(leaf.cert_pem)
    paths.tls_key.write_bytes(leaf.key_pem)


def _nothing(paths: StatePaths) -> None:
    pass


@pytest.mark.parametrize(
    ("mutate", "options", "later", "action", "ca_kept"),
    [
        pytest.param(_nothing, {}, dt.timedelta(0), "reused", True, id="untouched"),
        pytest.param(_nothing, {}, 200 * DAY, "reused", True, id="not-yet-due"),
        pytest.param(_remove(*FOUR_FILES), {}, dt.timedelta(0), "created", False, id="empty"),
        pytest.param(
            _remove("tls.crt", "tls.key"), {}, dt.timedelta(0), "leaf-issued", True, id="no-leaf"
        ),
        pytest.param(
            _nothing,
            {"service": "other"},
            dt.timedelta(0),
            "leaf-issued",
            True,
            id="other-service",
        ),
        pytest.param(
            _nothing,
            {"extra_sans": ("127.0.0.1",)},
            dt.timedelta(0),
            "leaf-issued",
            True,
            id="extra-san",
        ),
        pytest.param(_nothing, {}, 250 * DAY, "leaf-issued", True, id="renewal-due"),
        pytest.param(_nothing, {}, 400 * DAY, "leaf-issued", True, id="leaf-expired"),
        pytest.param(
            _garbage("tls.key"), {}, dt.timedelta(0), "leaf-issued", True, id="garbage-leaf-key"
        ),
        pytest.param(_foreign_leaf, {}, dt.timedelta(0), "leaf-issued", True, id="foreign-leaf"),
        pytest.param(
            _garbage("ca.key"), {}, dt.timedelta(0), "created", False, id="garbage-ca-key"
        ),
        pytest.param(_remove("ca.key"), {}, dt.timedelta(0), "created", False, id="no-ca-key"),
        pytest.param(_nothing, {}, 3651 * DAY, "created", False, id="ca-expired"),
    ],
)
def test_ensure_reuses_only_good_files(
    state: StatePaths,
    now: dt.datetime,
    mutate: Callable[[StatePaths], None],
    options: dict[str, object],
    later: dt.timedelta,
    action: str,
    ca_kept: bool,
) -> None:
    """ensure_certificates reuses good files, reissues a bad leaf with the CA, or starts over."""
    ca_before = state.ca_cert.read_bytes()
    mutate(state)
    at = now + later
    ensured = ensure_certificates(state.dir, now=at, **options)  # type: ignore[arg-type]
    assert ensured.action == action
    assert (state.ca_cert.read_bytes() == ca_before) is ca_kept
    service = str(options.get("service", "draguard"))
    report = check(state.dir, service=service, now=at)
    assert report.ok, report.problems


@pytest.mark.parametrize(
    ("mutate", "named"),
    [
        pytest.param(_garbage("tls.key"), "tls.key", id="garbage-leaf-key"),
        pytest.param(_garbage("ca.crt"), "ca.crt", id="garbage-ca-cert"),
        pytest.param(_remove("ca.key"), "ca.key", id="missing-ca-key"),
        pytest.param(_remove("tls.crt"), "tls.crt", id="missing-leaf-cert"),
    ],
)
def test_ensure_can_refuse_broken_files(
    state: StatePaths, now: dt.datetime, mutate: Callable[[StatePaths], None], named: str
) -> None:
    """With on_broken="raise", an unusable file is reported by name and nothing is written."""
    mutate(state)
    before = {p.name: p.read_bytes() for p in state.dir.iterdir() if p.name in FOUR_FILES}
    with pytest.raises(CertificateFileError) as caught:
        ensure_certificates(state.dir, now=now, on_broken="raise")
    assert caught.value.path == state.dir / named
    assert str(caught.value).startswith(str(state.dir / named))
    after = {p.name: p.read_bytes() for p in state.dir.iterdir() if p.name in FOUR_FILES}
    assert after == before


def test_concurrent_ensure_makes_one_ca(tmp_path: Path) -> None:
    """Several processes' worth of ensure_certificates on an empty folder agree on one CA."""
    folder = tmp_path / "shared"
    actions: list[str] = []

    def run() -> None:
        actions.append(ensure_certificates(folder).action)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(actions) == ["created", "reused", "reused", "reused"]
    assert check(folder).ok


def test_ensure_reuses_without_locking(
    state: StatePaths, now: dt.datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reusing good files takes no lock, so a read-only folder (a mounted Secret) works."""

    def no_lock(paths: StatePaths) -> None:
        raise PermissionError(13, "Read-only file system", str(paths.dir / ".lock"))

    monkeypatch.setattr(files, "_locked", no_lock)
    assert ensure_certificates(state.dir, now=now).action == "reused"


# --- renewal ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("days", "later", "due"),
    [
        pytest.param(365, dt.timedelta(0), False, id="fresh"),
        pytest.param(365, 243 * DAY, False, id="just-over-a-third-left"),
        pytest.param(365, 244 * DAY, True, id="just-under-a-third-left"),
        pytest.param(365, 366 * DAY, True, id="expired"),
        pytest.param(1, dt.timedelta(hours=15), False, id="one-day-15h"),
        pytest.param(1, dt.timedelta(hours=16), True, id="one-day-16h"),
    ],
)
def test_renewal_threshold(now: dt.datetime, days: int, later: dt.timedelta, due: bool) -> None:
    """A leaf needs renewal once less than a third of its life is left."""
    leaf = issue_serving_cert(issue_ca(now=now), valid_days=days, now=now)
    assert needs_renewal(leaf.cert_pem, now + later) is due


@settings(max_examples=examples(60), deadline=None)
@given(days=st.integers(min_value=1, max_value=800), elapsed=st.floats(min_value=0, max_value=1.2))
def test_renewal_is_due_after_two_thirds_of_the_life(days: int, elapsed: float) -> None:
    """For any validity, renewal is due exactly when more than two thirds of the life has passed."""
    assume(abs(elapsed - 2 / 3) > 1e-4)
    start = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    cert_pem = issue_serving_cert(issue_ca(now=start), valid_days=days, now=start).cert_pem
    cert = x509.load_pem_x509_certificate(cert_pem)
    life = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert needs_renewal(cert_pem, cert.not_valid_before_utc + life * elapsed) is (elapsed > 2 / 3)


def test_renew_keeps_the_ca(state: StatePaths, now: dt.datetime) -> None:
    """Renewal writes a new leaf and key but leaves ca.crt and ca.key byte for byte."""
    ca_files = (state.ca_cert.read_bytes(), state.ca_key.read_bytes())
    old_leaf = (state.tls_cert.read_bytes(), state.tls_key.read_bytes())
    renewed = renew(state.dir, now=now + 250 * DAY)
    assert (state.ca_cert.read_bytes(), state.ca_key.read_bytes()) == ca_files
    assert (state.tls_cert.read_bytes(), state.tls_key.read_bytes()) != old_leaf
    assert renewed.not_after == now + 250 * DAY + 365 * DAY
    assert renewal_reason(state.dir, now=now + 250 * DAY) is None


@pytest.mark.parametrize(
    ("made_with", "asked", "expected"),
    [
        pytest.param("rsa", None, rsa.RSAPublicKey, id="keeps-rsa"),
        pytest.param("ecdsa", None, ec.EllipticCurvePublicKey, id="keeps-ecdsa"),
        pytest.param("ecdsa", "rsa", rsa.RSAPublicKey, id="switches-when-asked"),
    ],
)
def test_renew_keeps_the_key_type_unless_asked(
    tmp_path: Path, now: dt.datetime, made_with: KeyType, asked: KeyType | None, expected: type
) -> None:
    """A renewal without a key type makes the same kind of key as before."""
    paths = create_certificates(tmp_path / "s", key_type=made_with, now=now).paths
    renewed = renew(paths.dir, key_type=asked, now=now)
    assert isinstance(renewed.cert.public_key(), expected)


def test_renewal_reason_says_why(state: StatePaths, now: dt.datetime) -> None:
    """renewal_reason is None for a good leaf and names the cause otherwise."""
    assert renewal_reason(state.dir, now=now) is None
    assert "less than a third" in str(renewal_reason(state.dir, now=now + 250 * DAY))
    assert "lacks the names" in str(renewal_reason(state.dir, service="other", now=now))
    assert "lacks the names 127.0.0.1" in str(
        renewal_reason(state.dir, extra_sans=("127.0.0.1",), now=now)
    )


@pytest.mark.parametrize(
    ("mutate", "later", "message"),
    [
        pytest.param(_garbage("ca.crt"), dt.timedelta(0), "no PEM certificate", id="garbage-ca"),
        pytest.param(_remove("ca.key"), dt.timedelta(0), "no such file", id="no-ca-key"),
        pytest.param(_nothing, 3651 * DAY, "expired", id="ca-expired"),
    ],
)
def test_renew_needs_a_good_ca(
    state: StatePaths,
    now: dt.datetime,
    mutate: Callable[[StatePaths], None],
    later: dt.timedelta,
    message: str,
) -> None:
    """Renewal never makes a CA: a missing, broken or expired one is an error naming the file."""
    mutate(state)
    leaf_before = state.tls_cert.read_bytes()
    with pytest.raises(CertificateFileError, match=message) as caught:
        renew(state.dir, now=now + later)
    assert caught.value.path.name in ("ca.crt", "ca.key")
    assert state.tls_cert.read_bytes() == leaf_before


# --- loading ---------------------------------------------------------------------------


def _encrypted_key(paths: StatePaths) -> None:
    key = serialization.load_pem_private_key(paths.tls_key.read_bytes(), password=None)
    paths.tls_key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )


def _truncated_cert(paths: StatePaths) -> None:
    pem = paths.tls_cert.read_bytes()
    paths.tls_cert.write_bytes(pem[: len(pem) // 2] + b"\n-----END CERTIFICATE-----\n")


def _swap_key(paths: StatePaths) -> None:
    shutil.copy(paths.ca_key, paths.tls_key)


def _dir_for_cert(paths: StatePaths) -> None:
    paths.tls_cert.unlink()
    paths.tls_cert.mkdir()


@pytest.mark.parametrize(
    ("mutate", "named", "error", "message"),
    [
        pytest.param(
            _remove("tls.crt"), "tls.crt", CertificateFileError, "no such file", id="missing-cert"
        ),
        pytest.param(
            _remove("tls.key"), "tls.key", CertificateFileError, "no such file", id="missing-key"
        ),
        pytest.param(
            _garbage("tls.crt"),
            "tls.crt",
            CertificateFileError,
            "no PEM certificate",
            id="garbage-cert",
        ),
        pytest.param(
            _garbage("tls.key"),
            "tls.key",
            CertificateFileError,
            "no PEM private key",
            id="garbage-key",
        ),
        pytest.param(
            _truncated_cert, "tls.crt", CertificateFileError, "not a valid PEM", id="truncated-cert"
        ),
        pytest.param(
            _encrypted_key, "tls.key", CertificateFileError, "encrypted", id="encrypted-key"
        ),
        pytest.param(_swap_key, "tls.key", KeyMismatchError, "does not match", id="foreign-key"),
        pytest.param(
            _dir_for_cert, "tls.crt", CertificateFileError, "is a directory", id="directory"
        ),
    ],
)
def test_load_pair_names_the_bad_file(
    state: StatePaths,
    mutate: Callable[[StatePaths], None],
    named: str,
    error: type[CertificateFileError],
    message: str,
) -> None:
    """load_pair raises a specific error whose message starts with the offending file."""
    mutate(state)
    with pytest.raises(error, match=message) as caught:
        load_pair(state.tls_cert, state.tls_key)
    assert type(caught.value) is error
    assert caught.value.path == state.dir / named
    assert str(caught.value).startswith(f"{state.dir / named}: ")


def test_load_pair_can_insist_on_validity(state: StatePaths, now: dt.datetime) -> None:
    """With `now`, a certificate outside its validity is refused; without, it loads."""
    load_pair(state.tls_cert, state.tls_key, now=now)
    load_pair(state.tls_cert, state.tls_key)
    with pytest.raises(CertificateFileError, match="expired"):
        load_pair(state.tls_cert, state.tls_key, now=now + 400 * DAY)
    with pytest.raises(CertificateFileError, match="not valid before"):
        load_pair(state.tls_cert, state.tls_key, now=now - DAY)


def test_fingerprint_follows_the_contents(state: StatePaths, now: dt.datetime) -> None:
    """The fingerprint is stable for unchanged files and changes when they are renewed."""
    first = load_pair(state.tls_cert, state.tls_key).fingerprint
    assert load_pair(state.tls_cert, state.tls_key).fingerprint == first
    renew(state.dir, now=now)
    assert load_pair(state.tls_cert, state.tls_key).fingerprint != first


def test_a_leaf_is_not_an_authority(state: StatePaths) -> None:
    """A state folder whose ca.crt is not a CA certificate is refused by name."""
    shutil.copy(state.tls_cert, state.ca_cert)
    shutil.copy(state.tls_key, state.ca_key)
    with pytest.raises(CertificateFileError, match="not a CA certificate") as caught:
        load_authority(state)
    assert caught.value.path == state.ca_cert


def test_ca_bundle_is_the_ca_certificate_in_base64(state: StatePaths) -> None:
    """The bundle is one base64 line that decodes to the CA certificate's PEM."""
    bundle = ca_bundle_b64(state.dir)
    assert "\n" not in bundle
    assert base64.b64decode(bundle) == state.ca_cert.read_bytes()


# --- check -----------------------------------------------------------------------------


def test_check_reports_a_good_folder(state: StatePaths, now: dt.datetime) -> None:
    """A fresh folder checks out: names, match, chain, expiry all fine."""
    report = check(state.dir, now=now)
    assert report.ok
    assert report.missing_sans == ()
    assert report.key_matches and report.ca_key_matches and report.chain_verifies
    assert report.leaf_not_after == now + 365 * DAY
    assert report.ca_not_after == now + 3650 * DAY
    assert report.as_dict()["problems"] == []


@pytest.mark.parametrize(
    ("mutate", "options", "later", "flagged", "problem"),
    [
        pytest.param(
            _nothing, {}, 250 * DAY, lambda r: r.renewal_due, "less than a third", id="due"
        ),
        pytest.param(
            _nothing, {}, 400 * DAY, lambda r: not r.chain_verifies, "does not verify", id="expired"
        ),
        pytest.param(
            _nothing,
            {"service": "other"},
            dt.timedelta(0),
            lambda r: r.missing_sans == service_dns_names("other", "draguard-system"),
            "lacks the names",
            id="other-service",
        ),
        pytest.param(
            _swap_key,
            {},
            dt.timedelta(0),
            lambda r: not r.key_matches,
            "tls.key does not match",
            id="foreign-key",
        ),
        pytest.param(
            _foreign_leaf,
            {},
            dt.timedelta(0),
            lambda r: not r.chain_verifies,
            "does not verify",
            id="foreign-leaf",
        ),
        pytest.param(
            _nothing, {}, 2500 * DAY, lambda r: r.ca_renewal_due, "ca.crt expires", id="ca-ageing"
        ),
    ],
)
def test_check_reports_problems(
    state: StatePaths,
    now: dt.datetime,
    mutate: Callable[[StatePaths], None],
    options: dict[str, str],
    later: dt.timedelta,
    flagged: Callable[[CheckReport], bool],
    problem: str,
) -> None:
    """Each kind of trouble shows in its report field and as a problem sentence."""
    mutate(state)
    report = check(state.dir, now=now + later, **options)
    assert flagged(report)
    assert any(problem in line for line in report.problems), report.problems
    assert not report.ok


def test_check_raises_for_unreadable_files(state: StatePaths) -> None:
    """Files that do not parse are errors naming the file, not report entries."""
    state.tls_cert.write_bytes(b"junk")
    with pytest.raises(CertificateFileError) as caught:
        check(state.dir)
    assert caught.value.path == state.tls_cert
