"""The chat step and the checks against hostile endpoints: bounded, one line, nothing leaked."""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from fakes.hostile import hostile_server
from fakes.hosts import mock_served, read_body, replaying, served

from lmreg_nb.errors import LmregError, RequestTimeout
from lmreg_nb.probe import ChatEndpointError, Target, check_endpoint, stream_chat
from lmreg_nb.probe.wire.chat import StreamMasker
from lmreg_nb.secret import find_leaks

if TYPE_CHECKING:
    from tests.probe.conftest import Mock

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")
KEY = "sk-hostile-Qw3Er5Ty7Ui9Op1As"
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    with hostile_server() as base:
        yield base


def _pieces(text: str) -> list[str]:
    return [text[i : i + 8] for i in range(len(text) - 7)]


def _clean(text: str) -> bool:
    return (
        KEY not in text and not any(p in text for p in _pieces(KEY)) and not find_leaks(text, [KEY])
    )


def _peak_mb(run: Callable[[], T]) -> tuple[T, float]:
    """``run()``'s result and the most memory Python held while it ran (tracemalloc's
    peak, in MB): the chat step's own, and the in-process server's, which pours as fast as
    the client reads."""
    tracemalloc.start()
    try:
        return run(), tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_endless_stream_stops_with_one_line_and_bounded_memory(hostile: str) -> None:
    # Long events (1900 characters): the text cap is met in ~140 events, not 13,800, and
    # tracemalloc's toll on each stays small.
    target = Target(hostile + "/endless/wide" + CHAT, KEY, "m", timeout=5)
    got: list[int] = []

    def chat() -> str:
        try:
            for piece in stream_chat(target, "hi"):
                got.append(len(piece))
        except LmregError as exc:
            return str(exc)
        return ""

    error, peak = _peak_mb(chat)
    print(f"peak memory of the chat step against an endless stream: {peak:.1f} MB")
    assert "over 262144 characters; stopped" in error and "\n" not in error
    assert sum(got) <= 262144
    # Reading the stream whole (what the cap stops) holds 64 MiB and more.
    assert peak < 32


def test_checks_with_the_chat_against_an_endless_stream_stay_bounded(hostile: str) -> None:
    # Every request of the checks (GET /v1/models included) meets the endless answer (long
    # events, as above).
    target = Target(hostile + "/endless/wide" + CHAT, KEY, "m", timeout=5)
    report, peak = _peak_mb(lambda: check_endpoint(target, chat_prompt="hi"))
    print(f"peak memory of the checks + chat against an endless stream: {peak:.1f} MB")
    assert "over 262144 characters; stopped" in (report.chat_error or "")
    # An unbounded read (GET /v1/models once) held the server's whole 64 MiB answer.
    assert peak < 32


def test_endless_empty_events_stop_at_the_byte_cap(
    hostile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No text, only bytes: the byte cap stops it (made small here to keep the test fast).
    monkeypatch.setattr("lmreg_nb.probe.wire.chat.MAX_BODY_BYTES", 256 * 1024)
    with pytest.raises(ChatEndpointError, match=r"more than 0\.25 MiB"):
        list(stream_chat(Target(hostile + "/empty" + CHAT, KEY, "m", timeout=5), "hi"))


def test_slowloris_is_reported_as_stalled_quickly(hostile: str) -> None:
    # A byte every 50 ms and no whole event: the reads never wait 0.3 s, the reply does.
    start = time.monotonic()
    with pytest.raises(RequestTimeout, match=r"stalled after \d+ bytes"):
        list(stream_chat(Target(hostile + "/slowloris/drip" + CHAT, KEY, "m", timeout=0.3), "hi"))
    assert time.monotonic() - start < 6


def test_slowloris_in_the_checks_is_a_stalled_row(hostile: str) -> None:
    start = time.monotonic()
    report = check_endpoint(Target(hostile + "/slowloris/drip" + CHAT, KEY, "m", timeout=0.3))
    assert time.monotonic() - start < 10
    details = " ".join(c.detail for c in report.checks if not c.passed)
    assert "stalled after" in details or "no answer within" in details
    assert not report.ok


def test_keep_alive_comments_are_not_a_stall(hostile: str) -> None:
    # A server thinking longer than the timeout (0.8 s), sending keep-alives meanwhile (every
    # 0.1 s), is alive.
    target = Target(hostile + "/thinking/quick" + CHAT, KEY, "m", timeout=0.5)
    text = "".join(stream_chat(target, "hi"))
    assert text == "thought hard"


def test_cut_stream_is_closed_before_done(hostile: str) -> None:
    with pytest.raises(ChatEndpointError, match=r"connection closed before \[DONE\] after \d+"):
        list(stream_chat(Target(hostile + "/cut" + CHAT, KEY, "m", timeout=2), "hi"))


def test_cut_stream_in_the_checks(hostile: str) -> None:
    report = check_endpoint(Target(hostile + "/cut" + CHAT, KEY, "m", timeout=2))
    row = next(c for c in report.checks if c.name == "stream-done")
    assert not row.passed and "connection closed before [DONE] after" in row.detail


def test_vllm_error_object_midstream(hostile: str) -> None:
    with pytest.raises(ChatEndpointError, match="CUDA out of memory"):
        list(stream_chat(Target(hostile + "/vllm-err" + CHAT, KEY, "m", timeout=2), "hi"))


def test_echoed_key_is_masked_in_the_streamed_reply(hostile: str) -> None:
    pieces = list(stream_chat(Target(hostile + "/echo" + CHAT, KEY, "m", timeout=2), "hi"))
    text = "".join(pieces)
    assert text.startswith("you sent ") and text.endswith(" done")
    assert _clean(text), text
    assert all(_clean(p) for p in pieces)


def test_echoed_key_is_masked_in_an_error(hostile: str) -> None:
    with pytest.raises(ChatEndpointError) as info:
        list(stream_chat(Target(hostile + "/e500" + CHAT, KEY, "m", timeout=2), "hi"))
    assert "HTTP 500" in str(info.value) and _clean(str(info.value))


@pytest.mark.parametrize("where", ["echo", "e500"])
def test_echoed_key_never_in_the_report(hostile: str, where: str) -> None:
    report = check_endpoint(
        Target(hostile + f"/{where}" + CHAT, KEY, "m", timeout=2), chat_prompt="hi"
    )
    out = json.dumps(report.to_json()) + report.reply_text
    out += (report.chat_reply or "") + (report.chat_error or "")
    assert _clean(out), out


def test_stream_masker_holds_back_a_split_key() -> None:
    mask = StreamMasker([KEY])
    shown = [mask.push(p) for p in ["hello ", KEY[:6], KEY[6:15], KEY[15:], " 你好", " bye"]]
    shown.append(mask.flush())
    text = "".join(shown)
    assert _clean(text) and text.startswith("hello ") and text.endswith(" 你好 bye")


def _timed(app: Any, seen: list[tuple[bool, float, float]]) -> Any:
    """``app``, noting each POST's (asks for the chat prompt, start, end) as it serves it."""

    async def timed(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await inner(scope, receive, send)
        start = time.monotonic()
        body = await read_body(receive)
        try:
            await inner(scope, replaying(body, receive), send)
        finally:
            seen.append((b"Hello there" in body, start, time.monotonic()))

    inner = app
    return timed


def test_chat_reply_runs_beside_the_checks() -> None:
    from lmreg_nb.sandbox.school_model import MockModelConfig, create_app, reply_tokens

    # Imports warmed up against a mock without latency, so they do not count below.
    with mock_served(MockModelConfig(api_key=KEY, ttft_ms=0, itl_ms=0, tokens=2)) as base:
        check_endpoint(Target(base + CHAT, KEY, "m", timeout=5))
    config = MockModelConfig(api_key=KEY, ttft_ms=150, itl_ms=10, tokens=8)
    seen: list[tuple[bool, float, float]] = []
    with served(_timed(create_app(config), seen)) as base:
        start = time.monotonic()
        report = check_endpoint(Target(base + CHAT, KEY, "m", timeout=5), chat_prompt="Hello there")
        elapsed = time.monotonic() - start
    assert report.ok and report.chat_error is None
    assert report.chat_reply == "".join(reply_tokens(8))
    # The chat's request was at the server while the checks' were (not before, not after).
    chat = [(s, e) for is_chat, s, e in seen if is_chat]
    others = [(s, e) for is_chat, s, e in seen if not is_chat]
    assert len(chat) == 1 and len(others) >= 10, seen
    assert any(s < chat[0][1] and chat[0][0] < e for s, e in others), seen
    # Each request takes ~0.23 s: one after another they would take over 2.5 s.
    one = (config.ttft_ms + config.tokens * config.itl_ms) / 1000
    assert elapsed < 0.5 * len(seen) * one, (elapsed, len(seen))


def test_chat_error_is_reported_not_raised(mock: Mock) -> None:
    report = check_endpoint(Target(mock.url("status-500"), mock.key, mock.model), chat_prompt="hi")
    assert report.chat_reply is None
    assert report.chat_error is not None and "HTTP 500" in report.chat_error


def test_errors_are_lmreg_errors(hostile: str) -> None:
    for path in ("/cut", "/vllm-err", "/e500"):
        with pytest.raises(LmregError):
            list(stream_chat(Target(hostile + path + CHAT, KEY, "m", timeout=2), "hi"))
