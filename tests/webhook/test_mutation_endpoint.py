"""`/mutate` with a real policy file, through the Flask app (no TLS): patch, denial, reload."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from flask import Flask
from flask.testing import FlaskClient

from draguard.webhook.app import create_app
from draguard.webhook.config import Config

POLICY = """\
catalog:
  gpu.example.com:
    alternatives:
    - {name: h100, deviceClassName: h100.nvidia.com}
limits:
  forbiddenClasses: ["*.legacy.example.com"]
"""


def claim(*requests: dict[str, Any], config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if config is not None:
        devices["config"] = config
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": devices}}


PARENT_CONFIG = claim(
    {"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "h100.nvidia.com", "allocationMode": "ExactCount",
         "count": 1},
        {"name": "small", "deviceClassName": "a100.nvidia.com", "allocationMode": "ExactCount",
         "count": 2}]},
    # A second request: from 1.37 a config covering every request is not affected (issue 17).
    {"name": "nic", "exactly": {"deviceClassName": "nic.nvidia.com", "allocationMode": "ExactCount",
                                "count": 1}},
    config=[{"requests": ["gpu"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {}}}],
)


def review(obj: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    request = {"uid": "u-1", "operation": operation, "namespace": "ns", "object": obj}
    if operation == "UPDATE":
        request["oldObject"] = obj
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    return path


@pytest.fixture
def app(policy_file: Path) -> Flask:
    return create_app(Config(policy=policy_file), tls=False)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def call(client: FlaskClient, path: str, obj: dict[str, Any],
         operation: str = "CREATE") -> dict[str, Any]:
    reply = client.post(path, json=review(obj, operation))
    assert reply.status_code == 200
    response: dict[str, Any] = reply.get_json()["response"]
    return response


def patch_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    assert response.get("patchType") == "JSONPatch"
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return ops


def test_config_naming_parent_warns_then_is_rewritten_and_valid(client: FlaskClient) -> None:
    """Issue 7: /validate warns about the parent name, /mutate rewrites it, the result is clean."""
    warned = call(client, "/validate", PARENT_CONFIG)
    assert warned["allowed"] is True
    assert any("config names the prioritized request `gpu` by its parent name" in w
               for w in warned.get("warnings", []))
    mutated = call(client, "/mutate", PARENT_CONFIG)
    assert patch_of(mutated) == [
        {"op": "replace", "path": "/spec/devices/config/0/requests/0", "value": "gpu/big"},
        {"op": "add", "path": "/spec/devices/config/0/requests/1", "value": "gpu/small"},
    ]
    patched = jsonpatch.apply_patch(PARENT_CONFIG, patch_of(mutated))
    after = call(client, "/validate", patched)
    assert after["allowed"] is True
    assert not any("parent name" in w for w in after.get("warnings", []))


def test_catalog_expansion_is_returned_as_patch(client: FlaskClient) -> None:
    """A catalogued request comes back as a base64 JSONPatch that expands it."""
    obj = claim({"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}})
    patched = jsonpatch.apply_patch(obj, patch_of(call(client, "/mutate", obj)))
    names = [a["name"] for a in patched["spec"]["devices"]["requests"][0]["firstAvailable"]]
    assert names == ["requested", "h100"]


def test_forbidden_class_is_denied_like_the_apiserver(client: FlaskClient) -> None:
    """A forbidden class gets allowed: false with a 422 Invalid status naming the field."""
    obj = claim({"name": "r", "exactly": {"deviceClassName": "x.legacy.example.com"}})
    response = call(client, "/mutate", obj)
    assert response["allowed"] is False
    status = response["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert [c["field"] for c in status["details"]["causes"]] == [
        "spec.devices.requests[0].exactly.deviceClassName"]
    assert "patch" not in response


def test_update_is_not_mutated(client: FlaskClient) -> None:
    """UPDATE is left alone even when the policy would expand the object."""
    obj = claim({"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}})
    response = call(client, "/mutate", obj, operation="UPDATE")
    assert response["allowed"] is True
    assert "patch" not in response


def test_policy_change_applies_without_restart(client: FlaskClient, policy_file: Path) -> None:
    """Rewriting the policy file changes the next answer; garbage keeps the last policy."""
    obj = claim({"name": "gpu", "exactly": {"deviceClassName": "tpu.example.com",
                                           "allocationMode": "ExactCount", "count": 1}})
    assert "patch" not in call(client, "/mutate", obj)
    fresh = policy_file.with_name("next.yaml")
    fresh.write_text("catalog: {tpu.example.com: {original: replace, alternatives: "
                     "[{name: v5, deviceClassName: v5.tpu.example.com}]}}\n")
    fresh.replace(policy_file)
    _wait_for_check_interval()
    assert patch_of(call(client, "/mutate", obj))
    policy_file.write_text("catalog: [\n")
    _wait_for_check_interval()
    assert patch_of(call(client, "/mutate", obj))


def _wait_for_check_interval() -> None:
    """PolicyStore looks at the file at most once a second."""
    time.sleep(1.05)
