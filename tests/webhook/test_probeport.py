"""`--metrics-port`: /metrics, /healthz and /readyz over plain HTTP from a real serve."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from draguard.webhook.config import ConfigError, parse_config

from .conftest import Server, free_port, start_server

CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "c", "namespace": "default"},
         "spec": {"devices": {"requests": [
             {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
REVIEW = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
          "request": {"uid": "u-1", "operation": "CREATE", "object": CLAIM}}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, int]]:
    plain = free_port()
    running = start_server(tmp_path_factory.mktemp("probeport"), "--metrics-port", str(plain))
    yield running, plain
    running.stop()


def plain_get(port: int, path: str, method: str = "GET",
              body: bytes | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_answer_over_plain_http(served: tuple[Server, int], path: str) -> None:
    """The kubelet's probe paths answer 200 on the plain port once the server is ready."""
    status, _ = plain_get(served[1], path)
    assert status == 200


def test_metrics_over_plain_http_count_tls_reviews(served: tuple[Server, int]) -> None:
    """/metrics on the plain port shows the reviews answered over TLS (shared across workers)."""
    server, plain = served
    api = server.client()
    for _ in range(3):
        assert api.review(REVIEW).status == 200
    api.close()
    status, body = plain_get(plain, "/metrics")
    assert status == 200
    assert b'endpoint="validate"' in body


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/validate"), ("POST", "/mutate"), ("GET", "/validate"), ("POST", "/metrics")])
def test_reviews_are_never_served_over_plain_http(served: tuple[Server, int], method: str,
                                                  path: str) -> None:
    """Anything but GET of the three paths is a 404 on the plain port."""
    status, body = plain_get(served[1], path, method, json.dumps(REVIEW).encode())
    assert status == 404
    assert b"/readyz" in body


def test_tls_port_still_serves_probes(served: tuple[Server, int]) -> None:
    """The TLS port keeps its probes (deploy/ may keep HTTPS probes)."""
    assert served[0].client().request("GET", "/readyz", fresh=True).status == 200


def test_metrics_port_must_differ_from_the_serving_port() -> None:
    with pytest.raises(ConfigError):
        parse_config(["--port", "9443", "--metrics-port", "9443"], environ={})


def test_metrics_port_from_flag_and_environment(tmp_path: Path) -> None:
    config = parse_config([], environ={"DRAGUARD_METRICS_PORT": "9090"})
    assert (config.metrics_port, config.metrics_host) == (9090, None)
    config = parse_config(["--metrics-port", "9091", "--metrics-host", "10.0.0.5"], environ={})
    assert (config.metrics_port, config.metrics_host) == (9091, "10.0.0.5")
    assert parse_config([], environ={}).metrics_port is None


def test_a_metrics_port_in_use_stops_the_start(tmp_path: Path) -> None:
    """A taken metrics port is reported and the server does not start half-way."""
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(RuntimeError, match=r"cannot serve --metrics-port") as raised:
            start_server(tmp_path, "--metrics-port", str(port))
        assert "Traceback" not in str(raised.value)
    finally:
        taken.close()


