"""The chat step and the checks against hostile endpoints: bounded, one line, nothing leaked."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from fakes.hostile import hostile_server

from lmreg_nb.errors import LmregError, RequestTimeout
from lmreg_nb.probe import ChatEndpointError, Target, check_endpoint, stream_chat
from lmreg_nb.probe.wire.chat import StreamMasker
from lmreg_nb.secret import find_leaks

if TYPE_CHECKING:
    from tests.probe.conftest import Mock

pytestmark = pytest.mark.timeout(60)

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


def test_endless_stream_stops_with_one_line_and_bounded_memory(hostile: str) -> None:
    # In a child process, so its peak RSS is the chat step's alone.
    code = f"""
import resource, sys
from lmreg_nb.probe import Target, stream_chat
from lmreg_nb.errors import LmregError
got = 0
try:
    target = Target({hostile + "/endless" + CHAT!r}, {KEY!r}, "m", timeout=5)
    for piece in stream_chat(target, "hi"):
        got += len(piece)
except LmregError as exc:
    print("ERROR", str(exc))
print("CHARS", got)
try:  # VmHWM is this process's own peak (ru_maxrss may carry the forking parent's)
    with open("/proc/self/status") as status:
        hwm = next(line for line in status if line.startswith("VmHWM:"))
    print("RSS_MB", int(hwm.split()[1]) / 1024)
except OSError:
    print("RSS_MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - start
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines())
    assert "over 262144 characters; stopped" in lines["ERROR"]
    assert "\n" not in lines["ERROR"]
    rss = float(lines["RSS_MB"])
    print(f"peak RSS of the chat step against an endless stream: {rss:.0f} MB in {elapsed:.1f} s")
    assert rss < 200
    assert int(lines["CHARS"]) <= 262144


def test_checks_with_the_chat_against_an_endless_stream_stay_bounded(hostile: str) -> None:
    # Every request of the checks (GET /v1/models included) meets the endless answer.
    code = f"""
from lmreg_nb.probe import Target, check_endpoint
target = Target({hostile + "/endless" + CHAT!r}, {KEY!r}, "m", timeout=5)
report = check_endpoint(target, chat_prompt="hi")
print("ERROR", report.chat_error)
with open("/proc/self/status") as status:
    print("RSS_MB", int(next(x for x in status if x.startswith("VmHWM:")).split()[1]) / 1024)
"""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - start
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines())
    assert "over 262144 characters; stopped" in lines["ERROR"]
    rss = float(lines["RSS_MB"])
    print(
        f"peak RSS of the checks + chat against an endless stream: {rss:.0f} MB in {elapsed:.1f} s"
    )
    # The bare process is ~30 MB; an unbounded read (GET /v1/models once) took 175 MB
    # before the server's own 64 MiB cap stopped it.
    assert rss < 100


def test_endless_empty_events_stop_at_the_byte_cap(
    hostile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No text, only bytes: the byte cap stops it (made small here to keep the test fast).
    monkeypatch.setattr("lmreg_nb.probe.wire.chat.MAX_BODY_BYTES", 256 * 1024)
    with pytest.raises(ChatEndpointError, match=r"more than 0\.25 MiB"):
        list(stream_chat(Target(hostile + "/empty" + CHAT, KEY, "m", timeout=5), "hi"))


def test_slowloris_is_reported_as_stalled_quickly(hostile: str) -> None:
    start = time.monotonic()
    with pytest.raises(RequestTimeout, match=r"stalled after \d+ bytes"):
        list(stream_chat(Target(hostile + "/slowloris" + CHAT, KEY, "m", timeout=1), "hi"))
    assert time.monotonic() - start < 6


def test_slowloris_in_the_checks_is_a_stalled_row(hostile: str) -> None:
    start = time.monotonic()
    report = check_endpoint(Target(hostile + "/slowloris" + CHAT, KEY, "m", timeout=1))
    assert time.monotonic() - start < 10
    details = " ".join(c.detail for c in report.checks if not c.passed)
    assert "stalled after" in details or "no answer within" in details
    assert not report.ok


def test_keep_alive_comments_are_not_a_stall(hostile: str) -> None:
    # A server thinking longer than the timeout, sending keep-alives meanwhile, is alive.
    text = "".join(stream_chat(Target(hostile + "/thinking" + CHAT, KEY, "m", timeout=1), "hi"))
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


def test_chat_reply_runs_beside_the_checks() -> None:
    from lmreg_nb.sandbox.school_model import MockModelConfig, reply_tokens, serving

    config = MockModelConfig(api_key=KEY, ttft_ms=400, itl_ms=10, tokens=8)
    with serving(config) as base:
        check_endpoint(Target(base + CHAT, KEY, "m", timeout=5))  # warm up imports and connections
        start = time.monotonic()
        report = check_endpoint(Target(base + CHAT, KEY, "m", timeout=5), chat_prompt="Hello there")
        elapsed = time.monotonic() - start
    assert report.ok and report.chat_error is None
    assert report.chat_reply == "".join(reply_tokens(8))
    # Eleven requests of ~0.5 s each: one after another they would take over 5 s.
    assert elapsed < 2.0, elapsed


def test_chat_error_is_reported_not_raised(mock: Mock) -> None:
    report = check_endpoint(Target(mock.url("status-500"), mock.key, mock.model), chat_prompt="hi")
    assert report.chat_reply is None
    assert report.chat_error is not None and "HTTP 500" in report.chat_error


def test_errors_are_lmreg_errors(hostile: str) -> None:
    for path in ("/cut", "/vllm-err", "/e500"):
        with pytest.raises(LmregError):
            list(stream_chat(Target(hostile + path + CHAT, KEY, "m", timeout=2), "hi"))
