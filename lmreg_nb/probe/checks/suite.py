"""Run every check: the requests at once (asyncio.gather), then the rows in a fixed order.

The requests do not depend on each other: a plain chat reply, the same with a
made-up key, a streamed reply, the text-completion form, a streamed Chinese
reply, a small-max_tokens reply, GET /v1/models, a chat with the registered
name (``target.alias``), the TLS handshake, the DNS lookup, the onboarding's
chat reply (``chat_prompt``) and the function checks' requests (a chat with
a system message, the context-window prompts, two streams at once). So the
checks take about as long as the slowest request, not their sum. The rows are
then judged as before: when the server cannot be reached, refuses the key or
fails, the rows stop there and say why (model-name-served is still judged
once the server answered HTTP: it tells whether the registered name is the
problem).

A server that answers one request at a time (transformers serve without
continuous batching) queues the burst, and the last requests in its queue wait
past the read timeout. When others were answered whole, a one-token chat first
waits for the queue to empty, then each request that timed out is sent again,
alone, and judged on that (the streamed reply too, so the one-request figures
are the server's, not our queue's); after two that time out alone too, the rest
stay as seen.

A server that cuts a running stream when another request comes (llama.cpp's
``interrupt_requests``) cuts the checks' own streams too, since they run at
once. Each stream the rows judge that looks cut is asked for again after the
others, alone, so the stream rows judge a stream sent alone and the cut is
named once, by ``streams-not-cut``.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from ..._tls import tls_context
from ...errors import LmregError
from ...i18n import _
from ...summary.client import ClientLag
from ..loop_lag import LoopLag
from ..target import Target
from ..wire.chat import chat_reply
from ..wire.exchange import Exchange, chat_body, completion_body, completions_url, send
from ..wire.tls import Certificate, inspect_certificate
from .conformance import (
    CheckResult,
    Conformance,
    chat_rows,
    completion_row,
    errors_json_row,
    status_advice,
    transport_row,
    url_checks,
    wrong_key_row,
)
from .context_window import DEFAULT_CONTEXT_NEED, ContextFinding, context_row, probe_context
from .function import SYSTEM_PROMPT, looks_cut, reasoning_row, streams_row, system_role_row
from .golive import (
    CHINESE_PROMPT,
    MAX_TOKENS_PROBE,
    ModelList,
    list_models,
    max_tokens_row,
    model_name_row,
    needs_whole,
    resolve,
    resolve_row,
    tls_row,
    utf8_row,
)
from .streams import looks_buffered, stream_rows

__all__ = ["CHECK_CONNECTIONS", "ChatOutcome", "make_client", "run_checks"]

#: Connections the checks use at once (one per concurrent request).
CHECK_CONNECTIONS = 16
#: The context-window search may take this many times the (per-read) timeout.
CONTEXT_BUDGET_FACTOR = 3
#: The longest wait for a server to work through the checks' queued burst (seconds).
QUEUE_CAP_S = 120.0
T = TypeVar("T")


def make_client(timeout: float) -> httpx.AsyncClient:
    """The checks' client: a connection for each of their concurrent requests."""
    limits = httpx.Limits(
        max_connections=CHECK_CONNECTIONS, max_keepalive_connections=CHECK_CONNECTIONS
    )
    transport = httpx.AsyncHTTPTransport(limits=limits, verify=tls_context())
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout), transport=transport)


@dataclass
class ChatOutcome:
    """The onboarding's chat reply, run beside the checks (text masked)."""

    reply: str | None = None
    error: str | None = None


@dataclass
class _Seen:
    """Everything the concurrent requests brought back."""

    plain: Exchange
    wrong: Exchange
    streamed: Exchange
    completion: Exchange | None
    utf8: Exchange
    max_tokens: Exchange
    models: ModelList | None
    alias: Exchange | None
    cert: Certificate | None
    addresses: list[str] | None
    chat: ChatOutcome
    system: Exchange
    context: ContextFinding
    pair: list[Exchange] = field(default_factory=list)


async def _none() -> None:
    return None


async def _chat(client: httpx.AsyncClient, target: Target, prompt: str | None) -> ChatOutcome:
    if prompt is None:
        return ChatOutcome()
    try:
        return ChatOutcome(reply=await chat_reply(client, target, prompt))
    except LmregError as exc:  # already one line, already masked
        return ChatOutcome(error=str(exc))


async def _cert(target: Target) -> Certificate | None:
    parts = urlsplit(target.url)
    if parts.scheme != "https" or not parts.hostname:
        return None
    return await inspect_certificate(parts.hostname, parts.port or 443, target.timeout)


def _opt(job: Awaitable[T] | None) -> Awaitable[T | None]:
    return job if job is not None else _none()


async def _pair(client: httpx.AsyncClient, target: Target, max_tokens: int) -> list[Exchange]:
    """Two streamed chats sent at once (streams-not-cut)."""
    body = _stream_body(target, max_tokens)
    return list(await asyncio.gather(*(send(client, target, body, stream=True) for _ in "ab")))


def _jobs(
    client: httpx.AsyncClient,
    target: Target,
    max_tokens: int,
    chat_prompt: str | None,
    context_need: int,
) -> dict[str, Callable[[Target], Awaitable[Any]]]:
    """Each request under the name of the _Seen field it fills (none by position), as a
    function of the target, so a request can be sent again alone with a longer timeout."""
    url = completions_url(target.url)
    wrong_key = "lmreg-probe-wrong-" + secrets.token_hex(8)

    def chat(body: dict[str, Any], **kw: Any) -> Callable[[Target], Awaitable[Exchange]]:
        return lambda t: send(client, t, body, stream=bool(body.get("stream")), **kw)

    jobs: dict[str, Callable[[Target], Awaitable[Any]]] = {
        "plain": chat(chat_body(target.model, stream=False, max_tokens=max_tokens)),
        "wrong": chat(chat_body(target.model, stream=False, max_tokens=1), api_key=wrong_key),
        "streamed": chat(_stream_body(target, max_tokens)),
        "completion": lambda t: _opt(
            send(client, t, completion_body(t.model), stream=False, url=url)
            if url is not None else None
        ),
        "utf8": chat(_utf8_body(target, max_tokens)),
        "max_tokens": chat(_max_tokens_body(target)),
        "models": lambda t: list_models(client, t),
        "alias": lambda t: _opt(
            send(client, t, chat_body(t.alias, stream=False, max_tokens=1), stream=False)
            if t.alias is not None else None
        ),
        "cert": _cert,
        "addresses": lambda t: resolve(t.url, t.timeout),
        "chat": lambda t: _chat(client, t, chat_prompt),
        "system": chat(chat_body(target.model, stream=False, max_tokens=max_tokens,
                                 system=SYSTEM_PROMPT)),
        "context": lambda t: probe_context(client, t, context_need,
                                           t.timeout * CONTEXT_BUDGET_FACTOR),
        "pair": lambda t: _pair(client, t, max_tokens),
    }  # fmt: skip
    return jobs


async def _gather(jobs: dict[str, Callable[[Target], Awaitable[Any]]], target: Target) -> _Seen:
    done = await asyncio.gather(*(job(target) for job in jobs.values()))
    return _Seen(**dict(zip(jobs, done, strict=True)))


def _timed_out(found: Any) -> bool:
    """A request (or the requests of one field) that waited past the read timeout."""
    if isinstance(found, Exchange):
        return found.failure == "timeout"
    if isinstance(found, list):
        return any(_timed_out(ex) for ex in found)
    if isinstance(found, ContextFinding):
        return any(_timed_out(ex) for ex in (found.broken, found.long) if ex is not None)
    return False


def _answered(found: Any) -> bool:
    """A whole reply came (2xx, nothing broke off)."""
    return isinstance(found, Exchange) and found.status is not None and found.ok


async def _queued_again(
    client: httpx.AsyncClient,
    jobs: dict[str, Callable[[Target], Awaitable[Any]]],
    target: Target,
    seen: _Seen,
) -> None:
    """Send again, one at a time, each request that timed out while the server answered
    others: a server that answers one request at a time (transformers serve without
    continuous batching) queues the checks' own burst, and the last in its queue wait
    past the timeout. First a one-token chat waits for the server to work through what
    may still be queued (as long as the late requests would take it, at most
    :data:`QUEUE_CAP_S`); once two requests sent again time out too, the rest stay as seen.
    """
    late = [name for name in jobs if _timed_out(getattr(seen, name))]
    answered = [ex for name in jobs if _answered(ex := getattr(seen, name))]
    if not late or not answered:
        return
    if seen.chat.error is not None:
        late.append("chat")  # its error is one line of text: it may have waited in line too
    if "streamed" not in late:
        late.append("streamed")  # the one-request figures: the server's alone, not our queue's
    longest = max(ex.latency or 0.0 for ex in answered)
    wait = min(target.timeout + len(late) * max(longest, 0.1), QUEUE_CAP_S)
    body = chat_body(target.model, stream=False, max_tokens=1)
    try:
        async with asyncio.timeout(wait):  # a reply that trickles gets no longer either
            free = await send(client, replace(target, timeout=wait), body, stream=False)
    except TimeoutError:
        return
    if free.status is None:
        return
    # The chat path's requests first: /v1/completions may not be served at all (it then
    # hangs alone too); two that time out alone end it (a server that stalls is bounded).
    late.sort(key=lambda name: name == "completion")
    stalled = 0
    for name in late:
        found = await jobs[name](target)
        setattr(seen, name, found)
        stalled += _timed_out(found)
        if stalled >= 2:
            return


async def _alone(
    jobs: dict[str, Callable[[Target], Awaitable[Any]]], target: Target, seen: _Seen
) -> None:
    """Ask again, one at a time, for each judged stream that looks cut (see the docstring)."""
    cutting = any(looks_cut(ex) for ex in seen.pair)
    for name in ("streamed", "utf8", "max_tokens"):
        if looks_cut(getattr(seen, name)):
            cutting = True
            setattr(seen, name, await jobs[name](target))
    if cutting:  # the chat step's reply was likely cut too (without a prompt: none is sent)
        seen.chat = await jobs["chat"](target)


def _names(target: Target, seen: _Seen) -> list[tuple[str, Exchange | None]]:
    names: list[tuple[str, Exchange | None]] = [(target.model, seen.plain)]
    if seen.alias is not None and target.alias is not None:
        names.append((target.alias, seen.alias))
    return names


async def run_checks(
    client: httpx.AsyncClient,
    target: Target,
    *,
    max_tokens: int = 64,
    chat_prompt: str | None = None,
    context_need: int = DEFAULT_CONTEXT_NEED,
    lag: LoopLag | None = None,
) -> tuple[Conformance, ChatOutcome]:
    """Every check against ``target``; never raises for the server.

    The registered modelName (``target.registered_name``) is tried as
    ``model`` too when it differs from ``target.model``. ``chat_prompt``: one
    streamed chat reply made beside the checks (the onboarding's chat step).
    ``context_need``: tokens of the longest prompt the course apps send
    (context-window). ``lag``: the client's own stalls, watched over the run; a finding
    judged on samples taken while it stalled says it could not tell.
    """
    jobs = _jobs(client, target, max_tokens, chat_prompt, context_need)
    seen = await _gather(jobs, target)
    await _queued_again(client, jobs, target, seen)
    checks = url_checks(target.url)
    checks[-1] = resolve_row(checks[-1], target.url, seen.addresses)
    result = Conformance(checks, first=seen.plain)
    plain = seen.plain
    certificate = [tls_row(seen.cert)] if seen.cert is not None else []
    if plain.status is None:
        checks.append(transport_row(plain, target.url))
        if seen.cert is not None and seen.cert.handshake_failed is None:
            checks.extend(certificate)  # the reachable row points at it
        return result, seen.chat
    checks.extend(certificate)
    checks.append(_reachable_row(plain))
    name_row = model_name_row(_names(target, seen), seen.models)
    # When the checks stop early, the name row is kept only where the name may be the cause.
    name_rows = [name_row] if _name_suspect(plain, target, seen.models) else []
    if plain.status in (401, 403):
        checks.append(_refused_row(plain))
        checks.extend([*name_rows, errors_json_row([plain])])
        return result, seen.chat
    checks.append(CheckResult("key-accepted", True, "error", _("the key was accepted")))
    if plain.status // 100 != 2:
        checks.append(CheckResult("chat-answers", False, "error", status_advice(plain)))
        checks.extend([*name_rows, errors_json_row([plain])])
        return result, seen.chat
    checks.append(CheckResult("chat-answers", True, "error", f"HTTP {plain.status}"))
    await _alone(jobs, target, seen)
    checks.extend(chat_rows(plain))
    checks.append(wrong_key_row(seen.wrong))
    again = None
    if seen.streamed.ok and seen.streamed.streamed and looks_buffered(seen.streamed):
        # One lump may be a passing stall: look once more, alone, before blaming a proxy.
        again = await jobs["streamed"](target)
    _stream_part(checks, seen.streamed, again, lag.result() if lag is not None else None)
    result.streamed = seen.streamed
    checks.append(completion_row(seen.completion, completions_url(target.url)))
    whole = None
    if needs_whole(seen.utf8):  # U+FFFD: the stream's doing, or the model's? Ask unstreamed.
        whole = await send(client, target, _utf8_body(target, max_tokens, stream=False),
                           stream=False)  # fmt: skip
    checks.extend([utf8_row(seen.utf8, whole), max_tokens_row(seen.max_tokens), name_row])
    checks.extend(_function_rows(seen))
    answered = [seen.plain, seen.wrong, seen.streamed, seen.completion]
    checks.append(errors_json_row([ex for ex in answered if ex is not None]))
    return result, seen.chat


def _reachable_row(plain: Exchange) -> CheckResult:
    took = ((plain.t_headers or plain.t_end) - plain.t_start) * 1000
    return CheckResult(
        "reachable",
        True,
        "error",
        _("answered HTTP {status} in {ms} ms").format(status=plain.status, ms=f"{took:.0f}"),
    )


def _refused_row(plain: Exchange) -> CheckResult:
    said = f": {plain.failure_detail}" if plain.failure_detail else ""
    return CheckResult(
        "key-accepted",
        False,
        "error",
        _(
            "the key was refused (HTTP {status}{said}). Use the key the server expects: "
            "LMREG_MODEL_API_KEY, or the apiKey registered for this model"
        ).format(status=plain.status, said=said),
    )


def _name_suspect(plain: Exchange, target: Target, models: ModelList | None) -> bool:
    """The model name may be why the plain request failed (or will fail for the platform)."""
    if plain.status in (400, 404) or target.registered_name:
        return True
    return models is not None and models.served is not None


def _function_rows(seen: _Seen) -> list[CheckResult]:
    """system-role, context-window, streams-not-cut, reasoning-separated."""
    replies = [seen.plain, seen.streamed, seen.utf8, seen.system]
    return [
        system_role_row(seen.system),
        context_row(seen.context),
        streams_row(seen.pair, seen.streamed),
        reasoning_row(replies, seen.streamed),
    ]


def _stream_body(target: Target, max_tokens: int) -> dict[str, Any]:
    return chat_body(target.model, stream=True, max_tokens=max_tokens)


#: The stream-utf8 request's seed: greedy and seeded, the same request asked again without
#: streaming makes the same tokens, so their texts can be compared.
UTF8_SEED = 7


def _utf8_body(target: Target, max_tokens: int, *, stream: bool = True) -> dict[str, Any]:
    return chat_body(target.model, CHINESE_PROMPT, stream=stream, max_tokens=max_tokens,
                     temperature=0.0, seed=UTF8_SEED)  # fmt: skip


def _max_tokens_body(target: Target) -> dict[str, Any]:
    return chat_body(target.model, stream=True, max_tokens=MAX_TOKENS_PROBE)


def _stream_part(
    checks: list[CheckResult],
    streamed: Exchange,
    again: Exchange | None,
    client: ClientLag | None,
) -> None:
    if streamed.status is None:
        checks.append(
            CheckResult(
                "stream-answers",
                False,
                "error",
                _("no answer: {why}").format(why=streamed.failure_detail),
            )
        )
    elif streamed.status // 100 != 2:
        checks.append(CheckResult("stream-answers", False, "error", status_advice(streamed)))
    else:
        checks.append(CheckResult("stream-answers", True, "error", f"HTTP {streamed.status}"))
        checks.extend(stream_rows(streamed, again, client))
