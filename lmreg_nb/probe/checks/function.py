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

Each is declared here (context-window in :mod:`.context_window`) with the
requests it sends and how they are judged. Every quote of the server is bounded
here and masked with the key by the report.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from ...i18n import N_, Nn_
from ...summary import Check, Fact
from ...terminal import snippet
from ..target import Target
from ..wire.exchange import Exchange, chat_body, send
from ..wire.shapes import reply_reasoning, reply_text
from .context_window import CONTEXT_WINDOW
from .declare import Context, Declared, Request, Words
from .golive import UTF8
from .requests import PLAIN, STREAMED, stream_body
from .said import SAID_PARTS, has_reply, seen_facts

__all__ = [
    "REASONING_SEPARATED",
    "STREAMS_NOT_CUT",
    "SYSTEM_PROMPT",
    "SYSTEM_ROLE",
    "has_reply",
    "looks_cut",
]

#: The system message of the system-role request: a teacher persona, as the course apps send.
SYSTEM_PROMPT = "You are a patient teacher at a secondary school. Answer in one short sentence."
#: A reasoning model's thinking block when no reasoning parser took it out of the content.
_THINK = re.compile(r"</?think>", re.IGNORECASE)


# -- system-role ----------------------------------------------------------------------------
async def _system_request(ctx: Context, target: Target) -> Exchange:
    body = chat_body(target.model, stream=False, max_tokens=ctx.max_tokens, system=SYSTEM_PROMPT)
    return await send(ctx.client, target, body, stream=False)


#: A chat whose messages begin with a system message.
SYSTEM = Request("system", _system_request)


def judge_system_role(ex: Exchange) -> Check:
    """A chat whose messages begin with a system message answers 2xx (a reply)."""
    if has_reply(ex):
        return SYSTEM_ROLE.passed(status=ex.status)
    if ex.status is not None and 200 <= ex.status < 300:
        return SYSTEM_ROLE.failed("no-reply", **seen_facts(ex))
    return SYSTEM_ROLE.failed("refused", **seen_facts(ex))


SYSTEM_ROLE = Declared(
    "system-role",
    "error",
    says={
        "passed": Words(N_("a chat beginning with a system message answered HTTP {status}")),
        "no-reply": Words(
            N_(
                "a chat beginning with a system message got {seen}: the server answered "
                "without a reply, so whether it takes the system role is unknown"
            )
        ),
        "refused": Words(
            N_(
                "a chat beginning with a system message (the course apps' teacher persona) got "
                "{seen}, while the same chat without it was answered. The model's chat template "
                "refuses the system role (Gemma and others): serve a chat template that folds "
                "the system message into the first user turn (vLLM, SGLang, LMDeploy: "
                "--chat-template; llama.cpp: --jinja --chat-template-file; Ollama: the "
                "Modelfile's TEMPLATE; Xinference: a custom model's chat template)"
            )
        ),
    },
    parts=SAID_PARTS,
    sends=(SYSTEM,),
    judge=lambda seen, target: judge_system_role(seen.exchange("system")),
)


# -- streams-not-cut ------------------------------------------------------------------------
def looks_cut(ex: Exchange | None) -> bool:
    """A 2xx stream that ended early: [DONE] without a finish_reason, or a mid-reply close.

    What a server that cuts running streams leaves behind (llama.cpp's
    ``interrupt_requests``); such a stream is asked for again, alone, before
    the stream rows judge its shape.
    """
    if ex is None or not ex.streamed or ex.status is None or not 200 <= ex.status < 300:
        return False
    if ex.failure == "transport":
        return True
    empty = not ex.pieces and not ex.reasoning_chars
    return ex.done and (ex.finish is None or empty) and not ex.error_events


async def _pair_request(ctx: Context, target: Target) -> list[Exchange]:
    """Two streamed chats sent at once (streams-not-cut)."""
    body = stream_body(target, ctx.max_tokens)
    return list(await asyncio.gather(*(send(ctx.client, target, body, stream=True) for _ in "ab")))


#: Two streamed chats sent at once.
PAIR = Request("pair", _pair_request)


def _shortfall(ex: Exchange, alone: Exchange, name: str) -> dict[str, Fact] | None:
    """How ``ex`` (sent beside another stream) falls short of ``alone``, as the ``short``
    part's facts under ``name``; None when it does not."""
    if not has_reply(ex) and ex.failure is None:
        return {name: "got", **seen_facts(ex, f"{name}_seen")}
    if ex.status is None or not 200 <= ex.status < 300:
        return {name: "got", **seen_facts(ex, f"{name}_seen")}
    ended: dict[str, Fact] = {
        name: "ended",
        f"{name}_n": len(ex.pieces),
        f"{name}_done": "done" if ex.done else "",
    }
    if ex.done and ex.finish is None and alone.finish is not None:  # the cut's signature
        return ended
    if ex.failure in ("transport", "timeout"):
        return {name: "broke", f"{name}_why": ex.failure_detail}
    if (
        (alone.pieces and not ex.pieces)
        or (alone.finish and not ex.finish)
        or (alone.done and not ex.done)
    ):
        return ended
    return None


def judge_streams(pair: Sequence[Exchange], alone: Exchange) -> Check:
    """Two streams sent at once arrive as whole as ``alone`` (sent alone)."""
    if not has_reply(alone):
        return STREAMS_NOT_CUT.failed("alone-failed", **seen_facts(alone))
    short = [s for s in (_shortfall(ex, alone, f"s{i}") for i, ex in enumerate(pair)) if s]
    if not short:
        return STREAMS_NOT_CUT.passed(a=len(pair[0].pieces), b=len(pair[1].pieces))
    cut = any(ex.done and ex.finish is None for ex in pair if ex.streamed)
    facts: dict[str, Fact] = {"n": len(short), "advice": "cut" if cut else "parallel"}
    for found in short:
        facts.update(found)
    names = [next(k for k in found if k in ("s0", "s1")) for found in short]
    facts["how"] = names[0] if len(names) == 1 else "both"
    facts["first"], facts["second"] = names[0], names[-1]
    return STREAMS_NOT_CUT.failed("cut", **facts)


_SHORT = {
    "got": Words(N_("it got {seen}")),
    "broke": Words(N_("it broke off: {why}")),
    "ended": Words(
        *Nn_(
            "it ended after {n} content chunk, without a finish_reason{done}",
            "it ended after {n} content chunks, without a finish_reason{done}",
        ),
        count="n",
    ),
}

STREAMS_NOT_CUT = Declared(
    "streams-not-cut",
    "error",
    says={
        "passed": Words(
            N_("two streamed chats sent at once both arrived whole ({a} and {b} content chunks)")
        ),
        "alone-failed": Words(N_("not judged: a streamed chat sent alone already failed ({seen})")),
        "cut": Words(
            N_("of two streamed chats sent at once, {n} did not arrive whole: {how}. {advice}")
        ),
    },
    parts={
        **SAID_PARTS,
        "s0": _SHORT,
        "s1": _SHORT,
        "done": {"": Words(""), "done": Words(N_(" (then data: [DONE])"))},
        "how": {
            "s0": Words("{s0}", raw=True),
            "s1": Words("{s1}", raw=True),
            "both": Words(N_("{first}; {second}")),
        },
        "first": {"s0": Words("{s0}", raw=True), "s1": Words("{s1}", raw=True)},
        "second": {"s0": Words("{s0}", raw=True), "s1": Words("{s1}", raw=True)},
        "advice": {
            "cut": Words(
                N_(
                    "The server ends a running stream when another request arrives "
                    "(llama-cpp-python's interrupt_requests, on by default): students' replies "
                    "stop midway when the platform calls at once. Start it with "
                    "--interrupt_requests False, or serve chats in parallel (llama.cpp: -np N; "
                    "Ollama: OLLAMA_NUM_PARALLEL)"
                )
            ),
            "parallel": Words(
                N_(
                    "The platform calls concurrently: serve chats in parallel or queue them "
                    "(vLLM, SGLang, LMDeploy do; llama.cpp: -np N; Ollama: OLLAMA_NUM_PARALLEL)"
                )
            ),
        },
    },
    sends=(PAIR, STREAMED),
    judge=lambda seen, target: judge_streams(seen.exchanges("pair"), seen.exchange("streamed")),
)


# -- reasoning-separated --------------------------------------------------------------------
def _content(ex: Exchange) -> tuple[str, int]:
    """The reply's content and how many characters of thinking came apart from it."""
    if ex.stream_requested:
        return ex.text, ex.reasoning_chars
    body = ex.json_body
    return reply_text(body) or "", len(reply_reasoning(body) or "")


def judge_reasoning(replies: Sequence[Exchange | None], measured: Exchange | None) -> Check:
    """No ``<think>`` block in any reply's content.

    ``measured``: the streamed reply whose first token and first answer token are quoted.
    """
    seen = [_content(ex) for ex in replies if ex is not None and ex.status == 200]
    for text, _apart in seen:
        found = _THINK.search(text)
        if found is not None:
            start = max(0, found.start() - 20)
            sample = repr(snippet(text[start:], 60))
            return REASONING_SEPARATED.failed("thinking-shown", sample=sample)
    apart = max((n for _text, n in seen), default=0)
    if not apart:
        return REASONING_SEPARATED.passed()
    if measured is not None and measured.ttft is not None and measured.first_answer is not None:
        return REASONING_SEPARATED.passed(
            "apart-timed",
            apart="",
            timed="",
            n=apart,
            ttft=f"{measured.ttft * 1000:.0f}",
            answer=f"{measured.first_answer * 1000:.0f}",
        )
    return REASONING_SEPARATED.passed("apart", n=apart)


_APART = N_("the thinking arrives apart from the answer, in reasoning_content ({n} characters).")

REASONING_SEPARATED = Declared(
    "reasoning-separated",
    "warning",
    says={
        "passed": Words(
            N_("no thinking in the replies' content (the model does not reason, or shows none)")
        ),
        "apart": Words(_APART),
        "apart-timed": Words("{apart} {timed}", raw=True),
        "thinking-shown": Words(
            N_(
                "the reply's content holds the model's thinking ({sample}): students read "
                "it before the answer. Start the server with a reasoning parser so the "
                "thinking goes to reasoning_content (vLLM, SGLang, LMDeploy: "
                "--reasoning-parser, e.g. deepseek_r1 or qwen3; llama.cpp: "
                "--reasoning-format deepseek; Xinference: --reasoning-content true)"
            )
        ),
    },
    parts={
        "apart": {"": Words(_APART)},
        "timed": {
            "": Words(
                N_(
                    "The first token came after {ttft} ms, the first token of the answer after "
                    "{answer} ms: students wait for the latter."
                )
            )
        },
    },
    sends=(PLAIN, STREAMED, UTF8, SYSTEM),
    judge=lambda seen, target: judge_reasoning(
        [seen.maybe(n) for n in ("plain", "streamed", "utf8", "system")], seen.maybe("streamed")
    ),
)

#: The function rows, in the order they are shown (a new one joins here).
CHECKS: tuple[Declared, ...] = (SYSTEM_ROLE, CONTEXT_WINDOW, STREAMS_NOT_CUT, REASONING_SEPARATED)
