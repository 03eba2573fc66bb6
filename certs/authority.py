"""A private CA and the webhook's serving certificate, made with `cryptography`.

The apiserver calls the webhook through its Service, so it checks the serving
certificate against the `caBundle` of the webhook configuration and against the
Service's DNS name (`<svc>.<ns>.svc`). Everything here is pure: values in, PEM out,
with `now` injectable so that tests can move the clock.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

KeyType = Literal["ecdsa", "rsa"]
KEY_TYPES: tuple[KeyType, ...] = get_args(KeyType)

DEFAULT_SERVICE = "draguard"
DEFAULT_NAMESPACE = "draguard-system"
DEFAULT_CA_DAYS = 3650
DEFAULT_LEAF_DAYS = 365

# Certificates start a few minutes in the past: a Job on one node issues the
# certificate and the apiserver on another checks it, and their clocks differ.
BACKDATE = dt.timedelta(minutes=5)

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True, slots=True)
class PemPair:
    """A certificate and its private key, both PEM-encoded (key in PKCS#8, unencrypted)."""

    cert_pem: bytes
    key_pem: bytes

    def __repr__(self) -> str:
        # Never print key material into logs or test output.
        return f"PemPair(cert_pem=<{len(self.cert_pem)} bytes>, key_pem=<redacted>)"


def service_dns_names(service: str, namespace: str) -> tuple[str, ...]:
    """The names by which in-cluster clients reach `service` in `namespace`, shortest first."""
    return (
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    )


def generate_key(key_type: KeyType) -> PrivateKey:
    """A fresh private key: ECDSA P-256 (small, fast handshakes) or RSA 2048."""
    if key_type == "ecdsa":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    raise ValueError(f"unknown key type {key_type!r}; expected one of {', '.join(KEY_TYPES)}")


def issue_ca(
    *,
    common_name: str = "draguard-ca",
    key_type: KeyType = "ecdsa",
    valid_days: int = DEFAULT_CA_DAYS,
    now: dt.datetime | None = None,
) -> PemPair:
    """A self-signed CA that may sign leaf certificates only (path length 0)."""
    key = generate_key(key_type)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    not_before, not_after = _validity(now, valid_days)
    public_key = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(digital_signature=True, key_cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(public_key), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    return PemPair(cert_pem=_cert_pem(cert), key_pem=_key_pem(key))


def issue_serving_cert(
    ca: PemPair,
    *,
    service: str = DEFAULT_SERVICE,
    namespace: str = DEFAULT_NAMESPACE,
    key_type: KeyType = "ecdsa",
    valid_days: int = DEFAULT_LEAF_DAYS,
    extra_sans: Sequence[str] = (),
    now: dt.datetime | None = None,
) -> PemPair:
    """A TLS server certificate for the Service's DNS names, signed by `ca`.

    `extra_sans` entries that parse as IP addresses become IP SANs (tests serve on
    127.0.0.1), the rest DNS SANs. The leaf never outlives its CA, since a client
    would reject it from that moment anyway.
    """
    require_dns_label("service", service)
    require_dns_label("namespace", namespace)
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError(f"unsupported CA key type {type(ca_key).__name__}")
    key = generate_key(key_type)
    dns_names = service_dns_names(service, namespace)
    not_before, not_after = _validity(now, valid_days)
    not_after = min(not_after, ca_cert.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[2])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            _key_usage(digital_signature=True, key_encipherment=key_type == "rsa"), critical=True
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.SubjectAlternativeName(list(_general_names([*dns_names, *extra_sans]))),
            critical=False,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return PemPair(cert_pem=_cert_pem(cert), key_pem=_key_pem(key))


def require_dns_label(what: str, value: str) -> None:
    """Raise `ValueError` unless `value` is an RFC 1123 DNS label."""
    # Service and namespace names are DNS labels (RFC 1123, at most 63 characters);
    # anything else could not be a name the apiserver dials.
    if not _DNS_LABEL.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} is not a DNS label (lowercase letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters)"
        )


def _validity(now: dt.datetime | None, valid_days: int) -> tuple[dt.datetime, dt.datetime]:
    if valid_days < 1:
        raise ValueError(f"validity must be at least one day, got {valid_days}")
    start = now if now is not None else dt.datetime.now(dt.UTC)
    if start.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    return start - BACKDATE, start + dt.timedelta(days=valid_days)


def _key_usage(
    *, digital_signature: bool, key_cert_sign: bool = False, key_encipherment: bool = False
) -> x509.KeyUsage:
    # RSA key exchange needs keyEncipherment; ECDHE with an ECDSA key does not.
    return x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=key_cert_sign,
        crl_sign=key_cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _general_names(identities: Iterable[str]) -> Iterable[x509.GeneralName]:
    seen: set[str] = set()
    for identity in identities:
        if identity in seen:
            continue
        seen.add(identity)
        try:
            yield x509.IPAddress(ipaddress.ip_address(identity))
        except ValueError:
            yield x509.DNSName(identity)


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
