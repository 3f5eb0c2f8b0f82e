"""One proxy rule for every HTTP client (a red-team finding): a campus PC often has
``http_proxy`` set for the internet.

- Nothing the toolkit sends to this machine or the local network goes through it: the
  platform on loopback (the sandbox: the token exchange carries the appSecret), and the
  school's model from every client (the register step's chat, the chat box, the load
  test's ``/metrics``), as the checks always sent it. ``lmreg-nb demo`` failed with the
  proxy's HTTP 502, and the proxy saw the appSecret and the model's key.
- A platform on the internet still goes through the proxy the environment names (the
  campus may have no other way out).

Real loopback sockets: a client that honours the environment connects to the proxy's
port, which no in-process address (tests/fakes/hosts.py) would show.
"""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator

import pytest
from fakes.loopback_platform import APP_ID, APP_SECRET, tcp_platform

from lmreg_nb.errors import LmregError
from lmreg_nb.onboarding.address import address_verdict
from lmreg_nb.probe import Target
from lmreg_nb.probe.load.prefix import _metrics
from lmreg_nb.probe.wire.chat import stream_chat
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.sandbox.school_model import MockModelConfig
from lmreg_nb.sandbox.school_model.serve import serving
from lmreg_nb.settings import Settings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

KEY = "sk-proxy-test-0123456789abcdef"
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                   "ALL_PROXY")  # fmt: skip


class _Proxy(http.server.BaseHTTPRequestHandler):
    """A proxy that writes down each request line and its Authorization, and answers 502."""

    def _any(self) -> None:
        seen = self.server.seen  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        seen.append(f"{self.requestline} {self.headers.get('Authorization')} {body!r}")
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_CONNECT = _any

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A recording proxy that every proxy variable names; what it was asked."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    for name in (*PROXY_VARIABLES, "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in PROXY_VARIABLES:
        monkeypatch.setenv(name, f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield server.seen  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def _client(base_url: str, home: object) -> RegistryClient:
    environ = {"LMREG_BASE_URL": base_url, "LMREG_APP_ID": APP_ID, "LMREG_APP_SECRET": APP_SECRET,
               "LMREG_TOKEN_CACHE": f"{home}/tokens.json"}  # fmt: skip
    return RegistryClient(Settings.load(environ=environ), max_retries=0)


def test_nothing_for_this_machine_goes_through_the_proxy(
    proxy: list[str], tmp_path: object
) -> None:
    with tcp_platform() as (base_url, _script), serving(MockModelConfig(api_key=KEY)) as model:
        with _client(base_url, tmp_path) as client:
            assert client.token()  # the exchange (appId/appSecret) answered
        target = Target(f"{model}/v1/chat/completions", KEY, "school-llm", timeout=10)
        assert address_verdict(target)[0] == "ok"
        assert "".join(stream_chat(target, "Hi"))
        assert asyncio.run(_metrics(target)) is None  # the mock has no /metrics: 404
    assert proxy == []


def test_a_platform_on_the_internet_goes_through_the_proxy(
    proxy: list[str], tmp_path: object
) -> None:
    with (
        _client("https://platform.example.test", tmp_path) as client,
        pytest.raises(LmregError) as failed,
    ):
        client.token()
    assert [line.split()[:2] for line in proxy] == [["CONNECT", "platform.example.test:443"]]
    assert APP_SECRET not in "".join(proxy)  # a tunnel: the proxy sees no request in it
    assert "proxy" in str(failed.value), failed.value
