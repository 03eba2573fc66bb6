"""`KubernetesApi` over the official client, against a recording HTTP server on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fakeapi import send_json
from kubernetes import client

from draguard.certs.cluster import ClusterError, KubernetesApi


@dataclass
class Recorded:
    """One request the fake apiserver received."""

    method: str
    path: str
    content_type: str | None
    body: Any


@dataclass
class FakeApiserver:
    """Answers from `responses` keyed by (method, path); 404 for anything else."""

    responses: dict[tuple[str, str], tuple[int, Any]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)


@pytest.fixture
def apiserver() -> Iterator[tuple[FakeApiserver, KubernetesApi]]:
    """A fake apiserver over plain HTTP on loopback and a KubernetesApi talking to it."""
    fake = FakeApiserver()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            fake.requests.append(
                Recorded(self.command, self.path, self.headers.get("Content-Type"), body)
            )
            status, payload = fake.responses.get(
                (self.command, self.path),
                (404, {"kind": "Status", "message": "not found", "code": 404}),
            )
            send_json(self, status, payload)

        do_GET = do_POST = do_PUT = do_PATCH = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{server.server_port}"
    try:
        yield fake, KubernetesApi(client.ApiClient(configuration))
    finally:
        server.shutdown()
        server.server_close()


SECRET_PATH = "/api/v1/namespaces/ns/secrets/s"
VWC_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/draguard"
MWC_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/draguard"


def test_missing_secret_reads_as_none(apiserver: tuple[FakeApiserver, KubernetesApi]) -> None:
    """A 404 from the apiserver is `None`, not an error."""
    _, api = apiserver
    assert api.read_secret("ns", "s") is None


def test_read_returns_the_wire_json(apiserver: tuple[FakeApiserver, KubernetesApi]) -> None:
    """Reads hand back the apiserver's JSON untouched (base64 data, camelCase keys)."""
    fake, api = apiserver
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "resourceVersion": "3"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "QUJD"},
    }
    fake.responses[("GET", SECRET_PATH)] = (200, secret)
    assert api.read_secret("ns", "s") == secret


def test_create_and_replace_send_the_body_as_json(
    apiserver: tuple[FakeApiserver, KubernetesApi],
) -> None:
    """create POSTs and replace PUTs exactly the given body as application/json."""
    fake, api = apiserver
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": "s", "namespace": "ns", "labels": {"a": "b"}},
        "data": {"ca.crt": "QUJD"},
    }
    fake.responses[("POST", "/api/v1/namespaces/ns/secrets")] = (201, body)
    fake.responses[("PUT", SECRET_PATH)] = (200, body)
    api.create_secret("ns", body)
    api.replace_secret("ns", "s", body)
    assert [(r.method, r.path, r.content_type, r.body) for r in fake.requests] == [
        ("POST", "/api/v1/namespaces/ns/secrets", "application/json", body),
        ("PUT", SECRET_PATH, "application/json", body),
    ]


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        pytest.param("ValidatingWebhookConfiguration", VWC_PATH, id="validating"),
        pytest.param("MutatingWebhookConfiguration", MWC_PATH, id="mutating"),
    ],
)
def test_patch_is_a_json_patch(
    apiserver: tuple[FakeApiserver, KubernetesApi], kind: Any, path: str
) -> None:
    """The caBundle patch goes out as application/json-patch+json with the operations as given."""
    fake, api = apiserver
    patch = [{"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "QUJD"}]
    fake.responses[("PATCH", path)] = (200, {"kind": kind, "webhooks": []})
    api.patch_webhook_configuration(kind, "draguard", patch)
    assert [(r.method, r.path, r.content_type, r.body) for r in fake.requests] == [
        ("PATCH", path, "application/json-patch+json", patch)
    ]


@pytest.mark.parametrize(
    ("status", "message"),
    [
        pytest.param(409, "the object has been modified", id="conflict"),
        pytest.param(403, 'secrets "s" is forbidden', id="forbidden"),
        pytest.param(422, "data: Invalid value", id="invalid"),
    ],
)
def test_api_errors_become_cluster_errors(
    apiserver: tuple[FakeApiserver, KubernetesApi], status: int, message: str
) -> None:
    """An error answer becomes ClusterError carrying the status and the apiserver's message."""
    fake, api = apiserver
    fake.responses[("PUT", SECRET_PATH)] = (status, {"kind": "Status", "message": message})
    with pytest.raises(ClusterError, match=message) as caught:
        api.replace_secret("ns", "s", {"metadata": {"name": "s"}})
    assert caught.value.status == status


def test_unreachable_apiserver_is_a_cluster_error() -> None:
    """No listener at the address gives ClusterError, not a urllib3 traceback."""
    configuration = client.Configuration()
    configuration.host = "http://127.0.0.1:9"
    configuration.retries = 0
    api = KubernetesApi(client.ApiClient(configuration))
    with pytest.raises(ClusterError, match="cannot reach the apiserver"):
        api.read_secret("ns", "s")
