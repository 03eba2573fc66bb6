"""Real TLS on loopback: a client trusting only the CA reaches the Service name."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from draguard.certs.files import StatePaths, create_certificates, renew

SERVICE_NAME = "draguard.draguard-system.svc"


@contextlib.contextmanager
def tls_server(paths: StatePaths) -> Iterator[int]:
    """Serve TLS with the folder's serving pair on 127.0.0.1; answer each handshake with b"ok"."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(paths.tls_cert, paths.tls_key)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)  # poll, so that closing the server does not wait on accept()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            raw.settimeout(5)
            with contextlib.suppress(OSError), context.wrap_socket(raw, server_side=True) as conn:
                conn.sendall(b"ok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()
        thread.join(timeout=5)


def fetch(port: int, *, cafile: Path, server_name: str) -> tuple[bytes, x509.Certificate]:
    """Connect as a verifying client; what the server said and the certificate it showed."""
    context = ssl.create_default_context(cafile=str(cafile))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=server_name) as conn,
    ):
        der = conn.getpeercert(binary_form=True)
        assert der is not None
        return conn.recv(2), x509.load_der_x509_certificate(der)


@pytest.fixture(scope="module")
def live_states(tmp_path_factory: pytest.TempPathFactory) -> dict[str, StatePaths]:
    """State folders issued at the real current time (the ssl module uses the real clock)."""
    states = {}
    for key_type in ("ecdsa", "rsa"):
        folder = tmp_path_factory.mktemp(key_type)
        create_certificates(folder, key_type=key_type)
        states[key_type] = StatePaths.of(folder)
    return states


@pytest.mark.parametrize("key_type", ["ecdsa", "rsa"])
@pytest.mark.parametrize(
    "server_name",
    [
        pytest.param(SERVICE_NAME, id="svc"),
        pytest.param("draguard.draguard-system.svc.cluster.local", id="cluster-local"),
        pytest.param("draguard", id="short"),
    ],
)
def test_client_trusting_only_the_ca_connects(
    live_states: dict[str, StatePaths], key_type: str, server_name: str
) -> None:
    """A client whose only trust anchor is ca.crt completes the handshake for each Service name."""
    paths = live_states[key_type]
    with tls_server(paths) as port:
        answer, _ = fetch(port, cafile=paths.ca_cert, server_name=server_name)
    assert answer == b"ok"


def test_wrong_hostname_is_rejected(live_states: dict[str, StatePaths]) -> None:
    """A name the certificate does not carry fails hostname verification."""
    paths = live_states["ecdsa"]
    with tls_server(paths) as port, pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        fetch(port, cafile=paths.ca_cert, server_name="other.draguard-system.svc")


def test_another_ca_is_not_trusted(live_states: dict[str, StatePaths]) -> None:
    """A client trusting a different CA refuses the serving certificate."""
    with (
        tls_server(live_states["ecdsa"]) as port,
        pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer"),
    ):
        fetch(port, cafile=live_states["rsa"].ca_cert, server_name=SERVICE_NAME)


def test_renewed_leaf_is_trusted_with_the_old_bundle(tmp_path: Path) -> None:
    """After renewal the same ca.crt still verifies the new, different serving certificate."""
    paths = create_certificates(tmp_path / "state").paths
    bundle = tmp_path / "bundle.crt"
    bundle.write_bytes(paths.ca_cert.read_bytes())
    with tls_server(paths) as port:
        _, before = fetch(port, cafile=bundle, server_name=SERVICE_NAME)
    renew(paths.dir)
    with tls_server(paths) as port:
        answer, after = fetch(port, cafile=bundle, server_name=SERVICE_NAME)
    assert answer == b"ok"
    assert after.serial_number != before.serial_number
