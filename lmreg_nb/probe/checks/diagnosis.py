"""Diagnosis before verdicts: how far the plain chat got, and why, before anything is judged.

The most common mistake is a registryUrl that stops at ``/v1`` (or at the host): the
path serves nothing, so the chat gets HTTP 404 (or 405) and every check behind it
would blame the key, the model name or the error replies. When the path is not the
chat path of spec 4.5 and the chat path beside it answers (a chat to
``…/v1/chat/completions``, or ``GET …/v1/models``), the finding is the path, with
the school's own corrected address; what cannot be judged on a 404 is not judged.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ...validate import chat_path_fix, is_chat_path
from ..target import Target
from ..wire.exchange import Exchange, chat_body, send
from .declare import Context, Seen, Stage
from .golive import get_json, models_url

__all__ = ["NOT_SERVED", "diagnose"]

#: What a path that serves no chat answers.
NOT_SERVED = (404, 405)


def _stage_of(plain: Exchange) -> Stage:
    status = plain.status
    if status is None:
        return "unreached"
    if status in (401, 403):
        return "refused"
    if status // 100 != 2:
        return "failed"
    return "answered"


async def diagnose(ctx: Context, target: Target, seen: Seen) -> Stage:
    """The stage the plain chat reached; ``wrong-path`` is told apart with two requests to
    the chat path beside the address (kept in ``seen`` as ``path-chat`` and
    ``path-models``), sent only when the address's own path served nothing."""
    plain = seen.exchange("plain")
    stage = _stage_of(plain)
    if plain.status not in NOT_SERVED or is_chat_path(urlsplit(target.url).path):
        return stage
    fixed = chat_path_fix(target.url)
    beside = Target(fixed, target.api_key, target.model, timeout=target.timeout)
    body = chat_body(target.model, stream=False, max_tokens=1)
    chat = await send(ctx.client, beside, body, stream=False)
    seen.set("path-chat", chat)
    listing = models_url(fixed)
    status = None
    if listing is not None:
        status, _body, _failure = await get_json(ctx.client, beside, listing)
        seen.set("path-models", status)
    answers = chat.status is not None and chat.status not in NOT_SERVED
    if answers or (status is not None and status // 100 == 2):
        return "wrong-path"
    return stage
