"""`/metrics` counts the reviews sent to the heavy thread (issue 15 §2, webhook/serving/deadline.py).

A review goes to the worker's single heavy thread when its body is larger than
`HEAVY_BODY_BYTES` or it holds more than `HEAVY_CEL_CHARS` of CEL the worker has not
compiled yet; `draguard_admission_heavy_reviews_total` counts them, so an operator sees
how often the expensive path is taken. In process (the Flask test client), counts only.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Flask

from draguard.webhook.app import create_app
from draguard.webhook.config import Config
from draguard.webhook.serving.deadline import HEAVY_BODY_BYTES, HEAVY_CEL_CHARS

from .conftest import is_admission_review, review

SERIES = re.compile(r"^draguard_admission_heavy_reviews_total (\S+)$", re.MULTILINE)


def claim(name: str, *, cel: str = "", blob: int = 0) -> dict[str, Any]:
    """A valid claim; `cel` as its selector, `blob` bytes of opaque parameters."""
    request: dict[str, Any] = {"deviceClassName": "gpu.example.com"}
    if cel:
        request["selectors"] = [{"cel": {"expression": cel}}]
    spec: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": request}]}
    if blob:
        spec["config"] = [{"requests": ["gpu"], "opaque": {
            "driver": "gpu.example.com", "parameters": {"blob": "x" * blob}}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"devices": spec}}


def long_cel(tag: str) -> str:
    """One valid expression longer than `HEAVY_CEL_CHARS`, distinct per `tag`."""
    terms = [f'device.attributes["gpu.example.com"].{tag}x{i} == "{i:04d}"'
             for i in range(HEAVY_CEL_CHARS // 40 + 10)]
    expression = " || ".join(terms)
    assert len(expression) > HEAVY_CEL_CHARS
    return expression


def heavy_count(app: Flask) -> float:
    text = app.test_client().get("/metrics").get_data(as_text=True)
    found = SERIES.search(text)
    return float(found.group(1)) if found else 0.0


def send(app: Flask, obj: dict[str, Any], uid: str) -> None:
    reply = app.test_client().post("/validate", json=review(obj, uid=uid))
    assert reply.status_code == 200 and is_admission_review(reply.get_data(), uid)


def test_heavy_reviews_are_counted_and_light_ones_are_not() -> None:
    app = create_app(Config(), tls=False)
    send(app, claim("small"), "small")
    assert heavy_count(app) == 0

    send(app, claim("big", blob=2 * HEAVY_BODY_BYTES), "big")  # the body alone
    assert heavy_count(app) == 1

    expression = long_cel("a")
    send(app, claim("cel", cel=expression), "cel")  # CEL not compiled yet in this worker
    assert heavy_count(app) == 2

    send(app, claim("cel-again", cel=expression), "cel-again")  # compiled now: light
    assert heavy_count(app) == 2
    send(app, claim("cel-new", cel=long_cel("b")), "cel-new")
    assert heavy_count(app) == 3
