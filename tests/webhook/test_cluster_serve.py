"""`draguard serve --cluster-view` end to end: the view loads from a fake API server, then the
cluster checks answer reviews (issue 20). The kubeconfig points the real `kubernetes`
client at the fake server on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeapi import (
    MISSING_CLASS_CLAIM,
    MISSING_FIELD,
    FakeApi,
    device_class,
    namespace,
)
from flask import Flask

from draguard.webhook.app import create_app
from draguard.webhook.config import Config, parse_config
from draguard.webhook.routes import WebhookState

from .conftest import start_server

CLAIM = MISSING_CLASS_CLAIM
DENY_POLICY = "clusterChecks:\n  class-missing: deny\n"


def review(obj: Any = CLAIM, uid: str = "u-1") -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": "CREATE", "namespace": "default",
                        "object": obj}}


@pytest.fixture
def api() -> Iterator[FakeApi]:
    fake = FakeApi().start()
    fake.add("deviceclasses", device_class("gpu.example.com"))
    fake.add("namespaces", namespace("default"))
    yield fake
    fake.stop()


def test_flag_and_environment_turn_the_view_on() -> None:
    """`--cluster-view` or DRAGUARD_CLUSTER_VIEW=true; off by default; in a pod, in-cluster."""
    assert parse_config([], environ={}).cluster_view is False
    assert parse_config(["--cluster-view"], environ={}).cluster_view is True
    assert parse_config([], environ={"DRAGUARD_CLUSTER_VIEW": "true"}).cluster_view is True
    in_pod = parse_config(["--cluster-view"], environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert in_pod.in_cluster is True
    given = parse_config(["--cluster-view", "--kubeconfig", "/k"],
                         environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert given.in_cluster is False and given.kubeconfig == Path("/k")


@pytest.fixture
def app(api: FakeApi, tmp_path: Path) -> Iterator[Flask]:
    """An in-process app with the cluster view on, its first ResourceSlice list held back."""
    api.list_gate["resourceslices"] = threading.Event()
    made = create_app(Config(cluster_view=True, kubeconfig=api.kubeconfig(tmp_path)), tls=False)
    yield made
    api.list_gate["resourceslices"].set()
    state: WebhookState = made.extensions["draguard"]
    assert state.view is not None
    state.view.stop()


def test_readyz_waits_for_the_first_lists_and_reviews_say_so(app: Flask, api: FakeApi) -> None:
    """While a first list loads: /readyz 503 naming the kind, reviews warn cluster-view-stale."""
    client = app.test_client()
    assert api.wait_for(lambda _: len(api.lists("resourceslices")) >= 1)
    reply = client.get("/readyz")
    assert reply.status_code == 503
    assert "ResourceSlice" in reply.get_data(as_text=True)
    answer = client.post("/validate", json=review())
    response = answer.get_json()["response"]
    assert response["allowed"] is True
    assert any("still loading" in w for w in response["warnings"])
    assert not any(w.startswith(MISSING_FIELD) for w in response["warnings"])

    api.list_gate["resourceslices"].set()
    state: WebhookState = app.extensions["draguard"]
    assert state.view is not None and state.view.wait_loaded(30)
    assert client.get("/readyz").status_code == 200
    response = client.post("/validate", json=review()).get_json()["response"]
    assert response["allowed"] is True
    assert any(w.startswith(MISSING_FIELD) and "missing.example.com does not exist" in w
               for w in response["warnings"])
    metrics = client.get("/metrics").get_data(as_text=True)
    assert 'draguard_cluster_view_age_seconds{kind="DeviceClass"}' in metrics


def test_serve_with_cluster_view_warns_then_denies_by_policy(api: FakeApi, tmp_path: Path) -> None:
    """Through real gunicorn + TLS: a missing DeviceClass warns; garbage on a watch leaves the
    worker serving; the claim is denied once the policy says `class-missing: deny` (the
    policy file is reloaded on change)."""
    policy = tmp_path / "policy.yaml"
    policy.write_text("{}\n")
    server = start_server(tmp_path / "serve", "--cluster-view", "--kubeconfig",
                          str(api.kubeconfig(tmp_path)), "--policy", str(policy), workers=1)
    client = server.client()
    try:
        reply = client.review(review()).json()["response"]
        assert reply["allowed"] is True
        assert any(w.startswith(MISSING_FIELD) for w in reply["warnings"])

        # A garbage line on a watch: counted, the watch resumes, the worker keeps serving.
        # The first watch must be open before the script is queued, or it would take it.
        assert api.wait_for(lambda _: len(api.watches("deviceclasses")) >= 1)
        watches = len(api.watches("deviceclasses"))
        api.script("deviceclasses", ("raw", b"\x00garbage{\n"))
        assert api.wait_for(lambda _: len(api.watches("deviceclasses")) > watches)
        bad = 'draguard_cluster_view_bad_events_total{kind="DeviceClass"} 1.0'
        for _ in range(600):  # samples reach /metrics in batches
            metrics = client.request("GET", "/metrics").body.decode()
            if bad in metrics:
                break
            threading.Event().wait(0.05)
        assert bad in metrics
        assert 'draguard_cluster_view_loaded{kind="ResourceSlice"}' in metrics

        policy.write_text(DENY_POLICY)
        for attempt in range(600):  # the store notices the change on a later review
            reply = client.review(review(uid=f"u-{attempt}")).json()["response"]
            if not reply["allowed"]:
                break
            threading.Event().wait(0.05)
        assert reply["allowed"] is False, json.dumps(reply)
        (cause,) = reply["status"]["details"]["causes"]
        assert cause["field"] == MISSING_FIELD
        assert cause["message"].endswith("(draguard cluster check class-missing)")
    finally:
        client.close()  # an idle kept-alive connection would hold the graceful stop
        server.stop()
    assert "cluster view DeviceClass: listed 1 objects" in server.log()
    assert "cluster view ready: every kind listed" in server.log()
    # One API client per view thread: a pooled connection shared across the threads' gevent
    # hubs failed now and then with this, and the kind fell back to a retry.
    assert "Cannot switch to a different thread" not in server.log()


def test_an_unusable_kubeconfig_keeps_the_worker_unready_and_says_why(tmp_path: Path) -> None:
    """A kubeconfig that cannot be read: /readyz 503 naming the problem; reviews still answered."""
    missing = tmp_path / "no-such-kubeconfig"
    made = create_app(Config(cluster_view=True, kubeconfig=missing), tls=False)
    state: WebhookState = made.extensions["draguard"]
    assert state.view is not None
    try:
        client = made.test_client()
        body = ""
        for _ in range(600):  # the first attempt records its error; a guard, not a timing check
            reply = client.get("/readyz")
            body = reply.get_data(as_text=True)
            if "cannot load the cluster configuration" in body:
                break
            threading.Event().wait(0.05)
        assert reply.status_code == 503
        assert "cannot load the cluster configuration" in body
        response = client.post("/validate", json=review()).get_json()["response"]
        assert response["allowed"] is True
        assert any("still loading" in w for w in response["warnings"])
    finally:
        state.view.stop()
