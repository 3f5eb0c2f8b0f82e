"""The lean client against servers that close keep-alive connections (issue 28).

llama.cpp's ``llama-server`` announces ``Keep-Alive: timeout=5, max=100`` and
then closes the connection after each streamed reply; others close after N
replies or say ``Connection: close``. None of that is the server failing a
request: the load test and the capacity search must count every chat whole,
plain and over TLS, and never send a chat twice to the server.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest
from fakes.keepalive_peers import DROP_DELAY_S, PIECES, keepalive_peer

from lmreg_nb.probe import Target
from lmreg_nb.probe.load.capacity import LevelPlan, find_capacity
from lmreg_nb.probe.load.fixed import run_load
from lmreg_nb.probe.text.load_text import resent_sentence
from lmreg_nb.probe.wire.exchange import chat_body
from lmreg_nb.probe.wire.stream_client import ChatConnection

#: Real sockets are the point: connections a server reuses, closes or drops (plain and TLS).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

KEY = "sk-keepalive-0123456789"
MODES = ["close-after-each", "max-3", "connection-close"]


@pytest.fixture(scope="module")
def certfile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import trustme

    from lmreg_nb._tls import tls_context

    ca = trustme.CA(organization_name="Keep-alive Test CA")
    folder = tmp_path_factory.mktemp("tls")
    pem = folder / "server.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(pem))
    bundle = folder / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    mp = pytest.MonkeyPatch()
    mp.setenv("SSL_CERT_FILE", str(bundle))
    tls_context.cache_clear()
    try:
        yield str(pem)
    finally:
        mp.undo()
        tls_context.cache_clear()


def _in_turn(url: str, count: int) -> tuple[list, ChatConnection]:
    payload = json.dumps(chat_body("m", "hi", stream=True)).encode()
    conn = ChatConnection(Target(url, KEY, "m"), payload)

    async def sends() -> list:
        try:
            return [await conn.send() for _ in range(count)]
        finally:
            conn.close()

    return asyncio.run(sends()), conn


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
@pytest.mark.parametrize("mode", MODES)
def test_every_chat_arrives_whole_and_reaches_the_server_once(
    mode: str, tls: bool, request: pytest.FixtureRequest
) -> None:
    cert = request.getfixturevalue("certfile") if tls else None
    with keepalive_peer(mode, cert) as peer:
        replies, conn = _in_turn(peer.url, 7)
    for ex in replies:
        assert ex.ok, (mode, ex.failure, ex.failure_detail)
        assert "".join(ex.pieces) == "".join(PIECES)
    assert peer.requests == 7  # each chat answered once: a resend never doubles a request
    if mode == "max-3":  # the client counted the announced max: 3 + 3 + 1, no resend needed
        assert peer.connections == 3 and conn.resent == 0
    if mode == "connection-close":  # announced: never reused, never resent
        assert peer.connections == 7 and conn.resent == 0


def test_a_connection_closed_after_each_reply_is_resent_once_on_a_fresh_one() -> None:
    with keepalive_peer("close-after-each") as peer:
        replies, conn = _in_turn(peer.url, 4)
    assert all(ex.ok for ex in replies)
    # The server announced keep-alive, so the client tried to reuse; each reuse failed
    # before any byte of an answer and went again on a fresh connection.
    assert peer.connections == 4 and 1 <= conn.resent <= 3


def test_the_load_test_counts_no_error_against_a_closing_server() -> None:
    with keepalive_peer("close-after-each") as peer:
        result = asyncio.run(run_load(Target(peer.url, KEY, "m"), 16, 4, max_duration=30))
    errors = [r for r in result.rows if r.error]
    assert len(result.rows) == 16 and not errors, errors[:3]
    # Resent, yet each reached the server once (llama-server's way: it closes the kept-alive
    # connection before it reads the next request): what the record says claims no more.
    assert result.resent >= 1 and peer.requests == 16
    said = resent_sentence(result.resent)
    assert said is not None and "did their work twice" not in said, said


def test_capacity_is_found_against_a_closing_server() -> None:
    plan = LevelPlan(max_requests=12, max_seconds=5)
    with keepalive_peer("close-after-each") as peer:
        result = find_capacity(Target(peer.url, KEY, "m"), max_concurrency=8, need=4, plan=plan)
    assert all(level.errors == 0 for level in result.levels), [
        (lv.concurrency, lv.first_error) for lv in result.levels
    ]
    assert result.capacity.concurrency >= 4


def test_the_lesson_workload_keeps_its_conversations_against_a_closing_server() -> None:
    from lmreg_nb.probe.load.workload import WorkloadSpec, prepare_workload

    async def run() -> tuple:
        target = Target(peer.url, KEY, "m")
        spec = WorkloadSpec(lesson_tokens=200, max_tokens=50, context_need=2000, seed=7)
        workload = await prepare_workload(target, spec)
        result = await run_load(target, 12, 3, max_duration=30, workload=workload)
        return result, workload

    with keepalive_peer("close-after-each") as peer:
        result, workload = asyncio.run(run())
    errors = [r for r in result.rows if r.error]
    assert len(result.rows) == 12 and not errors, errors[:3]
    assert workload.turns_sent > 0  # follow-up turns went out on the fresh connections too


def test_a_byte_level_tokenizer_sizes_the_lesson_in_its_own_tokens() -> None:
    # llama-server with a tiny Llama counts a Chinese character as 3 tokens: the lesson and
    # its history must be sized by that count, not by the one-per-character estimate
    # (which sent 3,652 tokens to a 2,048-token slot).
    from lmreg_nb.probe.load.workload import WorkloadSpec, prepare_workload

    spec = WorkloadSpec(lesson_tokens=600, max_tokens=50, context_need=2048, seed=3)
    with keepalive_peer("max-100") as peer:
        work = asyncio.run(prepare_workload(Target(peer.url, KEY, "m"), spec))
    assert not work.scale.estimate
    assert 2.5 <= work.scale.tokens(1000) / 1000 <= 3.5
    assert 600 * 0.8 <= 3 * len(work.lesson) <= 600 * 1.2  # the lesson: 600 of its tokens


def test_a_chat_dropped_on_a_reused_connection_is_resent_once_and_keeps_its_start() -> None:
    # The server reads each reused connection's chat, works DROP_DELAY_S on it, then drops
    # it without a byte. 8 chats once made 15 requests, and the resent chats read 20 ms.
    with keepalive_peer("drop-reused") as peer:
        replies, conn = _in_turn(peer.url, 8)
    assert all(ex.ok for ex in replies)
    assert peer.received == 9 and conn.resent == 1  # one resend taught it not to reuse
    resent = [ex for ex in replies if ex.resent]
    assert len(resent) == 1
    # Every figure from the first try's start: the server's half second is in it.
    assert (resent[0].ttft or 0) >= DROP_DELAY_S
    assert all((ex.ttft or 1) < DROP_DELAY_S for ex in replies if not ex.resent)


def test_a_stall_right_after_the_request_leaves_stays_in_the_first_token_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The start was stamped after the write: a client stalled between the two (a busy
    # machine) hid part of the server's time, and a resent chat read 494 ms for the
    # server's 500 (CI). The stall comes after the reused connection's request only.
    from asyncio import selector_events

    write = selector_events._SelectorSocketTransport.write
    posts = []

    def write_then_stall(self: object, data: bytes) -> None:
        write(self, data)  # type: ignore[arg-type]
        if bytes(data[:5]) == b"POST ":
            posts.append(data)
            if len(posts) == 2:
                time.sleep(0.2)

    monkeypatch.setattr(selector_events._SelectorSocketTransport, "write", write_then_stall)
    with keepalive_peer("drop-reused") as peer:
        replies, _conn = _in_turn(peer.url, 2)
    assert [ex.resent for ex in replies] == [False, True] and len(posts) == 3
    assert (replies[1].ttft or 0) >= DROP_DELAY_S


def test_the_load_test_says_how_many_chats_were_sent_twice() -> None:
    from lmreg_nb.probe.report import _load_row
    from lmreg_nb.probe.text.checks import worded

    with keepalive_peer("drop-reused") as peer:
        result = asyncio.run(run_load(Target(peer.url, KEY, "m"), 8, 1, max_duration=30))
    assert len(result.rows) == 8 and not any(r.error for r in result.rows)
    assert result.resent == 1 and peer.received == 9
    assert max(r.ttft_ms for r in result.rows) >= DROP_DELAY_S * 1000
    row = worded(_load_row(result, 8, 30))
    assert "1 request was sent twice" in row.detail


def test_an_interim_100_continue_before_the_answer_is_skipped() -> None:
    with keepalive_peer("continue-100") as peer:
        result = asyncio.run(run_load(Target(peer.url, KEY, "m", timeout=2), 6, 2, max_duration=20))
        replies, _conn = _in_turn(peer.url, 3)
    assert [r.error for r in result.rows] == [None] * 6
    assert all(ex.ok and ex.status == 200 for ex in replies)
