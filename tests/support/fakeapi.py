"""A small Kubernetes API server on 127.0.0.1: lists (paged), single objects and watches.

No kube-apiserver runs in the tests; the real `kubernetes` client talks to this server.
`FakeApi(paths)` serves the resources named by `paths` (a request path -> the key its
objects are kept under: a resource such as `deviceclasses`, or a kind). Lists take
`limit`/`continue` and carry a `resourceVersion`; `page_size[key]` caps a page as the
apiserver may (so that a client's paging is exercised); their items omit `kind` and
`apiVersion`, as the apiserver's do. `singles[path]` answers a GET of one object.
`secure()` serves HTTPS with a trustme CA and insists on the kubeconfig's token.

A watch connection takes the next script queued for its resource (and waits until one
is queued): a list of steps, sent in order, after which the stream ends cleanly as the
apiserver ends a watch at `timeoutSeconds`:

    ("event", type, object)   one watch event line
    ("raw", bytes)            bytes as they are (garbage, half a line)
    ("drop",)                 close the connection mid-stream (no final chunk)
    ("wait", threading.Event) wait before the next step

`refuse[resource] = code` answers the next watch request of that resource with an
HTTP error status instead (410 Gone).

Every request is recorded (path and query) so that tests can wait for, and check, what
the client asked; `list_gate` holds a resource's list until the test releases it.
"""

from __future__ import annotations

import base64
import json
import queue
import ssl
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import trustme

TOKEN = "s3cret-token"
PATHS = {
    "/apis/resource.k8s.io/v1/deviceclasses": "deviceclasses",
    "/apis/resource.k8s.io/v1/resourceslices": "resourceslices",
    "/api/v1/namespaces": "namespaces",
    "/api/v1/resourcequotas": "resourcequotas",
}
Step = tuple[Any, ...]


class FakeApi:
    """The server, its objects per resource, scripts, gates and the request log."""

    def __init__(self, paths: Mapping[str, str] = PATHS, *,
                 page_size: Mapping[str, int] | None = None) -> None:
        self.paths = dict(paths)
        self.page_size = dict(page_size or {})
        self.objects: dict[str, list[dict[str, Any]]] = {r: [] for r in self.paths.values()}
        self.singles: dict[str, dict[str, Any]] = {}
        self.resource_version = 100
        self.scripts: dict[str, queue.Queue[list[Step]]] = {
            r: queue.Queue() for r in self.paths.values()}
        self.ca: trustme.CA | None = None
        self.list_gate: dict[str, threading.Event] = {}
        self.refuse: dict[str, int] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.changed = threading.Condition()
        self.stopping = threading.Event()
        self.server = _Quiet(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.server.block_on_close = False  # a scripted watch may still be waiting
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        scheme = "http" if self.ca is None else "https"
        return f"{scheme}://127.0.0.1:{self.server.server_address[1]}"

    def secure(self) -> FakeApi:
        """Serve HTTPS (before `start`) and refuse requests without the kubeconfig's token."""
        self.ca = trustme.CA()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        return self

    def start(self) -> FakeApi:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def add(self, resource: str, obj: dict[str, Any]) -> None:
        self.objects[resource].append(obj)

    def script(self, resource: str, *steps: Step) -> None:
        self.scripts[resource].put(list(steps))

    def record(self, path: str, query: dict[str, str]) -> None:
        with self.changed:
            self.requests.append((path, query))
            self.changed.notify_all()

    def wait_for(self, condition: Callable[[list[tuple[str, dict[str, str]]]], bool],
                 timeout: float = 30.0) -> bool:
        """Wait until `condition(requests)` holds (a guard against hangs, not a timing check)."""
        with self.changed:
            return self.changed.wait_for(lambda: condition(self.requests), timeout)

    def watches(self, resource: str) -> list[dict[str, str]]:
        """The query of every watch request for `resource`, in order."""
        return [q for p, q in list(self.requests)
                if self.paths.get(p) == resource and q.get("watch") == "true"]

    def lists(self, resource: str) -> list[dict[str, str]]:
        return [q for p, q in list(self.requests)
                if self.paths.get(p) == resource and q.get("watch") != "true"]

    def kubeconfig(self, folder: Path) -> Path:
        """A kubeconfig for this server: context `test` (with the token when secure) and
        `stranger`, whose user has no credentials (the secure server refuses it)."""
        cluster: dict[str, str] = {"server": self.url}
        if self.ca is not None:
            cluster["certificate-authority-data"] = base64.b64encode(
                self.ca.cert_pem.bytes()).decode()
        path = folder / "kubeconfig"
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "local", "cluster": cluster}],
            "users": [{"name": "me", "user": {"token": TOKEN}}, {"name": "nobody", "user": {}}],
            "contexts": [{"name": "test", "context": {"cluster": "local", "user": "me",
                                                       "namespace": "default"}},
                         {"name": "stranger", "context": {"cluster": "local", "user": "nobody"}}],
        }))
        return path


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up (the view stopping) is no test failure


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            api.record(parts.path, query)
            resource = api.paths.get(parts.path)
            if api.ca is not None and self.headers.get("Authorization") != f"Bearer {TOKEN}":
                send_json(self, 401, _status(401, "Unauthorized", "Unauthorized"))
            elif parts.path in api.singles:
                send_json(self, 200, api.singles[parts.path])
            elif resource is None:
                send_json(self, 404, _status(404, "NotFound", f"no such path {parts.path}"))
            elif query.get("watch") == "true":
                self._watch(resource)
            else:
                self._list(resource, query)

        def _list(self, resource: str, query: dict[str, str]) -> None:
            gate = api.list_gate.get(resource)
            if gate is not None:
                gate.wait(60)
            items = api.objects[resource]
            start = int(query.get("continue") or 0)
            limit = int(query.get("limit") or len(items) or 1)
            limit = min(limit, api.page_size.get(resource, limit))
            page = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
                    for o in items[start:start + limit]]
            metadata: dict[str, Any] = {"resourceVersion": str(api.resource_version)}
            if start + limit < len(items):
                metadata["continue"] = str(start + limit)
            send_json(self, 200, {"kind": "List", "apiVersion": "v1", "metadata": metadata,
                             "items": page})

        def _watch(self, resource: str) -> None:
            code = api.refuse.pop(resource, None)
            if code is not None:
                send_json(self, code, _status(code, "Expired", "too old resource version"))
                return
            # Headers at once, as the apiserver sends them; then the scripted events.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            steps = self._next_script(resource)
            if steps is None:  # the server stops: the stream ends unfinished
                steps = [("drop",)]
            for step in steps:
                if step[0] == "event":
                    self._chunk(json.dumps({"type": step[1], "object": step[2]}).encode() + b"\n")
                elif step[0] == "raw":
                    self._chunk(step[1])
                elif step[0] == "wait":
                    while not (step[1].is_set() or api.stopping.wait(0.05)):
                        pass
                elif step[0] == "drop":
                    self.close_connection = True
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _next_script(self, resource: str) -> list[Step] | None:
            while not api.stopping.is_set():
                try:
                    return api.scripts[resource].get(timeout=0.1)
                except queue.Empty:
                    continue
            return None

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def send_json(handler: BaseHTTPRequestHandler, code: int, body: Any) -> None:
    """Answer with `body` as JSON and its length (the connection may stay open)."""
    data = json.dumps(body).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


# A claim whose second alternative names a class the fake cluster lacks (`class-missing`
# at MISSING_FIELD), served by the webhook and hostile cluster-view tests.
MISSING_CLASS_CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "default"},
    "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "a", "deviceClassName": "gpu.example.com"},
        {"name": "b", "deviceClassName": "missing.example.com"}]}]}},
}
MISSING_FIELD = "spec.devices.requests[0].firstAvailable[1].deviceClassName"


def device_class(name: str, version: str = "1") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name, "resourceVersion": version}, "spec": {}}


def namespace(name: str, version: str = "1", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "resourceVersion": version,
                         "labels": {"kubernetes.io/metadata.name": name, **labels}}}


def bookmark(kind: str, version: str) -> dict[str, Any]:
    api_version = "v1" if kind in ("Namespace", "ResourceQuota") else "resource.k8s.io/v1"
    return {"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": version}}


def expired() -> dict[str, Any]:
    """The ERROR event object of a compacted resourceVersion."""
    return _status(410, "Expired", "too old resource version: 1 (200)")
