"""Run the declared checks (:data:`.catalog.CHECKS`): their requests at once, then the rows.

The requests the declarations name do not depend on each other: a plain chat
reply, the same with a made-up key, a streamed reply, the text-completion form, a
streamed Chinese reply, a small-max_tokens reply, GET /v1/models, a chat with the
registered name (``target.alias``), the TLS handshake, the DNS lookup, the
onboarding's chat reply (``chat_prompt``) and the function checks' requests (a chat
with a system message, the context-window prompts, two streams at once). So the
checks take about as long as the slowest request, not their sum. Then the
diagnosis (:mod:`.diagnosis`) says how far the plain chat got (no answer, a path
that serves nothing, the key refused, another failure, answered), and each
declaration is judged in the stages it names, shown as not judged in those it
names so, left out in the others: when the server cannot be reached, refuses the
key or fails, the rows stop there and say why (model-name-served is still judged
once the server answered HTTP: it tells whether the registered name is the
problem); when the path serves nothing, the key, the model name and the error
shapes are not judged.

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
from dataclasses import replace

import httpx

from ..._tls import tls_context
from ..loop_lag import LoopLag
from ..target import Target
from ..wire.exchange import Exchange, chat_body, send
from .catalog import CHECKS
from .conformance import CheckResult, Conformance
from .context_window import DEFAULT_CONTEXT_NEED, ContextFinding
from .declare import Context, Declared, Request, Seen
from .diagnosis import diagnose
from .function import looks_cut
from .requests import CHAT, PLAIN, ChatOutcome

__all__ = ["CHECK_CONNECTIONS", "ChatOutcome", "judge", "make_client", "requests_of", "run_checks"]

#: Connections the checks use at once (one per concurrent request).
CHECK_CONNECTIONS = 16
#: The longest wait for a server to work through the checks' queued burst (seconds).
QUEUE_CAP_S = 120.0


def make_client(timeout: float) -> httpx.AsyncClient:
    """The checks' client: a connection for each of their concurrent requests."""
    limits = httpx.Limits(
        max_connections=CHECK_CONNECTIONS, max_keepalive_connections=CHECK_CONNECTIONS
    )
    transport = httpx.AsyncHTTPTransport(limits=limits, verify=tls_context())
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout), transport=transport)


def requests_of(checks: tuple[Declared, ...]) -> dict[str, Request]:
    """Every request the checks send, once each, by name; the plain chat (the diagnosis
    reads it) and the onboarding's chat always."""
    found: dict[str, Request] = {PLAIN.name: PLAIN}
    for check in checks:
        for request in check.sends:
            found.setdefault(request.name, request)
    found.setdefault(CHAT.name, CHAT)
    return found


async def _gather(ctx: Context, requests: dict[str, Request], target: Target) -> Seen:
    done = await asyncio.gather(*(r.send(ctx, target) for r in requests.values()))
    return Seen(dict(zip(requests, done, strict=True)))


def _timed_out(found: object) -> bool:
    """A request (or the requests of one name) that waited past the read timeout."""
    if isinstance(found, Exchange):
        return found.failure == "timeout"
    if isinstance(found, list):
        return any(_timed_out(ex) for ex in found)
    if isinstance(found, ContextFinding):
        return any(_timed_out(ex) for ex in (found.broken, found.long) if ex is not None)
    return False


def _answered(found: object) -> bool:
    """A whole reply came (2xx, nothing broke off)."""
    return isinstance(found, Exchange) and found.status is not None and found.ok


async def _queued_again(
    ctx: Context, requests: dict[str, Request], target: Target, seen: Seen
) -> None:
    """Send again, one at a time, each request that timed out while the server answered
    others: a server that answers one request at a time (transformers serve without
    continuous batching) queues the checks' own burst, and the last in its queue wait
    past the timeout. First a one-token chat waits for the server to work through what
    may still be queued (as long as the late requests would take it, at most
    :data:`QUEUE_CAP_S`); once two requests sent again time out too, the rest stay as seen.
    """
    late = [name for name in requests if _timed_out(seen.get(name))]
    answered = [ex for name in requests if (ex := seen.maybe(name)) and _answered(ex)]
    if not late or not answered:
        return
    chat = seen.get(CHAT.name)
    if isinstance(chat, ChatOutcome) and chat.error is not None:
        late.append(CHAT.name)  # its error is one line of text: it may have waited in line too
    if "streamed" in requests and "streamed" not in late:
        late.append("streamed")  # the one-request figures: the server's alone, not our queue's
    longest = max(ex.latency or 0.0 for ex in answered)
    wait = min(target.timeout + len(late) * max(longest, 0.1), QUEUE_CAP_S)
    body = chat_body(target.model, stream=False, max_tokens=1)
    try:
        async with asyncio.timeout(wait):  # a reply that trickles gets no longer either
            free = await send(ctx.client, replace(target, timeout=wait), body, stream=False)
    except TimeoutError:
        return
    if free.status is None:
        return
    # The chat path's requests first: /v1/completions may not be served at all (it then
    # hangs alone too); two that time out alone end it (a server that stalls is bounded).
    late.sort(key=lambda name: name == "completion")
    stalled = 0
    for name in late:
        found = await requests[name].send(ctx, target)
        seen.set(name, found)
        stalled += _timed_out(found)
        if stalled >= 2:
            return


async def _alone(ctx: Context, requests: dict[str, Request], target: Target, seen: Seen) -> None:
    """Ask again, one at a time, for each judged stream that looks cut (see the docstring)."""
    pair = seen.get("pair")
    cutting = any(looks_cut(ex) for ex in pair) if isinstance(pair, list) else False
    for name in ("streamed", "utf8", "max_tokens"):
        if name in requests and looks_cut(seen.maybe(name)):
            cutting = True
            seen.set(name, await requests[name].send(ctx, target))
    if cutting:  # the chat step's reply was likely cut too (without a prompt: none is sent)
        seen.set(CHAT.name, await requests[CHAT.name].send(ctx, target))


def judge(checks: tuple[Declared, ...], seen: Seen, target: Target) -> list[CheckResult]:
    """Each declared check judged in its stages, not judged in those it names so."""
    rows: list[CheckResult] = []
    plain = seen.maybe("plain")
    for check in checks:
        if seen.stage in check.when and check.judge is not None:
            row = check.judge(seen, target)
            if row is not None:
                rows.append(row)
        elif seen.stage in check.unjudged:
            status = plain.status if plain is not None else None
            rows.append(
                check.not_judged(f"not-judged:{seen.stage}", registered=target.url, status=status)
            )
    return rows


async def run_checks(
    client: httpx.AsyncClient,
    target: Target,
    *,
    max_tokens: int = 64,
    chat_prompt: str | None = None,
    context_need: int = DEFAULT_CONTEXT_NEED,
    lag: LoopLag | None = None,
    checks: tuple[Declared, ...] = CHECKS,
) -> tuple[Conformance, ChatOutcome]:
    """Every declared check against ``target``; never raises for the server.

    The registered modelName (``target.registered_name``) is tried as
    ``model`` too when it differs from ``target.model``. ``chat_prompt``: one
    streamed chat reply made beside the checks (the onboarding's chat step).
    ``context_need``: tokens of the longest prompt the course apps send
    (context-window). ``lag``: the client's own stalls, watched over the run (kept as
    ``client-lag``): a finding judged on samples taken while it stalled says it could not
    tell. ``checks``: the declarations to run (all, by default).
    """
    ctx = Context(client, max_tokens, chat_prompt, context_need,
                  "lmreg-probe-wrong-" + secrets.token_hex(8))  # fmt: skip
    requests = requests_of(checks)
    seen = await _gather(ctx, requests, target)
    await _queued_again(ctx, requests, target, seen)
    seen.stage = await diagnose(ctx, target, seen)
    if seen.stage == "answered":
        await _alone(ctx, requests, target, seen)
        for check in checks:
            if check.again is not None:
                await check.again(ctx, target, seen)
    if lag is not None:
        seen.set("client-lag", lag.result())
    rows = judge(checks, seen, target)
    plain = seen.maybe("plain")
    result = Conformance(rows, first=plain, stage=seen.stage)
    if seen.stage == "answered":
        result.streamed = seen.maybe("streamed")
    chat = seen.get(CHAT.name)
    return result, chat if isinstance(chat, ChatOutcome) else ChatOutcome()
