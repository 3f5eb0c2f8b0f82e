"""Does the registered address answer a chat? One small request right after registering.

The platform calls registryUrl exactly as registered (spec 4.5: the chat path
is ``v1/chat/completions``). An address that answers 404 or 405 to a chat (the
path stops at ``/v1``, or points at a web page) cannot serve the course apps,
however green the registration looked; so the register form says so in red,
with the address to register instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from ..display import Outcome
from ..i18n import _

if TYPE_CHECKING:
    from ..probe import Target

__all__ = ["address_verdict", "chat_path_fix", "with_address_verdict"]

#: The spec's fixed chat path (4.5).
CHAT_PATH = "v1/chat/completions"


def chat_path_fix(url: str) -> str:
    """``url`` with the chat path of spec 4.5 (``…/v1`` -> ``…/v1/chat/completions``)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if path.endswith("/" + CHAT_PATH):
        return url
    if path.endswith("/v1"):
        path += "/chat/completions"
    elif path.endswith("/chat/completions"):
        path = path.removesuffix("/chat/completions") + "/v1/chat/completions"
    else:
        path += "/" + CHAT_PATH
    return urlunsplit(parts._replace(path=path))


def address_verdict(target: Target) -> tuple[str, str]:
    """(verdict, what happened) for one short chat to ``target`` as the platform sends it:
    "ok", "path" (404/405: not the chat path) or "key" (401/403: the key refused)."""
    import httpx

    from ..probe.wire.exchange import chat_body

    body = chat_body(target.model, "ping", stream=False, max_tokens=1, include_usage=False)
    headers = {"Authorization": f"Bearer {target.api_key.reveal()}"}
    try:
        reply = httpx.post(target.url, json=body, headers=headers, timeout=target.timeout)
    except httpx.HTTPError as exc:
        # Not reached from here is not proof the platform cannot: the checks say more.
        reason = (
            _("no answer in time")
            if isinstance(exc, httpx.TimeoutException)
            else _("could not connect")
        )
        return "ok", _("no answer from here ({reason}); the checks (notebook 05) say more").format(
            reason=reason
        )
    status = reply.status_code
    if status in (404, 405):
        return "path", _(
            "the address answered HTTP {status} to a chat, so the platform's calls would fail: "
            "the platform calls registryUrl as it is and the chat path is v1/chat/completions "
            "(spec 4.5). Register {fixed}"
        ).format(status=status, fixed=chat_path_fix(target.url))
    if status in (401, 403):
        return "key", _(
            "the address refused the registered apiKey (HTTP {status}): register the key "
            "the model server expects"
        ).format(status=status)
    return "ok", _("answered a chat: HTTP {status}").format(status=status)


def with_address_verdict(outcome: Outcome, target: Target) -> Outcome:
    """``outcome`` of a register, red with the fix when the address cannot chat."""
    verdict, said = address_verdict(target)
    outcome.rows = [*outcome.rows, (_("chat at this address"), said)]
    if verdict != "ok":
        outcome.ok = False
        title = (
            _("{title}, but its address refused the registered apiKey")
            if verdict == "key"
            else _("{title}, but its address cannot answer a chat")
        )
        outcome.title = title.format(title=outcome.title)
    return outcome
