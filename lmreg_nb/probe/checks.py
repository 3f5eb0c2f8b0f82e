"""Conformance checks of a school's chat endpoint (spec 4.5), each a row with how to fix.

The checker makes four requests (a chat reply, the same with a made-up key,
a streamed chat reply, the text-completion form) and judges what it saw.
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

from ..i18n import _
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
        return (
            f"HTTP 429 (rate limited){said}. The platform would be refused too: "
            "raise the rate limit for this key, then check again"
        )
    if status >= 500:
        return (
            f"HTTP {status} (server error){said}. The model server failed: "
            "check its logs and that the model is loaded"
        )
    if 300 <= status < 400:
        where = f" to {ex.location}" if ex.location else ""
        return (
            f"HTTP {status}: the URL redirects{where}. Register the final URL: "
            "clients do not repeat a POST after a redirect"
        )
    if status == 404:
        return f"HTTP 404{said}. Nothing serves this path: check the URL and the model name"
    return f"HTTP {status}{said}. Check the request the server expects (spec 4.5)"


def transport_row(ex: Exchange, url: str) -> CheckResult:
    """``reachable`` failed: the plain reason of :mod:`.reasons` (DNS, refused, TLS...)."""
    if ex.failure == "connect":
        advice = ex.failure_detail or _("could not connect to {url}").format(url=url)
    elif ex.failure == "timeout":
        advice = (
            f"{ex.failure_detail}. The server accepted the connection but did not answer: "
            "check it is not overloaded or stuck, or raise LMREG_TIMEOUT"
        )
    else:
        advice = f"the connection failed: {ex.failure_detail}"
    return _row("reachable", False, "error", advice)


def chat_rows(ex: Exchange) -> list[CheckResult]:
    missing = reply_shape(ex.json_body)
    if ex.json_body is None:
        shape = _row(
            "chat-reply-shape",
            False,
            "error",
            f"the reply is not JSON (Content-Type {ex.content_type or 'missing'}: "
            f"{snippet(ex.body.decode('utf-8', 'replace'), 80)!r}); answer "
            "application/json in the OpenAI chat.completion shape",
        )
    elif missing:
        shape = _row(
            "chat-reply-shape",
            False,
            "error",
            f"the reply lacks {', '.join(missing)}; answer in the OpenAI chat.completion "
            "shape (id, object, choices[0].message.role/content, finish_reason, usage)",
        )
    else:
        shape = _row(
            "chat-reply-shape",
            True,
            "error",
            f"chat.completion with {len(reply_text(ex.json_body) or '')} "
            f"characters in {_ms(ex.latency)}",
        )
    tokens = completion_tokens(ex.json_body)
    usage = _row(
        "chat-usage",
        tokens is not None,
        "warning",
        f"usage.completion_tokens = {tokens}"
        if tokens is not None
        else "no usage.completion_tokens in the reply: the platform cannot count tokens; "
        "add usage {prompt_tokens, completion_tokens, total_tokens}",
    )
    return [shape, usage]


def wrong_key_row(ex: Exchange) -> CheckResult:
    if ex.failure in ("connect", "timeout", "transport"):
        return _row("wrong-key-rejected", False, "error", f"no answer: {ex.failure_detail}")
    status = ex.status or 0
    if status in (401, 403):
        return _row("wrong-key-rejected", True, "error", f"a made-up key got HTTP {status}")
    if 200 <= status < 300:
        return _row(
            "wrong-key-rejected",
            False,
            "error",
            "a made-up key was accepted: anyone who finds the URL can use the model. "
            "Check Authorization: Bearer <apiKey> and answer 401 when it is wrong",
        )
    return _row(
        "wrong-key-rejected",
        False,
        "error",
        f"a made-up key got HTTP {status}, not 401 or 403; answer a wrong key with 401 "
        "so clients report an authentication problem",
    )


def _burst(ex: Exchange) -> tuple[bool, str]:
    """Whether every content chunk arrived at once, late: a buffering proxy."""
    times = ex.times
    if len(times) < 3:
        return False, f"only {len(times)} chunk(s): too few to judge"
    spread = times[-1] - times[0]
    waited = times[0] - ex.t_start
    if spread < 0.002 or (ex.reads <= 2 and spread < 0.05 * waited):
        return True, (
            f"all {len(times)} chunks arrived within {spread * 1000:.1f} ms, "
            f"{waited * 1000:.0f} ms after the request: something buffers the stream. "
            "Turn buffering off (nginx: proxy_buffering off; or send X-Accel-Buffering: no)"
        )
    return False, (f"{len(times)} chunks over {spread * 1000:.0f} ms in {ex.reads} network reads")


def _framing_notes(ex: Exchange) -> list[str]:
    notes: list[str] = []
    if ex.role_only_first:
        notes.append("a role-only first chunk")
    if ex.usage_chunks:
        notes.append("a final usage chunk with empty choices")
    f = ex.framing
    if f is not None:
        if f.no_space:
            notes.append(f"'data:' without a space ({f.no_space} lines)")
        if f.crlf:
            notes.append("\\r\\n line ends")
        if f.cr:
            notes.append("\\r line ends")
        if f.comments:
            notes.append(f"{f.comments} comment (keep-alive) lines")
        if f.unknown_fields:
            notes.append(f"unknown fields ignored: {', '.join(sorted(f.unknown_fields))[:80]}")
        if f.unterminated:
            notes.append("the stream ended in the middle of an event (dropped)")
    if ex.null_content:
        notes.append(f"content: null in {ex.null_content} chunk(s)")
    if ex.after_done:
        notes.append(f"{ex.after_done} event(s) after [DONE] (ignored)")
    return notes


def stream_rows(ex: Exchange) -> list[CheckResult]:
    rows: list[CheckResult] = []
    if not ex.streamed:
        return [
            _row(
                "stream-is-streamed",
                False,
                "error",
                f"a streamed request (stream: true) got one JSON body (Content-Type "
                f"{ex.content_type or 'missing'}): the platform shows nothing until the whole "
                "reply is ready. Honour stream: true with text/event-stream chunks",
            )
        ]
    rows.append(_row("stream-is-streamed", True, "error", "answered as an event stream"))
    media = ex.content_type.split(";")[0].strip()
    rows.append(
        _row(
            "stream-content-type",
            media == "text/event-stream",
            "error",
            "text/event-stream"
            if media == "text/event-stream"
            else f"Content-Type is {media or 'missing'}; send Content-Type: text/event-stream "
            "(SSE clients refuse other types)",
        )
    )
    rows.append(
        _row(
            "stream-events-json",
            not ex.non_json,
            "error",
            f"{ex.events} events, each JSON"
            if not ex.non_json
            else f"{len(ex.non_json)} data event(s) were not JSON, e.g. "
            f"{snippet(ex.non_json[0], 60)!r}; every data: line must hold one JSON chunk "
            "(or [DONE])",
        )
    )
    rows.append(
        _row(
            "stream-no-error-object",
            not ex.error_events,
            "error",
            "no error object in the stream"
            if not ex.error_events
            else "the HTTP 200 stream carried an error: "
            f"{snippet(json.dumps(ex.error_events[0]), 100)}. Clients took the 200 for "
            "success; fix the failure on the server (or fail with an HTTP error status "
            "before streaming)",
        )
    )
    tokens, source = ex.output_tokens
    rows.append(
        _row(
            "stream-content",
            bool(ex.pieces),
            "error",
            f"{len(ex.pieces)} content chunks, {tokens} output tokens (from {source})"
            if ex.pieces
            else "no content arrived in the stream: send choices[0].delta.content pieces",
        )
    )
    rows.append(
        _row(
            "stream-done",
            ex.done,
            "error",
            "ends with data: [DONE]"
            if ex.done
            else "the stream ended without data: [DONE]; clients waiting for it hang or "
            "report a cut stream. Send 'data: [DONE]' and a blank line after the last chunk",
        )
    )
    burst, why = _burst(ex)
    rows.append(_row("stream-not-buffered", not burst, "warning", why))
    rows.append(
        _row(
            "stream-usage",
            ex.usage is not None,
            "info",
            "usage reported in the stream (stream_options.include_usage)"
            if ex.usage is not None
            else "no usage in the stream: output tokens are counted from chunks",
        )
    )
    notes = _framing_notes(ex)
    rows.append(
        _row(
            "stream-framing",
            True,
            "info",
            "tolerated: " + "; ".join(notes) if notes else "standard OpenAI framing",
        )
    )
    return rows


def completion_row(ex: Exchange | None, url: str | None) -> CheckResult:
    if ex is None or url is None:
        return _row(
            "completion-form",
            False,
            "info",
            "not tried: the URL does not end in chat/completions, so the "
            "completions URL beside it is unknown",
        )
    text = reply_text(ex.json_body)
    if (ex.status or 0) // 100 == 2 and isinstance(text, str):
        return _row(
            "completion-form",
            True,
            "warning",
            f"POST {url} (model, prompt, temperature) gave {len(text)} characters",
        )
    if ex.failure in ("connect", "timeout", "transport"):
        seen = ex.failure_detail
    elif (ex.status or 0) // 100 == 2:
        seen = f"HTTP {ex.status} without choices[0].text"
    else:
        seen = f"HTTP {ex.status}"
    return _row(
        "completion-form",
        False,
        "warning",
        f"POST {url} with model, prompt, temperature: {seen}. Spec 4.5 lists this "
        "plain completion form as a common format; serve it if the platform's "
        "scenarios need it",
    )


def errors_json_row(exchanges: list[Exchange]) -> CheckResult:
    errors = [ex for ex in exchanges if ex.status is not None and not 200 <= ex.status < 300]
    if not errors:
        return _row("errors-are-json", True, "info", "no error reply was seen")
    bad = [ex for ex in errors if not isinstance(ex.json_body, dict)]
    if not bad:
        statuses = ", ".join(sorted({str(ex.status) for ex in errors}))
        return _row("errors-are-json", True, "warning", f"error replies (HTTP {statuses}) are JSON")
    ex = bad[0]
    media = ex.content_type.split(";")[0] or "no Content-Type"
    return _row(
        "errors-are-json",
        False,
        "warning",
        f"the HTTP {ex.status} reply is {media}, not JSON: "
        f"{snippet(ex.body.decode('utf-8', 'replace'), 60)!r}. Clients show no useful "
        'message; answer errors as JSON, e.g. {"error": {"message": "...", "type": "..."}}',
    )
