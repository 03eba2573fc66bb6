"""A small HTTPS server on 127.0.0.1 answering Kubernetes list calls with recorded objects.

No kube-apiserver runs in the tests; the real `kubernetes` client talks TLS to this
server, which insists on the kubeconfig's token, pages the lists named in `paged` as
the apiserver does (`limit`/`continue`, two items a page) and answers 404 elsewhere.
`serve` yields the kubeconfig to use and the request paths seen.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import trustme
import yaml

TOKEN = "s3cret-token"

# Routes: a request path → the kind listed there (or a single object, by path).
Routes = Mapping[str, str]


def _handler(routes: Routes, objects: Mapping[str, list[dict[str, Any]]],
             singles: Mapping[str, dict[str, Any]], paged: frozenset[str],
             seen: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            url = urlparse(self.path)
            seen.append(self.path)
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._send(401, {"kind": "Status", "code": 401, "reason": "Unauthorized"})
            if url.path in singles:
                return self._send(200, singles[url.path])
            kind = routes.get(url.path)
            if kind is None:
                return self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
            items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
                     for o in objects.get(kind, [])]
            start = int(parse_qs(url.query).get("continue", ["0"])[0])
            limit = 2 if kind in paged else len(items) or 1
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

    return Handler


@contextmanager
def serve(tmp_path: Path, routes: Routes, objects: Mapping[str, list[dict[str, Any]]], *,
          singles: Mapping[str, dict[str, Any]] | None = None,
          paged: frozenset[str] = frozenset()) -> Iterator[tuple[Path, list[str]]]:
    """Run the server; yield a kubeconfig (contexts `test` and the refused `stranger`)."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    seen: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 _handler(routes, objects, singles or {}, paged, seen))
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
        yield kubeconfig, seen
    finally:
        server.shutdown()
        server.server_close()
