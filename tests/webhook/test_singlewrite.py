"""gunicorn responses sent in one write: the same bytes as gunicorn's, fewer sendall calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from gunicorn.http import wsgi

from draguard.webhook.serving.singlewrite import SingleWriteResponse, install


@dataclass
class FakeRequest:
    method: str = "POST"
    version: tuple[int, int] = (1, 1)

    def should_close(self) -> bool:
        return False


@dataclass
class FakeSocket:
    writes: list[bytes] = field(default_factory=list)

    def sendall(self, data: bytes) -> None:
        self.writes.append(bytes(data))


class FakeConfig:
    is_ssl = True
    sendfile = None
    protocol = "http"


def respond(cls: Any, chunks: list[bytes], *, method: str = "POST", status: str = "200 OK",
            length: bool = True) -> list[bytes]:
    """Run one WSGI-style response through gunicorn's writer; the socket writes."""
    sock = FakeSocket()
    resp = cls(FakeRequest(method=method), sock, FakeConfig())
    headers = [("Content-Type", "application/json")]
    if length:
        headers.append(("Content-Length", str(sum(map(len, chunks)))))
    resp.start_response(status, headers)
    for chunk in chunks:
        resp.write(chunk)
    resp.close()
    return sock.writes


def same_bytes(ours: list[bytes], theirs: list[bytes]) -> bool:
    # gunicorn's Date header may tick between the two runs.
    def strip(data: bytes) -> bytes:
        return b"\r\n".join(line for line in data.split(b"\r\n") if not line.startswith(b"Date:"))
    return strip(b"".join(ours)) == strip(b"".join(theirs))


@pytest.mark.parametrize(("chunks", "kwargs", "writes"), [
    pytest.param([b'{"allowed":true}'], {}, 1, id="one-body"),
    pytest.param([b'{"a":', b"1}"], {}, 2, id="two-chunks"),
    pytest.param([], {}, 1, id="no-body"),
    pytest.param([b""], {"status": "204 No Content"}, 1, id="204"),
    pytest.param([b"abc"], {"method": "HEAD"}, 1, id="head"),
    pytest.param([b"abc", b"de"], {"length": False}, 4, id="chunked-unchanged"),
])
def test_headers_travel_with_the_body(chunks: list[bytes], kwargs: dict[str, Any],
                                      writes: int) -> None:
    ours = respond(SingleWriteResponse, chunks, **kwargs)
    theirs = respond(wsgi.Response, chunks, **kwargs)
    assert same_bytes(ours, theirs)
    assert len(ours) == writes


def test_install_is_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """install() swaps the class gunicorn's wsgi.create builds (monkeypatch restores it)."""
    monkeypatch.setattr(wsgi, "Response", wsgi.Response)
    install()
    assert wsgi.Response is SingleWriteResponse


def test_install_keeps_a_writer_without_the_body_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gunicorn whose write() bypasses _emit_body keeps its own two-write Response."""
    class OldResponse:
        pass

    monkeypatch.setattr(wsgi, "Response", OldResponse)
    assert install() is False
    assert wsgi.Response is OldResponse
