"""One reply accumulator for every reader: the checks' recorder, the lean client, the chat."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
from fakes.hostile import hostile_server

from lmreg_nb.probe import Reply, Target
from lmreg_nb.probe.wire.chat import ChatReader, StreamMasker
from lmreg_nb.probe.wire.exchange import MAX_TEXT_CHARS, Exchange, chat_body, send
from lmreg_nb.probe.wire.stream_client import ChatConnection

pytestmark = pytest.mark.timeout(60)

KEY = "sk-reply-Qw3Er5Ty7Ui9Op1As"
CHAT = "/v1/chat/completions"


def _chunk(**delta: object) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})


def test_answer_and_thinking_are_kept_apart_with_their_times() -> None:
    reply = Reply()
    reply.take_data(_chunk(role="assistant", content=""), 1.0)
    reply.take_data(_chunk(reasoning_content="Let me think."), 2.0)
    reply.take_data(_chunk(reasoning="Ollama's field."), 2.5)
    assert reply.take_data(_chunk(content="Hello"), 3.0) == "Hello"
    reply.take_data(json.dumps({"choices": [], "usage": {"completion_tokens": 7}}), 4.0)
    reply.take_data("[DONE]", 5.0)
    reply.take_data(_chunk(content="late"), 6.0)
    assert (reply.text, reply.reasoning_text) == ("Hello", "Let me think.Ollama's field.")
    assert (reply.times, reply.reasoning_times) == ([3.0], [2.0, 2.5])
    assert reply.first_token_at == 2.0  # of any kind; the answer's first is times[0]
    assert reply.role_only_first and reply.usage_chunks == 1 and reply.done
    assert reply.after_done == 1 and reply.events == 7
    assert reply.output_tokens == (7, "usage")


def test_what_is_not_a_chunk_is_noted() -> None:
    reply = Reply()
    reply.take_data(b"not json", 1.0)
    reply.take_data("42", 1.0)
    reply.take_data(json.dumps({"choices": "x"}), 1.0)
    reply.take_data(json.dumps({"object": "error", "message": "CUDA out of memory"}), 1.0)
    reply.take_data(json.dumps({"choices": [{"delta": {"content": None}}]}), 1.0)
    assert reply.non_json == ["not json", "42", '{"choices": "x"}']
    assert reply.error_events == [{"object": "error", "message": "CUDA out of memory"}]
    assert reply.null_content == 1 and reply.pieces == []


def test_a_whole_reply_and_the_text_cap() -> None:
    reply = Reply()
    body = {"choices": [{"message": {"content": "x" * (MAX_TEXT_CHARS + 5),
            "reasoning_content": "hmm"}, "finish_reason": "length"}]}  # fmt: skip
    assert len(reply.take_whole(body, 1.0)) == MAX_TEXT_CHARS
    assert reply.finish == "length" and reply.reasoning_text == "hmm"
    reply.take_chunk({"choices": [{"delta": {"content": "more"}}]}, 2.0)
    assert reply.truncated and reply.text_chars == MAX_TEXT_CHARS


@pytest.fixture(scope="module")
def reasoning_url() -> Iterator[str]:
    with hostile_server() as base:
        yield base + "/reasoning" + CHAT


def _same_reply(ex: Exchange) -> None:
    assert ex.ok, (ex.failure, ex.failure_detail)
    assert (ex.text, ex.reasoning_text) == ("Hello there", "Let me think.")
    assert ex.finish == "stop" and ex.done and ex.output_tokens == (4, "usage")
    first = ex.first_token_at
    assert first is not None and first == ex.reasoning_times[0] < ex.times[0]
    # DESIGN's contract: ttft counts the first token of any kind, first_answer the answer's.
    assert ex.ttft is not None and ex.ttft == first - ex.t_start
    assert ex.first_answer is not None and ex.first_answer == ex.times[0] - ex.t_start


def test_the_checks_recorder_and_the_lean_client_read_a_reply_alike(reasoning_url: str) -> None:
    target = Target(reasoning_url, KEY, "m", timeout=5)
    payload = json.dumps(chat_body("m", stream=True)).encode()

    async def both() -> tuple[Exchange, Exchange]:
        async with httpx.AsyncClient() as client:
            recorded = await send(client, target, payload, stream=True)
        conn = ChatConnection(target, payload)
        try:
            return recorded, await conn.send()
        finally:
            conn.close()

    recorded, lean = asyncio.run(both())
    _same_reply(recorded)
    _same_reply(lean)


def test_the_chat_reader_accumulates_the_same() -> None:
    # Bytes fed straight to the reader: the URL only names the endpoint in its messages.
    reader = ChatReader("http://127.0.0.1:9/reasoning" + CHAT, 5, StreamMasker([KEY]))
    stream = "".join(
        f"data: {c}\n\n"
        for c in (
            _chunk(reasoning_content="Let me "),
            _chunk(reasoning_content="think."),
            _chunk(content="Hello"),
            _chunk(content=" there"),
        )
    ).encode()
    pieces = reader.feed(stream[:50]) + reader.feed(stream[50:] + b"data: [DONE]\n\n")
    reader.end()
    assert pieces == ["Hello", " there"]  # the chat shows the answer only
    assert reader.reply.reasoning_text == "Let me think." and reader.reply.done
