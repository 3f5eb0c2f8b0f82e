"""One request of a capacity level as a sample: its figures, finished or cut at the level's end.

A finished request (:func:`to_sample`): TTFT from when it was due, its pace (ITL,
:func:`~lmreg_nb.probe.load.metrics.decode_itl_ms`) and its longest pause between
two content tokens. A request still running when the level ends
(:func:`cut_sample`) is judged on what it streamed so far: its first token; once it
has streamed for ``PACE_SEEN_S`` (or already paused too long), with two content
tokens or more, its pace so far and its longest pause so far (the wait since its
last token included); with one content token and nothing more for longer than the
pause a student accepts, it is a *stalled* reply, an error.
Tokens are content chunks as they arrived; SSE comments are no tokens.

A *cut stream* is one that ended early the way llama.cpp's ``interrupt_requests``
does it: ``data: [DONE]`` with no ``finish_reason`` (once the server has shown
it sends one), or the connection closed in the middle of the reply.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...i18n import _, ngettext
from ..wire.exchange import Exchange
from ..wire.reasons import TOO_LONG
from .metrics import decode_itl_ms, longest_pause_ms

#: Seconds a running reply streams before its pace so far shows its pace (its first
#: gaps alone say little: a scheduler's hiccup, the burst's prefill).
PACE_SEEN_S = 2.0

__all__ = [
    "CUT",
    "PACE_SEEN_S",
    "STALLED",
    "TOO_LONG",
    "Sample",
    "cut_kind",
    "cut_sample",
    "to_sample",
]

#: The error kind of a cut stream.
CUT = "cut stream"
#: The error kind of a reply that sent one content token and then none for too long.
STALLED = "stalled"


@dataclass(slots=True)
class Sample:
    """One request of a level."""

    ok: bool
    error: str | None = None
    detail: str = ""
    ttft_ms: float | None = None
    itl_ms: float | None = None  # its pace: decode time / (tokens - 1); so far, when cut
    latency_ms: float | None = None
    tokens: int = 0
    from_chunks: bool = False
    end_s: float = 0.0  # seconds since the level's start
    finish: bool = False  # the server sent a finish_reason
    soft_cut: bool = False  # [DONE] with no finish_reason: cut, if the server sends them
    partial: bool = False  # still running when the level ended: judged on what it streamed
    turn_s: float = 0.0  # a finished request: seconds from when it was due to its end
    waiting: bool = False  # partial, with no first token yet: ttft_ms is how long it had waited
    pause_ms: float | None = None  # its longest gap between two content tokens (so far)
    due_s: float = 0.0  # when it was due, seconds since the level's start
    usage_disbelieved: bool = False  # its usage.completion_tokens was not believed
    resent: bool = False  # sent twice: the server closed a kept-alive connection under it
    status: int | None = None  # the HTTP status of a failed request that got an answer

    @property
    def paced(self) -> bool:
        """Its time between tokens was measured (two content tokens or more)."""
        return self.itl_ms is not None


def cut_kind(ex: Exchange) -> str | None:
    """``"closed"``: the connection closed mid-reply; ``"done"``: [DONE] with no finish_reason.

    ``"done"`` is a cut only for a server that sends finish_reason otherwise. A
    reply our own size cap ended (:data:`TOO_LONG`) is not a cut: the server did
    not end it.
    """
    if not ex.streamed or ex.failure == TOO_LONG:
        return None
    if ex.failure == "transport" and ex.pieces:
        return "closed"
    if ex.done and ex.finish is None and not ex.error_events:
        return "done"
    return None


def to_sample(ex: Exchange, due: float, start: float) -> Sample:
    """One finished request as a sample; cut streams named (see the module docstring)."""
    end_s, turn_s, due_s = ex.t_end - start, ex.t_end - due, due - start
    resent = ex.resent
    cut = cut_kind(ex)
    if cut == "closed" or (cut == "done" and not ex.ok):  # the latter: cut before any content
        return Sample(
            False, CUT, _cut_detail(ex), end_s=end_s, turn_s=turn_s, due_s=due_s, resent=resent
        )
    soft_cut = cut == "done"
    if not ex.ok:
        return Sample(
            False,
            ex.failure,
            ex.failure_detail,
            end_s=end_s,
            turn_s=turn_s,
            due_s=due_s,
            resent=resent,
            status=ex.status,
        )
    times = ex.times
    tokens, source = ex.output_tokens
    return Sample(
        True,
        ttft_ms=(times[0] - due) * 1000 if times else None,
        itl_ms=decode_itl_ms(ex),
        latency_ms=(ex.t_end - due) * 1000,
        tokens=tokens,
        from_chunks=source == "chunks",
        end_s=end_s,
        finish=ex.finish is not None,
        soft_cut=soft_cut,
        turn_s=turn_s,
        pause_ms=longest_pause_ms(times),
        due_s=due_s,
        usage_disbelieved=ex.usage_disbelieved,
        resent=resent,
    )


def cut_sample(
    ex: Exchange | None,
    due: float,
    now: float,
    start: float,
    *,
    ttft_s: float,
    stall_s: float,
    pause_ms: float | None = None,
) -> Sample | None:
    """A request still running at ``now``, judged on what it streamed so far.

    ``ttft_s``: past it, a request with no first token counts as waiting (its wait a
    lower bound of its TTFT); ``stall_s``: past it, a reply with one content token and
    no second is :data:`STALLED`. Its pace and pause so far count once it has streamed
    for :data:`~lmreg_nb.probe.load.settle.PACE_SEEN_S`, or paused longer than
    ``pause_ms`` already. None: too early to say anything of it (not counted).
    """
    end_s, due_s = now - start, due - start
    times = list(ex.times) if ex is not None else []
    if not times:
        if now - due <= ttft_s:
            return None
        waited = (now - due) * 1000
        return Sample(True, ttft_ms=waited, end_s=end_s, partial=True, waiting=True, due_s=due_s)
    ttft_ms = (times[0] - due) * 1000
    if len(times) == 1 and now - times[0] > stall_s:
        detail = _("no second token {seconds} s after the first").format(
            seconds=f"{now - times[0]:.1f}"
        )
        return Sample(False, STALLED, detail, end_s=end_s, partial=True, due_s=due_s)
    pause = longest_pause_ms(times, now)
    shown = now - times[0] >= PACE_SEEN_S or (pause_ms is not None and (pause or 0) > pause_ms)
    if len(times) == 1 or not shown:  # its pace not shown yet: its first token only
        return Sample(True, ttft_ms=ttft_ms, end_s=end_s, partial=True, due_s=due_s)
    return Sample(
        True,
        ttft_ms=ttft_ms,
        itl_ms=(times[-1] - times[0]) / (len(times) - 1) * 1000,
        end_s=end_s,
        partial=True,
        pause_ms=pause,
        due_s=due_s,
    )


def _cut_detail(ex: Exchange) -> str:
    n = len(ex.pieces)
    if ex.failure == "transport":
        text = ngettext(
            "the connection closed mid-reply after {n} chunk",
            "the connection closed mid-reply after {n} chunks",
            n,
        )
    else:
        text = ngettext(
            "[DONE] with no finish_reason after {n} chunk",
            "[DONE] with no finish_reason after {n} chunks",
            n,
        )
    return text.format(n=n)
