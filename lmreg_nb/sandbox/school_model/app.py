"""The mock school model's ASGI app: routes, refusals, and each request's answer.

See :mod:`lmreg_nb.sandbox.school_model` for the timing rule and
:mod:`lmreg_nb.sandbox.school_model.config` for the quirks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .config import QUIRKS, MockModelConfig
from .reply import (
    Reply,
    asks_chinese,
    chinese_tokens,
    error_body,
    error_reply,
    sleep_until,
    split_utf8,
    sse_stream,
)
from .saturation import Load

__all__ = ["create_app"]

# The longest a `slow` request hangs when the client never gives up.
_SLOW_CAP_S = 300.0


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
            error_body(
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
            return JSONResponse(error_body("Not Found", "invalid_request_error", None), 404)
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
        return error_reply(400, problem, "invalid_request_error", None, quirks)
    assert isinstance(body, dict)
    if config.served and body["model"] not in config.served:
        return JSONResponse(_not_served(body["model"]), 404)
    if "ignore-max-tokens" in quirks:
        caps = ("max_tokens", "max_completion_tokens")
        body = {k: v for k, v in body.items() if k not in caps}
    if chat and "no-system-role" in quirks and _has_system(body):
        # What vLLM answers when the chat template raises (Gemma's and others').
        return error_reply(400, "System role not supported", "BadRequestError", None, quirks)
    reply = Reply(config, body, chat, t0)
    too_long = _context_refusal(config.context_window, reply, quirks)
    if too_long is not None:
        return too_long
    streamed = body.get("stream") is True and "no-stream" not in quirks
    if asks_chinese(body):
        # replacement-char: the server's streaming decodes byte-level tokens one at a time
        # (the whole reply is clean); model-replacement-char: the model writes U+FFFD itself.
        garble = "model-replacement-char" in quirks or ("replacement-char" in quirks and streamed)
        reply.tokens = chinese_tokens(len(reply.tokens), garble)
    reply.think(quirks)
    # llama.cpp's interrupt_requests: any request that comes ends the running streams.
    cut = load.arrive(streamed) if "interrupt" in quirks else None
    if not streamed:
        async with load.slot(reply):
            await sleep_until(reply.done_at)
        return JSONResponse(reply.whole(quirks))
    return _streamed(load, reply, body, quirks, cut)


def _has_system(body: dict[str, Any]) -> bool:
    return any(isinstance(m, dict) and m.get("role") == "system" for m in body["messages"])


def _context_refusal(window: int, reply: Reply, quirks: frozenset[str]) -> Response | None:
    """vLLM's 400 for a prompt over the window; with truncate-prompt, Ollama's silent cut."""
    prompt, cap = reply.prompt_tokens, reply.cap or 0
    if not window or prompt + cap <= window:
        return None
    if "truncate-prompt" in quirks:
        reply.prompt_tokens = min(prompt, window)
        reply.prompt = reply.prompt[:window]
        return None
    return error_reply(
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
        return error_reply(500, "the model server failed", "server_error", None, quirks)
    if "status-429" in quirks:
        return error_reply(
            429,
            "rate limit reached, retry after 1 s",
            "rate_limit_error",
            "rate_limit_exceeded",
            quirks,
            headers={"Retry-After": "1"},
        )
    if not _key_ok(request, config, quirks):
        return error_reply(
            401,
            "Incorrect API key provided. Send Authorization: Bearer <api key>.",
            "invalid_request_error",
            "invalid_api_key",
            quirks,
        )
    return None


def _streamed(
    load: Load,
    reply: Reply,
    body: dict[str, Any],
    quirks: frozenset[str],
    cut: asyncio.Event | None,
) -> StreamingResponse:
    """The reply as server-sent events, paced by ``load`` (slots, slowdown, interrupts)."""
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    media = "text/plain; charset=utf-8" if "wrong-content-type" in quirks else None
    events = sse_stream(reply, quirks, include_usage)
    return StreamingResponse(
        load.stream(reply, split_utf8(events) if "split-utf8" in quirks else events, cut=cut),
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
