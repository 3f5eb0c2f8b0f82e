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
url-public-host          warning   its host is not loopback or private, and
                                   its name does not resolve only to such
reachable                error     the server answers HTTP at all (in time);
                                   else the plain reason (DNS, refused, TLS)
key-accepted             error     the key is not refused (401/403)
chat-answers             error     the chat request gets a 2xx (not 429/5xx)
chat-reply-shape         error     id, object, choices[0].message.role/content,
                                   finish_reason are there
chat-usage               warning   the reply has usage.completion_tokens
wrong-key-rejected       error     a made-up key gets 401 or 403 (warning: refused
                                   with another 4xx, e.g. LiteLLM's 400 "No
                                   connected db.")
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

The stream rows live in :mod:`.stream_checks`; the go-live rows (stream-utf8,
max-tokens-honoured, model-name-served, tls-certificate) in :mod:`.golive`.

Tolerated without complaint: a role-only first chunk, a final usage chunk
with empty ``choices``, ``data:`` without a space, ``\\r\\n`` or ``\\r`` line
ends, keep-alive comment lines, ``content: null``.
When the server cannot be reached, refuses the key or fails (429, 5xx), the
checks stop there: the rows so far say why (model-name-served stays when the
model name may be the cause).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...i18n import _, listing
from ...summary import SEVERITIES, Check, Severity
from ...terminal import snippet
from ...validate import url_warnings
from ..wire.exchange import Exchange
from ..wire.reasons import LOCAL_LIMIT
from ..wire.shapes import completion_tokens, reply_shape, reply_text

__all__ = ["SEVERITIES", "CheckResult", "Conformance", "reply_shape", "row", "url_checks"]

#: The probe's name for a check row: the summary's :class:`~lmreg_nb.summary.Check` itself
#: (one type from the probe to the record; the name stays for the probe's many rows).
CheckResult = Check


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

    def exchanges(self) -> list[Exchange]:
        """The plain and the streamed chat request, those that were made."""
        return [ex for ex in (self.first, self.streamed) if ex is not None]

    @property
    def answered_stream(self) -> bool:
        """The streamed request got a 2xx: a load test makes sense."""
        return self.streamed is not None and (self.streamed.status or 0) // 100 == 2


def row(name: str, passed: bool, severity: Severity, detail: str) -> CheckResult:
    """One check row."""
    return CheckResult(name, passed, severity, detail)


_row = row


def _url_warning_codes(url: str) -> dict[str, str]:
    """url_warnings as {code: message}; codes, never the wording, decide the rows."""
    found: dict[str, str] = {}
    for warning in url_warnings(url):
        found.setdefault(warning.code, warning.message)
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
    if ex.failure in ("connect", LOCAL_LIMIT):
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
            ).format(missing=listing(missing)),
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
    if ex.failure in ("connect", "timeout", "transport", LOCAL_LIMIT):
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
    if 400 <= status < 500 and status != 429:
        # Refused, so nobody else can use the model, but not as an authentication error
        # (LiteLLM's proxy without a database: 400 "No connected db."): clients then tell
        # the school its request is wrong, not its key.
        said = snippet(ex.failure_detail, 120) or "-"
        return _row(
            "wrong-key-rejected",
            False,
            "warning",
            _(
                "a made-up key was refused, but with HTTP {status} ({said}), not 401 or 403: "
                "clients will report a bad request instead of a wrong key. Answer a wrong key "
                "with 401 (LiteLLM's proxy does once it has its database)"
            ).format(status=status, said=said),
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
    if ex.failure in ("connect", "timeout", "transport", LOCAL_LIMIT):
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
        statuses = listing(sorted({str(ex.status) for ex in errors}))
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
