"""`draguard explain --from-cluster`: the real `kubernetes` client over TLS against a local server.

No kube-apiserver runs here; a small HTTPS server on 127.0.0.1 (FakeApi, tests/support/fakeapi.py)
answers the list calls with recorded API objects (those of tests/explain/cluster/), pages
the ResourceSlice list as the apiserver does with `limit`/`continue`, and insists on the
kubeconfig's token.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakeapi import FakeApi

from draguard.schema.cli import explain as explain_cli

CLUSTER = Path(__file__).resolve().parent / "cluster"


def _recorded() -> dict[str, list[dict[str, Any]]]:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for name in ("cluster.yaml", "pod.yaml"):
        for obj in yaml.safe_load_all((CLUSTER / name).read_text()):
            meta = obj.setdefault("metadata", {})
            if obj["kind"] not in ("Node", "DeviceClass", "ResourceSlice"):
                meta.setdefault("namespace", "default")
            by_kind.setdefault(obj["kind"], []).append(obj)
    return by_kind


ROUTES = {
    "/apis/resource.k8s.io/v1/deviceclasses": "DeviceClass",
    "/apis/resource.k8s.io/v1/resourceslices": "ResourceSlice",
    "/apis/resource.k8s.io/v1/resourceclaims": "ResourceClaim",
    "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates": "ResourceClaimTemplate",
    "/api/v1/nodes": "Node",
    "/api/v1/namespaces/default/resourcequotas": "ResourceQuota",
}


@pytest.fixture
def apiserver(tmp_path: Path) -> Iterator[tuple[Path, FakeApi]]:
    recorded = _recorded()
    api = FakeApi(ROUTES, page_size={"ResourceSlice": 2}).secure()
    for kind in ROUTES.values():
        api.objects[kind] = recorded.get(kind, [])
    pod = {k: v for k, v in recorded["Pod"][0].items() if k not in ("kind", "apiVersion")}
    api.singles["/api/v1/namespaces/default/pods/trainer"] = pod
    yield api.kubeconfig(tmp_path), api.start()
    api.stop()


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = explain_cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_from_cluster_explains_the_pod(apiserver: tuple[Path, FakeApi]) -> None:
    """The Pod read from the cluster gets the same answer as from the recorded files."""
    kubeconfig, _ = apiserver
    code, out, _ = _run("--from-cluster", "--kubeconfig", str(kubeconfig), "--pod", "trainer",
                        "-o", "json")
    assert code == 0
    nodes = {n["node"]: n for n in json.loads(out)["pods"][0]["nodes"]}
    assert nodes["node-2"]["claims"][0]["alternatives"][0]["chosen"] == "h100"
    assert nodes["node-1"]["claims"][0]["alternatives"][0]["chosen"] == "two-a100"
    assert not nodes["node-3"]["feasible"]


def test_from_cluster_pages_and_reports_progress(apiserver: tuple[Path, FakeApi]) -> None:
    """Lists are paged with limit/continue and a progress line goes to stderr."""
    kubeconfig, api = apiserver
    code, _, err = _run("--from-cluster", "--kubeconfig", str(kubeconfig), "--pod", "trainer")
    assert code == 0
    slice_calls = api.lists("ResourceSlice")
    assert len(slice_calls) == 2 and slice_calls[1].get("continue") == "2"
    assert "listing ResourceSlices: 3" in err


def test_files_add_the_pod_to_a_live_cluster(apiserver: tuple[Path, FakeApi]) -> None:
    """PATHs with --from-cluster give the Pod (and template) still to be created."""
    kubeconfig, _ = apiserver
    code, out, _ = _run(str(CLUSTER / "pod.yaml"), "--from-cluster", "--kubeconfig",
                        str(kubeconfig), "-o", "json")
    assert code == 0 and json.loads(out)["pods"][0]["name"] == "trainer"


def test_unauthorised_context_exits_2(apiserver: tuple[Path, FakeApi]) -> None:
    """A context whose user the server refuses is a clear error, exit 2."""
    kubeconfig, _ = apiserver
    code, _, err = _run("--from-cluster", "--kubeconfig", str(kubeconfig), "--context", "stranger")
    assert code == 2 and "401" in err
