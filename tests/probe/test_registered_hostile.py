"""`--registered NAME` with what a hostile or careless platform returns (issue 20, 3 and 6).

A tiny platform on loopback answers query-models with a crafted list; a model
server on loopback records every request it receives, raw. The apiKey the
platform returns is checked before it is used: a key with CR LF would have
been written raw by the capacity search's lean client (an injected header
arrived 492 times), a non-ASCII key was a UnicodeEncodeError traceback. And two
models whose names differ only by Unicode normalisation are never picked
silently.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from click.testing import CliRunner

from lmreg_nb.cli import main
from lmreg_nb.client import RegistryClient
from lmreg_nb.errors import ValidationError
from lmreg_nb.probe import Target
from lmreg_nb.settings import Settings

pytestmark = pytest.mark.timeout(60)

CHAT = "/v1/chat/completions"
INJECTED = "X-Injected: yes"
CRLF_KEY = "sk-school-Qw3Er5Ty7U\r\n" + INJECTED
CYRILLIC_KEY = "sk-ключ-Qw3Er5Ty7Ui9"
GOOD_KEY = "sk-school-Op1As3Df5Gh7"


class _Recorder(socketserver.BaseRequestHandler):
    """Records each request's raw head; answers a short valid stream and closes."""

    heads: list[bytes]

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data:
            got = sock.recv(65536)
            if not got:
                break
            data += got
        self.heads.append(data.partition(b"\r\n\r\n")[0])
        chunk = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
        body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        sock.sendall(head.encode() + body)


@contextmanager
def model_server() -> Iterator[tuple[str, list[bytes]]]:
    """A chat endpoint on loopback; yields its chat URL and the heads it received."""
    heads: list[bytes] = []
    handler = type("Recorder", (_Recorder,), {"heads": heads})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{CHAT}", heads
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def platform(models: list[dict[str, Any]]) -> Iterator[str]:
    """A platform whose query-models lists ``models`` (as given, unchecked); its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            data = {"models": models} if self.path.endswith("query-models") else {}
            body = json.dumps({"code": 0, "message": "OK", "data": data}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _model(model_id: str, name: str, url: str, key: str) -> dict[str, Any]:
    return {"modelId": model_id, "modelName": name, "registryUrl": url, "apiKey": key}


def _env(base: str) -> dict[str, str]:
    # A token obtained elsewhere: the platform needs no token operation.
    return {
        "LMREG_BASE_URL": base,
        "LMREG_TOKEN": "tok-registered-hostile-0123456789",
        "LMREG_ENV": "env-test",
        "LMREG_TIMEOUT": "2",
        "LMREG_LANG": "en",
    }


def _cli(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", ["check", "capacity"])
@pytest.mark.parametrize("key", [CRLF_KEY, CYRILLIC_KEY], ids=["crlf", "non-ascii"])
def test_a_registered_key_that_cannot_be_a_header_is_never_sent(command: str, key: str) -> None:
    with model_server() as (url, heads), platform([_model("m-1", "campus-llm", url, key)]) as base:
        code, out, err = _cli([command, "--registered", "campus-llm"], _env(base))
    assert code == 2, out + err  # the registration must be fixed: as for a missing key
    assert err.count("\n") == 1 and "Traceback" not in err and out == ""
    assert "'campus-llm'" in err and "lmreg-nb modify --model-id m-1 --new-api-key" in err
    assert "ключ" not in err and "Qw3Er5Ty7U" not in err  # the key is not shown
    assert heads == []  # nothing was sent with it, so no header could be injected


def test_the_lean_client_cannot_be_given_a_key_that_injects_a_header() -> None:
    # The capacity search's own client writes the request head itself: the key
    # reaches it only inside a Target, and a Target refuses one with CR LF.
    with model_server() as (url, heads):
        with pytest.raises(ValidationError, match="apiKey"):
            Target(url, CRLF_KEY, "m")
        from lmreg_nb.probe.capacity import LevelPlan, find_capacity

        plan = LevelPlan(min_seconds=0.1, requests_per_worker=1, max_seconds=2)
        result = find_capacity(Target(url, GOOD_KEY, "m", timeout=10), max_concurrency=2, plan=plan)
    assert result.levels and heads
    assert all(INJECTED.lower().encode() not in h.lower() for h in heads)
    assert all(h.count(b"\r\nAuthorization: Bearer ") == 1 for h in heads)


def test_nfc_and_nfd_twins_are_never_picked_silently() -> None:
    nfc, nfd = "caf\u00e9-llm", "cafe\u0301-llm"  # the same name to the eye
    with model_server() as (url, heads):
        models = [_model("id-nfc", nfc, url, GOOD_KEY), _model("id-nfd", nfd, url, GOOD_KEY)]
        with platform(models) as base:
            env = _env(base)
            settings = Settings.load(environ=env)
            with pytest.raises(ValidationError) as info:
                Target.from_registered(settings, nfd, client=RegistryClient(settings))
            code, _out, err = _cli(["check", "--registered", nfc], env)
    message = str(info.value)
    assert "id-nfc" in message and "id-nfd" in message and "modify --model-id" in message
    assert code == 2 and err.count("\n") == 1 and "id-nfc" in err and "id-nfd" in err
    assert heads == []


def test_one_registered_model_is_found_in_any_unicode_form() -> None:
    with model_server() as (url, _heads):
        models = [_model("id-1", "caf\u00e9-llm", url, GOOD_KEY)]
        with platform(models) as base:
            settings = Settings.load(environ=_env(base))
            target = Target.from_registered(settings, "cafe\u0301-llm ")
    assert (target.url, target.model, target.registered_name) == (url, "café-llm", "café-llm")
    assert target.api_key.reveal() == GOOD_KEY and target.alias is None
