"""One request to the school's endpoint, recorded in detail: the engine of checks and load test.

:func:`send` never raises for what a server does (refused connection,
timeout, error status, a broken stream): it returns an :class:`Exchange`
whose ``failure`` says what happened, so the checker can judge it and the
load test can count it. Every time is ``time.perf_counter()`` seconds.
A model's reply is untrusted: bodies and text are size-capped, and a compressed
body is inflated with a bound (:mod:`lmreg_nb._decode`). What the reply says is
accumulated by :class:`~lmreg_nb.probe.wire.reply.Reply`, which an Exchange is.

Times start when the request's headers have been written to the connection
(httpcore's trace hook), not when :func:`send` was called: waiting for a pooled
connection, connecting, or our own other requests of a load test going out
first would otherwise count as the server's latency. ``t_begin`` keeps the call
time; a transport without the hook leaves ``t_start`` at it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..._decode import DecodingError, ainflated
from ...i18n import _, ngettext
from ...open_files import out_of_files
from ...terminal import snippet
from ..target import Target
from .reasons import LOCAL_LIMIT, transport_reason
from .reply import MAX_TEXT_CHARS, Reply
from .shapes import error_message, reply_text
from .sse import Framing, SSEDecoder

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_TEXT_CHARS",
    "TOTAL_TIMEOUT_FACTOR",
    "Exchange",
    "chat_body",
    "completion_body",
    "completions_url",
    "send",
]

#: The most of a reply the probe reads (a stream or a JSON body), after any decoding.
MAX_BODY_BYTES = 4 * 1024 * 1024
#: A whole reply may take this many times the (per-read) timeout.
TOTAL_TIMEOUT_FACTOR = 6
DEFAULT_PROMPT = "In two sentences, what is a language model?"


def chat_body(
    model: str,
    prompt: str = DEFAULT_PROMPT,
    *,
    stream: bool,
    max_tokens: int | None = 256,
    temperature: float = 0.2,
    include_usage: bool = True,
    system: str | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """A chat request body (spec 4.5); a streamed one asks for a usage chunk by default.

    ``system``: a system message before the prompt (what the course apps send).
    ``seed``: the sampling seed (OpenAI's ``seed``), so the same request can be asked twice.
    """
    messages = [{"role": "system", "content": system}] if system is not None else []
    body: dict[str, Any] = {
        "model": model,
        "messages": [*messages, {"role": "user", "content": prompt}],
        "stream": stream,
        "temperature": temperature,
    }
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if seed is not None:
        body["seed"] = seed
    if stream and include_usage:
        body["stream_options"] = {"include_usage": True}
    return body


def completion_body(model: str, prompt: str = DEFAULT_PROMPT, max_tokens: int = 64) -> dict:
    """The plain text-completion form: model, prompt, temperature."""
    return {"model": model, "prompt": prompt, "temperature": 0.2, "max_tokens": max_tokens}


def completions_url(chat_url: str) -> str | None:
    """The text-completion URL beside a chat URL (``.../v1/completions``), if it has one."""
    base, sep, query = chat_url.partition("?")
    stripped = base.rstrip("/")
    if not stripped.endswith("chat/completions"):
        return None
    return stripped[: -len("chat/completions")] + "completions" + sep + query


@dataclass(slots=True)
class Exchange(Reply):
    """Everything observed about one request: the reply (:class:`Reply`) and how it came."""

    stream_requested: bool = False
    t_begin: float = 0.0  # send() called
    t_start: float = 0.0  # on the wire: just before the write (lean), headers sent (httpx)
    t_headers: float | None = None
    t_end: float = 0.0
    status: int | None = None
    content_type: str = ""
    location: str = ""  # the Location header of a redirect
    failure: str | None = None  # error kind: "connect", "timeout", "status 500", ...
    failure_detail: str = ""
    body: bytes = b""  # a non-streamed body (capped)
    json_body: Any = None
    streamed: bool = False  # the reply was an event stream (not one JSON body)
    data_events: list[str] = field(default_factory=list)  # kept only when asked
    framing: Framing | None = None
    reads: int = 0  # network reads of the body
    size: int = 0  # bytes of the body read (decoded)
    split_chars: int = 0  # network reads that ended inside a multi-byte UTF-8 character
    resent: bool = False  # sent twice: the server closed the kept-alive connection under it

    @property
    def ok(self) -> bool:
        """A 2xx answer that carried content and no error object."""
        return self.failure is None

    @property
    def latency(self) -> float | None:
        """Seconds from sending to the end of the reply."""
        return self.t_end - self.t_start if self.t_end else None

    @property
    def ttft(self) -> float | None:
        """Seconds from sending to the first token of any kind (thinking included)."""
        first = self.first_token_at
        return first - self.t_start if first is not None else None

    @property
    def first_answer(self) -> float | None:
        """Seconds from sending to the first token of the answer (content; thinking excluded)."""
        return self.times[0] - self.t_start if self.times else None


async def send(
    client: httpx.AsyncClient,
    target: Target,
    body: dict[str, Any] | bytes,
    *,
    stream: bool,
    url: str | None = None,
    api_key: str | None = None,
    keep_events: bool = False,
) -> Exchange:
    """POST ``body`` and record the reply; never raises for the server's behaviour."""
    ex = Exchange(stream_requested=stream)
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    ex.t_begin = ex.t_start = time.perf_counter()

    async def trace(event: str, info: Any) -> None:
        # Time from the moment the request is on the wire: waiting for a pooled
        # connection, connecting, or other requests of our own load generator
        # being sent first is not the server's latency.
        if event == "http11.send_request_headers.complete":
            ex.t_start = time.perf_counter()

    total = target.timeout * TOTAL_TIMEOUT_FACTOR
    try:
        # The timeout is per network read; `total` bounds a reply that trickles forever.
        async with (
            asyncio.timeout(total),
            client.stream(
                "POST",
                url or target.url,
                content=content,
                headers=target.headers(api_key),
                timeout=httpx.Timeout(target.timeout),  # the target's, not the client's default
                extensions={"trace": trace},
            ) as reply,
        ):
            ex.t_headers = time.perf_counter()
            ex.status = reply.status_code
            ex.content_type = reply.headers.get("content-type", "").lower()
            ex.location = snippet(reply.headers.get("location", ""), 200)
            if ex.content_type.startswith("text/event-stream") or (
                stream and 200 <= reply.status_code < 300 and "json" not in ex.content_type
            ):
                # Any 2xx non-JSON answer to a streamed request is read as a stream,
                # so a wrong Content-Type is reported, not fatal.
                await _read_stream(reply, ex, keep_events, stall=target.timeout)
            else:
                await _read_body(reply, ex)
    except TimeoutError:
        ex.failure = "timeout"
        ex.failure_detail = _(
            "the reply did not finish within {seconds} s (stopped after {n} bytes)"
        ).format(seconds=f"{total:g}", n=ex.size)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:  # InvalidURL is no HTTPError
        ex.failure, ex.failure_detail = _failure(exc, ex, url or target.url, target.timeout)
    except DecodingError as exc:
        ex.failure, ex.failure_detail = "transport", str(exc)
    ex.t_end = time.perf_counter()
    if ex.failure is None:
        _judge(ex)
    return ex


def _failure(
    exc: httpx.HTTPError | httpx.InvalidURL, ex: Exchange, url: str, timeout: float
) -> tuple[str, str]:
    """The failure kind and its plain reason for a transport error."""
    if out_of_files(exc):
        return LOCAL_LIMIT, transport_reason(exc, url)
    if isinstance(exc, httpx.ConnectTimeout | httpx.ConnectError):
        return "connect", transport_reason(exc, url)
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return "connect", transport_reason(exc, url)
    if isinstance(exc, httpx.TimeoutException):
        if ex.status is not None:
            return "timeout", _("stalled after {n} bytes: no data for {seconds} s").format(
                n=ex.size, seconds=f"{timeout:g}"
            )
        return "timeout", _("no answer within {seconds} s").format(seconds=f"{timeout:g}")
    if isinstance(exc, httpx.RemoteProtocolError):
        if ex.streamed:
            return "transport", _("connection closed before [DONE] after {n} bytes").format(
                n=ex.size
            )
        return "transport", _("the connection broke: {why}").format(why=_one_line(exc))
    # reset mid-reply, bad encodings
    return "transport", f"{type(exc).__name__}: {_one_line(exc)}"


async def _counted(reply: httpx.Response, ex: Exchange) -> AsyncIterator[bytes]:
    """The body's decoded chunks, counted in ``ex`` (reads, size); it ends truncated at
    :data:`MAX_BODY_BYTES`."""
    async for chunk in ainflated(reply, MAX_BODY_BYTES):
        ex.reads += 1
        ex.size += len(chunk)
        if ex.size > MAX_BODY_BYTES:
            ex.truncated = True
            return
        yield chunk


async def _read_body(reply: httpx.Response, ex: Exchange) -> None:
    ex.body = b"".join([chunk async for chunk in _counted(reply, ex)])
    if "json" in ex.content_type or ex.body[:1] in (b"{", b"["):
        try:
            ex.json_body = json.loads(ex.body)
        except ValueError:
            ex.json_body = None
    if ex.stream_requested and isinstance(ex.json_body, dict) and "choices" in ex.json_body:
        # A streamed request answered with one body: the whole text arrives at once.
        ex.take_whole(ex.json_body, time.perf_counter())
    elif isinstance(ex.json_body, dict):
        ex.take_timings(ex.json_body)  # llama.cpp's own times ride on a whole reply too


async def _read_stream(
    reply: httpx.Response, ex: Exchange, keep_events: bool, *, stall: float
) -> None:
    """Read an event stream into ``ex``; no complete event for ``stall`` s ends it as stalled."""
    ex.streamed = True
    decoder = SSEDecoder()
    ex.framing = decoder.framing
    last = time.perf_counter()
    async for chunk in _counted(reply, ex):
        now = time.perf_counter()
        if _ends_mid_char(chunk):
            ex.split_chars += 1
        comments = decoder.framing.comments
        events = decoder.feed(chunk)
        if events or decoder.framing.comments != comments:  # keep-alives count as life
            last = now
        elif now - last > stall:  # a trickle (slowloris) that never completes an event
            ex.failure = "timeout"
            ex.failure_detail = _(
                "stalled after {n} bytes: no complete event for {seconds} s"
            ).format(n=ex.size, seconds=f"{stall:g}")
            break
        for event in events:
            if keep_events:
                ex.data_events.append(event.data[:2000])
            ex.take_data(event.data, now)
        if ex.truncated:  # the text cap is reached: reading on only costs memory
            break
    decoder.close()


def _ends_mid_char(chunk: bytes) -> bool:
    """The chunk ends inside a multi-byte UTF-8 sequence (its rest comes in the next read)."""
    for back in range(1, min(4, len(chunk)) + 1):
        byte = chunk[-back]
        if byte & 0xC0 != 0x80:  # not a continuation byte: the lead (or ASCII)
            need = (
                2
                if byte >> 5 == 0b110
                else 3
                if byte >> 4 == 0b1110
                else 4
                if byte >> 3 == 0b11110
                else 1
            )
            return need > back
    return False


def _judge(ex: Exchange) -> None:
    """Turn a completed reply into a failure kind, or leave ``failure`` None."""
    status = ex.status or 0
    if not 200 <= status < 300:
        ex.failure = f"status {status}"
        ex.failure_detail = _error_message(ex)
    elif ex.error_events:
        ex.failure = "bad stream"
        ex.failure_detail = _("an error object inside the stream: {error}").format(
            error=_one_line(json.dumps(ex.error_events[0])[:200])
        )
    elif ex.stream_requested and ex.streamed and ex.non_json:
        ex.failure = "bad stream"
        ex.failure_detail = ngettext(
            "{n} event was not JSON", "{n} events were not JSON", len(ex.non_json)
        ).format(n=len(ex.non_json))
    elif not ex.pieces and not _whole_has_text(ex) and not (ex.streamed and ex.silent_answer):
        # A stream whose tokens carried no text yet (an empty first token) is no bad stream.
        ex.failure = "bad stream" if ex.streamed else "bad body"
        ex.failure_detail = _("no content in the reply")


def _whole_has_text(ex: Exchange) -> bool:
    if ex.stream_requested:
        return False
    return bool(reply_text(ex.json_body))


def _error_message(ex: Exchange) -> str:
    """The server's error message from a JSON error body, else a short snippet."""
    message = error_message(ex.json_body)
    if message is not None:
        return snippet(message)
    return snippet(ex.body.decode("utf-8", "replace"))


def _one_line(exc: BaseException | str) -> str:
    return snippet(str(exc), 200)
