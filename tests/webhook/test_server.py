"""The real server: gunicorn over TLS on loopback, called as the apiserver calls it."""

from __future__ import annotations

import copy
import json
import ssl
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from draguard.schema.model.options import Options
from draguard.schema.validate import validate_object

from .conftest import SERVICE_DNS, ApiserverClient, Connection, Server

CASES = Path(__file__).resolve().parents[1] / "cases"
MAX_BODY = 3 * 1024 * 1024


def corpus() -> list[Any]:
    """Every DRA document of tests/cases, one param each."""
    params = []
    for path in sorted(CASES.glob("*.yaml")):
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if isinstance(doc, dict):
                name = (doc.get("metadata") or {}).get("name", "")
                params.append(pytest.param(doc, id=f"{path.stem}#{i}-{name}"))
    return params


def review(obj: Any, *, uid: str = "uid-1", operation: str = "CREATE", namespace: str = "default",
           old: Any = None, dry_run: bool = False) -> dict[str, Any]:
    request: dict[str, Any] = {"uid": uid, "operation": operation, "namespace": namespace,
                               "object": obj, "dryRun": dry_run}
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


GOOD: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "good", "namespace": "default"},
    "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "big.example.com"},
        {"name": "small", "deviceClassName": "small.example.com", "count": 2}]}]}},
}


@pytest.fixture(scope="module")
def client(server: Server) -> Any:
    """One kept-alive connection for the module, like the apiserver's connection pool."""
    api = server.client()
    yield api
    api.close()


def test_certificate_verifies_for_service_name(server: Server) -> None:
    """The serving certificate chains to the CA and names the service DNS name."""
    conn = server.client().connection()
    conn.connect()
    cert = conn.sock.getpeercert()
    conn.close()
    assert ("DNS", SERVICE_DNS) in cert["subjectAltName"]


def test_certificate_refused_for_other_name(server: Server) -> None:
    """A client expecting another host name rejects the certificate."""
    conn = ApiserverClient(server.port, server.ca_file, "other.example.com").connection()
    with pytest.raises(ssl.SSLCertVerificationError):
        conn.connect()


def test_tls_1_2_client_is_served(server: Server) -> None:
    """A client limited to TLS 1.2 is served (the apiserver's floor)."""
    api = server.client()
    api.context.maximum_version = ssl.TLSVersion.TLSv1_2
    conn = api.connection()
    conn.request("GET", "/healthz")
    assert conn.getresponse().status == 200
    assert conn.sock.version() == "TLSv1.2"
    conn.close()


def test_keep_alive_reuses_one_connection(server: Server) -> None:
    """Several reviews travel over one TLS connection."""
    conn = server.client().connection()
    sockets = set()
    for i in range(5):
        conn.request("POST", "/validate", body=json.dumps(review(GOOD, uid=f"k{i}")),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200 and json.loads(response.read())["response"]["allowed"]
        sockets.add(id(conn.sock))
    conn.close()
    assert len(sockets) == 1


@pytest.mark.parametrize("doc", corpus())
def test_corpus_answer_equals_rule_set(client: ApiserverClient, doc: dict[str, Any]) -> None:
    """For every corpus document, `allowed` and the causes equal the rule set's (lint's) verdict."""
    namespace = (doc.get("metadata") or {}).get("namespace") or "default"
    verdict = validate_object(doc, options=Options(default_namespace=namespace))
    reply = client.review(review(doc, namespace=namespace))
    assert reply.status == 200
    response = reply.json()["response"]
    assert response["allowed"] is (not verdict.errors)
    causes = response.get("status", {}).get("details", {}).get("causes", [])
    assert [(c["field"], c["reason"], c["message"]) for c in causes] == [
        (e.field, e.type.cause_type, e.message) for e in verdict.errors]
    advice = [f"{a.field}: {a.message}" for a in verdict.warnings]
    if advice and sum(map(len, advice)) < 3000 and all(len(a) <= 256 for a in advice):
        assert response["warnings"][-len(advice):] == advice  # within limits: all of it


def test_update_of_spec_is_denied_as_immutable(client: ApiserverClient) -> None:
    """UPDATE that changes the spec is denied with upstream's `field is immutable`."""
    new = copy.deepcopy(GOOD)
    new["spec"]["devices"]["requests"][0]["firstAvailable"].pop()
    response = client.review(review(new, operation="UPDATE", old=GOOD)).json()["response"]
    assert response["allowed"] is False
    [cause] = response["status"]["details"]["causes"]
    assert cause["field"] == "spec" and "field is immutable" in cause["message"]


def test_update_of_labels_is_allowed(client: ApiserverClient) -> None:
    """UPDATE that only adds labels is allowed."""
    new = copy.deepcopy(GOOD)
    new["metadata"]["labels"] = {"team": "ml"}
    assert client.review(review(new, operation="UPDATE", old=GOOD)).json()["response"]["allowed"]


def test_dry_run_is_answered_the_same(client: ApiserverClient) -> None:
    """A dryRun review gets the same answer as a real one."""
    bad = copy.deepcopy(GOOD)
    bad["spec"]["devices"]["requests"][0]["name"] = "GPU"
    real = client.review(review(bad)).json()
    dry = client.review(review(bad, dry_run=True)).json()
    assert real == dry and real["response"]["allowed"] is False


def test_delete_is_allowed(client: ApiserverClient) -> None:
    """DELETE (object null, oldObject set) is allowed."""
    reply = client.review(review(None, operation="DELETE", old=GOOD))
    assert reply.json()["response"] == {"uid": "uid-1", "allowed": True}


def test_unsupported_kind_allowed_with_warning(client: ApiserverClient) -> None:
    """A kind draguard does not know is allowed with a warning."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    response = client.review(review(pod)).json()["response"]
    assert response["allowed"] is True and response["warnings"]


def test_mutate_without_policy_is_empty(client: ApiserverClient) -> None:
    """/mutate without a policy allows with no patch."""
    response = client.review(review(GOOD), path="/mutate").json()["response"]
    assert response == {"uid": "uid-1", "allowed": True}


def too_large() -> bytes:
    padding = "x" * MAX_BODY
    return json.dumps({**review(GOOD), "padding": padding}).encode()


@pytest.mark.parametrize(("body", "content_type", "status"), [
    pytest.param(too_large(), "application/json", 413, id="over-3MiB"),
    pytest.param(json.dumps(review(GOOD)).encode(), "text/yaml", 415, id="wrong-content-type"),
    pytest.param(b'{"apiVersion": "admission.k8s.io/v1", "kind": "Adm', "application/json", 400,
                 id="malformed-json"),
    pytest.param(json.dumps(review(GOOD, uid="")).encode(), "application/json", 400,
                 id="missing-uid"),
    pytest.param(json.dumps(review(None)).encode(), "application/json", 400,
                 id="missing-object"),
    pytest.param(b"\x00\xff" * 100, "application/json", 400, id="binary"),
])
@pytest.mark.parametrize("fresh", [False, True], ids=["keep-alive", "new-connection"])
def test_hostile_input_then_still_serving(server: Server, body: bytes, content_type: str,
                                          status: int, fresh: bool) -> None:
    """Each malformed body class gets its status code and the server answers the next review."""
    api = server.client()
    reply = api.request("POST", "/validate", body, content_type=content_type, fresh=fresh)
    assert reply.status == status
    assert json.loads(reply.body)["message"]
    assert api.review(review(GOOD)).json()["response"]["allowed"] is True
    api.close()


@pytest.mark.parametrize("sent", [0, 10, 500])
def test_body_shorter_than_its_length_then_still_serving(server: Server, sent: int) -> None:
    """A client that announces more bytes than it sends and hangs up: a 400 or nothing, and
    the worker serves the next review (the body is read by its Content-Length)."""
    body = json.dumps(review(GOOD)).encode()
    conn = server.client().connection()
    conn.connect()
    conn.sock.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                      b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:sent])
    conn.sock.close()  # the body ends early
    api = server.client()
    assert api.review(review(GOOD)).json()["response"]["allowed"] is True
    api.close()


def metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_metrics_add_up_across_workers(server: Server) -> None:
    """Requests answered by any worker appear in /metrics read from any worker."""
    api = server.client()
    labels = {"endpoint": "validate", "operation": "CONNECT", "decision": "ignored"}

    def scrape() -> float:
        text = api.request("GET", "/metrics", fresh=True).body.decode()
        return metric(text, "draguard_admission_requests_total", **labels)

    before = scrape()
    for i in range(12):  # new connections spread over both workers
        api.review(review(None, operation="CONNECT", uid=f"m{i}"), fresh=True)
    deadline = time.monotonic() + 30  # a bound on polling, not a speed check
    while scrape() != before + 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    seen = {scrape() for _ in range(6)}
    assert seen == {before + 12}


def test_decision_log_line(server: Server, client: ApiserverClient) -> None:
    """Each decision is one JSON line in the server log with uid, names, outcome and latency."""
    client.review(review(GOOD, uid="find-this-uid"))
    deadline = time.monotonic() + 30  # a bound on polling, not a speed check
    while time.monotonic() < deadline:
        lines = [json.loads(line) for line in server.log().splitlines()
                 if line.startswith("{") and "find-this-uid" in line]
        if lines:
            break
        time.sleep(0.05)
    [line] = lines
    assert (line["kind"], line["namespace"], line["name"]) == ("ResourceClaim", "default", "good")
    assert line["allowed"] is True and line["findings"] == 0 and line["latencyMs"] > 0


def test_health_endpoints(server: Server) -> None:
    """/healthz and /readyz answer 200 on a started server."""
    api = server.client()
    assert api.request("GET", "/healthz").status == 200
    assert api.request("GET", "/readyz").status == 200
    api.close()


def test_connection_fingerprint_helper(server: Server) -> None:
    """The test client can read the served certificate's fingerprint (used by rotation tests)."""
    conn: Connection = server.client().connection()
    conn.connect()
    assert len(conn.peer_fingerprint()) == 64
    conn.close()
