"""The rows of a streamed reply: framing, JSON events, content, [DONE], buffering, usage.

=======================  ========  ============================================
name                     severity  passes when
=======================  ========  ============================================
stream-answers           error     the streamed request gets a 2xx
stream-is-streamed       error     stream: true is not answered with one JSON body
stream-content-type      error     Content-Type is text/event-stream
stream-events-json       error     every data: event is JSON (or [DONE])
stream-no-error-object   error     no {"error": ...} inside the 200 stream
stream-content           error     some content arrives
stream-done              error     the stream ends with data: [DONE]
stream-not-buffered      warning   chunks do not all arrive in one burst
stream-usage             info      a usage chunk came (else tokens are counted)
stream-framing           info      lists tolerated deviations (always passes)
=======================  ========  ============================================

Tolerated without complaint (noted in ``stream-framing``): a role-only first
chunk, a final usage chunk with empty ``choices``, ``data:`` without a space,
``\\r\\n`` or ``\\r`` line ends, keep-alive comment lines, ``content: null``.
A stream that was not answered 2xx has only its ``stream-answers`` row; one
answered with a single JSON body only ``stream-is-streamed``.
"""

from __future__ import annotations

import json

from ...i18n import N_, Nn_
from ...summary import Check, Fact
from ...summary.client import STALL_MS, ClientLag, Stall
from ...terminal import snippet
from ..target import Target
from ..wire.exchange import Exchange
from .conformance import STATUS_SAYS, status_facts
from .declare import Context, Declared, Seen, Words
from .requests import STREAMED

__all__ = [
    "CHECKS",
    "STREAM_ANSWERS",
    "looks_buffered",
    "stalls_during",
]


def looks_buffered(ex: Exchange) -> bool:
    """Whether every content chunk arrived at once, late: what a buffering proxy does."""
    times = ex.times
    if len(times) < 3:
        return False
    spread = times[-1] - times[0]
    return spread < 0.002 or (ex.reads <= 2 and spread < 0.05 * (times[0] - ex.t_start))


def _answered(seen: Seen) -> Exchange | None:
    """The streamed reply when it was answered 2xx (else its rows are not shown)."""
    ex = seen.exchange("streamed")
    return ex if ex.status is not None and ex.status // 100 == 2 else None


def _streamed(seen: Seen) -> Exchange | None:
    """The streamed reply when it was answered 2xx as an event stream."""
    ex = _answered(seen)
    return ex if ex is not None and ex.streamed else None


def _stream_answers(seen: Seen, target: Target) -> Check:
    ex = seen.exchange("streamed")
    if ex.status is None:
        return STREAM_ANSWERS.failed("no-answer", why=ex.failure_detail)
    if ex.status // 100 != 2:
        cause, facts = status_facts(ex)
        return STREAM_ANSWERS.failed(cause, **facts)
    return STREAM_ANSWERS.passed(status=ex.status)


STREAM_ANSWERS = Declared(
    "stream-answers",
    "error",
    says={
        "passed": Words("HTTP {status}", raw=True),
        "no-answer": Words(N_("no answer: {why}")),
        **STATUS_SAYS,
    },
    sends=(STREAMED,),
    judge=_stream_answers,
)


def _is_streamed(seen: Seen, target: Target) -> Check | None:
    ex = _answered(seen)
    if ex is None:
        return None
    if not ex.streamed:
        return STREAM_IS_STREAMED.failed("one-body", media=ex.content_type)
    return STREAM_IS_STREAMED.passed()


STREAM_IS_STREAMED = Declared(
    "stream-is-streamed",
    "error",
    says={
        "passed": Words(N_("answered as an event stream")),
        "one-body": Words(
            N_(
                "a streamed request (stream: true) got one JSON body (Content-Type "
                "{media}): the platform shows nothing until the whole reply is ready. "
                "Honour stream: true with text/event-stream chunks"
            )
        ),
    },
    parts={"media": {"": Words(N_("missing"))}},
    sends=(STREAMED,),
    judge=_is_streamed,
)


def _content_type(seen: Seen, target: Target) -> Check | None:
    ex = _streamed(seen)
    if ex is None:
        return None
    media = ex.content_type.split(";")[0].strip()
    if media == "text/event-stream":
        return STREAM_CONTENT_TYPE.passed()
    return STREAM_CONTENT_TYPE.failed("wrong-type", media=media)


STREAM_CONTENT_TYPE = Declared(
    "stream-content-type",
    "error",
    says={
        "passed": Words("text/event-stream", raw=True),
        "wrong-type": Words(
            N_(
                "Content-Type is {media}; send Content-Type: text/event-stream "
                "(SSE clients refuse other types)"
            )
        ),
    },
    parts={"media": {"": Words(N_("missing"))}},
    sends=(STREAMED,),
    judge=_content_type,
)


def _events_json(seen: Seen, target: Target) -> Check | None:
    ex = _streamed(seen)
    if ex is None:
        return None
    if not ex.non_json:
        return STREAM_EVENTS_JSON.passed(n=ex.events)
    sample = repr(snippet(ex.non_json[0], 60))
    return STREAM_EVENTS_JSON.failed("not-json", n=len(ex.non_json), sample=sample)


STREAM_EVENTS_JSON = Declared(
    "stream-events-json",
    "error",
    says={
        "passed": Words(N_("{n} events, each JSON")),
        "not-json": Words(
            N_(
                "{n} data events were not JSON, e.g. {sample}; every data: line must hold "
                "one JSON chunk (or [DONE])"
            )
        ),
    },
    sends=(STREAMED,),
    judge=_events_json,
)


def _no_error_object(seen: Seen, target: Target) -> Check | None:
    ex = _streamed(seen)
    if ex is None:
        return None
    if not ex.error_events:
        return STREAM_NO_ERROR_OBJECT.passed()
    error = snippet(json.dumps(ex.error_events[0]), 100)
    return STREAM_NO_ERROR_OBJECT.failed("error-in-stream", error=error)


STREAM_NO_ERROR_OBJECT = Declared(
    "stream-no-error-object",
    "error",
    says={
        "passed": Words(N_("no error object in the stream")),
        "error-in-stream": Words(
            N_(
                "the HTTP 200 stream carried an error: {error}. Clients took the 200 for "
                "success; fix the failure on the server (or fail with an HTTP error status "
                "before streaming)"
            )
        ),
    },
    sends=(STREAMED,),
    judge=_no_error_object,
)


def _content(seen: Seen, target: Target) -> Check | None:
    ex = _streamed(seen)
    if ex is None:
        return None
    if not ex.pieces:
        return STREAM_CONTENT.failed("no-content")
    tokens, source = ex.output_tokens
    return STREAM_CONTENT.passed(n=len(ex.pieces), tokens=tokens, source=source)


STREAM_CONTENT = Declared(
    "stream-content",
    "error",
    says={
        "passed": Words(N_("{n} content chunks, {tokens} output tokens (from {source})")),
        "no-content": Words(
            N_("no content arrived in the stream: send choices[0].delta.content pieces")
        ),
    },
    sends=(STREAMED,),
    judge=_content,
)


def _done(seen: Seen, target: Target) -> Check | None:
    ex = _streamed(seen)
    if ex is None:
        return None
    if ex.done:
        return STREAM_DONE.passed()
    if ex.finish is None:
        return STREAM_DONE.failed("cut", n=ex.size)
    return STREAM_DONE.failed("no-done")


STREAM_DONE = Declared(
    "stream-done",
    "error",
    says={
        "passed": Words(N_("ends with data: [DONE]")),
        "cut": Words(
            N_(
                "connection closed before [DONE] after {n} bytes, without a finish_reason: "
                "the reply was cut. Check the server's logs (a crash, a proxy timeout, or a "
                "server that cuts running streams when a new request comes)"
            )
        ),
        "no-done": Words(
            N_(
                "the stream ended without data: [DONE]; clients waiting for it hang or "
                "report a cut stream. Send 'data: [DONE]' and a blank line after the last chunk"
            )
        ),
    },
    sends=(STREAMED,),
    judge=_done,
)


def _spread(ex: Exchange, name: str) -> dict[str, Fact]:
    return {
        f"{name}_n": len(ex.times),
        f"{name}_ms": f"{(ex.times[-1] - ex.times[0]) * 1000:.0f}",
        f"{name}_reads": ex.reads,
    }


async def _look_again(ctx: Context, target: Target, seen: Seen) -> None:
    """One lump may be a passing stall: look once more, alone, before blaming a proxy."""
    ex = seen.maybe("streamed")
    if ex is not None and ex.ok and ex.streamed and looks_buffered(ex):
        seen.set("streamed-again", await STREAMED.send(ctx, target))


#: A reply the server made faster than this (ms, by its own timings) arrives in one lump
#: at any client late by less than the stalls the client notes (twice STALL_MS).
TOO_FAST_MS = 2 * STALL_MS


def _made_in_ms(ex: Exchange) -> float | None:
    """How long the server took to make the reply's tokens, by its own timings (llama.cpp's
    ``predicted_ms``); None when it does not say."""
    timings = ex.timings or {}
    made = timings.get("predicted_ms")
    return float(made) if isinstance(made, int | float) else None


def stalls_during(client: ClientLag | None, exchanges: list[Exchange]) -> list[Stall]:
    """The client's stalls that overlap the exchanges' times (sent to last piece)."""
    if client is None:
        return []
    windows = [(ex.t_start, ex.times[-1] if ex.times else ex.t_end) for ex in exchanges]
    return [s for s in client.intervals if any(s.start < end and s.end > a for a, end in windows)]


def _not_buffered(seen: Seen, target: Target) -> Check | None:
    """Judged again on a second stream when the first came in one lump: a busy server or
    a busy checker can deliver one stream in a lump too; a proxy that buffers does it
    every time. A lump that came while the checker itself stalled (its ``client-lag``)
    proves nothing: a stalled client reads a stream's chunks in one go, as a buffering
    proxy sends them; nor does a reply the server made too fast to arrive apart."""
    ex = _streamed(seen)
    if ex is None:
        return None
    again = seen.maybe("streamed-again")
    times = ex.times
    if len(times) < 3:
        return STREAM_NOT_BUFFERED.passed("too-few", n=len(times))
    if not looks_buffered(ex):
        return STREAM_NOT_BUFFERED.passed("spread", spread="chunks", **_spread(ex, "spread"))
    if again is not None and again.streamed and len(again.times) >= 3 and not looks_buffered(again):
        return STREAM_NOT_BUFFERED.passed("stall", spread="chunks", **_spread(again, "spread"))
    made_ms = _made_in_ms(ex)
    if made_ms is not None and made_ms < TOO_FAST_MS:
        # Could not tell: neither passed nor failed (contract: "passed": null).
        return STREAM_NOT_BUFFERED.not_judged("too-fast", ms=f"{made_ms:.0f}")
    client = seen.get("client-lag")
    lag = client if isinstance(client, ClientLag) else None
    lumps = [ex] + ([again] if again is not None and again.streamed and again.times else [])
    if all(stalls_during(lag, [lump]) for lump in lumps):
        stalls = stalls_during(lag, lumps)
        worst = f"{max(s.ms for s in stalls) / 1000:.1f}"
        return STREAM_NOT_BUFFERED.not_judged("client-stalled", n=len(stalls), seconds=worst)
    spread = times[-1] - times[0]
    waited = times[0] - ex.t_start
    return STREAM_NOT_BUFFERED.failed(
        "buffered",
        n=len(times),
        spread=f"{spread * 1000:.1f}",
        waited=f"{waited * 1000:.0f}",
        twice="twice" if again is not None else "",
    )


STREAM_NOT_BUFFERED = Declared(
    "stream-not-buffered",
    "warning",
    says={
        "too-few": Words(
            *Nn_("only {n} chunk: too few to judge", "only {n} chunks: too few to judge"),
            count="n",
        ),
        "spread": Words("{spread}", raw=True),
        "stall": Words(
            N_(
                "the first stream arrived in one lump, a second one streamed ({spread}): "
                "a passing stall, not a buffering proxy"
            )
        ),
        "too-fast": Words(
            N_(
                "could not tell: the server made the whole reply in {ms} ms (its own timings), "
                "faster than the chunks can arrive apart at a client a little late"
            )
        ),
        "client-stalled": Words(
            *Nn_(
                "could not tell: this machine stalled {n} time, up to {seconds} s, while the "
                "stream arrived in one lump; a client that stalls reads a stream so, as a "
                "buffering proxy would send it",
                "could not tell: this machine stalled {n} times, up to {seconds} s, while the "
                "stream arrived in one lump; a client that stalls reads a stream so, as a "
                "buffering proxy would send it",
            ),
            count="n",
        ),
        "buffered": Words(
            N_(
                "all {n} chunks arrived within {spread} ms, {waited} ms after the request{twice}: "
                "something buffers the stream. Turn buffering off (nginx: proxy_buffering off; "
                "or send X-Accel-Buffering: no)"
            )
        ),
    },
    parts={
        "spread": {"chunks": Words(N_("{n} chunks over {ms} ms in {reads} network reads"))},
        "twice": {"": Words(""), "twice": Words(N_(" (twice)"))},
    },
    sends=(STREAMED,),
    judge=_not_buffered,
    again=_look_again,
)


def _usage(seen: Seen, target: Target) -> Check | None:
    ex = _streamed(seen)
    if ex is None:
        return None
    if ex.usage is not None:
        return STREAM_USAGE.passed()
    return STREAM_USAGE.failed("no-usage")


STREAM_USAGE = Declared(
    "stream-usage",
    "info",
    says={
        "passed": Words(N_("usage reported in the stream (stream_options.include_usage)")),
        "no-usage": Words(N_("no usage in the stream: output tokens are counted from chunks")),
    },
    sends=(STREAMED,),
    judge=_usage,
)


def _framing_notes(ex: Exchange) -> dict[str, Fact]:
    """The tolerated deviations, as the ``notes`` part's variants and their counts."""
    notes: list[str] = []
    facts: dict[str, Fact] = {}
    if ex.role_only_first:
        notes.append("role-only")
    if ex.usage_chunks:
        notes.append("usage-chunk")
    f = ex.framing
    if f is not None:
        if f.no_space:
            notes.append("no-space")
            facts["no_space"] = f.no_space
        if f.crlf:
            notes.append("crlf")
        if f.cr:
            notes.append("cr")
        if f.comments:
            notes.append("comments")
            facts["comments"] = f.comments
        if f.unknown_fields:
            notes.append("unknown-fields")
            facts["fields"] = ", ".join(sorted(f.unknown_fields))[:80]
        if f.unterminated:
            notes.append("unterminated")
    if ex.null_content:
        notes.append("null-content")
        facts["null_content"] = ex.null_content
    if ex.after_done:
        notes.append("after-done")
        facts["after_done"] = ex.after_done
    return {"notes": ",".join(notes), **facts} if notes else {}


def _framing(seen: Seen, target: Target) -> Check | None:
    ex = _streamed(seen)
    if ex is None:
        return None
    notes = _framing_notes(ex)
    if notes:
        return STREAM_FRAMING.passed("tolerated", **notes)
    return STREAM_FRAMING.passed()


STREAM_FRAMING = Declared(
    "stream-framing",
    "info",
    says={
        "passed": Words(N_("standard OpenAI framing")),
        "tolerated": Words(N_("tolerated: {notes}")),
    },
    parts={
        "notes": {
            "role-only": Words(N_("a role-only first chunk")),
            "usage-chunk": Words(N_("a final usage chunk with empty choices")),
            "no-space": Words(N_("'data:' without a space ({no_space} lines)")),
            "crlf": Words(N_("\\r\\n line ends")),
            "cr": Words(N_("\\r line ends")),
            "comments": Words(N_("{comments} comment (keep-alive) lines")),
            "unknown-fields": Words(N_("unknown fields ignored: {fields}")),
            "unterminated": Words(N_("the stream ended in the middle of an event (dropped)")),
            "null-content": Words(N_("content: null in {null_content} chunks")),
            "after-done": Words(N_("{after_done} events after [DONE] (ignored)")),
        }
    },
    sends=(STREAMED,),
    judge=_framing,
)

#: The stream rows, in the order they are shown (a new one joins here).
CHECKS: tuple[Declared, ...] = (
    STREAM_ANSWERS,
    STREAM_IS_STREAMED,
    STREAM_CONTENT_TYPE,
    STREAM_EVENTS_JSON,
    STREAM_NO_ERROR_OBJECT,
    STREAM_CONTENT,
    STREAM_DONE,
    STREAM_NOT_BUFFERED,
    STREAM_USAGE,
    STREAM_FRAMING,
)
