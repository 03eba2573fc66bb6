"""gunicorn's gevent worker with deadlines, so slow or idle clients cost memory, not a
request slot (issue 15 §1).

Each connection is a greenlet (as Go's net/http gives each one a goroutine): a client
that handshakes, sends headers or a body slowly, or nothing at all, holds a greenlet
and its buffers, never a thread. Deadlines, as Go servers set them (Gatekeeper and
Kyverno: `ReadHeaderTimeout`, `ReadTimeout`, `IdleTimeout`):

- the TLS handshake within `read_timeout` (`deadline_context`);
- the first request's headers within `read_timeout`; later ones within `keepalive`,
  which is also how long a kept-alive connection may stay idle (`timeout_ctx`);
- each request, body and answer, within `read_timeout + review_timeout`
  (`handle_request`); the review itself runs within `review_timeout`, inline for a
  short slice, then on native threads (`draguard.webhook.serving.deadline`).

Past a deadline the connection is closed quietly (one debug line). Threads are not
monkey-patched: the reviews run on native threads and take native locks. The worker's
SIGALRM belongs to the inline slice.

Relies on gunicorn's `GeventWorker` methods `patch`, `timeout_ctx` and `handle_request`
(overridden here) and on gevent's `StreamServer` calling the SSL context's
`wrap_socket`: gunicorn and gevent are pinned below their next major release in
pyproject.toml, and tests/hostile/test_slow_clients.py tests this behaviour.
"""

from __future__ import annotations

import logging
import ssl
import weakref
from typing import Any

import gevent
from gevent import monkey, socket
from gunicorn.workers.ggevent import GeventWorker

from draguard.webhook.config import Config
from draguard.webhook.serving import laststate
from draguard.webhook.serving.tls import CertificateUnavailable, ContextCache

log = logging.getLogger("draguard.webhook.serving.worker")


def deadline_context(config: Config, seconds: float) -> ssl.SSLContext:
    """A context that wraps each new connection with the worker's current certificate
    context (`draguard.webhook.serving.tls`), handshaking within `seconds`.

    gevent's server asks its context once for `wrap_socket` and calls it per
    connection; this context holds no certificate itself. The class is made here, in
    the worker after monkey-patching, so that it derives from gevent's `SSLContext`
    (a subclass made earlier would be left unpatched).
    """

    cache = laststate.tls_cache(config)

    class DeadlineContext(ssl.SSLContext):
        def wrap_socket(self, sock: Any, server_side: bool = True,  # type: ignore[override]
                        do_handshake_on_connect: bool = True,
                        suppress_ragged_eofs: bool = True, **_: Any) -> ssl.SSLSocket:
            return _handshake(sock, cache, seconds, suppress_ragged_eofs)

    return DeadlineContext(ssl.PROTOCOL_TLS_SERVER)


def _handshake(sock: Any, cache: ContextCache, seconds: float,
               suppress_ragged_eofs: bool) -> ssl.SSLSocket:
    try:
        context = cache.context()
        wrapped = context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False,
                                      suppress_ragged_eofs=suppress_ragged_eofs)
        with gevent.Timeout(seconds):
            wrapped.do_handshake()
    except gevent.Timeout:
        log.debug("TLS handshake not done within %g s; connection closed", seconds)
    except (CertificateUnavailable, ssl.SSLError, OSError) as exc:
        log.debug("TLS handshake failed: %s", exc)
    else:
        return wrapped
    # Ends the connection's greenlet quietly (gevent prints other exceptions); the
    # server closes the socket.
    raise gevent.GreenletExit


class DeadlineWorker(GeventWorker):  # type: ignore[misc]
    """gunicorn's gevent worker with the deadlines of the module docstring."""

    read_timeout = 10.0
    review_timeout = 1.0
    sockets: list[Any]  # gunicorn's listeners

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Connection greenlets that have been served a request: their next request
        # may wait up to `keepalive` (idle), the first only `read_timeout`.
        self._served: weakref.WeakSet[Any] = weakref.WeakSet()

    def patch(self) -> None:
        # gunicorn's own patch() patches everything, threads included; reviews run on
        # native threads (deadline.py), so threads stay native. Then, as gunicorn does,
        # the listening sockets become gevent sockets.
        monkey.patch_all(thread=False)
        self.sockets = [socket.socket(s.FAMILY, socket.SOCK_STREAM, fileno=s.sock.detach())
                        for s in self.sockets]

    def timeout_ctx(self) -> gevent.Timeout:
        served = gevent.getcurrent() in self._served
        return gevent.Timeout(self.cfg.keepalive if served else self.read_timeout, False)

    def handle_request(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> Any:
        self._served.add(gevent.getcurrent())
        seconds = self.read_timeout + self.review_timeout
        timer = gevent.Timeout(seconds)
        timer.start()
        try:
            return super().handle_request(listener_name, req, sock, addr)
        except gevent.Timeout as exc:
            if exc is not timer:
                raise
            log.debug("request not read and answered within %g s; connection closed", seconds)
            raise StopIteration from None  # gunicorn's way to end the connection
        finally:
            timer.close()


def worker_class(read_timeout: float, review_timeout: float) -> type[DeadlineWorker]:
    """A `DeadlineWorker` with these deadlines (gunicorn takes a class, not an instance)."""
    attributes = {"read_timeout": read_timeout, "review_timeout": review_timeout}
    return type("DraguardWorker", (DeadlineWorker,), attributes)
