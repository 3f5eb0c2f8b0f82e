"""What a request got, as facts: no answer (and why), an empty 2xx, or the server's words.

Many checks quote what their request got ("got HTTP 400: "..."", "no answer (...)").
:func:`seen_facts` keeps it as flat facts under one name (``seen``, ``seen_status``,
``seen_said``...) and :data:`SAID_PARTS` declares its words, so a declaration that
quotes a request adds ``parts=SAID_PARTS`` and a ``{seen}`` placeholder.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...i18n import N_, Nn_
from ...summary import Fact
from ...terminal import snippet
from ..wire.exchange import Exchange
from ..wire.shapes import error_message, first_choice
from .declare import Words

__all__ = ["SAID_PARTS", "has_reply", "seen_facts"]

#: What a request got: the variants of a ``seen`` fact.
SEEN: Mapping[str, Words] = {
    "no-answer": Words(N_("no answer ({why})")),
    "no-reply": Words(N_("HTTP {status} with no reply in it ({what})")),
    "said": Words('HTTP {status}: "{said}"', raw=True),
    "status": Words("HTTP {status}", raw=True),
}
#: What an answer without a reply held.
WHAT: Mapping[str, Words] = {
    "events": Words(
        *Nn_(
            "an event stream of {n} event without content or finish_reason",
            "an event stream of {n} events without content or finish_reason",
        ),
        count="n",
    ),
    "empty-body": Words(N_("an empty body")),
    "empty-json": Words(N_("an empty JSON object")),
    "keys": Words(N_("JSON without choices, its keys: {keys}")),
    "not-chat": Words(N_("a body that is not a chat completion")),
}
SAID_PARTS: Mapping[str, Mapping[str, Words]] = {"seen": SEEN, "what": WHAT}


def has_reply(ex: Exchange) -> bool:
    """A 2xx answer that holds a reply: a choice with a message (or text), or, streamed,
    content, thinking or a finish_reason. An empty 200 (no body, ``{}``, a stream with
    no event) answered nothing: it passes no check."""
    if ex.status is None or not 200 <= ex.status < 300:
        return False
    if ex.streamed:
        return bool(ex.pieces or ex.reasoning_chars or ex.finish)
    choice = first_choice(ex.json_body)
    return choice is not None and (
        isinstance(choice.get("message"), dict) or isinstance(choice.get("text"), str)
    )


def _what(ex: Exchange, name: str) -> dict[str, Fact]:
    """What an answer without a reply held, as the ``what`` part's facts."""
    key = f"{name}_what"
    if ex.streamed:
        return {key: "events", f"{key}_n": ex.events}
    if not ex.body:
        return {key: "empty-body"}
    if isinstance(ex.json_body, dict):
        if not ex.json_body:
            return {key: "empty-json"}
        keys = ", ".join(sorted(str(k) for k in ex.json_body)[:8])
        return {key: "keys", f"{key}_keys": keys}
    return {key: "not-chat"}


def seen_facts(ex: Exchange, name: str = "seen", limit: int = 160) -> dict[str, Fact]:
    """What a (failed) request got, as facts under ``name`` (its words: :data:`SEEN`)."""
    if ex.status is None:
        why = (ex.failure_detail or ex.failure or "?").rstrip(".")
        return {name: "no-answer", f"{name}_why": why}
    if 200 <= ex.status < 300 and not has_reply(ex):
        return {name: "no-reply", f"{name}_status": ex.status, **_what(ex, name)}
    said = error_message(ex.json_body) if ex.json_body is not None else None
    if said is None and ex.body:
        said = ex.body.decode("utf-8", "replace")
    said = snippet(said or ex.failure_detail or "", limit)
    if said:
        return {name: "said", f"{name}_status": ex.status, f"{name}_said": said}
    return {name: "status", f"{name}_status": ex.status}
