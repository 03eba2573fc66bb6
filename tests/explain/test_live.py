"""`draguard explain --from-cluster`: the real `kubernetes` client over TLS against a local server.

No kube-apiserver runs here; a small HTTPS server on 127.0.0.1 answers the list calls
with recorded API objects (those of tests/explain/cluster/), pages the ResourceSlice list
as the apiserver does with `limit`/`continue`, and insists on the kubeconfig's token.
"""

from __future__ import annotations

import base64
import io
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlparse

import pytest
import trustme
import yaml

from draguard.schema.cli import explain as explain_cli

CLUSTER = Path(__file__).resolve().parent / "cluster"
TOKEN = "s3cret-token"


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


class _Handler(BaseHTTPRequestHandler):
    objects: ClassVar[dict[str, list[dict[str, Any]]]] = {}
    seen: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        url = urlparse(self.path)
        self.seen.append(self.path)
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._send(401, {"kind": "Status", "code": 401, "reason": "Unauthorized"})
        if url.path == "/api/v1/namespaces/default/pods/trainer":
            return self._send(200, {k: v for k, v in self.objects["Pod"][0].items()
                                    if k not in ("kind", "apiVersion")})
        kind = ROUTES.get(url.path)
        if kind is None:
            return self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
        items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
                 for o in self.objects.get(kind, [])]
        query = parse_qs(url.query)
        start = int(query.get("continue", ["0"])[0])
        limit = 2 if kind == "ResourceSlice" else len(items) or 1  # page the slices
        page, rest = items[start:start + limit], items[start + limit:]
        metadata = {"continue": str(start + limit)} if rest else {}
        self._send(200, {"kind": f"{kind}List", "apiVersion": "v1", "metadata": metadata,
                         "items": page})

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def apiserver(tmp_path: Path) -> Iterator[tuple[Path, list[str]]]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    _Handler.objects = _recorded()
    _Handler.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "local", "cluster": {
            "server": f"https://127.0.0.1:{server.server_address[1]}",
            "certificate-authority-data": base64.b64encode(ca.cert_pem.bytes()).decode()}}],
        "users": [{"name": "me", "user": {"token": TOKEN}}],
        "contexts": [{"name": "test", "context": {"cluster": "local", "user": "me",
                                                   "namespace": "default"}},
                     {"name": "stranger", "context": {"cluster": "local", "user": "nobody"}}],
    }))
    try:
        yield kubeconfig, _Handler.seen
    finally:
        server.shutdown()
        server.server_close()


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = explain_cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_from_cluster_explains_the_pod(apiserver: tuple[Path, list[str]]) -> None:
    """The Pod read from the cluster gets the same answer as from the recorded files."""
    kubeconfig, _ = apiserver
    code, out, _ = _run("--from-cluster", "--kubeconfig", str(kubeconfig), "--pod", "trainer",
                        "-o", "json")
    assert code == 0
    nodes = {n["node"]: n for n in json.loads(out)["pods"][0]["nodes"]}
    assert nodes["node-2"]["claims"][0]["alternatives"][0]["chosen"] == "h100"
    assert nodes["node-1"]["claims"][0]["alternatives"][0]["chosen"] == "two-a100"
    assert not nodes["node-3"]["feasible"]


def test_from_cluster_pages_and_reports_progress(apiserver: tuple[Path, list[str]]) -> None:
    """Lists are paged with limit/continue and a progress line goes to stderr."""
    kubeconfig, seen = apiserver
    code, _, err = _run("--from-cluster", "--kubeconfig", str(kubeconfig), "--pod", "trainer")
    assert code == 0
    slice_calls = [p for p in seen if p.startswith("/apis/resource.k8s.io/v1/resourceslices")]
    assert len(slice_calls) == 2 and "continue=2" in slice_calls[1]
    assert "listing ResourceSlices: 3" in err


def test_files_add_the_pod_to_a_live_cluster(apiserver: tuple[Path, list[str]]) -> None:
    """PATHs with --from-cluster give the Pod (and template) still to be created."""
    kubeconfig, _ = apiserver
    code, out, _ = _run(str(CLUSTER / "pod.yaml"), "--from-cluster", "--kubeconfig",
                        str(kubeconfig), "-o", "json")
    assert code == 0 and json.loads(out)["pods"][0]["name"] == "trainer"


def test_unauthorised_context_exits_2(apiserver: tuple[Path, list[str]]) -> None:
    """A context whose user the server refuses is a clear error, exit 2."""
    kubeconfig, _ = apiserver
    code, _, err = _run("--from-cluster", "--kubeconfig", str(kubeconfig), "--context", "stranger")
    assert code == 2 and "401" in err
