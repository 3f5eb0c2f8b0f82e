"""Error kinds as people read them: translated labels, the JSON keeps the kinds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmreg_nb import i18n
from lmreg_nb.probe.wire.reasons import kinds_text

COUNTS = {"timeout": 3, "status 500": 2, "cut stream": 1, "something new": 1}


@pytest.fixture
def lang(request: pytest.FixtureRequest) -> Iterator[None]:
    before = i18n.current_language()
    i18n.set_language(request.param)
    yield
    i18n.set_language(before)


@pytest.mark.parametrize("lang", ["en"], indirect=True)
def test_kinds_read_as_words_with_their_counts(lang: None) -> None:
    assert kinds_text(COUNTS) == "timed out ×3, HTTP 500 ×2, cut stream ×1, something new ×1"


@pytest.mark.parametrize("lang", ["zh-CN"], indirect=True)
def test_kinds_are_translated(lang: None) -> None:
    text = kinds_text(COUNTS)
    assert "HTTP 500 ×2" in text and "something new ×1" in text  # unknown kinds as they are
    assert "timed out" not in text and "cut stream" not in text
    assert any("\u4e00" <= c <= "\u9fff" for c in text)


@pytest.mark.parametrize("lang", ["en"], indirect=True)
def test_an_https_connect_timeout_says_the_port_may_serve_plain_http(lang: None) -> None:
    # A red-team finding: `check https://127.0.0.1:8016/...` against llama.cpp's plain-http
    # port (it answers no TLS hello: the handshake times out) blamed a firewall alone.
    import httpx

    from lmreg_nb.probe.wire.reasons import transport_reason

    timeout = httpx.ConnectTimeout("timed out")
    said = transport_reason(timeout, "https://127.0.0.1:8016/v1/chat/completions")
    assert "firewall" in said and "http://127.0.0.1:8016/v1/chat/completions" in said, said
    plain = transport_reason(timeout, "http://127.0.0.1:8016/v1/chat/completions")
    assert "firewall" in plain and "http://" not in plain, plain
