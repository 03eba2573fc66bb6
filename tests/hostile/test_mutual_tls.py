"""`--client-ca`: only clients with a certificate from that CA are served (issue 15 §5)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from .conftest import is_admission_review, launch, review
from .test_faults import GPU_CLAIM, wait_for

BOUND = 30.0  # seconds: only stops a wait that would otherwise hang


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mtls")
    clients = trustme.CA()
    clients.cert_pem.write_to_path(str(folder / "client-ca.crt"))
    clients.issue_cert("kube-apiserver").private_key_and_cert_chain_pem.write_to_path(
        str(folder / "apiserver.pem"))
    stranger = trustme.CA().issue_cert("kube-apiserver")
    stranger.private_key_and_cert_chain_pem.write_to_path(str(folder / "stranger.pem"))
    return folder


@pytest.fixture(scope="module")
def server(folder: Path) -> Iterator[Any]:
    running = launch(folder, "--metrics-dir", str(folder / "metrics"),
                     "--client-ca", str(folder / "client-ca.crt"))
    yield running
    running.stop()


def client(server: Any, pem: Path | None) -> Any:
    api = server.client()
    if pem is not None:
        api.context.load_cert_chain(str(pem))
    return api


def answers(api: Any, uid: str) -> bool:
    try:
        return is_admission_review(api.review(review(GPU_CLAIM, uid=uid), fresh=True).body, uid)
    except (ssl.SSLError, ConnectionError):
        return False


def test_client_with_a_certificate_from_the_ca_is_served(server: Any, folder: Path) -> None:
    assert wait_for(lambda: answers(client(server, folder / "apiserver.pem"), "m1"), BOUND)


def test_client_without_a_certificate_is_refused(server: Any, folder: Path) -> None:
    assert wait_for(lambda: answers(client(server, folder / "apiserver.pem"), "ok"), BOUND)
    assert not answers(client(server, None), "m2")


def test_client_with_a_certificate_from_another_ca_is_refused(server: Any, folder: Path) -> None:
    assert wait_for(lambda: answers(client(server, folder / "apiserver.pem"), "ok"), BOUND)
    assert not answers(client(server, folder / "stranger.pem"), "m3")
