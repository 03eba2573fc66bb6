"""HTTP endpoints: parse, hand the review to `review`, serialise, count, log.

Request hygiene (issue 4 §4) happens here and nowhere else: a body over the limit is
413, a non-JSON content type 415, an unreadable review 400 with a message; nothing a
client sends produces a 500, and an internal error in the rule set is answered by
`review` according to the failure mode.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from flask import Blueprint, Response, current_app, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from draguard.webhook.config import Config
from draguard.webhook.review import (
    MAX_NAME_ECHO,
    Answer,
    BadReview,
    Review,
    RuleSet,
    answer_mutate,
    answer_timed_out,
    answer_validate,
    clip,
    parse_review,
)
from draguard.webhook.serving.clusterview import ClusterView
from draguard.webhook.serving.deadline import HEAVY_BODY_BYTES, HEAVY_CEL_CHARS, Runner
from draguard.webhook.serving.decisionlog import log_line
from draguard.webhook.serving.metrics import Metrics
from draguard.webhook.serving.tls import ContextCache

if TYPE_CHECKING:
    from draguard.schema.policy.store import PolicyStore

log = logging.getLogger("draguard.webhook")
decisions = logging.getLogger("draguard.webhook.decisions")  # configured by `create_app`
blueprint = Blueprint("draguard", __name__)

Answerer = Callable[..., Answer]
JSON_TYPES = frozenset({"application/json"})
ANSWERERS: dict[str, Answerer] = {"validate": answer_validate, "mutate": answer_mutate}
# Built once: json.dumps with separators builds a new encoder on every call.
_compact = json.JSONEncoder(separators=(",", ":")).encode


def encode_answer(document: dict[str, Any]) -> bytes | str:
    """The AdmissionReview answer as compact JSON: orjson, or the stdlib for what it refuses.

    orjson takes a twentieth of the time; it refuses lone surrogates and integers
    beyond 64 bits, which the stdlib writes (as escapes and digits).
    """
    try:
        return orjson.dumps(document)
    except TypeError:
        return _compact(document)


@dataclass(slots=True)
class WebhookState:
    """What the routes need; one per app (per worker), built by `create_app`."""

    config: Config
    rules: RuleSet
    metrics: Metrics
    tls: ContextCache | None
    runner: Runner
    policy: PolicyStore | None = None
    warm_error: str | None = None
    view: ClusterView | None = None  # `--cluster-view`

    @property
    def not_ready(self) -> list[str]:
        """Reasons the worker should not get traffic yet (empty when ready)."""
        reasons = []
        if self.warm_error is not None:
            reasons.append(f"rule set not ready: {self.warm_error}")
        if self.tls is not None and not self.tls.loaded:
            reasons.append(f"no usable TLS certificate loaded: {self.tls.error}")
        if self.policy is not None:
            status = self.policy.status()
            if status.sha256 is None:  # never a good policy: its rules are not enforced
                reasons.append(f"policy not loaded: {status.error}")
        if self.view is not None:
            # The checks would be skipped (warning cluster-view-stale) until every kind
            # is listed; another replica that has its view should answer meanwhile.
            loading = self.view.not_ready()
            if loading is not None:
                reasons.append(loading)
        return reasons


def _state() -> WebhookState:
    state: WebhookState = current_app.extensions["draguard"]
    return state


@blueprint.post("/validate")
def validate() -> Response:
    return _admit("validate")


@blueprint.post("/mutate")
def mutate() -> Response:
    return _admit("mutate")


@blueprint.get("/healthz")
def healthz() -> Response:
    return Response("ok\n", mimetype="text/plain")


@blueprint.get("/readyz")
def readyz() -> Response:
    reasons = _state().not_ready
    if reasons:
        return Response("\n".join(reasons) + "\n", status=503, mimetype="text/plain")
    return Response("ok\n", mimetype="text/plain")


@blueprint.get("/metrics")
def metrics() -> Response:
    body, content_type = _state().metrics.render()
    return Response(body, content_type=content_type)


@blueprint.app_errorhandler(HTTPException)
def http_error(exc: HTTPException) -> Response:
    """Every HTTP error as a small JSON body (413 from Werkzeug's length check included)."""
    code = exc.code or 500
    return _error(code, exc.description or exc.name)


def _admit(endpoint: str) -> Response:
    started = time.perf_counter()
    state = _state()
    environ = request.environ
    length = _content_length(environ)
    rejected = _reject_transport(state, environ, length)
    if rejected is not None:
        code, message, decision = rejected
        _count(state, endpoint, decision, started)
        return _error(code, message, keep_alive=_drain(environ, length, state.config.max_body_bytes))
    if length is not None:
        # Within the limit (checked above): read exactly that from the server, without
        # werkzeug's limited-stream wrapper (PEP 3333: the server's stream, read to the length).
        body = environ["wsgi.input"].read(length)
    else:
        try:
            body = request.get_data(cache=False)
        except RequestEntityTooLarge:  # a chunked body that turned out too long
            _count(state, endpoint, "too_large", started)
            return _error(413, f"body larger than {state.config.max_body_bytes} bytes")
    status, payload = judge(state, endpoint, body, started)
    return Response(payload, status=status, mimetype="application/json")


def _content_length(environ: dict[str, Any]) -> int | None:
    """`request.content_length`, read from the environ when it is plain digits.

    werkzeug builds its header view and parses Transfer-Encoding for it; anything but
    a plain length without Transfer-Encoding still goes to it.
    """
    raw = environ.get("CONTENT_LENGTH")
    if "HTTP_TRANSFER_ENCODING" in environ or raw is None or not (
            raw.isascii() and raw.isdigit()):
        length: int | None = request.content_length
        return length
    return int(raw)


def judge(
    state: WebhookState, endpoint: str, body: bytes, started: float
) -> tuple[int, bytes | str]:
    """Status and JSON body for a review whose body has been read; counted and logged."""
    try:
        review = parse_review(body)
    except BadReview as exc:
        _count(state, endpoint, "bad_request", started)
        return 400, error_body(400, str(exc))
    heavy = _heavy(state, body, review)
    if heavy:
        state.metrics.heavy_review()
    result = _answer_in_time(state, endpoint, review, heavy=heavy)
    seconds = time.perf_counter() - started
    state.metrics.observe(endpoint=endpoint, kind=result.kind, version=result.version,
                          operation=review.operation, decision=result.decision,
                          seconds=seconds, findings=result.findings)
    _log_decision(endpoint, result, seconds)
    return 200, encode_answer(result.document)


def _heavy(state: WebhookState, body: bytes, review: Review) -> bool:
    """Whether the review runs on the heavy thread (webhook/serving/deadline.py): a large
    body, or more CEL not compiled yet than `HEAVY_CEL_CHARS` (figures: bench/RESULTS.md)."""
    size = len(body)
    if size > HEAVY_BODY_BYTES:
        return True
    # Each character of a JSON string takes at least one byte of the body, so a body no
    # longer than the threshold cannot hold more CEL than it: no walk over the object.
    if size <= HEAVY_CEL_CHARS:
        return False
    # The parsed object, not the bytes: JSON may spell the key with escapes.
    from draguard.schema.cel.check import uncached_chars  # CEL loads with the first selector

    flags = state.rules.release.consumable_capacity
    return uncached_chars(review.object, consumable_capacity=flags,
                          limit=HEAVY_CEL_CHARS) > HEAVY_CEL_CHARS


def _answer_in_time(state: WebhookState, endpoint: str, review: Review, *,
                    heavy: bool) -> Answer:
    """The review judged on the runner's threads within the deadline, else per failure mode."""
    answer, rules, mode = ANSWERERS[endpoint], state.rules, state.config.failure_mode
    budget = state.config.review_timeout
    done, result = state.runner.run(lambda: answer(review, rules=rules, failure_mode=mode),
                                    budget, heavy=heavy)
    if done and result is not None:
        _log_internal_error(review, result)
        return result
    log.warning("review of %s on /%s (uid %s) not finished within %g s: answered by failure "
                "mode %s, review stopped", review.operation, endpoint, review.uid[:64], budget,
                mode)
    return answer_timed_out(review, mode, budget)


def _log_internal_error(review: Review, result: Answer) -> None:
    if result.error:
        log.error("internal error on %s (uid %s):\n%s", review.operation, review.uid, result.error)


def _reject_transport(state: WebhookState, environ: dict[str, Any],
                      length: int | None) -> tuple[int, str, str] | None:
    """Status, message and decision label for a request refused before reading the body."""
    limit = state.config.max_body_bytes
    if length is not None and length > limit:
        return 413, f"body larger than {limit} bytes", "too_large"
    # The media type as werkzeug's `request.mimetype` gives it, without its full
    # parameter parser on every review (parameters such as charset do not matter here).
    mimetype = environ.get("CONTENT_TYPE", "").partition(";")[0].strip().lower()
    if mimetype not in JSON_TYPES:
        shown = mimetype or "none"
        return 415, f"content type must be application/json, not {shown}", "unsupported_media_type"
    return None


def _drain(environ: dict[str, Any], length: int | None, limit: int) -> bool:
    """Read and drop the unread body of a refused request; False when it is too big to.

    gunicorn drains at most 64 KiB of an unread body before it closes a kept-alive
    connection, and closing a socket with unread input makes the kernel reset it, so
    the client can lose the 413/415 while it is still sending. Reading up to four
    times the limit keeps that answer deliverable and the connection reusable; a
    body beyond that is not worth reading and the connection is closed instead.
    """
    if length is None:
        return True
    if length > 4 * limit:
        return False
    stream = environ["wsgi.input"]
    while length > 0:
        chunk = stream.read(min(length, 65536))
        if not chunk:
            break
        length -= len(chunk)
    return True


def error_body(code: int, message: str) -> str:
    """The small JSON body of every HTTP error."""
    return json.dumps({"code": code, "message": message})


def _error(code: int, message: str, *, keep_alive: bool = True) -> Response:
    response = Response(error_body(code, message), status=code, mimetype="application/json")
    if not keep_alive:
        response.headers["Connection"] = "close"
    return response


def _count(state: WebhookState, endpoint: str, decision: str, started: float) -> None:
    state.metrics.observe(endpoint=endpoint, decision=decision,
                          seconds=time.perf_counter() - started)


def _log_decision(endpoint: str, result: Answer, seconds: float) -> None:
    if not decisions.isEnabledFor(logging.INFO):
        return
    obj = result.review.object or result.review.old_object or {}
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    log_line(decisions, {
        "msg": "admission",
        "endpoint": endpoint,
        "uid": _echo(result.review.uid),
        "operation": result.review.operation,
        "kind": result.kind,
        "apiVersion": result.version,
        "namespace": _echo(meta.get("namespace") or result.review.namespace),
        "name": _echo(meta.get("name") or result.review.name),
        "allowed": result.allowed,
        "decision": result.decision,
        "findings": result.findings,
        "dryRun": result.review.dry_run,
        "latencyMs": round(seconds * 1_000_000) / 1000,  # round(x, 3) takes a slower path
    })


def _echo(value: Any) -> Any:
    """A client's string as the log line carries it: at most a DNS name's length."""
    return clip(value, MAX_NAME_ECHO) if isinstance(value, str) else value
