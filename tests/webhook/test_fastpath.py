"""The fast path answers ordinary reviews exactly as the Flask routes behind it would."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import EnvironBuilder, run_wsgi_app

from draguard.schema.options import Options
from draguard.schema.validate import Verdict
from draguard.webhook.app import create_app, decisions
from draguard.webhook.config import Config
from draguard.webhook.fastpath import FastPath
from draguard.webhook.review import RuleSet

LIMIT = 4096
CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "ns"},
    "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "a", "deviceClassName": "a.example.com"},
        {"name": "b", "deviceClassName": "b.example.com", "count": 2}]}]}},
}
BAD_CLAIM: dict[str, Any] = {**CLAIM, "spec": {"devices": {"requests": [{"name": "GPU!"}]}}}


def review(obj: Any = CLAIM, **request: Any) -> bytes:
    body = {"uid": "uid-1", "operation": "CREATE", "namespace": "ns", "object": obj, **request}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": body}).encode()


BODIES = {
    "allowed": review(),
    "denied": review(BAD_CLAIM),
    "connect": review(None, operation="CONNECT"),
    "skipped": review({"apiVersion": "v1", "kind": "Pod"}),
    "not-json": b"{not json",
    "not-utf8": b"\xff\xfe",
    "missing-uid": review(uid=""),
}


@pytest.fixture(scope="module")
def app() -> Flask:
    return create_app(Config(max_body_bytes=LIMIT), tls=False)


@pytest.fixture
def lines() -> Iterator[list[dict[str, Any]]]:
    records: list[dict[str, Any]] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.msg)  # type: ignore[method-assign,assignment]
    decisions.addHandler(handler)
    yield records
    decisions.removeHandler(handler)


def call(wsgi: Any, body: bytes, *, path: str = "/validate",
         content_type: str = "application/json", **environ: Any) -> tuple[str, list[Any], bytes]:
    env = EnvironBuilder(path=path, method="POST", data=body,
                         content_type=content_type).get_environ()
    env.update(environ)
    chunks, status, headers = run_wsgi_app(wsgi, env)
    return status, list(headers.items()), b"".join(chunks)


def fast(app: Flask) -> FastPath:
    assert isinstance(app.wsgi_app, FastPath)
    return app.wsgi_app


@pytest.mark.parametrize("case", list(BODIES))
@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_same_answer_as_flask(app: Flask, lines: list[dict[str, Any]], case: str,
                              path: str) -> None:
    """Status line, headers, body and decision line equal the Flask route's."""
    body = BODIES[case]
    by_fast = call(fast(app), body, path=path)
    fast_lines = list(lines)
    lines.clear()
    by_flask = call(fast(app).app, body, path=path)
    assert by_fast == by_flask
    for line in (*fast_lines, *lines):
        line.pop("time"), line.pop("latencyMs")
    assert fast_lines == lines


@pytest.mark.parametrize(("content_type", "environ"), [
    ("application/json; charset=utf-8", {}),
    ("text/plain", {}),
    ("application/json", {"HTTP_TRANSFER_ENCODING": "chunked"}),
    ("application/json", {"CONTENT_LENGTH": "+12"}),
])
def test_unusual_requests_go_to_flask(app: Flask, content_type: str,
                                      environ: dict[str, str]) -> None:
    """Anything but the apiserver's plain request is Flask's (and answered as before)."""
    seen: list[str] = []
    path = fast(app)

    def flask_app(env: dict[str, Any], start_response: Any) -> Any:
        seen.append(env["CONTENT_TYPE"])
        return path.app(env, start_response)

    probe = FastPath(app, path.state)
    probe.app = flask_app
    call(probe, BODIES["allowed"], content_type=content_type, **environ)
    assert seen == [content_type]


@pytest.mark.parametrize("terminated", [False, True])
def test_short_body_is_answered_as_flask_does(app: Flask, terminated: bool) -> None:
    """A client that sends less than its Content-Length gets the 400 Flask would send.

    Werkzeug's own: ClientDisconnected; behind gunicorn (`wsgi.input_terminated`) the
    review is read as far as it came, so it is a BadReview.
    """
    body = BODIES["allowed"][:-5]
    short: dict[str, Any] = {"CONTENT_LENGTH": str(len(body) + 5)}
    if terminated:
        short["wsgi.input_terminated"] = True
    by_fast = call(fast(app), body, **short, **{"wsgi.input": io.BytesIO(body)})
    by_flask = call(fast(app).app, body, **short, **{"wsgi.input": io.BytesIO(body)})
    assert by_fast == by_flask
    assert by_fast[0].startswith("400")


def test_unexpected_error_is_flasks_500(monkeypatch: pytest.MonkeyPatch) -> None:
    """An error outside the rule set (caught there) becomes Flask's logged 500 JSON."""
    app = create_app(Config(), tls=False)

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(fast(app).state.metrics, "observe", boom)
    status, _, body = call(fast(app), BODIES["allowed"])
    assert status.startswith("500")
    assert json.loads(body)["code"] == 500


def test_rule_set_is_the_apps(app: Flask) -> None:
    """The fast path judges with the app's own rule set (injected ones included)."""
    def deny_all(obj: Any, *, options: Options) -> Verdict:
        raise ValueError("rule set down")

    broken = create_app(Config(failure_mode="closed"), rules=RuleSet(create=deny_all), tls=False)
    status, _, body = call(fast(broken), BODIES["allowed"])
    assert status == "200 OK"
    assert json.loads(body)["response"]["allowed"] is False
