"""RegistryClient against hostile platforms (issue 13 and 12 CLI rows), in-process.

Each platform answers every request the same way: an endless token body, a gzip
bomb, a trickle, an echo of the credentials in an error page, a 404 for a base URL
that ends in /openapi/v1. The answers reach the client through ``httpx.MockTransport``
as streams (never read ahead), so the client's own caps and deadline do the work. The
client must end each with one clean line, fast, in bounded memory, and with no piece
of a secret in what it says. What needs a real socket (headers a byte at a time, https
spoken to a plain-http port) is in test_client_sockets.py.
"""

from __future__ import annotations

import base64
import json
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from lmreg_nb.errors import ConfigurationError, LmregError, MalformedResponseError, RequestTimeout
from lmreg_nb.registry import client as client_module
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.secret import find_leaks
from lmreg_nb.settings import Settings

APP_SECRET = "CANARY-appsecret-5f1e9a7c3b"
BASE = "https://platform.test"
Behaviour = Callable[[httpx.Request], httpx.Response]


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "_sleep", lambda s: None)


class _Chunks(httpx.SyncByteStream):
    """A body handed over chunk by chunk, as a socket delivers it (nothing read ahead)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks


def _client(behaviour: Behaviour, tmp_path: Path, *, path: str = "", **kw: object):
    settings = Settings.load(
        environ={
            "LMREG_BASE_URL": f"{BASE}{path}",
            "LMREG_APP_ID": "app-hostile",
            "LMREG_APP_SECRET": APP_SECRET,
        },
        token_cache=tmp_path / "tokens.json",
        **kw,
    )
    return RegistryClient(settings, max_retries=1, transport=httpx.MockTransport(behaviour))


def _endless(request: httpx.Request) -> httpx.Response:
    def body() -> Iterator[bytes]:
        yield b'{"code":0,'
        chunk = b"x" * 65536
        for _chunk in range(16384):  # 1 GiB at most: far past the client's cap, yet bounded
            yield chunk

    # No Content-Length: a chunked answer that does not end.
    return httpx.Response(200, headers={"Content-Type": "application/json"}, stream=_Chunks(body()))


def test_an_endless_token_body_fails_fast_in_bounded_memory(tmp_path: Path) -> None:
    tracemalloc.start()
    started = time.monotonic()
    with _client(_endless, tmp_path) as client, pytest.raises(MalformedResponseError) as info:
        client.token()
    elapsed = time.monotonic() - started
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 5, elapsed
    assert peak < 64 * 1024 * 1024, peak  # the cap is 8 MiB; before, it read until MemoryError
    assert "MiB" in str(info.value) and "\n" not in str(info.value)


def test_a_gzip_bomb_is_inflated_within_the_cap(tmp_path: Path) -> None:
    # 256 MiB of zeros in 256 KiB: httpx inflated each 64 KiB read whole before the cap.
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    bomb = b"".join([*(packer.compress(block) for _ in range(256)), packer.flush()])
    asked: list[httpx.Request] = []

    def gzip_bomb(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
        pieces = (bomb[i : i + 65536] for i in range(0, len(bomb), 65536))  # network reads
        return httpx.Response(200, headers=headers, stream=_Chunks(pieces))

    tracemalloc.start()
    with _client(gzip_bomb, tmp_path) as client, pytest.raises(MalformedResponseError) as info:
        client.token()
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 32 * 1024 * 1024, peak  # the cap is 8 MiB; before, 64 MiB per read
    assert "MiB" in str(info.value) and "\n" not in str(info.value)
    assert asked[0].headers["accept-encoding"].lower() == "identity"


def _trickle(request: httpx.Request) -> httpx.Response:
    def body() -> Iterator[bytes]:
        for _byte in range(600):  # 30 s at most, past the client's deadline, yet bounded
            yield b" "
            time.sleep(0.05)

    headers = {"Content-Type": "application/json", "Content-Length": "999"}
    return httpx.Response(200, headers=headers, stream=_Chunks(body()))


def test_a_trickling_body_meets_an_overall_deadline(tmp_path: Path) -> None:
    started = time.monotonic()
    with (
        _client(_trickle, tmp_path, timeout=0.3) as client,
        pytest.raises(RequestTimeout) as info,
    ):
        client.token()
    # Each read is quick, so only an overall deadline ends it (before: never).
    assert time.monotonic() - started < 3
    assert "did not finish its answer within 0.3 s" in str(info.value)
    assert "\n" not in str(info.value)


def _echo_credentials(request: httpx.Request) -> httpx.Response:
    secret = json.loads(request.content or b"{}").get("appSecret", "")
    page = (
        f"<html><head><title>500 {secret} {json.dumps(secret)} {quote(secret)}</title></head>"
        f"<body>{base64.b64encode(secret.encode()).decode()} {secret[:9]}</body></html>"
    )
    headers = {"Content-Type": "text/html", "X-Request-Id": secret}
    return httpx.Response(500, headers=headers, text=page)


def test_a_server_echoing_the_secret_gets_it_masked_in_every_form(tmp_path: Path) -> None:
    with _client(_echo_credentials, tmp_path) as client, pytest.raises(LmregError) as info:
        client.token()
    assert info.value.status == 500  # type: ignore[attr-defined]
    error: BaseException | None = info.value
    while isinstance(error, LmregError):
        assert find_leaks(str(error), [APP_SECRET]) == [], str(error)
        error = error.__cause__


def _not_found(request: httpx.Request) -> httpx.Response:
    body = b'{"code": 40400, "message": "no such route", "data": {}}'
    return httpx.Response(404, headers={"Content-Type": "application/json"}, content=body)


def test_a_base_url_ending_in_openapi_v1_gets_told_to_drop_it(tmp_path: Path) -> None:
    with _client(_not_found, tmp_path, path="/openapi/v1") as client:
        with pytest.raises(ConfigurationError) as info:
            client.token()
        message = str(info.value)
        assert "drop that suffix" in message and BASE in message
        assert "modelId" not in message
    with _client(_not_found, tmp_path) as client, pytest.raises(ConfigurationError) as info:
        client.query_models()
    assert "LMREG_TOKEN_PATH" in str(info.value) and "modelId" not in str(info.value)


def _token_answer(status: int, body: dict[str, object]) -> Behaviour:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=body)

    return answer


def test_an_unknown_token_answered_to_the_exchange_is_about_the_app_secret(
    tmp_path: Path,
) -> None:
    # A red-team finding: "the platform does not know this token; get a new token", to the
    # request that gets one. The exchange sends no token: the credentials are at fault.
    answer = _token_answer(401, {"code": 40100, "message": "unauthorized"})
    with _client(answer, tmp_path) as client, pytest.raises(LmregError) as info:
        client.token()
    message = str(info.value)
    assert "LMREG_APP_SECRET" in message and "get a new token" not in message, message


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"token": 12345, "env": "e", "expireTime": 1}, "no usable token"),
        ({"token": "", "env": "e"}, "no usable token"),
        ({"token": "t-0123456789", "env": 7}, "no usable env"),
    ],
)
def test_a_token_answer_without_a_usable_token_says_so_plainly(
    tmp_path: Path, data: dict[str, object], said: str
) -> None:
    # It said "has no a token (...); its data keys were: env, expireTime, token".
    answer = _token_answer(200, {"code": 0, "data": data})
    with _client(answer, tmp_path) as client, pytest.raises(MalformedResponseError) as info:
        client.token()
    assert said in str(info.value)
    assert " no a " not in str(info.value) and " no an " not in str(info.value)
