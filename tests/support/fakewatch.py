"""A small Kubernetes API server on 127.0.0.1 speaking list (paged) and watch (chunked JSON lines).

Enough of the apiserver for the cluster view's tests: cluster-wide lists of the watched
kinds with `limit`/`continue` and a `resourceVersion`, and watches whose content each
test scripts. A watch connection takes the next script queued for its resource (and
waits until one is queued): a list of steps, sent in order, after which the stream ends
cleanly as the apiserver ends a watch at `timeoutSeconds`:

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

import json
import queue
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

PATHS = {
    "/apis/resource.k8s.io/v1/deviceclasses": "deviceclasses",
    "/apis/resource.k8s.io/v1/resourceslices": "resourceslices",
    "/api/v1/namespaces": "namespaces",
    "/api/v1/resourcequotas": "resourcequotas",
}
Step = tuple[Any, ...]


class FakeApi:
    """The server, its objects per resource, scripts, gates and the request log."""

    def __init__(self) -> None:
        self.objects: dict[str, list[dict[str, Any]]] = {r: [] for r in PATHS.values()}
        self.resource_version = 100
        self.scripts: dict[str, queue.Queue[list[Step]]] = {r: queue.Queue() for r in PATHS.values()}
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
        return f"http://127.0.0.1:{self.server.server_address[1]}"

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
                if PATHS.get(p) == resource and q.get("watch") == "true"]

    def lists(self, resource: str) -> list[dict[str, str]]:
        return [q for p, q in list(self.requests)
                if PATHS.get(p) == resource and q.get("watch") != "true"]

    def kubeconfig(self, folder: Path) -> Path:
        """A kubeconfig file pointing at this server (no TLS, no credentials)."""
        path = folder / "kubeconfig"
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
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
            resource = PATHS.get(parts.path)
            if resource is None:
                self._send(404, _status(404, "NotFound", f"no such path {parts.path}"))
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
            page = items[start:start + limit]
            metadata: dict[str, Any] = {"resourceVersion": str(api.resource_version)}
            if start + limit < len(items):
                metadata["continue"] = str(start + limit)
            self._send(200, {"kind": "List", "apiVersion": "v1", "metadata": metadata,
                             "items": page})

        def _watch(self, resource: str) -> None:
            code = api.refuse.pop(resource, None)
            if code is not None:
                self._send(code, _status(code, "Expired", "too old resource version"))
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

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


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
