"""RegistryClient against small hostile servers on loopback (issue 13 and 12 CLI rows).

Each server is a raw socket answering every request the same way: an endless
token body, a trickle, an echo of the credentials in an error page, plain http
behind an https address. The client must end each with one clean line, fast,
in bounded memory, and with no piece of a secret in what it says.
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from lmreg_nb.errors import (
    ConfigurationError,
    ConnectError,
    LmregError,
    MalformedResponseError,
    RequestTimeout,
)
from lmreg_nb.registry import client as client_module
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.secret import find_leaks
from lmreg_nb.settings import Settings

APP_SECRET = "CANARY-appsecret-5f1e9a7c3b"
Behaviour = Callable[[socket.socket, bytes], None]


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "_sleep", lambda s: None)


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    conn.settimeout(5)
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _sep, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n")
         if line.lower().startswith(b"content-length:")),
        0,
    )  # fmt: skip
    while len(body) < length:
        body += conn.recv(65536)
    return data


@pytest.fixture
def hostile() -> Iterator[Callable[[Behaviour], int]]:
    """Start a loopback server running ``behaviour(conn, request)`` per connection; its port."""
    servers: list[socket.socket] = []
    stop = threading.Event()

    def start(behaviour: Behaviour) -> int:
        server = socket.create_server(("127.0.0.1", 0))
        server.settimeout(0.2)
        servers.append(server)

        def serve() -> None:
            while not stop.is_set():
                try:
                    conn, _addr = server.accept()
                except (TimeoutError, OSError):
                    continue
                # OSError: the client hung up, which is what these servers want.
                with conn, contextlib.suppress(OSError):
                    behaviour(conn, _read_request(conn))

        threading.Thread(target=serve, daemon=True).start()
        return int(server.getsockname()[1])

    yield start
    stop.set()
    for server in servers:
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


def _endless(conn: socket.socket, request: bytes) -> None:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b"x" * 65536
    framed = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
    conn.sendall(b'a\r\n{"code":0,\r\n')
    for _chunk in range(16384):  # 1 GiB at most: far past the client's cap, yet bounded
        conn.sendall(framed)


def test_an_endless_token_body_fails_fast_in_bounded_memory(
    hostile: Callable[[Behaviour], int], tmp_path: Path
) -> None:
    port = hostile(_endless)
    tracemalloc.start()
    started = time.monotonic()
    with _client(port, tmp_path) as client, pytest.raises(MalformedResponseError) as info:
        client.token()
    elapsed = time.monotonic() - started
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 5, elapsed
    assert peak < 64 * 1024 * 1024, peak  # the cap is 8 MiB; before, it read until MemoryError
    assert "MiB" in str(info.value) and "\n" not in str(info.value)


def test_a_gzip_bomb_is_inflated_within_the_cap(
    hostile: Callable[[Behaviour], int], tmp_path: Path
) -> None:
    # 256 MiB of zeros in 256 KiB: httpx inflated each 64 KiB read whole before the cap.
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    bomb = b"".join([*(packer.compress(block) for _ in range(256)), packer.flush()])
    asked: list[bytes] = []

    def gzip_bomb(conn: socket.socket, request: bytes) -> None:
        asked.append(request)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: %d\r\n\r\n" % len(bomb) + bomb
        )

    port = hostile(gzip_bomb)
    tracemalloc.start()
    with _client(port, tmp_path) as client, pytest.raises(MalformedResponseError) as info:
        client.token()
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 32 * 1024 * 1024, peak  # the cap is 8 MiB; before, 64 MiB per read
    assert "MiB" in str(info.value) and "\n" not in str(info.value)
    assert b"accept-encoding: identity" in asked[0].lower()


def _trickle(conn: socket.socket, request: bytes) -> None:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 999\r\n\r\n"
    )
    for _byte in range(300):  # 30 s at most, past the client's deadline, yet bounded
        conn.sendall(b" ")
        time.sleep(0.1)


def _trickle_headers(conn: socket.socket, request: bytes) -> None:
    # h11 accepts headers up to 16 KiB: a byte every 0.1 s would take 27 minutes.
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Pad: ")
    for _byte in range(100):  # 10 s, then give up: the test fails rather than hangs
        conn.sendall(b"x")
        time.sleep(0.1)


@pytest.mark.parametrize("trickle", [_trickle, _trickle_headers], ids=["body", "headers"])
def test_a_trickling_answer_meets_an_overall_deadline(
    hostile: Callable[[Behaviour], int], tmp_path: Path, trickle: Behaviour
) -> None:
    port = hostile(trickle)
    started = time.monotonic()
    with _client(port, tmp_path, timeout=1) as client, pytest.raises(RequestTimeout) as info:
        client.token()
    # Each read is quick, so only an overall deadline ends it (before: never for the
    # body; for the headers, when the server gave up after 10 s).
    assert time.monotonic() - started < 4
    assert "did not finish its answer within 1 s" in str(info.value)
    assert "\n" not in str(info.value)


def _echo_credentials(conn: socket.socket, request: bytes) -> None:
    _head, _sep, body = request.partition(b"\r\n\r\n")
    secret = json.loads(body or b"{}").get("appSecret", "")
    page = (
        f"<html><head><title>500 {secret} {json.dumps(secret)} {quote(secret)}</title></head>"
        f"<body>{base64.b64encode(secret.encode()).decode()} {secret[:9]}</body></html>"
    ).encode()
    conn.sendall(
        b"HTTP/1.1 500 Oops\r\nContent-Type: text/html\r\nX-Request-Id: " + secret.encode()
        + b"\r\nContent-Length: %d\r\n\r\n" % len(page) + page
    )  # fmt: skip


def test_a_server_echoing_the_secret_gets_it_masked_in_every_form(
    hostile: Callable[[Behaviour], int], tmp_path: Path
) -> None:
    port = hostile(_echo_credentials)
    with _client(port, tmp_path) as client, pytest.raises(LmregError) as info:
        client.token()
    assert info.value.status == 500  # type: ignore[attr-defined]
    error: BaseException | None = info.value
    while isinstance(error, LmregError):
        assert find_leaks(str(error), [APP_SECRET]) == [], str(error)
        error = error.__cause__


def _not_found(conn: socket.socket, request: bytes) -> None:
    body = b'{"code": 40400, "message": "no such route", "data": {}}'
    conn.sendall(
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body
    )


def test_a_base_url_ending_in_openapi_v1_gets_told_to_drop_it(
    hostile: Callable[[Behaviour], int], tmp_path: Path
) -> None:
    port = hostile(_not_found)
    with _client(port, tmp_path, path="/openapi/v1") as client:
        with pytest.raises(ConfigurationError) as info:
            client.token()
        message = str(info.value)
        assert "drop that suffix" in message and f"http://127.0.0.1:{port}" in message
        assert "modelId" not in message
    with _client(port, tmp_path) as client, pytest.raises(ConfigurationError) as info:
        client.query_models()
    assert "LMREG_TOKEN_PATH" in str(info.value) and "modelId" not in str(info.value)


@pytest.fixture
def plain_http_port() -> Iterator[int]:
    """A real plain-http server (the standard library's): it answers a TLS hello with a 400."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def test_https_spoken_to_a_plain_http_port_is_a_plain_sentence(
    plain_http_port: int, tmp_path: Path
) -> None:
    client = _client(plain_http_port, tmp_path, scheme="https")
    with client, pytest.raises(ConnectError) as info:
        client.token()
    message = str(info.value)
    assert "does not speak https on that port" in message
    assert "SSL" not in message and "WRONG_VERSION_NUMBER" not in message
