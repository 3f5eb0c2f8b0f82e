"""Conformance checks of a school's chat endpoint (spec 4.5), each a row with how to fix.

The requests (made at once by :mod:`.suite`: a chat reply, the same with a
made-up key, a streamed chat reply, the text-completion form, and the go-live
requests of :mod:`.golive`) are judged here, one function per group of rows.
Severities: ``error`` breaks the platform's calls (the onboarding fails),
``warning`` works but should be fixed, ``info`` is for the record.

=======================  ========  ============================================
name                     severity  passes when
=======================  ========  ============================================
url-https                warning   the URL is https
url-path                 warning   its path ends in v1/chat/completions
url-public-host          warning   its host is not loopback or private
reachable                error     the server answers HTTP at all (in time)
key-accepted             error     the key is not refused (401/403)
chat-answers             error     the chat request gets a 2xx (not 429/5xx)
chat-reply-shape         error     id, object, choices[0].message.role/content,
                                   finish_reason are there
chat-usage               warning   the reply has usage.completion_tokens
wrong-key-rejected       error     a made-up key gets 401 or 403
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
completion-form          warning   POST .../v1/completions (model, prompt,
                                   temperature) answers with choices[0].text
errors-are-json          warning   error replies are JSON, not HTML or text
=======================  ========  ============================================

Tolerated without complaint: a role-only first chunk, a final usage chunk
with empty ``choices``, ``data:`` without a space, ``\\r\\n`` or ``\\r`` line
ends, keep-alive comment lines, ``content: null``.
When the server cannot be reached, refuses the key or fails (429, 5xx), the
checks stop there: the rows so far say why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..i18n import _, ngettext
from ..validate import url_warnings
from .exchange import Exchange, snippet
from .shapes import completion_tokens, reply_shape, reply_text

__all__ = ["SEVERITIES", "CheckResult", "Conformance", "reply_shape", "url_checks"]

#: Severities, most serious first.
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class CheckResult:
    """One check: its name, whether it passed, its severity and what to do."""

    name: str
    passed: bool
    severity: str  # "error" | "warning" | "info"
    detail: str

    def to_json(self) -> dict[str, Any]:
        """``{"name", "passed", "severity", "detail"}``."""
        return {
            "name": self.name,
            "passed": self.passed,
            "severity": self.severity,
            "detail": self.detail,
        }


@dataclass
class Conformance:
    """The rows, and the exchanges (for the one-request figures)."""

    checks: list[CheckResult]
    first: Exchange | None = None  # the non-streamed chat request
    streamed: Exchange | None = None  # the streamed chat request, if it was made

    @property
    def measured(self) -> Exchange | None:
        """The request the one-request figures describe: the streamed one, else the first."""
        return self.streamed or self.first

    @property
    def answered_stream(self) -> bool:
        """The streamed request got a 2xx: a load test makes sense."""
        return self.streamed is not None and (self.streamed.status or 0) // 100 == 2


def _row(name: str, passed: bool, severity: str, detail: str) -> CheckResult:
    return CheckResult(name, passed, severity, detail)


def _url_warning_codes(url: str) -> dict[str, str]:
    """url_warnings as {code: message}; codes, never the wording, decide the rows."""
    found: dict[str, str] = {}
    for warning in url_warnings(url):
        code = getattr(warning, "code", None)
        if isinstance(code, str):
            found.setdefault(code, str(getattr(warning, "message", "")))
    return found


def url_checks(url: str) -> list[CheckResult]:
    """The URL's shape: https, the chat path, a host the platform can reach."""
    codes = _url_warning_codes(url)
    https = codes.get("plain-http")
    path = codes.get("chat-path")
    host = codes.get("unreachable-host")
    return [
        _row(
            "url-https",
            https is None,
            "warning",
            _("{warning}; serve it over TLS (a reverse proxy with a certificate)").format(
                warning=https
            )
            if https is not None
            else "https",
        ),
        _row(
            "url-path",
            path is None,
            "warning",
            _("{warning}, e.g. https://llm.school.edu/v1/chat/completions").format(warning=path)
            if path is not None
            else _("ends in v1/chat/completions"),
        ),
        _row(
            "url-public-host",
            host is None,
            "warning",
            _("{warning}; register a public address (this check still tests it from here)").format(
                warning=host
            )
            if host is not None
            else _("a public host name or address"),
        ),
    ]


def _ms(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds * 1000:.0f} ms"


def status_advice(ex: Exchange) -> str:
    status = ex.status or 0
    said = f": {ex.failure_detail}" if ex.failure_detail else ""
    if status == 429:
        return _(
            "HTTP 429 (rate limited){said}. The platform would be refused too: "
            "raise the rate limit for this key, then check again"
        ).format(said=said)
    if status >= 500:
        return _(
            "HTTP {status} (server error){said}. The model server failed: "
            "check its logs and that the model is loaded"
        ).format(status=status, said=said)
    if 300 <= status < 400:
        if ex.location:
            return _(
                "HTTP {status}: the URL redirects to {where}. Register the final URL: "
                "clients do not repeat a POST after a redirect"
            ).format(status=status, where=ex.location)
        return _(
            "HTTP {status}: the URL redirects. Register the final URL: "
            "clients do not repeat a POST after a redirect"
        ).format(status=status)
    if status == 404:
        return _(
            "HTTP 404{said}. Nothing serves this path: check the URL and the model name"
        ).format(said=said)
    return _("HTTP {status}{said}. Check the request the server expects (spec 4.5)").format(
        status=status, said=said
    )


def transport_row(ex: Exchange, url: str) -> CheckResult:
    """``reachable`` failed: the plain reason of :mod:`.reasons` (DNS, refused, TLS...)."""
    if ex.failure == "connect":
        advice = ex.failure_detail or _("could not connect to {url}").format(url=url)
    elif ex.failure == "timeout":
        advice = _(
            "{seen}. The server accepted the connection but did not answer: "
            "check it is not overloaded or stuck, or raise LMREG_TIMEOUT"
        ).format(seen=ex.failure_detail)
    else:
        advice = _("the connection failed: {seen}").format(seen=ex.failure_detail)
    return _row("reachable", False, "error", advice)


def chat_rows(ex: Exchange) -> list[CheckResult]:
    missing = reply_shape(ex.json_body)
    if ex.json_body is None:
        shape = _row(
            "chat-reply-shape",
            False,
            "error",
            _(
                "the reply is not JSON (Content-Type {media}: {sample}); answer "
                "application/json in the OpenAI chat.completion shape"
            ).format(
                media=ex.content_type or _("missing"),
                sample=repr(snippet(ex.body.decode("utf-8", "replace"), 80)),
            ),
        )
    elif missing:
        shape = _row(
            "chat-reply-shape",
            False,
            "error",
            _(
                "the reply lacks {missing}; answer in the OpenAI chat.completion "
                "shape (id, object, choices[0].message.role/content, finish_reason, usage)"
            ).format(missing=", ".join(missing)),
        )
    else:
        shape = _row(
            "chat-reply-shape",
            True,
            "error",
            _("chat.completion with {n} characters in {ms}").format(
                n=len(reply_text(ex.json_body) or ""), ms=_ms(ex.latency)
            ),
        )
    tokens = completion_tokens(ex.json_body)
    usage = _row(
        "chat-usage",
        tokens is not None,
        "warning",
        f"usage.completion_tokens = {tokens}"
        if tokens is not None
        else _(
            "no usage.completion_tokens in the reply: the platform cannot count tokens; "
            "add usage (prompt_tokens, completion_tokens, total_tokens)"
        ),
    )
    return [shape, usage]


def wrong_key_row(ex: Exchange) -> CheckResult:
    if ex.failure in ("connect", "timeout", "transport"):
        return _row(
            "wrong-key-rejected",
            False,
            "error",
            _("no answer: {why}").format(why=ex.failure_detail),
        )
    status = ex.status or 0
    if status in (401, 403):
        return _row(
            "wrong-key-rejected",
            True,
            "error",
            _("a made-up key got HTTP {status}").format(status=status),
        )
    if 200 <= status < 300:
        return _row(
            "wrong-key-rejected",
            False,
            "error",
            _(
                "a made-up key was accepted: anyone who finds the URL can use the model. "
                "Check Authorization: Bearer <apiKey> and answer 401 when it is wrong"
            ),
        )
    return _row(
        "wrong-key-rejected",
        False,
        "error",
        _(
            "a made-up key got HTTP {status}, not 401 or 403; answer a wrong key with 401 "
            "so clients report an authentication problem"
        ).format(status=status),
    )


def _burst(ex: Exchange) -> tuple[bool, str]:
    """Whether every content chunk arrived at once, late: a buffering proxy."""
    times = ex.times
    if len(times) < 3:
        return False, ngettext(
            "only {n} chunk: too few to judge", "only {n} chunks: too few to judge", len(times)
        ).format(n=len(times))
    spread = times[-1] - times[0]
    waited = times[0] - ex.t_start
    if spread < 0.002 or (ex.reads <= 2 and spread < 0.05 * waited):
        return True, _(
            "all {n} chunks arrived within {spread} ms, {waited} ms after the request: "
            "something buffers the stream. Turn buffering off (nginx: proxy_buffering off; "
            "or send X-Accel-Buffering: no)"
        ).format(n=len(times), spread=f"{spread * 1000:.1f}", waited=f"{waited * 1000:.0f}")
    return False, _("{n} chunks over {spread} ms in {reads} network reads").format(
        n=len(times), spread=f"{spread * 1000:.0f}", reads=ex.reads
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
            fields = ", ".join(sorted(f.unknown_fields))[:80]
            notes.append(_("unknown fields ignored: {fields}").format(fields=fields))
        if f.unterminated:
            notes.append(_("the stream ended in the middle of an event (dropped)"))
    if ex.null_content:
        notes.append(_("content: null in {n} chunks").format(n=ex.null_content))
    if ex.after_done:
        notes.append(_("{n} events after [DONE] (ignored)").format(n=ex.after_done))
    return notes


def stream_rows(ex: Exchange) -> list[CheckResult]:
    rows: list[CheckResult] = []
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
    rows.append(_row("stream-is-streamed", True, "error", _("answered as an event stream")))
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
    burst, why = _burst(ex)
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
            _("tolerated: {notes}").format(notes="; ".join(notes))
            if notes
            else _("standard OpenAI framing"),
        )
    )
    return rows


def completion_row(ex: Exchange | None, url: str | None) -> CheckResult:
    if ex is None or url is None:
        return _row(
            "completion-form",
            False,
            "info",
            _(
                "not tried: the URL does not end in chat/completions, so the "
                "completions URL beside it is unknown"
            ),
        )
    text = reply_text(ex.json_body)
    if (ex.status or 0) // 100 == 2 and isinstance(text, str):
        return _row(
            "completion-form",
            True,
            "warning",
            _("POST {url} (model, prompt, temperature) gave {n} characters").format(
                url=url, n=len(text)
            ),
        )
    if ex.failure in ("connect", "timeout", "transport"):
        seen = ex.failure_detail
    elif (ex.status or 0) // 100 == 2:
        seen = _("HTTP {status} without choices[0].text").format(status=ex.status)
    else:
        seen = f"HTTP {ex.status}"
    return _row(
        "completion-form",
        False,
        "warning",
        _(
            "POST {url} with model, prompt, temperature: {seen}. Spec 4.5 lists this "
            "plain completion form as a common format; serve it if the platform's "
            "scenarios need it"
        ).format(url=url, seen=seen),
    )


def errors_json_row(exchanges: list[Exchange]) -> CheckResult:
    errors = [ex for ex in exchanges if ex.status is not None and not 200 <= ex.status < 300]
    if not errors:
        return _row("errors-are-json", True, "info", _("no error reply was seen"))
    bad = [ex for ex in errors if not isinstance(ex.json_body, dict)]
    if not bad:
        statuses = ", ".join(sorted({str(ex.status) for ex in errors}))
        return _row(
            "errors-are-json",
            True,
            "warning",
            _("error replies (HTTP {statuses}) are JSON").format(statuses=statuses),
        )
    ex = bad[0]
    media = ex.content_type.split(";")[0] or _("no Content-Type")
    return _row(
        "errors-are-json",
        False,
        "warning",
        _(
            "the HTTP {status} reply is {media}, not JSON: {sample}. Clients show no useful "
            "message; answer errors as JSON, e.g. {example}"
        ).format(
            status=ex.status,
            media=media,
            sample=repr(snippet(ex.body.decode("utf-8", "replace"), 60)),
            example='{"error": {"message": "...", "type": "..."}}',
        ),
    )
