"""The Flask app through its test client: hygiene, health, metrics, decision log (no TLS)."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from budget import examples
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draguard.schema.model.options import Options
from draguard.schema.validate import Verdict
from draguard.webhook.app import create_app
from draguard.webhook.config import Config
from draguard.webhook.review import RuleSet
from draguard.webhook.routes import decisions

LIMIT = 4096  # a small body limit keeps the 413 tests cheap

CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "ns"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}]}},
}
BAD_CLAIM: dict[str, Any] = {**CLAIM, "spec": {"devices": {"requests": [{"name": "GPU!"}]}}}


def review(obj: Any = CLAIM, **request: Any) -> dict[str, Any]:
    body = {"uid": "uid-1", "operation": "CREATE", "namespace": "ns", "object": obj, **request}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


@pytest.fixture(scope="module")
def app() -> Flask:
    """One app with the real rule set, a small body limit and no TLS cache."""
    return create_app(Config(max_body_bytes=LIMIT), tls=False)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def post(client: FlaskClient, body: bytes | str, *, path: str = "/validate",
         content_type: str = "application/json") -> Any:
    return client.post(path, data=body, content_type=content_type)


@pytest.mark.parametrize(("body", "content_type", "status"), [
    pytest.param(b"x" * (LIMIT + 1), "application/json", 413, id="too-large"),
    pytest.param(json.dumps(review()), "text/plain", 415, id="text-plain"),
    pytest.param(json.dumps(review()), "application/x-www-form-urlencoded", 415, id="form"),
    pytest.param(b"{not json", "application/json", 400, id="malformed-json"),
    pytest.param(json.dumps(review(uid="")), "application/json", 400, id="missing-uid"),
    pytest.param(json.dumps(review(obj=None)), "application/json", 400, id="missing-object"),
    pytest.param(json.dumps({"kind": "AdmissionReview"}), "application/json", 400,
                 id="wrong-version"),
])
@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_hygiene_status(client: FlaskClient, path: str, body: bytes | str, content_type: str,
                        status: int) -> None:
    """Each malformed-request class gets its status code and a JSON message, never a 500."""
    response = post(client, body, path=path, content_type=content_type)
    assert response.status_code == status
    assert response.get_json()["message"]


def test_json_with_charset_is_accepted(client: FlaskClient) -> None:
    """`application/json; charset=utf-8` is JSON too."""
    response = post(client, json.dumps(review()), content_type="application/json; charset=utf-8")
    assert response.status_code == 200


def test_valid_claim_allowed(client: FlaskClient) -> None:
    """A valid claim is allowed and the uid echoed."""
    response = post(client, json.dumps(review()))
    assert response.get_json()["response"] == {"uid": "uid-1", "allowed": True}


def test_invalid_claim_denied_with_422(client: FlaskClient) -> None:
    """An invalid claim is denied with the apiserver's 422 Status inside a 200 response."""
    response = post(client, json.dumps(review(BAD_CLAIM)))
    assert response.status_code == 200
    status = response.get_json()["response"]["status"]
    assert status["code"] == 422
    assert status["message"].startswith('ResourceClaim.resource.k8s.io "c" is invalid: ')


def test_get_on_validate_is_405(client: FlaskClient) -> None:
    """A wrong method is a JSON 405, not an HTML page."""
    response = client.get("/validate")
    assert response.status_code == 405 and response.get_json()["code"] == 405


def test_healthz(client: FlaskClient) -> None:
    """/healthz answers ok while the process runs."""
    assert client.get("/healthz").status_code == 200


def test_readyz_ready_with_warm_rules(client: FlaskClient) -> None:
    """/readyz is 200 once the rule set has warmed up (no TLS cache in this app)."""
    assert client.get("/readyz").status_code == 200


def broken_create(obj: Any, *, options: Options) -> Verdict:
    raise RuntimeError("rule set broken")


def test_readyz_not_ready_when_rules_fail() -> None:
    """/readyz is 503 naming the reason when the rule set cannot warm up."""
    app = create_app(Config(), rules=RuleSet(create=broken_create), tls=False)
    response = app.test_client().get("/readyz")
    assert response.status_code == 503 and b"rule set not ready" in response.data


def test_readyz_not_ready_without_certificate(tmp_path: Any) -> None:
    """/readyz is 503 when the worker has no usable TLS certificate."""
    app = create_app(Config(state_dir=tmp_path))
    response = app.test_client().get("/readyz")
    assert response.status_code == 503 and b"TLS certificate" in response.data


@pytest.mark.parametrize(("mode", "allowed"), [("open", True), ("closed", False)])
def test_internal_error_keeps_serving(mode: Any, allowed: bool) -> None:
    """A crashing rule set answers per failure mode and the next request is answered too."""
    app = create_app(Config(failure_mode=mode), rules=RuleSet(create=broken_create), tls=False)
    client = app.test_client()
    for _ in range(2):
        response = post(client, json.dumps(review()))
        assert response.status_code == 200
        assert response.get_json()["response"]["allowed"] is allowed


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample in Prometheus text, 0 when absent."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_count_decisions(app: Flask) -> None:
    """Requests are counted by endpoint, kind, version, operation and decision."""
    client = app.test_client()
    labels = {"endpoint": "validate", "kind": "ResourceClaim", "version": "resource.k8s.io/v1",
              "operation": "CREATE", "decision": "denied"}
    before = sample(client.get("/metrics").text, "draguard_admission_requests_total", **labels)
    for _ in range(3):
        post(client, json.dumps(review(BAD_CLAIM)))
    text = client.get("/metrics").text
    assert sample(text, "draguard_admission_requests_total", **labels) == before + 3
    assert 'le="0.0005"' in text  # the latency histogram starts at 0.5 ms


def test_metrics_clamp_hostile_labels(app: Flask) -> None:
    """An unknown kind from the request is counted as `other`, not as a new series."""
    client = app.test_client()
    post(client, json.dumps(review({"apiVersion": "evil/v9", "kind": "Evil" * 10})))
    text = client.get("/metrics").text
    assert "Evil" not in text
    assert sample(text, "draguard_admission_requests_total", kind="other", version="other",
                  decision="skipped") >= 1


class Lines(logging.Handler):
    """Collects decision records as the JSON the log line would carry."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(json.loads(json.dumps(record.msg)))


@pytest.fixture
def decision_lines() -> Iterator[list[dict[str, Any]]]:
    # With a handler already there `create_app` leaves the logger as it is, level
    # included: set INFO here, or the test passes only after another test's app did.
    handler, level = Lines(), decisions.level
    decisions.addHandler(handler)
    decisions.setLevel(logging.INFO)
    yield handler.records
    decisions.removeHandler(handler)
    decisions.setLevel(level)


def test_one_decision_line_per_review(client: FlaskClient,
                                      decision_lines: list[dict[str, Any]]) -> None:
    """Each review logs one JSON record: uid, kind, name, allowed, findings, latency."""
    post(client, json.dumps(review(BAD_CLAIM, uid="log-me")))
    [line] = decision_lines
    assert line["uid"] == "log-me" and line["kind"] == "ResourceClaim"
    assert (line["namespace"], line["name"]) == ("ns", "c")
    assert line["allowed"] is False and line["findings"] >= 1
    assert line["latencyMs"] > 0


def test_a_huge_name_is_echoed_bounded(decision_lines: list[dict[str, Any]]) -> None:
    """A name of nearly 3 MiB (issue 15: a 12 MB answer) comes back clipped, in the answer
    and in the log line; the uid is echoed whole."""
    app = create_app(Config(review_timeout=120), tls=False)  # judged, not timed out
    claim = copy.deepcopy(CLAIM)
    claim["metadata"]["name"] = "a" * (3 * 1024 * 1024 - 4096)
    response = post(app.test_client(), json.dumps(review(claim, uid="huge")))
    assert response.status_code == 200 and len(response.data) < 64 * 1024
    answer = response.get_json()["response"]
    assert answer["uid"] == "huge" and answer["allowed"] is False
    assert answer["status"]["details"]["name"].endswith("more characters)")
    [line] = decision_lines
    assert len(line["name"]) < 300


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          deadline=None)
@given(body=st.one_of(
    st.binary(max_size=300),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                 lambda inner: st.lists(inner, max_size=4)
                 | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                 max_leaves=20).map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"uid": st.text(max_size=5), "operation": st.sampled_from(
        ["CREATE", "UPDATE", "DELETE", "CONNECT", "X"]), "object": st.one_of(
        st.none(), st.just(CLAIM), st.dictionaries(st.text(max_size=5), st.integers()))})
    .map(lambda r: json.dumps({"apiVersion": "admission.k8s.io/v1",
                               "kind": "AdmissionReview", "request": r}).encode()),
))
def test_any_body_gets_a_well_formed_answer(client: FlaskClient, body: bytes) -> None:
    """Every byte string gets a well-formed AdmissionReview response or a 4xx, never a 500."""
    response = post(client, body)
    assert response.status_code in (200, 400, 413)
    if response.status_code == 200:
        doc = response.get_json()
        assert doc["apiVersion"] == "admission.k8s.io/v1" and doc["kind"] == "AdmissionReview"
        assert isinstance(doc["response"]["allowed"], bool)
        assert doc["response"]["uid"] == json.loads(body)["request"]["uid"]


def test_internal_error_traceback_is_logged() -> None:
    """An internal error's traceback goes to the server log, not to the client."""
    app = create_app(Config(), rules=RuleSet(create=broken_create), tls=False)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("draguard.webhook")
    logger.addHandler(handler)
    try:
        post(app.test_client(), json.dumps(review()))
    finally:
        logger.removeHandler(handler)
    [record] = [r for r in records if r.levelno == logging.ERROR and "internal error" in r.msg]
    assert "RuntimeError: rule set broken" in record.getMessage()


@pytest.mark.parametrize("value", ["plain", "grüße ✓", "\ud800", 2**70, -(2**63) - 1])
def test_answers_encode_every_value_the_stdlib_would(value: object) -> None:
    """orjson writes the answer, the stdlib what orjson refuses; both read back the same."""
    from draguard.webhook.routes import encode_answer

    document = {"response": {"uid": "u", "allowed": True, "warnings": [value]}}
    encoded = encode_answer(document)
    text = encoded.decode() if isinstance(encoded, bytes) else encoded
    assert json.loads(text) == json.loads(json.dumps(document))


LENGTHS = st.one_of(st.none(), st.integers(min_value=0, max_value=10**12).map(str),
                    st.sampled_from(["", " 12", "12 ", "+12", "-1", "1_000", "0x10", "١٢",
                                     "12, 12", "00012", "1e3"]),
                    st.text(max_size=6))
ENCODINGS = st.one_of(st.none(), st.sampled_from(["chunked", "gzip, chunked", "CHUNKED",
                                                  "identity", "gzip", ""]))


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(LENGTHS, ENCODINGS)
def test_content_length_is_werkzeugs(app: Flask, length: str | None,
                                     encoding: str | None) -> None:
    """The body length read from the environ equals `request.content_length`."""
    from flask import request

    from draguard.webhook.routes import _content_length

    environ: dict[str, Any] = {}
    if length is not None:
        environ["CONTENT_LENGTH"] = length
    if encoding is not None:
        environ["HTTP_TRANSFER_ENCODING"] = encoding
    with app.test_request_context("/validate", method="POST", environ_overrides=environ):
        if length is None:
            request.environ.pop("CONTENT_LENGTH", None)
        assert _content_length(request.environ) == request.content_length
