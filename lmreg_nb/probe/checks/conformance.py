"""Conformance checks of a school's chat endpoint (spec 4.5): their declarations.

Severities: ``error`` breaks the platform's calls (the onboarding fails),
``warning`` works but should be fixed, ``info`` is for the record.

=======================  ========  ============================================
name                     severity  passes when
=======================  ========  ============================================
url-https                warning   the URL is https
url-path                 warning   its path ends in v1/chat/completions (error
                                   when that path serves nothing and the chat
                                   path beside it answers: the school's own
                                   corrected address is the finding)
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
completion-form          warning   POST .../v1/completions (model, prompt,
                                   temperature) answers with choices[0].text
errors-are-json          warning   error replies are JSON, not HTML or text
=======================  ========  ============================================

The stream rows are declared in :mod:`.streams`; the go-live rows (stream-utf8,
max-tokens-honoured, model-name-served, tls-certificate) in :mod:`.golive`; the
function rows in :mod:`.function` and :mod:`.context_window`.
When the server cannot be reached, refuses the key or fails (429, 5xx), the
checks stop there: the rows so far say why (model-name-served stays when the
model name may be the cause). When the path serves nothing, the key, the model
name and the error shapes are not judged: the answer they would be judged on
never came.
"""

from __future__ import annotations

import asyncio
import ipaddress
import secrets
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from ...i18n import N_
from ...summary import SEVERITIES, Check, Fact
from ...terminal import snippet
from ...validate import (
    CHAT_PATH_SUFFIX,
    chat_path_fix,
    is_chat_path,
    unreachable_ip,
    unreachable_reason,
)
from ..target import Target
from ..wire.exchange import Exchange, chat_body, completion_body, completions_url, send
from ..wire.reasons import LOCAL_LIMIT
from ..wire.shapes import completion_tokens, reply_shape, reply_text
from .declare import Context, Declared, Request, Seen, Stage, Words, redirected
from .requests import PLAIN, STREAMED

__all__ = [
    "CHAT_ANSWERS",
    "CHAT_REPLY_SHAPE",
    "CHAT_USAGE",
    "COMPLETION_FORM",
    "ERRORS_ARE_JSON",
    "KEY_ACCEPTED",
    "REACHABLE",
    "SEVERITIES",
    "URL_HTTPS",
    "URL_PATH",
    "URL_PUBLIC_HOST",
    "WRONG_KEY_REJECTED",
    "CheckResult",
    "Conformance",
    "private_only",
    "reply_shape",
    "resolve",
]

#: The probe's name for a check row: the summary's :class:`~lmreg_nb.summary.Check` itself
#: (one type from the probe to the record; the name stays for the probe's many rows).
CheckResult = Check
#: Every stage where the server answered HTTP.
_ANSWERED_HTTP: frozenset[Stage] = frozenset({"wrong-path", "refused", "failed", "answered"})


@dataclass
class Conformance:
    """The rows, and the exchanges (for the one-request figures)."""

    checks: list[CheckResult]
    first: Exchange | None = None  # the non-streamed chat request
    streamed: Exchange | None = None  # the streamed chat request, if it was judged
    #: How far the plain chat got (:data:`~.declare.Stage`).
    stage: Stage = "answered"

    @property
    def measured(self) -> Exchange | None:
        """The request the one-request figures describe: the streamed one, else the first."""
        return self.streamed or self.first

    def exchanges(self) -> list[Exchange]:
        """The plain and the streamed chat request, those that were made."""
        return [ex for ex in (self.first, self.streamed) if ex is not None]

    @property
    def answered_stream(self) -> bool:
        """The streamed request got a 2xx and at least one token (of the reply or of its
        thinking): a load test makes sense. A stream of keep-alive comments, or of nothing,
        would only make each of its requests wait out its timeout."""
        ex = self.streamed
        if ex is None or (ex.status or 0) // 100 != 2:
            return False
        return bool(ex.times or ex.reasoning_times)


def _ms(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds * 1000:.0f} ms"


# -- the URL --------------------------------------------------------------------------------
def _https(seen: Seen, target: Target) -> Check:
    if urlsplit(target.url).scheme.lower() == "http":
        return URL_HTTPS.failed("plain-http", warning="plain-http")
    return URL_HTTPS.passed()


URL_HTTPS = Declared(
    "url-https",
    "warning",
    says={
        "passed": Words("https", raw=True),
        "plain-http": Words(
            N_("{warning}; serve it over TLS (a reverse proxy with a certificate)")
        ),
    },
    parts={
        "warning": {
            "plain-http": Words(
                N_(
                    "registryUrl uses plain http; the platform expects https so apiKey is not "
                    "sent in clear"
                )
            )
        }
    },
    judge=_https,
    when=frozenset({"unreached", *_ANSWERED_HTTP}),
)


def _path(seen: Seen, target: Target) -> Check:
    path = urlsplit(target.url).path
    fixed = chat_path_fix(target.url)
    plain = seen.maybe("plain")
    if seen.stage == "wrong-path" and plain is not None:
        # The finding itself: this path serves nothing, the chat path beside it answers.
        return URL_PATH.failed_as(
            "error",
            "chat-path",
            registered=target.url,
            status=plain.status,
            url=fixed,
        )
    if not is_chat_path(path):
        return URL_PATH.failed("not-chat-path", suffix=CHAT_PATH_SUFFIX, url=fixed)
    return URL_PATH.passed()


URL_PATH = Declared(
    "url-path",
    "warning",
    says={
        "passed": Words(N_("ends in v1/chat/completions")),
        "not-chat-path": Words(
            N_("registryUrl path should end in {suffix} (spec 4.5), e.g. {url} for this server")
        ),
        "chat-path": Words(
            N_(
                "{registered} serves nothing (HTTP {status}) while the chat path beside it "
                "answers: the platform calls the address as registered, and the chat path "
                "of spec 4.5 is v1/chat/completions. Register {url}"
            )
        ),
    },
    judge=_path,
    when=frozenset({"unreached", *_ANSWERED_HTTP}),
)


def _public_host(seen: Seen, target: Target) -> Check:
    host = urlsplit(target.url).hostname or ""
    reason = unreachable_reason(host)
    if reason:
        return URL_PUBLIC_HOST.failed("unreachable", warning=reason, host=host)
    addresses = seen.get("addresses")
    if isinstance(addresses, list) and private_only(addresses):
        shown = ", ".join(str(a) for a in addresses[:4])
        return URL_PUBLIC_HOST.failed("split-horizon", host=host, addresses=shown)
    return URL_PUBLIC_HOST.passed()


def private_only(addresses: list[str]) -> bool:
    """Every address is one the platform cannot reach (loopback, private, carrier-grade
    NAT, link-local, unspecified): the rule a registryUrl written as an address gets."""
    return bool(addresses) and all(unreachable_ip(text) for text in addresses)


async def resolve(url: str, timeout: float) -> list[str] | None:
    """The addresses the URL's host name resolves to here; None for an IP or no answer."""
    try:
        host = urlsplit(url).hostname or ""
        ipaddress.ip_address(host.strip("[]"))
        return None  # an address: url_warnings judges it
    except ValueError:
        pass
    if not host:
        return None
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError):
        return None  # the connection rows say why
    return sorted({str(info[4][0]) for info in infos})


async def _addresses(ctx: Context, target: Target) -> list[str] | None:
    return await resolve(target.url, target.timeout)


#: The addresses the URL's host name resolves to here (split-horizon DNS).
ADDRESSES = Request("addresses", _addresses)

URL_PUBLIC_HOST = Declared(
    "url-public-host",
    "warning",
    says={
        "passed": Words(N_("a public host name or address")),
        "unreachable": Words(
            N_("{warning}; register a public address (this check still tests it from here)")
        ),
        "split-horizon": Words(
            N_(
                "{host} resolves only to {addresses} from here (private or loopback): "
                "split-horizon DNS? The platform resolves it from outside and cannot reach "
                "these. Register a name with a public address"
            )
        ),
    },
    parts={
        "warning": {
            "loopback": Words(
                N_("registryUrl host {host} is loopback; the platform cannot reach it")
            ),
            "unspecified": Words(
                N_("registryUrl host {host} is unspecified (0.0.0.0); the platform cannot reach it")
            ),
            "link-local": Words(
                N_("registryUrl host {host} is link-local; the platform cannot reach it")
            ),
            "private": Words(
                N_("registryUrl host {host} is a private address; the platform cannot reach it")
            ),
            "single-label": Words(
                N_(
                    "registryUrl host {host} is a single-label name (only resolvable inside "
                    "your network); the platform cannot reach it"
                )
            ),
            "local-name": Words(
                N_("registryUrl host {host} is a local-network name; the platform cannot reach it")
            ),
        }
    },
    sends=(ADDRESSES,),
    judge=_public_host,
    when=frozenset({"unreached", *_ANSWERED_HTTP}),
)


# -- does it answer -------------------------------------------------------------------------
def _reachable(seen: Seen, target: Target) -> Check:
    plain = seen.exchange("plain")
    if plain.status is not None:
        took = ((plain.t_headers or plain.t_end) - plain.t_start) * 1000
        return REACHABLE.passed(status=plain.status, ms=f"{took:.0f}")
    if plain.failure == LOCAL_LIMIT:
        return REACHABLE.failed("local-limit", why=plain.failure_detail)
    if plain.failure == "connect":
        if plain.failure_detail:
            return REACHABLE.failed("server-down", why=plain.failure_detail)
        return REACHABLE.failed("server-down-unsaid", url=target.url)
    if plain.failure == "timeout":
        return REACHABLE.failed("no-answer-in-time", seen=plain.failure_detail)
    return REACHABLE.failed("connection-failed", seen=plain.failure_detail)


REACHABLE = Declared(
    "reachable",
    "error",
    says={
        "passed": Words(N_("answered HTTP {status} in {ms} ms")),
        "server-down": Words("{why}", raw=True),
        "server-down-unsaid": Words(N_("could not connect to {url}")),
        "local-limit": Words("{why}", raw=True),
        "no-answer-in-time": Words(
            N_(
                "{seen}. The server accepted the connection but did not answer: "
                "check it is not overloaded or stuck, or raise LMREG_TIMEOUT"
            )
        ),
        "connection-failed": Words(N_("the connection failed: {seen}")),
    },
    sends=(PLAIN,),
    judge=_reachable,
    when=frozenset({"unreached", *_ANSWERED_HTTP}),
)


def _key(seen: Seen, target: Target) -> Check:
    plain = seen.exchange("plain")
    if redirected(plain.status):  # routers redirect before any key is read
        return KEY_ACCEPTED.not_judged(
            "not-judged:redirected", registered=target.url, status=plain.status
        )
    if plain.status in (401, 403):
        said = f": {plain.failure_detail}" if plain.failure_detail else ""
        return KEY_ACCEPTED.failed("key-refused", status=plain.status, said=said)
    return KEY_ACCEPTED.passed()


KEY_ACCEPTED = Declared(
    "key-accepted",
    "error",
    says={
        "passed": Words(N_("the key was accepted")),
        "key-refused": Words(
            N_(
                "the key was refused (HTTP {status}{said}). Use the key the server expects: "
                "LMREG_MODEL_API_KEY, or the apiKey registered for this model"
            )
        ),
    },
    sends=(PLAIN,),
    judge=_key,
    when=frozenset({"refused", "failed", "answered"}),
    unjudged=frozenset({"wrong-path"}),
)


def status_facts(ex: Exchange) -> tuple[str, dict[str, Fact]]:
    """Why a request got a non-2xx, as (cause, facts) of :data:`STATUS_SAYS`."""
    status = ex.status or 0
    said = f": {ex.failure_detail}" if ex.failure_detail else ""
    if status == 429:
        return "rate-limited", {"said": said}
    if status >= 500:
        return "server-error", {"status": status, "said": said}
    if 300 <= status < 400:
        if ex.location:
            return "redirect", {"status": status, "where": ex.location}
        return "redirect-unsaid", {"status": status}
    if status == 404:
        return "not-found", {"said": said}
    return "status", {"status": status, "said": said}


#: The words of a non-2xx answer to a chat request (chat-answers, stream-answers).
STATUS_SAYS = {
    "rate-limited": Words(
        N_(
            "HTTP 429 (rate limited){said}. The platform would be refused too: "
            "raise the rate limit for this key, then check again"
        )
    ),
    "server-error": Words(
        N_(
            "HTTP {status} (server error){said}. The model server failed: "
            "check its logs and that the model is loaded"
        )
    ),
    "redirect": Words(
        N_(
            "HTTP {status}: the URL redirects to {where}. Register the final URL: "
            "clients do not repeat a POST after a redirect"
        )
    ),
    "redirect-unsaid": Words(
        N_(
            "HTTP {status}: the URL redirects. Register the final URL: "
            "clients do not repeat a POST after a redirect"
        )
    ),
    "not-found": Words(
        N_("HTTP 404{said}. Nothing serves this path: check the URL and the model name")
    ),
    "status": Words(N_("HTTP {status}{said}. Check the request the server expects (spec 4.5)")),
}


def _answers(seen: Seen, target: Target) -> Check:
    plain = seen.exchange("plain")
    if seen.stage == "wrong-path":
        return CHAT_ANSWERS.failed(
            "chat-path", registered=target.url, status=plain.status, url=chat_path_fix(target.url)
        )
    if plain.status is not None and plain.status // 100 == 2:
        return CHAT_ANSWERS.passed(status=plain.status)
    cause, facts = status_facts(plain)
    return CHAT_ANSWERS.failed(cause, **facts)


CHAT_ANSWERS = Declared(
    "chat-answers",
    "error",
    says={
        "passed": Words("HTTP {status}", raw=True),
        "chat-path": Words(
            N_(
                "HTTP {status} at {registered}: nothing serves this path; the chat endpoint is "
                "{url} (see url-path)"
            )
        ),
        **STATUS_SAYS,
    },
    sends=(PLAIN,),
    judge=_answers,
    when=frozenset({"wrong-path", "failed", "answered"}),
)


# -- the reply ------------------------------------------------------------------------------
def _shape(seen: Seen, target: Target) -> Check:
    ex = seen.exchange("plain")
    missing = reply_shape(ex.json_body)
    if ex.json_body is None:
        sample = repr(snippet(ex.body.decode("utf-8", "replace"), 80))
        return CHAT_REPLY_SHAPE.failed("not-json", media=ex.content_type, sample=sample)
    if missing:
        return CHAT_REPLY_SHAPE.failed("missing", missing=", ".join(missing))
    return CHAT_REPLY_SHAPE.passed(n=len(reply_text(ex.json_body) or ""), ms=_ms(ex.latency))


CHAT_REPLY_SHAPE = Declared(
    "chat-reply-shape",
    "error",
    says={
        "passed": Words(N_("chat.completion with {n} characters in {ms}")),
        "not-json": Words(
            N_(
                "the reply is not JSON (Content-Type {media}: {sample}); answer "
                "application/json in the OpenAI chat.completion shape"
            )
        ),
        "missing": Words(
            N_(
                "the reply lacks {missing}; answer in the OpenAI chat.completion "
                "shape (id, object, choices[0].message.role/content, finish_reason, usage)"
            )
        ),
    },
    parts={"media": {"": Words(N_("missing"))}},
    sends=(PLAIN,),
    judge=_shape,
)


def _usage(seen: Seen, target: Target) -> Check:
    tokens = completion_tokens(seen.exchange("plain").json_body)
    if tokens is None:
        return CHAT_USAGE.failed("no-usage")
    return CHAT_USAGE.passed(tokens=tokens)


CHAT_USAGE = Declared(
    "chat-usage",
    "warning",
    says={
        "passed": Words("usage.completion_tokens = {tokens}", raw=True),
        "no-usage": Words(
            N_(
                "no usage.completion_tokens in the reply: the platform cannot count tokens; "
                "add usage (prompt_tokens, completion_tokens, total_tokens)"
            )
        ),
    },
    sends=(PLAIN,),
    judge=_usage,
)


async def _wrong(ctx: Context, target: Target) -> Exchange:
    key = ctx.wrong_key or "lmreg-probe-wrong-" + secrets.token_hex(8)
    body = chat_body(target.model, stream=False, max_tokens=1)
    return await send(ctx.client, target, body, stream=False, api_key=key)


#: The same chat with a made-up key.
WRONG = Request("wrong", _wrong)


def _wrong_key(seen: Seen, target: Target) -> Check:
    ex = seen.exchange("wrong")
    if ex.failure in ("connect", "timeout", "transport", LOCAL_LIMIT):
        return WRONG_KEY_REJECTED.failed("no-answer", why=ex.failure_detail)
    status = ex.status or 0
    if status in (401, 403):
        return WRONG_KEY_REJECTED.passed(status=status)
    if 200 <= status < 300:
        return WRONG_KEY_REJECTED.failed("accepted")
    if 400 <= status < 500 and status != 429:
        # Refused, so nobody else can use the model, but not as an authentication error
        # (LiteLLM's proxy without a database: 400 "No connected db."): clients then tell
        # the school its request is wrong, not its key.
        said = snippet(ex.failure_detail, 120) or "-"
        return WRONG_KEY_REJECTED.failed_as(
            "warning", "refused-otherwise", status=status, said=said
        )
    return WRONG_KEY_REJECTED.failed("other-status", status=status)


WRONG_KEY_REJECTED = Declared(
    "wrong-key-rejected",
    "error",
    says={
        "passed": Words(N_("a made-up key got HTTP {status}")),
        "no-answer": Words(N_("no answer: {why}")),
        "accepted": Words(
            N_(
                "a made-up key was accepted: anyone who finds the URL can use the model. "
                "Check Authorization: Bearer <apiKey> and answer 401 when it is wrong"
            )
        ),
        "refused-otherwise": Words(
            N_(
                "a made-up key was refused, but with HTTP {status} ({said}), not 401 or 403: "
                "clients will report a bad request instead of a wrong key. Answer a wrong key "
                "with 401 (LiteLLM's proxy does once it has its database)"
            )
        ),
        "other-status": Words(
            N_(
                "a made-up key got HTTP {status}, not 401 or 403; answer a wrong key with 401 "
                "so clients report an authentication problem"
            )
        ),
    },
    sends=(WRONG,),
    judge=_wrong_key,
)


async def _completion(ctx: Context, target: Target) -> Exchange | None:
    url = completions_url(target.url)
    if url is None:
        return None
    return await send(ctx.client, target, completion_body(target.model), stream=False, url=url)


#: The plain completion form beside the chat path (.../v1/completions).
COMPLETION = Request("completion", _completion)


def _completion_form(seen: Seen, target: Target) -> Check:
    ex = seen.maybe("completion")
    url = completions_url(target.url)
    if ex is None or url is None:
        return COMPLETION_FORM.failed_as(
            "info",
            "not-tried",
        )
    text = reply_text(ex.json_body)
    if (ex.status or 0) // 100 == 2 and isinstance(text, str):
        return COMPLETION_FORM.passed(url=url, n=len(text))
    got: dict[str, Fact]
    if ex.failure in ("connect", "timeout", "transport", LOCAL_LIMIT):
        got = {"got": "why", "got_why": ex.failure_detail}
    elif (ex.status or 0) // 100 == 2:
        got = {"got": "no-text", "got_status": ex.status}
    else:
        got = {"got": "status", "got_status": ex.status}
    return COMPLETION_FORM.failed("failed", url=url, **got)


COMPLETION_FORM = Declared(
    "completion-form",
    "warning",
    says={
        "passed": Words(N_("POST {url} (model, prompt, temperature) gave {n} characters")),
        "not-tried": Words(
            N_(
                "not tried: the URL does not end in chat/completions, so the "
                "completions URL beside it is unknown"
            )
        ),
        "failed": Words(
            N_(
                "POST {url} with model, prompt, temperature: {got}. Spec 4.5 lists this "
                "plain completion form as a common format; serve it if the platform's "
                "scenarios need it"
            )
        ),
    },
    parts={
        "got": {
            "why": Words("{why}", raw=True),
            "no-text": Words(N_("HTTP {status} without choices[0].text")),
            "status": Words("HTTP {status}", raw=True),
        }
    },
    sends=(COMPLETION,),
    judge=_completion_form,
)


def _errors_json(seen: Seen, target: Target) -> Check:
    names = ("plain", "wrong", "streamed", "completion") if seen.stage == "answered" else ("plain",)
    exchanges = [ex for name in names if (ex := seen.maybe(name)) is not None]
    errors = [  # a redirect is no error reply (chat-answers names where it points)
        ex
        for ex in exchanges
        if ex.status is not None and not 200 <= ex.status < 300 and not redirected(ex.status)
    ]
    if not errors:
        return ERRORS_ARE_JSON.passed_as(
            "info",
            "none-seen",
        )
    bad = [ex for ex in errors if not isinstance(ex.json_body, dict)]
    if not bad:
        statuses = ", ".join(sorted({str(ex.status) for ex in errors}))
        return ERRORS_ARE_JSON.passed(statuses=statuses)
    ex = bad[0]
    return ERRORS_ARE_JSON.failed(
        "not-json",
        status=ex.status,
        media=ex.content_type.split(";")[0],
        sample=repr(snippet(ex.body.decode("utf-8", "replace"), 60)),
        example='{"error": {"message": "...", "type": "..."}}',
    )


ERRORS_ARE_JSON = Declared(
    "errors-are-json",
    "warning",
    says={
        "passed": Words(N_("error replies (HTTP {statuses}) are JSON")),
        "none-seen": Words(N_("no error reply was seen")),
        "not-json": Words(
            N_(
                "the HTTP {status} reply is {media}, not JSON: {sample}. Clients show no useful "
                "message; answer errors as JSON, e.g. {example}"
            )
        ),
    },
    parts={"media": {"": Words(N_("no Content-Type"))}},
    sends=(PLAIN, STREAMED, WRONG, COMPLETION),
    judge=_errors_json,
    when=frozenset({"refused", "failed", "answered"}),
    unjudged=frozenset({"wrong-path"}),
)

#: The address's rows, shown first (they need no answer).
ADDRESS: tuple[Declared, ...] = (URL_HTTPS, URL_PATH, URL_PUBLIC_HOST)
#: The conformance rows, in the order they are shown (a new one joins here).
CHECKS: tuple[Declared, ...] = (
    REACHABLE,
    KEY_ACCEPTED,
    CHAT_ANSWERS,
    CHAT_REPLY_SHAPE,
    CHAT_USAGE,
    WRONG_KEY_REJECTED,
    COMPLETION_FORM,
    ERRORS_ARE_JSON,
)
