"""Reading PEM back: parse a pair, check that it matches, and judge its lifetime and chain."""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.x509 import verification

from draguard.certs.authority import PrivateKey
from draguard.certs.errors import CertificateFileError, KeyMismatchError

# Renew when less than a third of the leaf's life is left (as cert-manager does by default).
RENEWAL_FRACTION = 1 / 3


@dataclass(frozen=True, slots=True)
class CertifiedKey:
    """A parsed certificate (first of the PEM chain) with its matching private key.

    `fingerprint` is the SHA-256 of both files' bytes: a server compares it to
    decide whether files on disk changed and its TLS context needs rebuilding.
    """

    cert_pem: bytes
    key_pem: bytes
    cert: x509.Certificate
    chain: tuple[x509.Certificate, ...]
    fingerprint: str

    @property
    def not_before(self) -> dt.datetime:
        return self.cert.not_valid_before_utc

    @property
    def not_after(self) -> dt.datetime:
        return self.cert.not_valid_after_utc

    @property
    def sans(self) -> tuple[str, ...]:
        return subject_alt_names(self.cert)

    def __repr__(self) -> str:
        return f"CertifiedKey(subject={self.cert.subject.rfc4514_string()!r}, key=<redacted>)"


def parse_certificates(pem: bytes, *, source: str) -> tuple[x509.Certificate, ...]:
    """Every certificate in a PEM file, in order; at least one, else `CertificateFileError`."""
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise CertificateFileError(source, "no PEM certificate found")
    try:
        certs = x509.load_pem_x509_certificates(pem)
    except ValueError as exc:
        raise CertificateFileError(source, f"not a valid PEM certificate ({exc})") from None
    return tuple(certs)


def parse_private_key(pem: bytes, *, source: str) -> PrivateKey:
    """An unencrypted ECDSA or RSA private key from PEM, else `CertificateFileError`."""
    if b"PRIVATE KEY-----" not in pem:
        raise CertificateFileError(source, "no PEM private key found")
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except TypeError:
        raise CertificateFileError(source, "private key is encrypted") from None
    except ValueError as exc:
        raise CertificateFileError(source, f"not a valid PEM private key ({exc})") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise CertificateFileError(source, f"unsupported key type {type(key).__name__}")
    return key


def parse_pair(
    cert_pem: bytes, key_pem: bytes, *, cert_source: str, key_source: str
) -> CertifiedKey:
    """Parse a certificate and key and make sure the key is the certificate's own."""
    chain = parse_certificates(cert_pem, source=cert_source)
    key = parse_private_key(key_pem, source=key_source)
    if _public_der(chain[0].public_key()) != _public_der(key.public_key()):
        raise KeyMismatchError(key_source, cert_source)
    digest = hashlib.sha256(cert_pem + b"\0" + key_pem).hexdigest()
    return CertifiedKey(cert_pem, key_pem, chain[0], chain, digest)


def subject_alt_names(cert: x509.Certificate) -> tuple[str, ...]:
    """The DNS and IP subject alternative names of `cert`, as text."""
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    dns = ext.get_values_for_type(x509.DNSName)
    ips = [str(ip) for ip in ext.get_values_for_type(x509.IPAddress)]
    return (*dns, *ips)


def needs_renewal(cert_pem: bytes, now: dt.datetime | None = None) -> bool:
    """Whether less than a third of the (first) certificate's life is left at `now`."""
    cert = parse_certificates(cert_pem, source="certificate")[0]
    return renewal_due(cert, now)


def renewal_due(cert: x509.Certificate, now: dt.datetime | None = None) -> bool:
    """`needs_renewal` for a parsed certificate; an expired one is due as well."""
    at = _now(now)
    life = cert.not_valid_after_utc - cert.not_valid_before_utc
    return cert.not_valid_after_utc - at < life * RENEWAL_FRACTION


def chain_problem(
    leaf: x509.Certificate,
    ca_certs: Sequence[x509.Certificate],
    *,
    server_name: str,
    now: dt.datetime | None = None,
) -> str | None:
    """Why a TLS client trusting only `ca_certs` would reject `leaf` for `server_name`.

    Uses cryptography's RFC 5280 path builder, which checks what the apiserver's Go
    verifier checks: signature, validity at `now`, CA constraints, serverAuth, SAN.
    `None` means the chain verifies.
    """
    try:
        name: x509.DNSName | x509.IPAddress = x509.IPAddress(ipaddress.ip_address(server_name))
    except ValueError:
        name = x509.DNSName(server_name)
    verifier = (
        verification.PolicyBuilder()
        .store(verification.Store(list(ca_certs)))
        .time(_now(now))
        .build_server_verifier(name)
    )
    try:
        verifier.verify(leaf, [])
    except verification.VerificationError as exc:
        return _plain(str(exc))
    return None


# cryptography appends the Python repr of the certificate it was processing, e.g.
# "(encountered processing <Certificate(subject=<Name(CN=…)>, ...)>)": not for users.
_REPR_SUFFIX = re.compile(r"\s*\(encountered processing <.*\)$", re.DOTALL)


def _plain(message: str) -> str:
    """A verifier message without Python object reprs."""
    return _REPR_SUFFIX.sub("", message)


def _public_der(key: CertificatePublicKeyTypes) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _now(now: dt.datetime | None) -> dt.datetime:
    return now if now is not None else dt.datetime.now(dt.UTC)
