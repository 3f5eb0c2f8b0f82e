"""Function checks (DESIGN "Contract: function checks"): what the platform's course apps send.

====================  ==============  ============================================
name                  severity        passes when
====================  ==============  ============================================
system-role           error           a chat beginning with a system message
                                      answers 2xx
context-window        error/warning   a prompt of ``context_need`` tokens is
                                      answered (error when refused), and not cut
                                      silently (warning): see :mod:`.context_window`
streams-not-cut       error           two streamed chats sent at once both arrive
                                      as whole as one sent alone
reasoning-separated   warning         no ``<think>`` block in the reply's content
====================  ==============  ============================================

The requests are made by :mod:`.suite` beside the other checks; the functions
here judge what they brought back. Every quote of the server is bounded here
and masked with the key by the report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...i18n import _, ngettext
from ...terminal import snippet
from ..wire.exchange import Exchange
from ..wire.shapes import error_message, first_choice, reply_reasoning, reply_text
from .conformance import CheckResult

__all__ = [
    "SYSTEM_PROMPT",
    "has_reply",
    "looks_cut",
    "reasoning_row",
    "server_said",
    "streams_row",
    "system_role_row",
]

#: The system message of the system-role request: a teacher persona, as the course apps send.
SYSTEM_PROMPT = "You are a patient teacher at a secondary school. Answer in one short sentence."
#: A reasoning model's thinking block when no reasoning parser took it out of the content.
_THINK = re.compile(r"</?think>", re.IGNORECASE)


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


def _no_reply(ex: Exchange) -> str:
    """What an answer without a reply held, in plain words."""
    if ex.streamed:
        return ngettext(
            "an event stream of {n} event without content or finish_reason",
            "an event stream of {n} events without content or finish_reason",
            ex.events,
        ).format(n=ex.events)
    if not ex.body:
        return _("an empty body")
    if isinstance(ex.json_body, dict):
        if not ex.json_body:
            return _("an empty JSON object")
        keys = ", ".join(sorted(str(k) for k in ex.json_body)[:8])
        return _("JSON without choices, its keys: {keys}").format(keys=keys)
    return _("a body that is not a chat completion")


def server_said(ex: Exchange, limit: int = 160) -> str:
    """What a failed request got, one line: ``HTTP 400: "..."`` or the transport's reason."""
    if ex.status is None:
        why = (ex.failure_detail or ex.failure or "?").rstrip(".")
        return _("no answer ({why})").format(why=why)
    if 200 <= ex.status < 300 and not has_reply(ex):
        return _("HTTP {status} with no reply in it ({what})").format(
            status=ex.status, what=_no_reply(ex)
        )
    said = error_message(ex.json_body) if ex.json_body is not None else None
    if said is None and ex.body:
        said = ex.body.decode("utf-8", "replace")
    said = snippet(said or ex.failure_detail or "", limit)
    return f'HTTP {ex.status}: "{said}"' if said else f"HTTP {ex.status}"


def system_role_row(ex: Exchange) -> CheckResult:
    """system-role: a chat whose messages begin with a system message answers 2xx (a reply)."""
    if has_reply(ex):
        return CheckResult(
            "system-role",
            True,
            "error",
            _("a chat beginning with a system message answered HTTP {status}").format(
                status=ex.status
            ),
        )
    if ex.status is not None and 200 <= ex.status < 300:
        return CheckResult(
            "system-role",
            False,
            "error",
            _(
                "a chat beginning with a system message got {seen}: the server answered "
                "without a reply, so whether it takes the system role is unknown"
            ).format(seen=server_said(ex)),
        )
    return CheckResult(
        "system-role",
        False,
        "error",
        _(
            "a chat beginning with a system message (the course apps' teacher persona) got "
            "{seen}, while the same chat without it was answered. The model's chat template "
            "refuses the system role (Gemma and others): serve a chat template that folds the "
            "system message into the first user turn (vLLM, SGLang, LMDeploy: --chat-template; "
            "llama.cpp: --jinja --chat-template-file; Ollama: the Modelfile's TEMPLATE; "
            "Xinference: a custom model's chat template)"
        ).format(seen=server_said(ex)),
    )


def looks_cut(ex: Exchange) -> bool:
    """A 2xx stream that ended early: [DONE] without a finish_reason, or a mid-reply close.

    What a server that cuts running streams leaves behind (llama.cpp's
    ``interrupt_requests``); such a stream is asked for again, alone, before
    the stream rows judge its shape.
    """
    if not ex.streamed or ex.status is None or not 200 <= ex.status < 300:
        return False
    if ex.failure == "transport":
        return True
    empty = not ex.pieces and not ex.reasoning_chars
    return ex.done and (ex.finish is None or empty) and not ex.error_events


def _shortfall(ex: Exchange, alone: Exchange) -> str | None:
    """How ``ex`` (sent beside another stream) falls short of ``alone``; None when it does not."""
    if not has_reply(ex) and ex.failure is None:
        return _("it got {seen}").format(seen=server_said(ex))
    if ex.status is None or not 200 <= ex.status < 300:
        return _("it got {seen}").format(seen=server_said(ex))
    if ex.done and ex.finish is None and alone.finish is not None:  # the cut's signature
        return _ended(ex)
    if ex.failure in ("transport", "timeout"):
        return _("it broke off: {why}").format(why=ex.failure_detail)
    if (
        (alone.pieces and not ex.pieces)
        or (alone.finish and not ex.finish)
        or (alone.done and not ex.done)
    ):
        return _ended(ex)
    return None


def _ended(ex: Exchange) -> str:
    """How a stream ended early: its content chunks, no finish_reason, [DONE] or not."""
    return ngettext(
        "it ended after {n} content chunk, without a finish_reason{done}",
        "it ended after {n} content chunks, without a finish_reason{done}",
        len(ex.pieces),
    ).format(n=len(ex.pieces), done=_(" (then data: [DONE])") if ex.done else "")


def streams_row(pair: Sequence[Exchange], alone: Exchange) -> CheckResult:
    """streams-not-cut: two streams sent at once arrive as whole as ``alone`` (sent alone)."""
    if not has_reply(alone):
        return CheckResult(
            "streams-not-cut",
            False,
            "error",
            _("not judged: a streamed chat sent alone already failed ({seen})").format(
                seen=server_said(alone)
            ),
        )
    short = [why for why in (_shortfall(ex, alone) for ex in pair) if why is not None]
    how = _("{first}; {second}").format(first=short[0], second=short[1]) if len(short) > 1 else ""
    if not short:
        return CheckResult(
            "streams-not-cut",
            True,
            "error",
            _(
                "two streamed chats sent at once both arrived whole ({a} and {b} content chunks)"
            ).format(a=len(pair[0].pieces), b=len(pair[1].pieces)),
        )
    cut = any(ex.done and ex.finish is None for ex in pair if ex.streamed)
    advice = (
        _(
            "The server ends a running stream when another request arrives (llama-cpp-python's "
            "interrupt_requests, on by default): students' replies stop midway when the platform "
            "calls at once. Start it with --interrupt_requests False, or serve chats in "
            "parallel (llama.cpp: -np N; Ollama: OLLAMA_NUM_PARALLEL)"
        )
        if cut
        else _(
            "The platform calls concurrently: serve chats in parallel or queue them "
            "(vLLM, SGLang, LMDeploy do; llama.cpp: -np N; Ollama: OLLAMA_NUM_PARALLEL)"
        )
    )
    return CheckResult(
        "streams-not-cut",
        False,
        "error",
        _("of two streamed chats sent at once, {n} did not arrive whole: {how}. {advice}").format(
            n=len(short), how=how or short[0], advice=advice
        ),
    )


def _content(ex: Exchange) -> tuple[str, int]:
    """The reply's content and how many characters of thinking came apart from it."""
    if ex.stream_requested:
        return ex.text, ex.reasoning_chars
    body = ex.json_body
    return reply_text(body) or "", len(reply_reasoning(body) or "")


def reasoning_row(replies: Sequence[Exchange | None], measured: Exchange | None) -> CheckResult:
    """reasoning-separated: no ``<think>`` block in any reply's content.

    ``measured``: the streamed reply whose first token and first answer token are quoted.
    """
    seen = [_content(ex) for ex in replies if ex is not None and ex.status == 200]
    for text, _apart in seen:
        found = _THINK.search(text)
        if found is not None:
            start = max(0, found.start() - 20)
            return CheckResult(
                "reasoning-separated",
                False,
                "warning",
                _(
                    "the reply's content holds the model's thinking ({sample}): students read "
                    "it before the answer. Start the server with a reasoning parser so the "
                    "thinking goes to reasoning_content (vLLM, SGLang, LMDeploy: "
                    "--reasoning-parser, e.g. deepseek_r1 or qwen3; llama.cpp: "
                    "--reasoning-format deepseek; Xinference: --reasoning-content true)"
                ).format(sample=repr(snippet(text[start:], 60))),
            )
    apart = max((n for _text, n in seen), default=0)
    if not apart:
        return CheckResult(
            "reasoning-separated",
            True,
            "warning",
            _("no thinking in the replies' content (the model does not reason, or shows none)"),
        )
    figures = ""
    if measured is not None and measured.ttft is not None and measured.first_answer is not None:
        figures = " " + _(
            "The first token came after {ttft} ms, the first token of the answer after "
            "{answer} ms: students wait for the latter."
        ).format(ttft=f"{measured.ttft * 1000:.0f}", answer=f"{measured.first_answer * 1000:.0f}")
    return CheckResult(
        "reasoning-separated",
        True,
        "warning",
        _(
            "the thinking arrives apart from the answer, in reasoning_content ({n} characters)."
        ).format(n=apart)
        + figures,
    )
