"""The apiserver's ordinary review, answered without Flask's per-request machinery.

Under keep-alive load Flask's request context, URL matching, header parsing and
`Response` object cost about as much as judging a typical claim. Every review the
apiserver sends looks the same at the HTTP level: `POST /validate` or `/mutate`,
`Content-Type: application/json`, a `Content-Length` within the limit. This WSGI
middleware answers exactly those through `routes.judge` (the function behind the
Flask routes, so the answer, metrics and decision line are the same) and passes
everything else (other paths and methods, chunked bodies, other content types,
oversized bodies) to the Flask app unchanged, where the request hygiene lives.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask
from werkzeug.exceptions import ClientDisconnected

from draguard.webhook.app import WebhookState
from draguard.webhook.routes import error_body, judge

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

ENDPOINTS = {"/validate": "validate", "/mutate": "mutate"}
# The reason phrases Werkzeug sends for the statuses `judge` returns.
STATUS_LINES = {200: "200 OK", 400: "400 BAD REQUEST"}


class FastPath:
    """WSGI middleware in front of `flask_app.wsgi_app`; see the module docstring."""

    def __init__(self, flask_app: Flask, state: WebhookState) -> None:
        self.flask_app = flask_app
        self.app: WsgiApp = flask_app.wsgi_app
        self.state = state

    def __call__(self, environ: dict[str, Any],
                 start_response: StartResponse) -> Iterable[bytes]:
        endpoint = ENDPOINTS.get(environ.get("PATH_INFO", ""))
        length = self._plain_length(environ) if endpoint is not None else None
        if endpoint is None or length is None:
            return self.app(environ, start_response)
        started = time.perf_counter()
        try:
            status, payload = self._answer(environ, endpoint, length, started)
        except Exception as exc:  # as Flask would: logged, 500 through the error handler
            with self.flask_app.request_context(environ):
                response = self.flask_app.handle_exception(exc)
            return response(environ, start_response)
        data = payload.encode()
        start_response(STATUS_LINES[status], [("Content-Type", "application/json"),
                                              ("Content-Length", str(len(data)))])
        return [data]

    def _answer(self, environ: dict[str, Any], endpoint: str, length: int,
                started: float) -> tuple[int, str]:
        body = environ["wsgi.input"].read(length)
        if len(body) < length and "wsgi.input_terminated" not in environ:
            # A body cut short: Werkzeug raises ClientDisconnected, which the error handler
            # answers (uncounted, unlogged). Behind a server that terminates the input
            # (gunicorn) it reads what came instead, as done here.
            return 400, error_body(400, ClientDisconnected.description or "")
        return judge(self.state, endpoint, body, started)

    def _plain_length(self, environ: dict[str, Any]) -> int | None:
        """The body length of an ordinary review, else None (Flask answers it)."""
        if (environ.get("REQUEST_METHOD") != "POST"
                or environ.get("CONTENT_TYPE") != "application/json"
                or "HTTP_TRANSFER_ENCODING" in environ):
            return None
        text = environ.get("CONTENT_LENGTH")
        if not isinstance(text, str) or not (text.isascii() and text.isdigit()):
            return None
        length = int(text)
        return length if 0 < length <= self.state.config.max_body_bytes else None
