"""Does the registered address answer a chat? One small request right after registering.

The platform calls registryUrl exactly as registered (spec 4.5: the chat path
is ``v1/chat/completions``). An address that answers 404 or 405 to a chat (the
path stops at ``/v1``, or points at a web page), or redirects it (a slash too many:
vLLM's 307; the platform does not repeat its POST), cannot serve the course apps,
however green the registration looked; so the register (and modify) outcome says
so in red, with the school's own address to register instead. An address that
does not answer from here, or not in time, or answers the chat with another error
(HTTP 400, 429, 500), is a warning (⚠) with the cause, in the words of the
checks' ``reachable`` row: never a green ✔. Only the status is read, never the body
(a hostile or broken server may send one without end), and the request goes
directly, as the platform's will: never through the environment's proxy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from ..display import Outcome
from ..i18n import _
from ..validate import chat_path_fix

if TYPE_CHECKING:
    from ..probe import Target

__all__ = ["Verdict", "address_verdict", "chat_path_fix", "with_address_verdict"]

#: "ok": it answered a chat; "path": 404/405 or a redirect, not the chat path; "key":
#: 401/403, the key refused; "error": another status than 2xx; "down": no answer from
#: here, or not in time.
Verdict = Literal["ok", "path", "key", "error", "down"]


def address_verdict(target: Target) -> tuple[Verdict, str]:
    """(verdict, what happened) for one short chat to ``target`` as the platform sends it."""
    import httpx

    from ..probe.wire.exchange import chat_body
    from ..probe.wire.reasons import transport_reason

    body = chat_body(target.model, "ping", stream=False, max_tokens=1, include_usage=False)
    headers = {"Authorization": f"Bearer {target.api_key.reveal()}"}
    try:
        status, location = _answer(target.url, json=body, headers=headers, timeout=target.timeout)
    except httpx.HTTPError as exc:
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
            return "down", _(
                "connected, but no answer within {seconds} s: check the model server is not "
                "stuck or overloaded (the checks, notebook 05, say more)"
            ).format(seconds=f"{target.timeout:g}")
        return "down", transport_reason(exc, target.url)
    if status in (404, 405):
        return "path", _(
            "the address answered HTTP {status} to a chat, so the platform's calls would fail: "
            "the platform calls registryUrl as it is and the chat path is v1/chat/completions "
            "(spec 4.5). Register {fixed}"
        ).format(status=status, fixed=chat_path_fix(target.url))
    if 300 <= status < 400:
        return "path", _(
            "the address redirects a chat (HTTP {status}), and the platform does not repeat "
            "its POST after a redirect. Register {fixed}"
        ).format(status=status, fixed=_redirected(target, location))
    if status in (401, 403):
        return "key", _(
            "the address refused the registered apiKey (HTTP {status}): register the key "
            "the model server expects"
        ).format(status=status)
    if status // 100 != 2:
        return "error", _(
            "answered a chat with HTTP {status}, not a reply: the checks (notebook 05) say why"
        ).format(status=status)
    return "ok", _("answered a chat: HTTP {status}").format(status=status)


def _answer(
    url: str, *, json: Any, headers: dict[str, str], timeout: float
) -> tuple[int, str | None]:
    """The HTTP status of one POST to the address, and its Location; the body is left
    unread."""
    import httpx

    from .._tls import tls_context

    with (
        httpx.Client(timeout=timeout, verify=tls_context(), trust_env=False) as client,
        client.stream("POST", url, json=json, headers=headers) as reply,
    ):
        return reply.status_code, reply.headers.get("location")


def _redirected(target: Target, location: str | None) -> str:
    """The address to register for one that redirects: the chat path without the slash too
    many (vLLM's 307), else where it points when that is a registryUrl that holds no key."""
    from urllib.parse import urljoin

    from ..errors import ValidationError
    from ..secret import find_leaks
    from ..validate import check_registry_url

    fixed = chat_path_fix(target.url)
    if fixed != target.url or not location:
        return fixed
    try:
        there = check_registry_url(urljoin(target.url, location))
    except ValidationError:
        return _("the address it redirects to")
    # The one masker's rule for "holds the key" (encoded, or a 7-character piece of it).
    return _("the address it redirects to") if find_leaks(there, [target.api_key]) else there


def with_address_verdict(outcome: Outcome, target: Target) -> Outcome:
    """``outcome`` of a register or modify: red with the fix when the address cannot chat,
    amber (⚠) with the cause when it does not answer from here."""
    verdict, said = address_verdict(target)
    outcome.rows = [*outcome.rows, (_("chat at this address"), said)]
    if verdict == "down":
        outcome.warning = True
        outcome.title = _("{title}, but its address did not answer a chat from here").format(
            title=outcome.title
        )
    elif verdict == "error":
        outcome.warning = True
        outcome.title = _("{title}, but its address answered a chat with an error").format(
            title=outcome.title
        )
    elif verdict != "ok":
        outcome.ok = False
        title = (
            _("{title}, but its address refused the registered apiKey")
            if verdict == "key"
            else _("{title}, but its address cannot answer a chat")
        )
        outcome.title = title.format(title=outcome.title)
    return outcome
