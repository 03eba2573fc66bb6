"""Issuing: the CA's and the serving certificate's contents, checked with `cryptography`."""

from __future__ import annotations

import datetime as dt
import ipaddress
from typing import Any, TypeVar

import pytest
from budget import examples
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID
from hypothesis import given, settings
from hypothesis import strategies as st

from draguard.certs.authority import (
    BACKDATE,
    KeyType,
    PemPair,
    issue_ca,
    issue_serving_cert,
    service_dns_names,
)
from draguard.certs.inspection import chain_problem, parse_pair

DNS_LABEL = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z")


def _cert(pair: PemPair) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pair.cert_pem)


T = TypeVar("T", bound=x509.ExtensionType)


def _ext(cert: x509.Certificate, kind: type[T]) -> x509.Extension[T]:
    return cert.extensions.get_extension_for_class(kind)


def test_service_dns_names_are_the_four_in_cluster_forms() -> None:
    """A Service is reachable by its name, name.namespace, .svc, and .svc.cluster.local."""
    assert service_dns_names("hook", "team-a") == (
        "hook",
        "hook.team-a",
        "hook.team-a.svc",
        "hook.team-a.svc.cluster.local",
    )


def test_ca_is_a_critical_path_length_zero_ca(ca: PemPair) -> None:
    """The CA's basicConstraints say CA:TRUE, pathlen 0, and are critical."""
    constraints = _ext(_cert(ca), x509.BasicConstraints)
    assert constraints.critical
    assert (constraints.value.ca, constraints.value.path_length) == (True, 0)


def test_ca_may_sign_certificates(ca: PemPair) -> None:
    """The CA's critical keyUsage allows keyCertSign and cRLSign."""
    usage = _ext(_cert(ca), x509.KeyUsage)
    assert usage.critical
    assert usage.value.key_cert_sign and usage.value.crl_sign


def test_ca_is_self_signed_with_matching_key_identifiers(ca: PemPair) -> None:
    """The CA's subject is its issuer and its AKI names its own SKI."""
    cert = _cert(ca)
    ski = _ext(cert, x509.SubjectKeyIdentifier).value.digest
    assert cert.issuer == cert.subject
    assert _ext(cert, x509.AuthorityKeyIdentifier).value.key_identifier == ski
    cert.verify_directly_issued_by(cert)


@pytest.mark.parametrize(
    ("key_type", "key_class"),
    [
        pytest.param("ecdsa", ec.EllipticCurvePublicKey, id="ecdsa"),
        pytest.param("rsa", rsa.RSAPublicKey, id="rsa"),
    ],
)
def test_key_types(key_type: KeyType, key_class: type, now: dt.datetime) -> None:
    """ECDSA keys are P-256 and RSA keys 2048 bits, for the CA and the leaf alike."""
    ca = issue_ca(key_type=key_type, now=now)
    leaf = issue_serving_cert(ca, key_type=key_type, now=now)
    for pair in (ca, leaf):
        key = _cert(pair).public_key()
        assert isinstance(key, key_class)
        if isinstance(key, ec.EllipticCurvePublicKey):
            assert key.curve.name == "secp256r1"
        if isinstance(key, rsa.RSAPublicKey):
            assert key.key_size == 2048


def test_leaf_names_the_service(ca: PemPair, now: dt.datetime) -> None:
    """The serving certificate's DNS SANs are exactly the Service's four names."""
    leaf = _cert(issue_serving_cert(ca, service="hook", namespace="team-a", now=now))
    names = _ext(leaf, x509.SubjectAlternativeName).value
    assert tuple(names.get_values_for_type(x509.DNSName)) == service_dns_names("hook", "team-a")
    assert names.get_values_for_type(x509.IPAddress) == []


def test_extra_sans_split_into_dns_and_ip(ca: PemPair, now: dt.datetime) -> None:
    """Extra names that parse as IP addresses become IP SANs, the rest DNS SANs."""
    leaf = _cert(issue_serving_cert(ca, extra_sans=("127.0.0.1", "::1", "localhost"), now=now))
    names = _ext(leaf, x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert names.get_values_for_type(x509.DNSName)[-1] == "localhost"


def test_leaf_is_a_server_certificate(ca: PemPair, now: dt.datetime) -> None:
    """The leaf is not a CA, may sign handshakes, and is meant for serverAuth only."""
    leaf = _cert(issue_serving_cert(ca, now=now))
    assert _ext(leaf, x509.BasicConstraints).value.ca is False
    assert _ext(leaf, x509.KeyUsage).value.digital_signature
    assert list(_ext(leaf, x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_leaf_points_at_its_ca(ca: PemPair, now: dt.datetime) -> None:
    """The leaf's issuer and AKI are the CA's subject and SKI, and the CA's key signed it."""
    ca_cert, leaf = _cert(ca), _cert(issue_serving_cert(ca, now=now))
    assert leaf.issuer == ca_cert.subject
    assert (
        _ext(leaf, x509.AuthorityKeyIdentifier).value.key_identifier
        == _ext(ca_cert, x509.SubjectKeyIdentifier).value.digest
    )
    leaf.verify_directly_issued_by(ca_cert)


@pytest.mark.parametrize(
    ("days", "expected"),
    [
        pytest.param(365, dt.timedelta(days=365), id="default-year"),
        pytest.param(1, dt.timedelta(days=1), id="one-day"),
    ],
)
def test_leaf_validity(ca: PemPair, now: dt.datetime, days: int, expected: dt.timedelta) -> None:
    """A leaf runs from a little before `now` to `now` plus its days."""
    leaf = _cert(issue_serving_cert(ca, valid_days=days, now=now))
    assert leaf.not_valid_before_utc == now - BACKDATE
    assert leaf.not_valid_after_utc == now + expected


def test_leaf_never_outlives_its_ca(now: dt.datetime) -> None:
    """A leaf asked to live longer than its CA ends when the CA does."""
    short_ca = issue_ca(valid_days=30, now=now)
    leaf = _cert(issue_serving_cert(short_ca, valid_days=365, now=now))
    assert leaf.not_valid_after_utc == _cert(short_ca).not_valid_after_utc


@pytest.mark.parametrize(
    ("service", "namespace"),
    [
        pytest.param("Draguard", "ns", id="uppercase"),
        pytest.param("dra_guard", "ns", id="underscore"),
        pytest.param("draguard", "-ns", id="leading-dash"),
        pytest.param("draguard", "a" * 64, id="too-long"),
        pytest.param("", "ns", id="empty"),
        pytest.param("a.b", "ns", id="dotted"),
    ],
)
def test_names_must_be_dns_labels(
    ca: PemPair, now: dt.datetime, service: str, namespace: str
) -> None:
    """A service or namespace that is not a DNS label is refused before anything is signed."""
    with pytest.raises(ValueError, match="is not a DNS label"):
        issue_serving_cert(ca, service=service, namespace=namespace, now=now)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"valid_days": 0}, id="zero-days"),
        pytest.param({"now": dt.datetime(2030, 1, 1)}, id="naive-now"),
        pytest.param({"key_type": "dsa"}, id="unknown-key-type"),
    ],
)
def test_bad_issuing_options_raise(kwargs: dict[str, Any]) -> None:
    """Nonsense options are programmer errors and raise ValueError."""
    with pytest.raises(ValueError):
        issue_ca(**kwargs)


def test_pem_pair_repr_hides_the_key(ca: PemPair) -> None:
    """Printing a PemPair never shows key material."""
    assert "PRIVATE" not in repr(ca)
    assert "redacted" in repr(ca)


@settings(max_examples=examples(40), deadline=None)
@given(service=DNS_LABEL, namespace=DNS_LABEL)
def test_any_service_gets_a_verifying_leaf(ca: PemPair, service: str, namespace: str) -> None:
    """For any DNS-label service and namespace, the leaf matches its key and verifies for .svc."""
    now = dt.datetime(2030, 6, 1, tzinfo=dt.UTC)  # after the shared CA was issued
    leaf = issue_serving_cert(ca, service=service, namespace=namespace, now=now)
    pair = parse_pair(leaf.cert_pem, leaf.key_pem, cert_source="tls.crt", key_source="tls.key")
    assert pair.sans == service_dns_names(service, namespace)
    svc = f"{service}.{namespace}.svc"
    assert chain_problem(pair.cert, [_cert(ca)], server_name=svc, now=now) is None
