"""RegistryClient against a platform that misbehaves at the byte level (issue 13), on a socket.

What only a real socket shows: answer headers sent a byte at a time (h11 takes headers
of up to 16 KiB, so only the client's watchdog, which shuts the socket at the deadline,
ends the call), and https spoken to a port that speaks plain http. One raw server on
loopback for the file; the path's first part chooses its behaviour. The rest of the
hostile platforms are in-process, in test_client_hostile.py.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmreg_nb.errors import ConnectError, RequestTimeout
from lmreg_nb.registry import client as client_module
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.settings import Settings

pytestmark = pytest.mark.slow  # a server on loopback: real sockets are the point

APP_SECRET = "CANARY-appsecret-5f1e9a7c3b"
TLS_HANDSHAKE = 0x16  # the first byte of a TLS ClientHello


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "_sleep", lambda s: None)


def _trickle_headers(conn: socket.socket) -> None:
    # h11 accepts headers up to 16 KiB: a byte every 0.1 s would take 27 minutes.
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Pad: ")
    for _byte in range(100):  # 10 s, then give up: the test fails rather than hangs
        conn.sendall(b"x")
        time.sleep(0.1)


def _answer(conn: socket.socket) -> None:
    conn.settimeout(5)
    first = conn.recv(65536)
    if first[:1] == bytes([TLS_HANDSHAKE]):
        # As a plain-http server (the standard library's) answers a TLS hello.
        conn.sendall(b"HTTP/1.0 400 Bad request\r\nContent-Type: text/html\r\n\r\n")
        return
    if first.split(b" ")[1:2] == [b"/trickle-headers/openapi/v1/token"]:
        _trickle_headers(conn)


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """One raw server for the file; each connection in a thread of its own."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        # OSError: the client hung up, which is what this server wants.
        with conn, contextlib.suppress(OSError):
            _answer(conn)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _addr = server.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        server.close()


def _client(port: int, tmp_path: Path, *, scheme: str = "http", path: str = "", **kw: object):
    settings = Settings.load(
        environ={
            "LMREG_BASE_URL": f"{scheme}://127.0.0.1:{port}{path}",
            "LMREG_APP_ID": "app-hostile",
            "LMREG_APP_SECRET": APP_SECRET,
        },
        token_cache=tmp_path / "tokens.json",
        **kw,
    )
    return RegistryClient(settings, max_retries=1)


def test_headers_a_byte_at_a_time_meet_an_overall_deadline(port: int, tmp_path: Path) -> None:
    started = time.monotonic()
    with (
        _client(port, tmp_path, path="/trickle-headers", timeout=1) as client,
        pytest.raises(RequestTimeout) as info,
    ):
        client.token()
    # Each read is quick, so only an overall deadline ends it (before: when the server
    # gave up after 10 s).
    assert time.monotonic() - started < 4
    assert "did not finish its answer within 1 s" in str(info.value)
    assert "\n" not in str(info.value)


def test_https_spoken_to_a_plain_http_port_is_a_plain_sentence(port: int, tmp_path: Path) -> None:
    client = _client(port, tmp_path, scheme="https")
    with client, pytest.raises(ConnectError) as info:
        client.token()
    message = str(info.value)
    assert "does not speak https on that port" in message
    assert "SSL" not in message and "WRONG_VERSION_NUMBER" not in message
