"""The rows of a streamed reply: framing, JSON events, content, [DONE], buffering, usage.

Tolerated without complaint (noted in ``stream-framing``): a role-only first
chunk, a final usage chunk with empty ``choices``, ``data:`` without a space,
``\\r\\n`` or ``\\r`` line ends, keep-alive comment lines, ``content: null``.
"""

from __future__ import annotations

import json

from ...i18n import _, clauses, listing, ngettext
from ...summary.client import STALL_MS, ClientLag, Stall
from ...terminal import snippet
from ..text.client_text import seconds
from ..wire.exchange import Exchange
from .conformance import CheckResult
from .conformance import row as _row

__all__ = ["looks_buffered", "stalls_during", "stream_rows"]


def looks_buffered(ex: Exchange) -> bool:
    """Whether every content chunk arrived at once, late: what a buffering proxy does."""
    times = ex.times
    if len(times) < 3:
        return False
    spread = times[-1] - times[0]
    return spread < 0.002 or (ex.reads <= 2 and spread < 0.05 * (times[0] - ex.t_start))


def _spread(ex: Exchange) -> str:
    return _("{n} chunks over {spread} ms in {reads} network reads").format(
        n=len(ex.times), spread=f"{(ex.times[-1] - ex.times[0]) * 1000:.0f}", reads=ex.reads
    )


#: A reply the server made faster than this (ms, by its own timings) arrives in one lump
#: at any client late by less than the stalls the client notes (twice STALL_MS).
TOO_FAST_MS = 2 * STALL_MS


def _made_in_ms(ex: Exchange) -> float | None:
    """How long the server took to make the reply's tokens, by its own timings (llama.cpp's
    ``predicted_ms``); None when it does not say."""
    timings = ex.timings or {}
    return timings.get("predicted_ms")


def stalls_during(client: ClientLag | None, exchanges: list[Exchange]) -> list[Stall]:
    """The client's stalls that overlap the exchanges' times (sent to last piece)."""
    if client is None:
        return []
    windows = [(ex.t_start, ex.times[-1] if ex.times else ex.t_end) for ex in exchanges]
    return [s for s in client.intervals if any(s.start < end and s.end > a for a, end in windows)]


def _burst(
    ex: Exchange, again: Exchange | None, client: ClientLag | None = None
) -> tuple[bool, str]:
    """The stream-not-buffered verdict; ``again`` is a second stream, asked for on suspicion.

    A busy server or a busy checker can deliver one stream in a lump too; a
    proxy that buffers does it every time. So a lone burst is judged again. A lump
    that came while the checker itself stalled (``client``) proves nothing: a
    stalled client reads a stream's chunks in one go, as a buffering proxy sends them.
    """
    times = ex.times
    if len(times) < 3:
        return False, ngettext(
            "only {n} chunk: too few to judge", "only {n} chunks: too few to judge", len(times)
        ).format(n=len(times))
    if not looks_buffered(ex):
        return False, _spread(ex)
    if again is not None and again.streamed and len(again.times) >= 3 and not looks_buffered(again):
        return False, _(
            "the first stream arrived in one lump, a second one streamed ({spread}): "
            "a passing stall, not a buffering proxy"
        ).format(spread=_spread(again))
    made_ms = _made_in_ms(ex)
    if made_ms is not None and made_ms < TOO_FAST_MS:
        return False, _(
            "could not tell: the server made the whole reply in {ms} ms (its own timings), "
            "faster than the chunks can arrive apart at a client a little late"
        ).format(ms=f"{made_ms:.0f}")
    lumps = [ex] + ([again] if again is not None and again.streamed and again.times else [])
    if all(stalls_during(client, [lump]) for lump in lumps):
        stalls = stalls_during(client, lumps)
        return False, ngettext(
            "could not tell: this machine stalled {n} time, up to {seconds} s, while the "
            "stream arrived in one lump; a client that stalls reads a stream so, as a "
            "buffering proxy would send it",
            "could not tell: this machine stalled {n} times, up to {seconds} s, while the "
            "stream arrived in one lump; a client that stalls reads a stream so, as a "
            "buffering proxy would send it",
            len(stalls),
        ).format(n=len(stalls), seconds=seconds(max(s.ms for s in stalls)))
    spread = times[-1] - times[0]
    waited = times[0] - ex.t_start
    twice = _(" (twice)") if again is not None else ""
    return True, _(
        "all {n} chunks arrived within {spread} ms, {waited} ms after the request{twice}: "
        "something buffers the stream. Turn buffering off (nginx: proxy_buffering off; "
        "or send X-Accel-Buffering: no)"
    ).format(
        n=len(times), spread=f"{spread * 1000:.1f}", waited=f"{waited * 1000:.0f}", twice=twice
    )


def _framing_notes(ex: Exchange) -> list[str]:
    notes: list[str] = []
    if ex.role_only_first:
        notes.append(_("a role-only first chunk"))
    if ex.usage_chunks:
        notes.append(_("a final usage chunk with empty choices"))
    f = ex.framing
    if f is not None:
        if f.no_space:
            notes.append(_("'data:' without a space ({n} lines)").format(n=f.no_space))
        if f.crlf:
            notes.append(_("\\r\\n line ends"))
        if f.cr:
            notes.append(_("\\r line ends"))
        if f.comments:
            notes.append(_("{n} comment (keep-alive) lines").format(n=f.comments))
        if f.unknown_fields:
            fields = listing(sorted(f.unknown_fields))[:80]
            notes.append(_("unknown fields ignored: {fields}").format(fields=fields))
        if f.unterminated:
            notes.append(_("the stream ended in the middle of an event (dropped)"))
    if ex.null_content:
        notes.append(_("content: null in {n} chunks").format(n=ex.null_content))
    if ex.after_done:
        notes.append(_("{n} events after [DONE] (ignored)").format(n=ex.after_done))
    return notes


def stream_rows(
    ex: Exchange, again: Exchange | None = None, client: ClientLag | None = None
) -> list[CheckResult]:
    """The rows of the streamed reply (stream-is-streamed ... stream-framing).

    ``again``: a second streamed reply, asked for when the first came in one lump;
    ``client``: the checker's own stalls while it measured.
    """
    if not ex.streamed:
        return [
            _row(
                "stream-is-streamed",
                False,
                "error",
                _(
                    "a streamed request (stream: true) got one JSON body (Content-Type "
                    "{media}): the platform shows nothing until the whole reply is ready. "
                    "Honour stream: true with text/event-stream chunks"
                ).format(media=ex.content_type or _("missing")),
            )
        ]
    return _format_rows(ex) + _delivery_rows(ex, again, client)


def _format_rows(ex: Exchange) -> list[CheckResult]:
    """stream-is-streamed, stream-content-type, stream-events-json, stream-no-error-object."""
    rows = [_row("stream-is-streamed", True, "error", _("answered as an event stream"))]
    media = ex.content_type.split(";")[0].strip()
    rows.append(
        _row(
            "stream-content-type",
            media == "text/event-stream",
            "error",
            "text/event-stream"
            if media == "text/event-stream"
            else _(
                "Content-Type is {media}; send Content-Type: text/event-stream "
                "(SSE clients refuse other types)"
            ).format(media=media or _("missing")),
        )
    )
    rows.append(
        _row(
            "stream-events-json",
            not ex.non_json,
            "error",
            _("{n} events, each JSON").format(n=ex.events)
            if not ex.non_json
            else _(
                "{n} data events were not JSON, e.g. {sample}; every data: line must hold "
                "one JSON chunk (or [DONE])"
            ).format(n=len(ex.non_json), sample=repr(snippet(ex.non_json[0], 60))),
        )
    )
    rows.append(
        _row(
            "stream-no-error-object",
            not ex.error_events,
            "error",
            _("no error object in the stream")
            if not ex.error_events
            else _(
                "the HTTP 200 stream carried an error: {error}. Clients took the 200 for "
                "success; fix the failure on the server (or fail with an HTTP error status "
                "before streaming)"
            ).format(error=snippet(json.dumps(ex.error_events[0]), 100)),
        )
    )
    return rows


def _delivery_rows(
    ex: Exchange, again: Exchange | None, client: ClientLag | None
) -> list[CheckResult]:
    """stream-content, stream-done, stream-not-buffered, stream-usage, stream-framing."""
    rows: list[CheckResult] = []
    tokens, source = ex.output_tokens
    rows.append(
        _row(
            "stream-content",
            bool(ex.pieces),
            "error",
            _("{n} content chunks, {tokens} output tokens (from {source})").format(
                n=len(ex.pieces), tokens=tokens, source=source
            )
            if ex.pieces
            else _("no content arrived in the stream: send choices[0].delta.content pieces"),
        )
    )
    rows.append(
        _row(
            "stream-done",
            ex.done,
            "error",
            _("ends with data: [DONE]")
            if ex.done
            else _(
                "connection closed before [DONE] after {n} bytes, without a finish_reason: "
                "the reply was cut. Check the server's logs (a crash, a proxy timeout, or a "
                "server that cuts running streams when a new request comes)"
            ).format(n=ex.size)
            if ex.finish is None
            else _(
                "the stream ended without data: [DONE]; clients waiting for it hang or "
                "report a cut stream. Send 'data: [DONE]' and a blank line after the last chunk"
            ),
        )
    )
    burst, why = _burst(ex, again, client)
    rows.append(_row("stream-not-buffered", not burst, "warning", why))
    rows.append(
        _row(
            "stream-usage",
            ex.usage is not None,
            "info",
            _("usage reported in the stream (stream_options.include_usage)")
            if ex.usage is not None
            else _("no usage in the stream: output tokens are counted from chunks"),
        )
    )
    notes = _framing_notes(ex)
    rows.append(
        _row(
            "stream-framing",
            True,
            "info",
            _("tolerated: {notes}").format(notes=clauses(notes))
            if notes
            else _("standard OpenAI framing"),
        )
    )
    return rows
