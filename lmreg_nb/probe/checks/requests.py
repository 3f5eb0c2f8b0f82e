"""The requests most checks read: the plain chat, the streamed chat, the onboarding's chat.

A family's own requests are declared beside its checks; these three are the suite's
too (the plain chat decides how far the endpoint got, the streamed one gives the
one-request figures, the chat reply is the onboarding's chat step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import LmregError
from ..target import Target
from ..wire.chat import chat_reply
from ..wire.exchange import Exchange, chat_body, send
from .declare import Context, Request

__all__ = ["CHAT", "PLAIN", "STREAMED", "ChatOutcome", "stream_body"]


@dataclass
class ChatOutcome:
    """The onboarding's chat reply, run beside the checks (text masked)."""

    reply: str | None = None
    error: str | None = None


def stream_body(target: Target, max_tokens: int) -> dict[str, Any]:
    """The streamed chat the stream rows judge."""
    return chat_body(target.model, stream=True, max_tokens=max_tokens)


async def _plain(ctx: Context, target: Target) -> Exchange:
    body = chat_body(target.model, stream=False, max_tokens=ctx.max_tokens)
    return await send(ctx.client, target, body, stream=False)


async def _streamed(ctx: Context, target: Target) -> Exchange:
    return await send(ctx.client, target, stream_body(target, ctx.max_tokens), stream=True)


async def _chat(ctx: Context, target: Target) -> ChatOutcome:
    if ctx.chat_prompt is None:
        return ChatOutcome()
    try:
        return ChatOutcome(reply=await chat_reply(ctx.client, target, ctx.chat_prompt))
    except LmregError as exc:  # already one line, already masked
        return ChatOutcome(error=str(exc))


#: A plain (not streamed) chat request: reachable, the key, the reply's shape.
PLAIN = Request("plain", _plain)
#: The streamed chat request: the stream rows and the one-request figures.
STREAMED = Request("streamed", _streamed)
#: The onboarding's chat reply (``chat_prompt``), made beside the checks.
CHAT = Request("chat", _chat)
