"""`/mutate` wired to the policy file through the real server (the policy itself is tested elsewhere)."""

from __future__ import annotations

import base64
import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from .conftest import Server, start_server

POLICY = """\
catalog:
  gpu.example.com:
    alternatives:
    - {name: big, deviceClassName: big.example.com}
limits:
  forbiddenClasses: ["*.forbidden.example.com"]
"""
CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "default"},
    "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
}


def review(obj: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "m-1", "operation": "CREATE", "namespace": "default",
                        "object": obj}}


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("policy") / "policy.yaml"
    path.write_text(POLICY)
    return path


@pytest.fixture(scope="module")
def mutating(tmp_path_factory: pytest.TempPathFactory, policy_file: Path) -> Iterator[Server]:
    """A server started with `--policy`."""
    running = start_server(tmp_path_factory.mktemp("mutate"), "--policy", str(policy_file))
    yield running
    running.stop()


def mutated(server: Server, obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The response and the object after applying its patch."""
    response = server.client().review(review(obj), path="/mutate").json()["response"]
    if "patch" not in response:
        return response, obj
    assert response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    return response, jsonpatch.apply_patch(obj, ops)


def test_catalog_expansion_is_patched(mutating: Server) -> None:
    """A request for a catalogued class comes back as firstAvailable via a JSONPatch."""
    response, result = mutated(mutating, CLAIM)
    assert response["allowed"] is True
    request = result["spec"]["devices"]["requests"][0]
    assert [s["deviceClassName"] for s in request["firstAvailable"]] == [
        "gpu.example.com", "big.example.com"]


def test_unknown_fields_survive_the_patch(mutating: Server) -> None:
    """Fields draguard does not know are untouched by the patch."""
    obj = copy.deepcopy(CLAIM)
    obj["metadata"]["annotations"] = {"x": "y"}
    obj["spec"]["futureField"] = {"keep": [1, 2, 3]}
    _, result = mutated(mutating, obj)
    assert result["spec"]["futureField"] == {"keep": [1, 2, 3]}
    assert result["metadata"] == obj["metadata"]


def test_forbidden_class_is_denied(mutating: Server) -> None:
    """A class the policy forbids is denied with the 422 Status and no patch."""
    obj = copy.deepcopy(CLAIM)
    obj["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "x.forbidden.example.com"
    response, _ = mutated(mutating, obj)
    assert response["allowed"] is False and "patch" not in response
    assert response["status"]["code"] == 422


def test_policy_file_change_is_picked_up(mutating: Server, policy_file: Path) -> None:
    """Rewriting the policy file (no catalog any more) changes the answers without a restart."""
    policy_file.write_text("{}\n")
    try:
        deadline = time.monotonic() + 30  # a bound on polling, not a speed check
        while time.monotonic() < deadline:
            _, result = mutated(mutating, CLAIM)
            expanded = "firstAvailable" in result["spec"]["devices"]["requests"][0]
            if not expanded:
                break
            time.sleep(0.2)
        assert not expanded
    finally:
        policy_file.write_text(POLICY)
