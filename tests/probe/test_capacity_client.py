"""The capacity search's lean streaming client: real servers' framing, keep-alive, TLS."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from fakes.hosts import mock_served

from lmreg_nb.probe import Target
from lmreg_nb.probe.load.capacity import LevelPlan, find_capacity
from lmreg_nb.sandbox.school_model import MockModelConfig

pytestmark = pytest.mark.timeout(60)

KEY = "sk-capacity-client-0123456789"
TOKENS = 12
#: Levels of 4 requests a chat: only whether they are served is read.
FAST = LevelPlan(max_requests=4, max_requests_per_worker=4, max_seconds=5)


def _mock() -> MockModelConfig:
    return MockModelConfig(api_key=KEY, ttft_ms=10, itl_ms=5, tokens=TOKENS)


@pytest.fixture(scope="module")
def plain() -> Iterator[str]:
    with mock_served(_mock()) as base:
        yield base


def _url(base: str, quirks: str = "") -> str:
    prefix = f"/quirks/{quirks}" if quirks else ""
    return f"{base}{prefix}/v1/chat/completions"


@pytest.mark.parametrize(
    "quirks", ["crlf", "cr", "keepalive,no-space", "null-content", "no-stream", "burst"]
)
def test_the_lean_client_reads_what_real_servers_send(plain: str, quirks: str) -> None:
    from lmreg_nb.probe.wire.exchange import chat_body
    from lmreg_nb.probe.wire.stream_client import ChatConnection

    payload = json.dumps(chat_body("m", "hi", stream=True)).encode()
    conn = ChatConnection(Target(_url(plain, quirks), KEY, "m"), payload)

    async def twice() -> list:
        try:  # the second request reuses the keep-alive connection
            return [await conn.send(), await conn.send()]
        finally:
            conn.close()

    for ex in asyncio.run(twice()):
        assert ex.ok, (ex.failure, ex.failure_detail)
        assert ex.output_tokens == (TOKENS, "usage") and ex.finish == "stop"
        assert len(ex.pieces) == (1 if quirks == "no-stream" else TOKENS)


def test_capacity_over_https_and_an_untrusted_certificate(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trustme

    from lmreg_nb._tls import tls_context

    ca = trustme.CA(organization_name="Capacity Test CA")
    pem = tmp_path / "server.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(pem))
    bundle = tmp_path / "ca.pem"
    with mock_served(_mock(), certfile=str(pem), keyfile=str(pem)) as base:
        assert base.startswith("https://")
        tls_context.cache_clear()
        try:
            untrusted = find_capacity(Target(_url(base), KEY, "m"), max_concurrency=1, plan=FAST)
            ca.cert_pem.write_to_path(str(bundle))
            monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
            tls_context.cache_clear()
            trusted = find_capacity(Target(_url(base), KEY, "m"), max_concurrency=2, plan=FAST)
        finally:
            tls_context.cache_clear()
    # Every request refused alike, before any level: the checks' own sentence says why.
    assert untrusted.capacity.concurrency == 0 and untrusted.capacity.limited_by == "unreachable"
    assert untrusted.levels == [] and "certificate" in untrusted.unreachable.lower()
    assert trusted.capacity.concurrency == 2 and trusted.levels[0].errors == 0
