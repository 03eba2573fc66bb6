"""Servers and clients for the hostile-input and fault tests, reused from tests/webhook.

The webhook tests' helpers (`start_server`, `Server`, `ApiserverClient`) are loaded from
their file so that this folder runs on its own (`pytest tests/hostile`) and starts
exactly the real `draguard serve` (gunicorn, TLS on loopback) that they start.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "examples" / "policy.yaml"


def _load(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


webhook_helpers = _load(
    "draguard_tests_webhook_helpers", ROOT / "tests" / "webhook" / "conftest.py"
)
Server = webhook_helpers.Server
ApiserverClient = webhook_helpers.ApiserverClient
start_server = webhook_helpers.start_server


def review(
    obj: Any, *, uid: str = "hostile", operation: str = "CREATE", namespace: str = "default"
) -> dict[str, Any]:
    """An AdmissionReview request as the apiserver sends it."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": uid, "operation": operation, "namespace": namespace, "object": obj},
    }


def is_admission_review(body: bytes, uid: str) -> bool:
    """True when `body` is a well-formed AdmissionReview response echoing `uid`."""
    try:
        doc = json.loads(body)
    except ValueError:
        return False
    response = doc.get("response") if isinstance(doc, dict) else None
    return (
        doc.get("apiVersion") == "admission.k8s.io/v1"
        and doc.get("kind") == "AdmissionReview"
        and isinstance(response, dict)
        and response.get("uid") == uid
        and isinstance(response.get("allowed"), bool)
    )


@pytest.fixture(scope="session")
def hostile_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real server with the example policy, so that /mutate really mutates."""
    folder = tmp_path_factory.mktemp("hostile")
    policy = folder / "policy.yaml"
    shutil.copyfile(POLICY, policy)
    running = start_server(folder, "--policy", str(policy))
    yield running
    running.stop()


@pytest.fixture
def api(hostile_server: Any) -> Iterator[Any]:
    """A kept-alive apiserver-like client to the shared server."""
    client = hostile_server.client()
    yield client
    client.close()


def launch(folder: Path, *args: str) -> Any:
    """Start `draguard serve` on a free loopback port with exactly `args` (beyond host,
    port and state folder); return once it accepts TCP connections (not necessarily
    ready: some tests start servers that must not become ready)."""
    import os
    import socket
    import subprocess
    import time

    port = webhook_helpers.free_port()
    argv = [sys.executable, "-m", "draguard.webhook.cli.main", "serve", "--host", "127.0.0.1",
            "--port", str(port), "--state-dir", str(folder / "state"), *args]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DRAGUARD_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    with open(folder / "server.log", "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   cwd=folder)
    server = Server(process, port, folder / "state", folder / "server.log")
    deadline = time.monotonic() + 30  # only stops a wait that would otherwise hang
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"draguard serve did not listen:\n{server.log()}")
