"""`--metrics-port`: /metrics, /healthz and /readyz over plain HTTP (issue 15 §5).

Prometheus and kubelet probes then need neither the serving certificate nor, with
`--client-ca`, a client certificate. The port answers those three GET paths and
nothing else (404): reviews are only ever served over TLS.

The listening socket is made once in the master (gunicorn's `on_starting` hook, so that
a port in use stops the start with a message) and inherited by every worker, which
serves it with gevent's WSGI server beside gunicorn's own (`post_worker_init`), from
the same app: readiness is the worker's own, metrics are the workers' shared ones.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterable
from typing import Any

from draguard.webhook.config import Config

log = logging.getLogger("draguard.webhook.serving.probeport")

PATHS = frozenset({"/metrics", "/healthz", "/readyz"})
BACKLOG = 64

_listeners: dict[tuple[str, int], socket.socket] = {}

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def listener(host: str, port: int) -> socket.socket:
    """The listening socket for (host, port), made on first use in this process."""
    key = (host, port)
    sock = _listeners.get(key)
    if sock is None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            sock.listen(BACKLOG)
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        _listeners[key] = sock
    return sock


def probes_only(app: WsgiApp) -> WsgiApp:
    """`app` restricted to GET (or HEAD) of the probe and metrics paths."""
    def filtered(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") in PATHS and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            return app(environ, start_response)
        start_response("404 Not Found", [("Content-Type", "application/json")])
        return [b'{"code": 404, "message": "this port serves /metrics, /healthz, /readyz"}']

    return filtered


def hooks(config: Config) -> dict[str, Any]:
    """gunicorn settings that serve the probe port for `config` (none without one)."""
    if config.metrics_port is None:
        return {}
    host = config.metrics_host or config.host
    port = config.metrics_port

    def on_starting(server: Any) -> None:
        try:
            listener(host, port)
        except OSError as exc:  # a message, not a traceback; the master stops
            server.log.error("cannot serve --metrics-port on %s:%d: %s", host, port,
                             exc.strerror or exc)
            raise SystemExit(1) from None

    def post_worker_init(worker: Any) -> None:
        from gevent.pywsgi import WSGIServer

        server = WSGIServer(listener(host, port), probes_only(worker.wsgi), log=None,
                            error_log=log)
        server.start()

    return {"on_starting": on_starting, "post_worker_init": post_worker_init}
