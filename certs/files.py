"""The state folder: `ca.crt`, `ca.key`, `tls.crt`, `tls.key`, created, reused, renewed, checked.

Files are the interface between `draguard certs`, `draguard serve` and a CronJob, so
every write is atomic (a temporary file in the same folder, then `os.replace`): a
reader sees the old file or the new one, never half of either. Keys are written 0600.
A renewal replaces `tls.key` and then `tls.crt`; a reader that looks in between sees a
pair that does not match, which `load_pair` reports as `KeyMismatchError`, so a server
keeps its last good pair and picks the new one up on its next look.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import fcntl
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, TypedDict, Unpack

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from draguard.certs.authority import (
    DEFAULT_CA_DAYS,
    DEFAULT_LEAF_DAYS,
    DEFAULT_NAMESPACE,
    DEFAULT_SERVICE,
    KeyType,
    PemPair,
    issue_ca,
    issue_serving_cert,
    service_dns_names,
)
from draguard.certs.errors import CertificateFileError, KeyMismatchError
from draguard.certs.inspection import (
    CertifiedKey,
    chain_problem,
    needs_renewal,
    parse_certificates,
    parse_pair,
    renewal_due,
    subject_alt_names,
)

__all__ = [
    "DEFAULT_STATE_DIR",
    "CheckReport",
    "Ensured",
    "StatePaths",
    "ca_bundle_b64",
    "check",
    "create_certificates",
    "ensure_certificates",
    "load_authority",
    "load_pair",
    "needs_renewal",
    "renew",
    "renewal_reason",
    "write_atomically",
    "write_pair",
]

# The one default state folder of `draguard serve` and `draguard certs`, relative to the
# working directory, so that `draguard certs check` after the quick start finds the files.
DEFAULT_STATE_DIR = "draguard-state"

CERT_MODE = 0o644
KEY_MODE = 0o600
DIR_MODE = 0o700

Action = Literal["created", "reused", "leaf-issued"]
OnBroken = Literal["replace", "raise"]


class CertificateOptions(TypedDict, total=False):
    """What the folder's certificates are to be: the keywords of `create_certificates`,
    `ensure_certificates`, `renew` and `renewal_reason`; each reads those it needs.

    Defaults: the draguard Service in its namespace, ECDSA keys (`renew`: the current
    key's type), `DEFAULT_CA_DAYS`, `DEFAULT_LEAF_DAYS`, no extra names, the clock.
    """

    service: str
    namespace: str
    key_type: KeyType | None
    ca_days: int
    leaf_days: int
    extra_sans: tuple[str, ...]
    now: dt.datetime | None


class _InFolder:
    """One file of the state folder, by name: `paths.ca_cert` is `paths.dir / "ca.crt"`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, paths: StatePaths, owner: type[StatePaths]) -> Path:
        return paths.dir / self.name


@dataclass(frozen=True, slots=True)
class StatePaths:
    """Where the four files of a state folder live (names as in a `kubernetes.io/tls` Secret)."""

    dir: Path

    @classmethod
    def of(cls, state_dir: Path | str) -> StatePaths:
        return cls(Path(state_dir))

    ca_cert = _InFolder("ca.crt")
    ca_key = _InFolder("ca.key")
    tls_cert = _InFolder("tls.crt")
    tls_key = _InFolder("tls.key")


@dataclass(frozen=True, slots=True)
class Ensured:
    """What `ensure_certificates` did: made everything, reused it, or issued a new leaf."""

    paths: StatePaths
    action: Action
    reason: str = ""


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The health of a state folder, as `draguard certs check` prints it."""

    state_dir: Path
    now: dt.datetime
    ca_subject: str
    ca_not_after: dt.datetime
    ca_renewal_due: bool
    ca_key_matches: bool
    leaf_subject: str
    leaf_not_before: dt.datetime
    leaf_not_after: dt.datetime
    sans: tuple[str, ...]
    expected_sans: tuple[str, ...]
    key_matches: bool
    chain_error: str | None
    renewal_due: bool
    missing_sans: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        missing = tuple(name for name in self.expected_sans if name not in self.sans)
        object.__setattr__(self, "missing_sans", missing)

    @property
    def chain_verifies(self) -> bool:
        return self.chain_error is None

    @property
    def problems(self) -> tuple[str, ...]:
        """Everything that makes `check` exit non-zero, one sentence each."""
        found: list[str] = []
        if not self.ca_key_matches:
            found.append("ca.key does not match ca.crt")
        if not self.key_matches:
            found.append("tls.key does not match tls.crt")
        if self.missing_sans:
            found.append(f"tls.crt lacks the names {', '.join(self.missing_sans)}")
        if self.chain_error is not None:
            found.append(f"tls.crt does not verify against ca.crt: {self.chain_error}")
        if self.renewal_due:
            found.append(
                f"tls.crt expires {self.leaf_not_after:%Y-%m-%d %H:%M} UTC; less than a third "
                "of its life is left, run `draguard certs renew`"
            )
        if self.ca_renewal_due:
            found.append(
                f"ca.crt expires {self.ca_not_after:%Y-%m-%d %H:%M} UTC; less than a third of "
                "its life is left, rotate it with `draguard certs init --force` and publish"
            )
        return tuple(found)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready rendering (times in RFC 3339)."""
        return {
            "dir": str(self.state_dir),
            "ok": self.ok,
            "ca": {
                "subject": self.ca_subject,
                "notAfter": self.ca_not_after.isoformat(),
                "renewalDue": self.ca_renewal_due,
                "keyMatches": self.ca_key_matches,
            },
            "leaf": {
                "subject": self.leaf_subject,
                "notBefore": self.leaf_not_before.isoformat(),
                "notAfter": self.leaf_not_after.isoformat(),
                "sans": list(self.sans),
                "missingSans": list(self.missing_sans),
                "keyMatches": self.key_matches,
                "chainVerifies": self.chain_verifies,
                "chainError": self.chain_error,
                "renewalDue": self.renewal_due,
            },
            "problems": list(self.problems),
        }


# --- reading ---------------------------------------------------------------------------


def read_file(path: Path) -> bytes:
    """The bytes of `path`, or `CertificateFileError` saying why not."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CertificateFileError(path, "no such file") from None
    except IsADirectoryError:
        raise CertificateFileError(path, "is a directory, expected a PEM file") from None
    except OSError as exc:
        raise CertificateFileError(path, f"cannot read: {exc.strerror or exc}") from None


def load_pair(
    cert_path: Path | str, key_path: Path | str, *, now: dt.datetime | None = None
) -> CertifiedKey:
    """Read a certificate and its key, and make sure they parse and belong together.

    With `now`, also refuse a certificate that is not valid at that moment. Raises
    `CertificateFileError` (`KeyMismatchError` for a foreign key) naming the file; a
    server uses this to decide whether renewed files are good before swapping them in.
    """
    cert_path, key_path = Path(cert_path), Path(key_path)
    pair = parse_pair(
        read_file(cert_path),
        read_file(key_path),
        cert_source=str(cert_path),
        key_source=str(key_path),
    )
    if now is not None:
        _require_valid_at(pair.cert, cert_path, now)
    return pair


def load_authority(paths: StatePaths, *, now: dt.datetime | None = None) -> CertifiedKey:
    """The CA of a state folder: a CA certificate with its matching key, not expired."""
    ca = load_pair(paths.ca_cert, paths.ca_key)
    if not _is_ca(ca.cert):
        raise CertificateFileError(paths.ca_cert, "not a CA certificate (CA:FALSE)")
    _require_valid_at(ca.cert, paths.ca_cert, now or _utcnow())
    return ca


def ca_bundle_b64(state_dir: Path | str) -> str:
    """The CA certificate(s) of a state folder as one base64 line, for a webhook's `caBundle`."""
    path = StatePaths.of(state_dir).ca_cert
    certs = parse_certificates(read_file(path), source=str(path))
    pem = b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in certs)
    return base64.b64encode(pem).decode("ascii")


def renewal_reason(state_dir: Path | str, **options: Unpack[CertificateOptions]) -> str | None:
    """Why the serving certificate should be reissued now, or `None` when it is fine.

    Raises `CertificateFileError` when a file is missing or unusable.
    """
    paths = StatePaths.of(state_dir)
    wanted = _Wanted(**options)
    ca = load_authority(paths, now=wanted.now)
    leaf = load_pair(paths.tls_cert, paths.tls_key)
    return _leaf_reason(leaf, ca, wanted)


def check(
    state_dir: Path | str,
    *,
    service: str = DEFAULT_SERVICE,
    namespace: str = DEFAULT_NAMESPACE,
    now: dt.datetime | None = None,
) -> CheckReport:
    """Inspect a state folder: expiry, SANs, key matches, chain verifies, renewal due.

    Raises `CertificateFileError` only for files that are missing or do not parse;
    everything else, mismatched keys included, is reported.
    """
    paths = StatePaths.of(state_dir)
    at = now or _utcnow()
    ca, ca_key_matches = _load_for_check(paths.ca_cert, paths.ca_key)
    leaf, key_matches = _load_for_check(paths.tls_cert, paths.tls_key)
    expected = service_dns_names(service, namespace)
    return CheckReport(
        state_dir=paths.dir,
        now=at,
        ca_subject=ca.subject.rfc4514_string(),
        ca_not_after=ca.not_valid_after_utc,
        ca_renewal_due=renewal_due(ca, at),
        ca_key_matches=ca_key_matches,
        leaf_subject=leaf.subject.rfc4514_string(),
        leaf_not_before=leaf.not_valid_before_utc,
        leaf_not_after=leaf.not_valid_after_utc,
        sans=subject_alt_names(leaf),
        expected_sans=expected,
        key_matches=key_matches,
        chain_error=chain_problem(leaf, [ca], server_name=_chain_name(leaf, expected), now=at),
        renewal_due=renewal_due(leaf, at),
    )


# --- writing ---------------------------------------------------------------------------


def write_atomically(path: Path, data: bytes, *, mode: int) -> None:
    """Replace `path` with `data` in one step; the file has `mode` from its first byte."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def write_pair(cert_path: Path, key_path: Path, pair: PemPair) -> None:
    """Write a key (0600) and then its certificate (0644), each atomically."""
    write_atomically(key_path, pair.key_pem, mode=KEY_MODE)
    write_atomically(cert_path, pair.cert_pem, mode=CERT_MODE)


def create_certificates(state_dir: Path | str, **options: Unpack[CertificateOptions]) -> Ensured:
    """Make a new CA and serving certificate, replacing whatever the folder held."""
    wanted = _Wanted(**options)
    paths = _prepare(state_dir)
    with _locked(paths):
        return _create(paths, wanted)


def ensure_certificates(
    state_dir: Path | str, *, on_broken: OnBroken = "replace",
    **options: Unpack[CertificateOptions],
) -> Ensured:
    """Create the state folder's files, or reuse them when they are good.

    The CA is reused when both its files parse, match and it has not expired; the leaf
    when it also matches its key, chains to that CA, covers the Service's names (and
    `extra_sans`), and is not due for renewal. A usable CA is kept even when the leaf
    is reissued, so a `caBundle` already in the cluster stays valid. Files that exist
    but are unusable are replaced, or raise `CertificateFileError` with
    `on_broken="raise"` (the CLI's `init` without `--force`). The key type of reused
    files is whatever they were made with.
    """
    wanted = _Wanted(**options)
    now = wanted.now
    paths = _prepare(state_dir)
    # Look before locking: good files in a read-only folder (a mounted Secret) are
    # reused without ever needing to create the lock file.
    ca = _usable_ca(paths, on_broken=on_broken, now=now)
    if ca is not None and _usable_leaf_reason(paths, ca, wanted, on_broken) is None:
        return Ensured(paths, "reused")
    with _locked(paths):
        ca = _usable_ca(paths, on_broken=on_broken, now=now)
        if ca is None:
            return _create(paths, wanted)
        reason = _usable_leaf_reason(paths, ca, wanted, on_broken)
        if reason is None:  # another process made them while we waited for the lock
            return Ensured(paths, "reused")
        _issue_leaf(paths, ca, wanted)
        return Ensured(paths, "leaf-issued", reason)


def renew(state_dir: Path | str, **options: Unpack[CertificateOptions]) -> CertifiedKey:
    """Issue a new serving certificate signed by the folder's existing CA, unconditionally.

    Keeping the CA is the point: the `caBundle` in the webhook configurations stays
    valid, so a renewal needs no change in the cluster beyond the Secret. Without
    `key_type` the new key has the old leaf's type (else the CA's), so a cluster that
    chose RSA keeps it. Raises `CertificateFileError` when the CA is missing, unusable
    or expired.
    """
    paths = StatePaths.of(state_dir)
    with _locked(paths):
        wanted = _Wanted(**options)
        ca = load_authority(paths, now=wanted.now)
        if wanted.key_type is None:
            wanted = replace(wanted, key_type=_current_key_type(paths, ca))
        return _issue_leaf(paths, ca, wanted)


# --- helpers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Wanted:
    """What the folder's certificates are to be: the Service's names, key type, lifetimes.

    The public functions take these as keywords; their helpers pass this one value.
    """

    service: str = DEFAULT_SERVICE
    namespace: str = DEFAULT_NAMESPACE
    key_type: KeyType | None = None  # ECDSA for new keys; see `renew`
    ca_days: int = DEFAULT_CA_DAYS
    leaf_days: int = DEFAULT_LEAF_DAYS
    extra_sans: tuple[str, ...] = ()
    now: dt.datetime | None = None

    def serving_cert(self, ca: PemPair) -> PemPair:
        return issue_serving_cert(
            ca,
            service=self.service,
            namespace=self.namespace,
            key_type=self.key_type or "ecdsa",
            valid_days=self.leaf_days,
            extra_sans=self.extra_sans,
            now=self.now,
        )


def _create(paths: StatePaths, wanted: _Wanted) -> Ensured:
    ca = issue_ca(key_type=wanted.key_type or "ecdsa", valid_days=wanted.ca_days, now=wanted.now)
    leaf = wanted.serving_cert(ca)
    write_pair(paths.ca_cert, paths.ca_key, ca)
    write_pair(paths.tls_cert, paths.tls_key, leaf)
    return Ensured(paths, "created", "new CA and serving certificate")


def _issue_leaf(paths: StatePaths, ca: CertifiedKey, wanted: _Wanted) -> CertifiedKey:
    leaf = wanted.serving_cert(PemPair(ca.cert_pem, ca.key_pem))
    write_pair(paths.tls_cert, paths.tls_key, leaf)
    return parse_pair(
        leaf.cert_pem,
        leaf.key_pem,
        cert_source=str(paths.tls_cert),
        key_source=str(paths.tls_key),
    )


def _usable_ca(
    paths: StatePaths, *, on_broken: OnBroken, now: dt.datetime | None
) -> CertifiedKey | None:
    if not paths.ca_cert.exists() and not paths.ca_key.exists():
        return None
    try:
        return load_authority(paths, now=now)
    except CertificateFileError:
        if on_broken == "raise":
            raise
        return None


def _usable_leaf_reason(
    paths: StatePaths, ca: CertifiedKey, wanted: _Wanted, on_broken: OnBroken
) -> str | None:
    if not paths.tls_cert.exists() and not paths.tls_key.exists():
        return "no serving certificate yet"
    try:
        leaf = load_pair(paths.tls_cert, paths.tls_key)
    except CertificateFileError as exc:
        if on_broken == "raise":
            raise
        return str(exc)
    return _leaf_reason(leaf, ca, wanted)


def _leaf_reason(leaf: CertifiedKey, ca: CertifiedKey, wanted: _Wanted) -> str | None:
    names, now = service_dns_names(wanted.service, wanted.namespace), wanted.now
    missing = [name for name in (*names, *wanted.extra_sans) if name not in leaf.sans]
    if missing:
        return f"the serving certificate lacks the names {', '.join(missing)}"
    problem = chain_problem(leaf.cert, [ca.cert], server_name=names[2], now=now)
    if problem is not None:
        return f"the serving certificate does not verify against the CA: {problem}"
    if renewal_due(leaf.cert, now):
        return (
            f"the serving certificate expires {leaf.not_after:%Y-%m-%d %H:%M} UTC, "
            "less than a third of its life is left"
        )
    return None


def _current_key_type(paths: StatePaths, ca: CertifiedKey) -> KeyType:
    try:
        cert = parse_certificates(read_file(paths.tls_cert), source=str(paths.tls_cert))[0]
    except CertificateFileError:
        cert = ca.cert
    return "rsa" if isinstance(cert.public_key(), rsa.RSAPublicKey) else "ecdsa"


def _chain_name(leaf: x509.Certificate, expected: tuple[str, ...]) -> str:
    """The name to verify the chain for: the expected `.svc` name if the leaf has it.

    Names are judged once, as `missingSans`; the chain check then asks only whether the
    CA signed a certificate valid now, so a wrong `--service` is not a broken chain too.
    """
    sans = subject_alt_names(leaf)
    if expected[2] in sans or not sans:
        return expected[2]
    return sans[0]


def _load_for_check(cert_path: Path, key_path: Path) -> tuple[x509.Certificate, bool]:
    try:
        return load_pair(cert_path, key_path).cert, True
    except KeyMismatchError:
        cert = parse_certificates(read_file(cert_path), source=str(cert_path))[0]
        return cert, False


def _require_valid_at(cert: x509.Certificate, path: Path, now: dt.datetime) -> None:
    if now < cert.not_valid_before_utc:
        raise CertificateFileError(
            path, f"not valid before {cert.not_valid_before_utc:%Y-%m-%d %H:%M} UTC"
        )
    if now > cert.not_valid_after_utc:
        raise CertificateFileError(path, f"expired {cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC")


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False


def _prepare(state_dir: Path | str) -> StatePaths:
    paths = StatePaths.of(state_dir)
    paths.dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    return paths


@contextlib.contextmanager
def _locked(paths: StatePaths) -> Iterator[None]:
    # Two processes (say `serve` starting while a CronJob renews) must not interleave
    # their writes: an flock on a side file serialises them on one machine.
    with open(paths.dir / ".lock", "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
