"""A mock school model: an OpenAI-compatible chat endpoint with known timing and quirks.

It serves ``POST /v1/chat/completions`` (streamed and not) and
``POST /v1/completions`` in the OpenAI shapes, checks ``Authorization: Bearer
<api_key>`` (401 with an OpenAI-style error body otherwise) and honours its
latency knobs exactly, so that the probe's measurements can be checked against
a known truth: the stream sends a role-only first chunk at once, then content
chunk ``k`` (one token each, ``k = 0 .. tokens-1``) at ``t0 + ttft_ms + k *
itl_ms``, where ``t0`` is the request's arrival in the app (the handler's
start) on a monotonic clock. Chunks
are scheduled against that clock, never by chained sleeps, so timing does not
drift; chunks already due (``itl_ms = 0``, or a late loop) go out in one write.
A non-streamed reply is sent when the last token would be.

``max_tokens`` / ``max_completion_tokens`` in the request cap the reply
(``finish_reason`` is then ``"length"``). ``stream_options.include_usage``
adds a last chunk with empty ``choices`` and ``usage``.

Quirks imitate what real servers and proxies do. They come from
``MockModelConfig.quirks`` and, per request, from a path prefix, so one mock
serves them all: ``/quirks/no-done,burst/v1/chat/completions``.

Tolerated by well-behaved clients (the probe notes them; a missing usage is a
warning):

==================  =========================================================
``no-space``        ``data:{json}`` (no space after the colon)
``crlf``            ``\\r\\n`` line ends
``cr``              ``\\r`` line ends
``keepalive``       ``: keep-alive`` comment lines before and between chunks
``null-content``    ``"content": null`` in the role chunk and the last chunk
``no-usage``        no ``usage``, in the JSON reply or in the stream
==================  =========================================================

Breaking clients (the probe flags them: errors, except burst, html-errors and
text-errors, which are warnings):

======================  =====================================================
``no-done``             the stream ends without ``data: [DONE]``
``html-errors``         error replies are an HTML page
``text-errors``         error replies are plain text
``non-json-chunk``      one ``data:`` line in the stream is not JSON
``error-in-stream``     a 200 stream carries an ``{"error": ...}`` object midway
``no-stream``           a streamed request is answered with one JSON body
``burst``               every chunk arrives at once at the end (a buffering proxy)
``any-key``             every API key is accepted
``wrong-content-type``  the stream is sent as ``text/plain``
``slow``                no answer at all (hangs until the client gives up)
``status-500``          every request answers 500
``status-429``          every request answers 429 with ``Retry-After: 1``
``interrupt``           a new request (streamed or not) cuts the streams in
                        progress (llama.cpp's ``interrupt_requests``): ``data:
                        [DONE]``, no finish_reason
``no-system-role``      a chat whose messages hold a system message gets 400
                        "System role not supported" (a Gemma-style chat template)
``think-in-content``    a reasoning model without a reasoning parser: a
                        ``<think>...</think>`` block opens the content
``reasoning-content``   (tolerated) a reasoning model with a parser: the thinking
                        comes first as ``reasoning_content`` deltas, the answer after
``truncate-prompt``     with a context window (``context_window``), a longer
                        prompt is cut to the window silently, as Ollama does with
                        ``num_ctx``, instead of refused
``replacement-char``    a Chinese reply carries U+FFFD in place of some
                        characters (a server decoding byte-level tokens one by one)
``split-utf8``          (tolerated) each write of a stream is cut inside a
                        multi-byte character, the rest following 5 ms later
``ignore-max-tokens``   ``max_tokens`` / ``max_completion_tokens`` are ignored
======================  =====================================================

``context_window`` (N tokens, 0: none; a prompt's tokens as
:func:`lmreg_nb.sandbox.mock_compute.tokenize` counts them: one per CJK
character, one per four characters of other words): a
prompt of more than N tokens, or with ``max_tokens`` more than N in all, gets
vLLM's 400 "This model's maximum context length is N tokens. However, you
requested ..." (with ``truncate-prompt``: answered, ``usage.prompt_tokens``
capped at N).

A prompt with Chinese characters gets a Chinese reply (one character per
token, sent as raw UTF-8). ``served`` names the models served (vLLM's
``--served-model-name``): another ``model`` gets vLLM's 404 ``{"object":
"error", ...}`` and ``GET /v1/models`` lists them; without it any name is
served and ``GET /v1/models`` answers 404. :func:`serving` takes a
certificate and key to serve https.

Saturation like a real server's (a slot limit, a decode slowdown under load):
see :mod:`lmreg_nb.sandbox.saturation`. Compute like a GPU's (a prefill queue
at R tokens a second, a prefix cache, a KV budget): see
:mod:`lmreg_nb.sandbox.mock_compute`.

Also served: ``GET /health`` and ``GET /v1/models``. Ways to run it:
:func:`create_app` (the ASGI app, for uvicorn or the sandbox command), and
in :mod:`lmreg_nb.sandbox.mock_serving`: ``serving`` (a uvicorn thread, for
tests), ``serving_process`` (a separate uvicorn process with N workers, for
benchmarks) and ``app_from_env`` (a factory configured by ``LMREG_MOCK_*``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .reply import (
    _asks_chinese,
    _chinese_tokens,
    _error,
    _error_body,
    _Reply,
    _sleep_until,
    _split_utf8,
    _stream,
    reply_tokens,
)
from .saturation import Load

__all__ = [
    "QUIRKS",
    "MockModelConfig",
    "create_app",
    "parse_quirks",
    "reply_tokens",
]

#: Every quirk the mock knows (see the module docstring).
QUIRKS: frozenset[str] = frozenset(
    {
        "no-space",
        "crlf",
        "cr",
        "keepalive",
        "null-content",
        "no-usage",
        "no-done",
        "html-errors",
        "text-errors",
        "non-json-chunk",
        "error-in-stream",
        "no-stream",
        "burst",
        "any-key",
        "wrong-content-type",
        "slow",
        "status-500",
        "status-429",
        "interrupt",
        "replacement-char",
        "split-utf8",
        "ignore-max-tokens",
        "no-system-role",
        "think-in-content",
        "reasoning-content",
        "truncate-prompt",
    }
)

# The longest a `slow` request hangs when the client never gives up.
_SLOW_CAP_S = 300.0


@dataclass(frozen=True)
class MockModelConfig:
    """Knobs of the mock: its API key, latencies (ms), tokens per reply, quirks."""

    api_key: str
    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    tokens: int = 32
    quirks: frozenset[str] = frozenset()
    slots: int = 0  # requests served at once, the rest queue (0: no limit); see saturation.py
    slowdown: float = 0.0  # each gap is itl_ms * (1 + slowdown * (streams in progress - 1))
    served: tuple[str, ...] = ()  # model names served (empty: any name)
    context_window: int = 0  # tokens of prompt + max_tokens accepted (0: no limit)
    prefill_tokens_per_s: float = 0.0  # one FCFS prefill queue (0: free); see mock_compute.py
    prefix_cache: bool = False  # a prompt's start seen before costs no prefill
    kv_tokens: int = 0  # prompt + reply tokens in flight at once (0: no limit)

    def __post_init__(self) -> None:
        unknown = set(self.quirks) - QUIRKS
        if unknown:
            raise ValueError(
                f"unknown quirk(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(QUIRKS))}"
            )
        if self.ttft_ms < 0 or self.itl_ms < 0 or self.tokens < 0:
            raise ValueError("ttft_ms, itl_ms and tokens must not be negative")
        if self.slots < 0 or self.slowdown < 0 or self.context_window < 0:
            raise ValueError("slots, slowdown and context_window must not be negative")
        if not self.prefill_tokens_per_s >= 0 or self.kv_tokens < 0:  # NaN fails too
            raise ValueError("prefill_tokens_per_s and kv_tokens must not be negative")


async def _wait_for_disconnect(request: Request) -> None:
    """Hang until the client goes away (or a generous cap passes)."""
    with contextlib.suppress(asyncio.TimeoutError):
        async with asyncio.timeout(_SLOW_CAP_S):
            while (await request.receive())["type"] != "http.disconnect":
                pass


def _quirks_of(request: Request, config: MockModelConfig) -> frozenset[str] | Response:
    raw = request.path_params.get("quirks")
    if not raw:
        return config.quirks
    asked = {q.strip() for q in raw.split(",") if q.strip()}
    unknown = asked - QUIRKS
    if unknown:
        return JSONResponse(
            _error_body(
                f"unknown quirk(s) {', '.join(sorted(unknown))}", "invalid_request_error", None
            ),
            404,
        )
    return config.quirks | asked


def _key_ok(request: Request, config: MockModelConfig, quirks: frozenset[str]) -> bool:
    if "any-key" in quirks:
        return True
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(
        key.strip().encode(), config.api_key.encode()
    )


def create_app(config: MockModelConfig) -> Starlette:
    """The mock's ASGI app (Starlette); serve it with uvicorn."""
    load = Load(
        config.slots,
        config.slowdown,
        prefill_tokens_per_s=config.prefill_tokens_per_s,
        prefix_cache=config.prefix_cache,
        kv_tokens=config.kv_tokens,
    )

    async def chat_completions(request: Request) -> Response:
        return await _handle(request, config, load, chat=True)

    async def completions(request: Request) -> Response:
        return await _handle(request, config, load, chat=False)

    async def models(request: Request) -> Response:
        if not config.served:  # any name is served: nothing to list
            return JSONResponse(_error_body("Not Found", "invalid_request_error", None), 404)
        data = [{"id": name, "object": "model", "owned_by": "school"} for name in config.served]
        return JSONResponse({"object": "list", "data": data})

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/quirks/{quirks}/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/quirks/{quirks}/v1/completions", completions, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]
    return Starlette(routes=routes)


async def _handle(request: Request, config: MockModelConfig, load: Load, chat: bool) -> Response:
    """One completion request: refused as its quirks say, or answered whole or streamed."""
    t0 = time.monotonic()  # the request's arrival: every chunk is scheduled from here
    quirks = _quirks_of(request, config)
    if isinstance(quirks, Response):
        return quirks
    refused = await _refusal(request, config, quirks)
    if refused is not None:
        return refused
    try:
        body = json.loads(await request.body())
    except ValueError:
        body = None
    problem = _body_problem(body, chat)
    if problem:
        return _error(400, problem, "invalid_request_error", None, quirks)
    assert isinstance(body, dict)
    if config.served and body["model"] not in config.served:
        return JSONResponse(_not_served(body["model"]), 404)
    if "ignore-max-tokens" in quirks:
        caps = ("max_tokens", "max_completion_tokens")
        body = {k: v for k, v in body.items() if k not in caps}
    if chat and "no-system-role" in quirks and _has_system(body):
        # What vLLM answers when the chat template raises (Gemma's and others').
        return _error(400, "System role not supported", "BadRequestError", None, quirks)
    reply = _Reply(config, body, chat, t0)
    too_long = _context_refusal(config.context_window, reply, quirks)
    if too_long is not None:
        return too_long
    if _asks_chinese(body):
        reply.tokens = _chinese_tokens(len(reply.tokens), "replacement-char" in quirks)
    reply.think(quirks)
    streamed = body.get("stream") is True and "no-stream" not in quirks
    # llama.cpp's interrupt_requests: any request that comes ends the running streams.
    cut = load.arrive(streamed) if "interrupt" in quirks else None
    if not streamed:
        async with load.slot(reply):
            await _sleep_until(reply.done_at)
        return JSONResponse(reply.whole(quirks))
    return _streamed(load, reply, body, quirks, cut)


def _has_system(body: dict[str, Any]) -> bool:
    return any(isinstance(m, dict) and m.get("role") == "system" for m in body["messages"])


def _context_refusal(window: int, reply: _Reply, quirks: frozenset[str]) -> Response | None:
    """vLLM's 400 for a prompt over the window; with truncate-prompt, Ollama's silent cut."""
    prompt, cap = reply.prompt_tokens, reply.cap or 0
    if not window or prompt + cap <= window:
        return None
    if "truncate-prompt" in quirks:
        reply.prompt_tokens = min(prompt, window)
        reply.prompt = reply.prompt[:window]
        return None
    return _error(
        400,
        f"This model's maximum context length is {window} tokens. However, you requested "
        f"{prompt + cap} tokens ({prompt} in the messages, {cap} in the completion). "
        "Please reduce the length of the messages or completion.",
        "BadRequestError",
        None,
        quirks,
    )


async def _refusal(
    request: Request, config: MockModelConfig, quirks: frozenset[str]
) -> Response | None:
    """The answer of a request its quirks or its key refuse (before the body is read)."""
    if "slow" in quirks:
        await _wait_for_disconnect(request)
        return Response(status_code=504)
    if "status-500" in quirks:
        return _error(500, "the model server failed", "server_error", None, quirks)
    if "status-429" in quirks:
        return _error(
            429,
            "rate limit reached, retry after 1 s",
            "rate_limit_error",
            "rate_limit_exceeded",
            quirks,
            headers={"Retry-After": "1"},
        )
    if not _key_ok(request, config, quirks):
        return _error(
            401,
            "Incorrect API key provided. Send Authorization: Bearer <api key>.",
            "invalid_request_error",
            "invalid_api_key",
            quirks,
        )
    return None


def _streamed(
    load: Load,
    reply: _Reply,
    body: dict[str, Any],
    quirks: frozenset[str],
    cut: asyncio.Event | None,
) -> StreamingResponse:
    """The reply as server-sent events, paced by ``load`` (slots, slowdown, interrupts)."""
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    media = "text/plain; charset=utf-8" if "wrong-content-type" in quirks else None
    events = _stream(reply, quirks, include_usage)
    return StreamingResponse(
        load.stream(reply, _split_utf8(events) if "split-utf8" in quirks else events, cut=cut),
        media_type=media or "text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _not_served(model: object) -> dict[str, Any]:
    """vLLM's answer to a model name it does not serve."""
    return {
        "object": "error",
        "message": f"The model `{model}` does not exist.",
        "type": "NotFoundError",
        "param": None,
        "code": 404,
    }


def _body_problem(body: object, chat: bool) -> str | None:
    """What is wrong with a request body, in OpenAI's words; None when it is fine."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return "'messages' must be a non-empty array"
        if not all(_is_message(m) for m in messages):
            return "each message needs a string 'role' and 'content'"
    else:
        prompt = body.get("prompt")
        if not isinstance(prompt, str | list):
            return "you must provide a prompt parameter"
    temperature = body.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, int | float)
    ):
        return "'temperature' must be a number"
    return None


def _is_message(message: object) -> bool:
    return (
        isinstance(message, dict)
        and isinstance(message.get("role"), str)
        and isinstance(message.get("content"), str | list | None)
    )


def parse_quirks(values: Iterable[str]) -> frozenset[str]:
    """Quirk names from a CLI (``--quirk a --quirk b,c``), checked against :data:`QUIRKS`."""
    asked = frozenset(q.strip() for v in values for q in v.split(",") if q.strip())
    unknown = asked - QUIRKS
    if unknown:
        raise ValueError(
            f"unknown quirk(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(QUIRKS))}"
        )
    return asked
