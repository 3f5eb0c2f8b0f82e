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
``interrupt``           a new request cuts the streams in progress (llama.cpp's
                        ``interrupt_requests``): ``data: [DONE]``, no finish_reason
``replacement-char``    a Chinese reply carries U+FFFD in place of some
                        characters (a server decoding byte-level tokens one by one)
``split-utf8``          (tolerated) each write of a stream is cut inside a
                        multi-byte character, the rest following 5 ms later
``ignore-max-tokens``   ``max_tokens`` / ``max_completion_tokens`` are ignored
======================  =====================================================

A prompt with Chinese characters gets a Chinese reply (one character per
token, sent as raw UTF-8). ``served`` names the models served (vLLM's
``--served-model-name``): another ``model`` gets vLLM's 404 ``{"object":
"error", ...}`` and ``GET /v1/models`` lists them; without it any name is
served and ``GET /v1/models`` answers 404. :func:`serving` takes a
certificate and key to serve https.

Saturation like a real server's (a slot limit, a decode slowdown under load):
see :mod:`lmreg_nb.sandbox.saturation`.

Also served: ``GET /health`` and ``GET /v1/models``. Ways to run it:
:func:`create_app` (the ASGI app, for uvicorn or the sandbox command),
:func:`serving` (a uvicorn thread, for tests), :func:`serving_process` (a
separate uvicorn process with N workers, for benchmarks) and
:func:`app_from_env` (a factory configured by ``LMREG_MOCK_*`` variables).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .saturation import Load

__all__ = [
    "QUIRKS",
    "MockModelConfig",
    "app_from_env",
    "create_app",
    "parse_quirks",
    "reply_tokens",
    "serving",
    "serving_process",
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
    }
)

# The longest a `slow` request hangs when the client never gives up.
_SLOW_CAP_S = 300.0
_SENTENCE = (
    "The quick brown fox jumps over the lazy dog while the school model "
    "streams one token per chunk for the probe to measure."
)
_WORDS = tuple(_SENTENCE.split())


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

    def __post_init__(self) -> None:
        unknown = set(self.quirks) - QUIRKS
        if unknown:
            raise ValueError(
                f"unknown quirk(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(QUIRKS))}"
            )
        if self.ttft_ms < 0 or self.itl_ms < 0 or self.tokens < 0:
            raise ValueError("ttft_ms, itl_ms and tokens must not be negative")
        if self.slots < 0 or self.slowdown < 0:
            raise ValueError("slots and slowdown must not be negative")


def reply_tokens(count: int) -> list[str]:
    """The token strings of a reply of ``count`` tokens (the ground truth of the text)."""
    return [_WORDS[k % len(_WORDS)] + " " for k in range(count)]


_TOKEN_JSON = {t: json.dumps(t) for t in reply_tokens(len(_WORDS))}
_CHINESE = "图书馆每天早上八点开门，同学们可以在这里安静地读书、查资料和讨论问题。"


def _chinese_tokens(count: int, garble: bool) -> list[str]:
    """A Chinese reply, one character per token; ``garble``: U+FFFD for every fifth."""
    return [
        "\ufffd" if garble and k % 5 == 2 else _CHINESE[k % len(_CHINESE)] for k in range(count)
    ]


def _asks_chinese(body: dict[str, Any]) -> bool:
    text = json.dumps(body.get("messages") or body.get("prompt") or "", ensure_ascii=False)
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


async def _split_utf8(stream: AsyncGenerator[bytes, None]) -> AsyncGenerator[bytes, None]:
    """Each write cut inside its first multi-byte character (a read boundary mid-character)."""
    async for block in stream:
        cut = next((i + 1 for i, b in enumerate(block) if b >= 0xC0), 0)
        if cut:
            yield block[:cut]
            await asyncio.sleep(0.005)
            block = block[cut:]
        yield block


_MARK = "\x00token\x00"  # a placeholder no token contains


def _error_body(message: str, type_: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _error(
    status: int,
    message: str,
    type_: str,
    code: str | None,
    quirks: frozenset[str],
    headers: dict[str, str] | None = None,
) -> Response:
    """An error reply: OpenAI-style JSON, or an HTML / text page when a quirk asks."""
    if "html-errors" in quirks:
        page = (
            f"<html><head><title>{status} Error</title></head><body>"
            f"<center><h1>{status} Error</h1></center><hr><center>nginx</center></body></html>"
        )
        return Response(page, status, headers=headers, media_type="text/html")
    if "text-errors" in quirks:
        return Response(f"{status} {message}", status, headers=headers, media_type="text/plain")
    return JSONResponse(_error_body(message, type_, code), status, headers=headers)


class _Frames:
    """SSE framing of one stream, with the framing quirks applied."""

    def __init__(self, quirks: frozenset[str]) -> None:
        self.eol = "\r\n" if "crlf" in quirks else "\r" if "cr" in quirks else "\n"
        self.prefix = "data:" if "no-space" in quirks else "data: "
        self.keepalive = "keepalive" in quirks

    def data(self, payload: str) -> str:
        head = f": keep-alive{self.eol}{self.eol}" if self.keepalive else ""
        return f"{head}{self.prefix}{payload}{self.eol}{self.eol}"

    def event(self, obj: dict[str, Any]) -> str:
        return self.data(json.dumps(obj, separators=(",", ":")))


class _Reply:
    """One request's reply: its ids, its tokens and when each one is due."""

    def __init__(
        self, config: MockModelConfig, body: dict[str, Any], chat: bool, t0: float
    ) -> None:
        self.t0 = t0
        self.chat = chat
        self.model = str(body.get("model") or "mock-model")
        cap = body.get("max_completion_tokens", body.get("max_tokens"))
        count = config.tokens
        self.finish = "stop"
        if isinstance(cap, int) and not isinstance(cap, bool) and 0 <= cap < count:
            count, self.finish = cap, "length"
        self.tokens = reply_tokens(count)
        self.ttft = config.ttft_ms / 1000
        self.itl = config.itl_ms / 1000
        self.id = ("chatcmpl-" if chat else "cmpl-") + secrets.token_hex(12)
        self.created = int(time.time())
        self.object = "chat.completion" if chat else "text_completion"
        self.prompt_tokens = _count_prompt(body, chat)
        self.pace: Callable[[int], float] | None = None  # set under a decode slowdown

    def due(self, k: int) -> float:
        """Monotonic time at which token ``k`` is due."""
        if self.pace is not None:
            return self.pace(k)
        return self.t0 + self.ttft + k * self.itl

    @property
    def done_at(self) -> float:
        return self.due(max(len(self.tokens) - 1, 0))

    def usage(self) -> dict[str, int]:
        n = len(self.tokens)
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": n,
            "total_tokens": self.prompt_tokens + n,
        }

    def whole(self, quirks: frozenset[str]) -> dict[str, Any]:
        """The non-streamed reply."""
        text = "".join(self.tokens)
        choice: dict[str, Any] = {"index": 0, "finish_reason": self.finish, "logprobs": None}
        if self.chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        out: dict[str, Any] = {
            "id": self.id,
            "object": self.object,
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }
        if "no-usage" not in quirks:
            out["usage"] = self.usage()
        return out

    def chunk(self, delta: dict[str, Any] | str | None, finish: str | None = None) -> dict:
        """One stream chunk (chat: ``delta`` is a dict; completions: a text piece)."""
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "logprobs": None}
        if self.chat:
            choice["delta"] = delta
        else:
            choice["text"] = delta
        return {
            "id": self.id,
            "object": "chat.completion.chunk" if self.chat else "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }

    def content(self, text: str | None) -> dict[str, Any] | str | None:
        return {"content": text} if self.chat else text


def _count_prompt(body: dict[str, Any], chat: bool) -> int:
    if chat:
        messages = body.get("messages") or []
        text = " ".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))
    else:
        prompt = body.get("prompt")
        text = " ".join(prompt) if isinstance(prompt, list) else str(prompt or "")
    return max(1, len(text.split()))


async def _sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)


async def _stream(
    reply: _Reply, quirks: frozenset[str], include_usage: bool
) -> AsyncGenerator[bytes, None]:
    frames = _Frames(quirks)
    null = "null-content" in quirks
    pieces: list[str] = []
    if reply.chat:
        role: dict[str, Any] = {"role": "assistant", "content": None if null else ""}
        pieces.append(frames.event(reply.chunk(role)))
    n = len(reply.tokens)
    burst = "burst" in quirks
    # Render the chunk once and splice each token in: json.dumps per chunk would make
    # the mock, not the client under test, the bottleneck of a load benchmark.
    head, tail = frames.event(reply.chunk(reply.content(_MARK))).split(json.dumps(_MARK))
    for k, token in enumerate(reply.tokens):
        due = reply.due(k)
        if pieces and not burst and due > time.monotonic():
            # Send what is due now, then wait for this token's time.
            yield "".join(pieces).encode()
            pieces.clear()
        if not burst:
            await _sleep_until(due)
        text = _TOKEN_JSON.get(token) or json.dumps(token, ensure_ascii=False)  # raw UTF-8
        pieces.append(head + text + tail)
        if k == n // 2 and "non-json-chunk" in quirks:
            pieces.append(frames.data("this is not json"))
        if k == n // 2 and "error-in-stream" in quirks:
            err = _error_body("the model failed mid-stream", "server_error", "internal_error")
            pieces.append(frames.event(err))
            pieces.append(frames.data("[DONE]"))
            yield "".join(pieces).encode()
            return
    if burst:
        await _sleep_until(reply.done_at)
    last: dict[str, Any] | str | None = {} if reply.chat else ""
    if null:
        last = reply.content(None)
    pieces.append(frames.event(reply.chunk(last, reply.finish)))
    if include_usage and "no-usage" not in quirks:
        final = reply.chunk(None)
        final["choices"] = []
        final["usage"] = reply.usage()
        pieces.append(frames.event(final))
    if "no-done" not in quirks:
        pieces.append(frames.data("[DONE]"))
    yield "".join(pieces).encode()


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
    load = Load(config.slots, config.slowdown)

    async def handle(request: Request, chat: bool) -> Response:
        t0 = time.monotonic()  # the request's arrival: every chunk is scheduled from here
        quirks = _quirks_of(request, config)
        if isinstance(quirks, Response):
            return quirks
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
        reply = _Reply(config, body, chat, t0)
        if _asks_chinese(body):
            reply.tokens = _chinese_tokens(len(reply.tokens), "replacement-char" in quirks)
        stream = body.get("stream") is True
        if not stream or "no-stream" in quirks:
            async with load.slot(reply):
                await _sleep_until(reply.done_at)
            return JSONResponse(reply.whole(quirks))
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        media = "text/plain; charset=utf-8" if "wrong-content-type" in quirks else None
        return StreamingResponse(
            load.stream(
                reply,
                _split_utf8(_stream(reply, quirks, include_usage))
                if "split-utf8" in quirks
                else _stream(reply, quirks, include_usage),
                interrupt="interrupt" in quirks,
            ),
            media_type=media or "text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def chat_completions(request: Request) -> Response:
        return await handle(request, chat=True)

    async def completions(request: Request) -> Response:
        return await handle(request, chat=False)

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


def app_from_env() -> Starlette:
    """An app configured by ``LMREG_MOCK_*`` variables (for ``uvicorn --factory --workers``).

    ``LMREG_MOCK_API_KEY`` (required), ``LMREG_MOCK_TTFT_MS``, ``LMREG_MOCK_ITL_MS``,
    ``LMREG_MOCK_TOKENS``, ``LMREG_MOCK_QUIRKS`` (comma-separated), ``LMREG_MOCK_SLOTS``,
    ``LMREG_MOCK_SLOWDOWN``.
    """
    env = os.environ
    return create_app(
        MockModelConfig(
            api_key=env["LMREG_MOCK_API_KEY"],
            ttft_ms=float(env.get("LMREG_MOCK_TTFT_MS", 50)),
            itl_ms=float(env.get("LMREG_MOCK_ITL_MS", 10)),
            tokens=int(env.get("LMREG_MOCK_TOKENS", 32)),
            quirks=parse_quirks([env.get("LMREG_MOCK_QUIRKS", "")]),
            slots=int(env.get("LMREG_MOCK_SLOTS", 0)),
            slowdown=float(env.get("LMREG_MOCK_SLOWDOWN", 0)),
            served=tuple(n for n in env.get("LMREG_MOCK_SERVED", "").split(",") if n),
        )
    )


@contextlib.contextmanager
def serving(
    config: MockModelConfig,
    host: str = "127.0.0.1",
    *,
    certfile: str | None = None,
    keyfile: str | None = None,
) -> Iterator[str]:
    """Serve the mock with uvicorn in a background thread; yields its base URL.

    For tests and notebooks; the sandbox command runs it in its own process.
    ``certfile`` (and ``keyfile``, PEM) serve https with that certificate.
    """
    import uvicorn

    # IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so; without it
    # Nagle + delayed ACK hold a stream's chunks back by up to 40 ms.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config),
            log_level="warning",
            timeout_graceful_shutdown=1,
            backlog=512,
            ssl_certfile=certfile,
            ssl_keyfile=keyfile,
        )
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="mock-school-model", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the mock school model did not start")
        time.sleep(0.01)
    try:
        yield f"{'https' if certfile else 'http'}://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _config_env(config: MockModelConfig) -> dict[str, str]:
    return {
        "LMREG_MOCK_API_KEY": config.api_key,
        "LMREG_MOCK_TTFT_MS": repr(config.ttft_ms),
        "LMREG_MOCK_ITL_MS": repr(config.itl_ms),
        "LMREG_MOCK_TOKENS": str(config.tokens),
        "LMREG_MOCK_QUIRKS": ",".join(sorted(config.quirks)),
        "LMREG_MOCK_SLOTS": str(config.slots),
        "LMREG_MOCK_SLOWDOWN": repr(config.slowdown),
        "LMREG_MOCK_SERVED": ",".join(config.served),
    }


@contextlib.contextmanager
def serving_process(
    config: MockModelConfig, *, workers: int = 1, host: str = "127.0.0.1", timeout: float = 30
) -> Iterator[str]:
    """Serve the mock in a separate uvicorn process (``workers`` processes); yields its base URL.

    For benchmarks: the mock then shares no GIL with the load generator. The
    configuration (the key included) goes through the environment, not argv.
    """
    import httpx

    with socket.socket() as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    cmd = [
        sys.executable, "-m", "uvicorn", "--factory", f"{__name__}:app_from_env",
        "--host", host, "--port", str(port), "--workers", str(workers),
        "--log-level", "warning", "--backlog", "2048", "--timeout-graceful-shutdown", "2",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env={**os.environ, **_config_env(config)})
    base = f"http://{host}:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the mock school model exited with code {proc.returncode}")
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the mock school model did not start in time")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
