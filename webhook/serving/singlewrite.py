"""One write per response: gunicorn's status line and headers go out with the body.

gunicorn's `Response.write` sends the header block with one `sendall` and the body
with another: over TLS that is two records, two system calls and two reads for the
client (TLS clients read record by record). Each blocking call also releases the GIL,
which the thread then has to win back from the worker's other threads. For
draguard's small JSON answers this subclass holds the header block, exactly as
gunicorn builds it, and sends it in front of the first body bytes; a response
without body bytes (HEAD, 204, an empty iterable) sends it at `close()`. Chunked
responses and sendfile keep gunicorn's own order.

`install()` makes gunicorn's `wsgi.create` build these responses in this process
only: `WebhookServer.load` calls it in each draguard worker.
"""

from __future__ import annotations

from typing import Any

from gunicorn.http import wsgi


class _Capture:
    """Stands in for the socket while gunicorn writes the header block."""

    def __init__(self) -> None:
        self.data = b""

    def sendall(self, data: bytes) -> None:
        self.data += data


class SingleWriteResponse(wsgi.Response):  # type: ignore[misc]
    """A gunicorn response whose header block travels with the first body bytes."""

    sock: Any  # set by gunicorn's Response.__init__
    _held: bytes | None = None
    _hold = True

    def send_headers(self) -> None:
        if self.headers_sent or self.chunked or not self._hold:
            super().send_headers()
            return
        socket: Any = self.sock
        capture = self.sock = _Capture()
        try:
            super().send_headers()
        finally:
            self.sock = socket
        self._held = capture.data

    def _emit_body(self, data: bytes) -> None:
        held, self._held = self._held, None
        super()._emit_body(data if held is None else held + data)

    def sendfile(self, respiter: Any) -> bool:
        # gunicorn's sendfile writes the file right after the headers: do not hold them.
        self._hold = False
        sent: bool = super().sendfile(respiter)
        return sent

    def close(self) -> None:
        # gunicorn's close() sends the headers of a response without body bytes (held
        # here) and ends a chunked body (never held): release after it.
        super().close()
        self._release()

    def _release(self) -> None:
        held, self._held = self._held, None
        if held:
            self.sock.sendall(held)


def install() -> bool:
    """Have gunicorn build `SingleWriteResponse`s in this process; False if it cannot.

    The body must pass through `Response._emit_body` (gunicorn 27 does); without it the
    held headers would follow the body, so gunicorn's own writer is kept.
    """
    if wsgi.Response is SingleWriteResponse:
        return True
    if not hasattr(wsgi.Response, "_emit_body"):
        return False
    wsgi.Response = SingleWriteResponse
    return True
