"""Issue 32 item 4: a registryUrl that cannot answer a chat is red, with the fix.

The register form against the sandbox: ``…/v1`` (the mock answers 404 there)
is registered (the platform accepts it), but the outcome is red and names the
address to register; the right address stays green and says it answered.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from fakes import hosts

from lmreg_nb.onboarding import Onboarding
from lmreg_nb.onboarding.address import address_verdict, chat_path_fix
from lmreg_nb.probe import Target
from lmreg_nb.settings import Settings
from lmreg_nb.ui import RegisterForm

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo


def _register(sandbox: SandboxInfo, name: str, url: str) -> RegisterForm:
    app = sandbox.add_app(name)
    env = {**sandbox.env(), "LMREG_APP_ID": app["app_id"], "LMREG_APP_SECRET": app["app_secret"]}
    form = RegisterForm(Onboarding(name, settings=Settings.load(environ=env)))
    form.model_name.value = "school-llm"
    form.registry_url.value = url
    form.button.click()
    assert form.last_error is None, form.last_error
    return form


def test_an_address_answering_404_is_red_with_the_address_to_register(
    sandbox: SandboxInfo, lang: str
) -> None:
    short = sandbox.model_url.removesuffix("/chat/completions")  # http://127.0.0.1:N/v1
    form = _register(sandbox, f"addr-404-{lang}", short)
    outcome = form.last_result
    assert outcome is not None and not outcome.ok
    html = outcome._repr_html_()
    assert "✘" in html and "#cf222e" in html  # red, not a green tick
    said = dict(outcome.rows)
    fix = " ".join(said.values())
    assert "404" in fix and sandbox.model_url in fix and "v1/chat/completions" in fix
    if lang == "zh-CN":
        assert "不能" in outcome.title or "无法" in outcome.title, outcome.title


def test_the_chat_address_stays_green(sandbox: SandboxInfo) -> None:
    form = _register(sandbox, "addr-ok", sandbox.model_url)
    outcome = form.last_result
    assert outcome is not None and outcome.ok, outcome.rows
    assert any("HTTP 200" in value for _label, value in outcome.rows)


@pytest.mark.parametrize(
    ("given", "fixed"),
    [
        ("http://h:8000/v1", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/v1/", "http://h:8000/v1/chat/completions"),
        ("https://h/chat/completions", "https://h/v1/chat/completions"),
        ("https://h", "https://h/v1/chat/completions"),
        ("https://h/v1/chat/completions", "https://h/v1/chat/completions"),
    ],
)
def test_the_fix_is_the_chat_path(given: str, fixed: str) -> None:
    assert chat_path_fix(given) == fixed


def test_a_key_the_model_refuses_is_red_and_names_the_key(sandbox: SandboxInfo) -> None:
    app = sandbox.add_app("addr-key")
    env = {**sandbox.env(), "LMREG_APP_ID": app["app_id"], "LMREG_APP_SECRET": app["app_secret"]}
    form = RegisterForm(Onboarding("addr-key", settings=Settings.load(environ=env)))
    form.model_name.value = "school-llm"
    form.registry_url.value = sandbox.model_url
    form.api_key.value = "sk-not-the-models-key-0123"
    form.button.click()
    outcome = form.last_result
    assert outcome is not None and not outcome.ok
    assert "apiKey" in outcome.title and "HTTP 401" in " ".join(v for _k, v in outcome.rows)


class _ServerError(asyncio.Protocol):
    """Answers any request with HTTP 500 whose body says a megabyte and stops short: a
    client that reads it fails (the connection closes mid-body); only the status tells."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if b"\r\n\r\n" in data:
            self.transport.write(  # type: ignore[attr-defined]
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 1048576\r\n\r\nout of"
            )
            self.transport.close()


def test_an_address_answering_an_error_is_a_warning_read_by_its_status_alone(
    sandbox: SandboxInfo,
) -> None:
    # A red-team finding: HTTP 500 was "answered a chat" under a green tick, and the body
    # was read whole (400 MB, or without end), though only the status decides.
    port = hosts.serve(_ServerError)
    try:
        url = f"http://{hosts.HOST}:{port}/v1/chat/completions"
        verdict, said = address_verdict(Target(url, "sk-address-key-0123", "m", timeout=5))
        assert (verdict, said.split(":")[0]) == (
            "error",
            "answered a chat with HTTP 500, not a reply",
        )
        form = _register(sandbox, "addr-500", url)
    finally:
        hosts.stop(port)
    outcome = form.last_result
    assert outcome is not None and outcome.ok and outcome.warning and outcome.mark == "⚠"
    assert "✔" not in outcome._repr_html_() and "HTTP 500" in repr(outcome.rows)


def _redirect(location: bytes) -> type[asyncio.Protocol]:
    """A server that answers any chat with a 307 to ``location`` (vLLM, FastAPI: a slash
    after the chat path is redirected to the path without it)."""

    class Redirect(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            if b"\r\n\r\n" in data:
                self.transport.write(  # type: ignore[attr-defined]
                    b"HTTP/1.1 307 Temporary Redirect\r\nLocation: " + location
                    + b"\r\nContent-Length: 0\r\n\r\n"
                )  # fmt: skip
                self.transport.close()

    return Redirect


@pytest.mark.parametrize(
    ("path", "location", "register"),
    [
        ("/v1/chat/completions/", b"/v1/chat/completions", "{base}/v1/chat/completions"),
        ("/v1/chat/completions", b"https://llm.school.edu.cn/v1/chat/completions",
         "https://llm.school.edu.cn/v1/chat/completions"),
        # A Location that echoes the key is not repeated.
        ("/v1/chat/completions", b"https://h.example/v1/chat/completions?k=sk-address-key-0123",
         "the address it redirects to"),
    ],
)  # fmt: skip
def test_an_address_that_redirects_its_chat_is_red_with_the_address_to_register(
    path: str, location: bytes, register: str
) -> None:
    # Against vLLM, `…/v1/chat/completions/` answered 307: "answered a chat with HTTP 307",
    # a warning, while the checks fail it (the platform does not repeat its POST there).
    port = hosts.serve(_redirect(location))
    try:
        base = f"http://{hosts.HOST}:{port}"
        target = Target(base + path, "sk-address-key-0123", "m", timeout=5)
        verdict, said = address_verdict(target)
    finally:
        hosts.stop(port)
    assert verdict == "path" and "307" in said, said
    assert said.endswith("Register " + register.format(base=base)), said
