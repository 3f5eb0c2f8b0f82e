"""Go-live checks (DESIGN "Contract: go-live checks"): what breaks the platform's calls.

=====================  ==============  ==========================================
name                   severity        passes when
=====================  ==============  ==========================================
stream-utf8            error/warning   a streamed reply to a Chinese prompt is
                                       valid UTF-8 event by event, without U+FFFD;
                                       a warning when the same request unstreamed
                                       holds as many (the model writes them)
max-tokens-honoured    warning         with a small max_tokens the reply has at
                                       most that many tokens, or finish "length"
model-name-served      warning         the name the platform sends as ``model``
                                       is listed by GET /v1/models (when served)
                                       and a chat request with it answers 2xx
tls-certificate        error/warning   https only: the certificate verifies for
                                       the host (error if not); warning when it
                                       expires within 30 days
=====================  ==============  ==========================================

Each is declared here with the requests it sends and how it is judged; the
suite (:mod:`.suite`) sends every declared request at once.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..._decode import DecodingError, ainflated
from ...i18n import N_, Nn_
from ...summary import Check, Fact
from ...terminal import snippet
from ..target import Target
from ..wire.exchange import Exchange, chat_body, send
from ..wire.shapes import model_ids, reply_text
from ..wire.tls import EXPIRY_WARNING_DAYS, Certificate, inspect_certificate
from .declare import Context, Declared, Request, Seen, Words, redirected
from .requests import PLAIN
from .said import SAID_PARTS, SEEN, seen_facts

__all__ = [
    "CHINESE_PROMPT",
    "MAX_TOKENS_HONOURED",
    "MAX_TOKENS_PROBE",
    "MODEL_NAME_SERVED",
    "STREAM_UTF8",
    "TLS_CERTIFICATE",
    "UTF8_SEED",
    "ModelList",
    "cut_in_a_character",
    "get_json",
    "list_models",
    "models_url",
    "needs_whole",
    "utf8_body",
]

#: The prompt of the stream-utf8 request (a reply in Chinese, many multi-byte characters).
CHINESE_PROMPT = "请用三句话介绍一下你们学校的图书馆。"
#: The max_tokens of the max-tokens-honoured request.
MAX_TOKENS_PROBE = 4
#: The most of a GET /v1/models answer that is read.
MAX_MODEL_LIST_BYTES = 1024 * 1024


def _ok(ex: Exchange) -> bool:
    return ex.status is not None and 200 <= ex.status < 300


# -- stream-utf8 ----------------------------------------------------------------------------
#: The stream-utf8 request's seed: greedy and seeded, the same request asked again without
#: streaming makes the same tokens, so their texts can be compared.
UTF8_SEED = 7


def utf8_body(target: Target, max_tokens: int, *, stream: bool = True) -> dict[str, Any]:
    """The stream-utf8 request (and, unstreamed, the one it is compared with)."""
    return chat_body(target.model, CHINESE_PROMPT, stream=stream, max_tokens=max_tokens,
                     temperature=0.0, seed=UTF8_SEED)  # fmt: skip


async def _utf8_request(ctx: Context, target: Target) -> Exchange:
    return await send(ctx.client, target, utf8_body(target, ctx.max_tokens), stream=True)


#: A streamed reply to a Chinese prompt.
UTF8 = Request("utf8", _utf8_request)


def cut_in_a_character(ex: Exchange) -> bool:
    """The reply's only U+FFFD ends it and max_tokens ended it: the cap fell inside a
    character (its first bytes were made, the rest never was)."""
    text = ex.text
    return ex.finish == "length" and text.endswith("\ufffd") and text.count("\ufffd") == 1


def needs_whole(ex: Exchange) -> bool:
    """Whether stream-utf8 should compare the stream with the same request unstreamed."""
    if ex.status is None or not 200 <= ex.status < 300:
        return False
    bad = ex.framing.bad_utf8 if ex.framing is not None else 0
    return not bad and "\ufffd" in ex.text and not cut_in_a_character(ex)


async def _utf8_whole(ctx: Context, target: Target, seen: Seen) -> None:
    """U+FFFD in the stream: the stream's doing, or the model's? Ask once unstreamed."""
    ex = seen.maybe("utf8")
    if ex is not None and needs_whole(ex):
        body = utf8_body(target, ctx.max_tokens, stream=False)
        seen.set("utf8-whole", await send(ctx.client, target, body, stream=False))


def _utf8(seen: Seen, target: Target) -> Check:
    """The Chinese stream decoded event by event, no U+FFFD in its text.

    When the stream holds U+FFFD, the same request without streaming (``utf8-whole``)
    tells whose doing it is: as many there, the model itself wrote them (random or
    badly quantized weights, a byte-fallback tokenizer): a warning about the model,
    not a failure of the server's streaming.
    """
    ex = seen.exchange("utf8")
    if not _ok(ex):
        return STREAM_UTF8.failed("request-failed", **seen_facts(ex))
    text = ex.text
    bad = ex.framing.bad_utf8 if ex.framing is not None else 0
    garbled = text.count("\ufffd")
    if not text:
        return STREAM_UTF8.failed("no-text")
    if bad or (garbled and not cut_in_a_character(ex)):
        return _garbled(ex, bad, garbled, seen.maybe("utf8-whole"))
    if ex.split_chars:
        return STREAM_UTF8.passed(
            "passed-split", chars=len(text), events=ex.events, split=ex.split_chars
        )
    if garbled:
        return STREAM_UTF8.passed("passed-cut-char", chars=len(text), events=ex.events)
    return STREAM_UTF8.passed(chars=len(text), events=ex.events)


def _garbled(ex: Exchange, bad: int, garbled: int, whole: Exchange | None) -> Check:
    """stream-utf8 for a stream holding U+FFFD or bytes that are not UTF-8."""
    text = ex.text
    where = text.index("\ufffd") if garbled else 0
    sample = repr(snippet(text[max(0, where - 8) :], 30))
    whole_text = reply_text(whole.json_body) if whole is not None and whole.ok else None
    if bad or whole is None:
        return STREAM_UTF8.failed("garbled", garbled=garbled, bad=bad, sample=sample)
    if whole_text is None:
        return STREAM_UTF8.failed(
            "garbled-not-compared", garbled=garbled, sample=sample, **seen_facts(whole)
        )
    in_whole = whole_text.count("\ufffd")
    if in_whole >= garbled:
        return STREAM_UTF8.failed_as(
            "warning", "model-writes", garbled=garbled, sample=sample, whole=in_whole
        )
    return STREAM_UTF8.failed("garbled-vs-whole", garbled=garbled, sample=sample, whole=in_whole)


STREAM_UTF8 = Declared(
    "stream-utf8",
    "error",
    says={
        "passed": Words(
            N_("a Chinese reply of {chars} characters in {events} events, all valid UTF-8")
        ),
        "passed-split": Words(
            *Nn_(
                "a Chinese reply of {chars} characters in {events} events, all valid UTF-8 "
                "({split} character arrived split across network reads and was put back "
                "together)",
                "a Chinese reply of {chars} characters in {events} events, all valid UTF-8 "
                "({split} characters arrived split across network reads and were put back "
                "together)",
            ),
            count="split",
        ),
        "passed-cut-char": Words(
            N_(
                "a Chinese reply of {chars} characters in {events} events, all valid UTF-8; "
                "max_tokens cut its last character in two, so that one shows as U+FFFD"
            )
        ),
        "request-failed": Words(
            N_("the streamed Chinese request failed ({seen}); it could not be checked")
        ),
        "garbled-not-compared": Words(
            N_(
                "the streamed reply to a Chinese prompt holds {garbled} U+FFFD replacement "
                "characters, e.g. {sample}: students see garbled text. The same request "
                "without streaming could not be compared ({seen}), so whether the server "
                "sends pieces of characters or the model writes U+FFFD itself is not known; "
                "check the server's detokenizer and the model's weights"
            )
        ),
        "model-writes": Words(
            N_(
                "the model itself writes U+FFFD replacement characters: the streamed reply "
                "to a Chinese prompt holds {garbled}, e.g. {sample}, and the same request "
                "without streaming holds {whole}, so the server's streaming is not at fault. "
                "Students see garbled text where the model writes broken characters (random "
                "or badly quantized weights, a tokenizer that does not match the model): "
                "serve the model's original weights and tokenizer, or a better quantization"
            )
        ),
        "garbled-vs-whole": Words(
            N_(
                "the streamed reply to a Chinese prompt holds {garbled} U+FFFD replacement "
                "characters, e.g. {sample}, while the same request without streaming holds "
                "{whole}: students see garbled text. The server sends pieces of characters "
                "(byte-level tokens decoded one at a time); update it or its detokenizer so "
                "each chunk carries whole characters"
            )
        ),
        "no-text": Words(N_("the streamed Chinese reply carried no text")),
        "garbled": Words(
            N_(
                "the streamed reply to a Chinese prompt holds {garbled} U+FFFD replacement "
                "characters and {bad} events that are not valid UTF-8, e.g. {sample}: students "
                "see garbled text. The server sends pieces of characters (byte-level tokens "
                "decoded one at a time); update it or its detokenizer so each chunk carries "
                "whole characters"
            )
        ),
    },
    parts=SAID_PARTS,
    sends=(UTF8,),
    judge=_utf8,
    again=_utf8_whole,
)


# -- max-tokens-honoured --------------------------------------------------------------------
async def _max_tokens_request(ctx: Context, target: Target) -> Exchange:
    body = chat_body(target.model, stream=True, max_tokens=MAX_TOKENS_PROBE)
    return await send(ctx.client, target, body, stream=True)


#: A streamed chat with a small max_tokens.
MAX_TOKENS = Request("max_tokens", _max_tokens_request)


def judge_max_tokens(ex: Exchange, limit: int = MAX_TOKENS_PROBE) -> Check:
    """At most ``limit`` completion tokens, or finish_reason "length"."""
    if not _ok(ex):
        return MAX_TOKENS_HONOURED.failed("request-failed", limit=limit, **seen_facts(ex))
    tokens, source = ex.output_tokens
    if ex.failure in ("timeout", "transport") and tokens <= limit and ex.finish != "length":
        # A reply that broke off (a timeout, a closed connection) says nothing of max_tokens.
        why = ex.failure_detail or ex.failure
        return MAX_TOKENS_HONOURED.failed("unfinished", limit=limit, why=why)
    facts: dict[str, Fact] = {
        "limit": limit,
        "tokens": tokens,
        "source": source,
        "finish": ex.finish or "-",
    }
    if tokens <= limit or ex.finish == "length":
        return MAX_TOKENS_HONOURED.passed(**facts)
    return MAX_TOKENS_HONOURED.failed("ignored", **facts)


MAX_TOKENS_HONOURED = Declared(
    "max-tokens-honoured",
    "warning",
    says={
        "passed": Words(
            N_("max_tokens {limit}: {tokens} tokens (from {source}), finish_reason {finish}")
        ),
        "request-failed": Words(N_("a request with max_tokens {limit} failed ({seen})")),
        "unfinished": Words(N_("a request with max_tokens {limit} did not finish ({why})")),
        "ignored": Words(
            N_(
                "with max_tokens {limit} the reply had {tokens} tokens (from {source}), "
                "finish_reason {finish}: the server ignores max_tokens, so a runaway reply "
                "costs the platform time. Pass max_tokens through to the model (a gateway may "
                "drop it)"
            )
        ),
    },
    parts=SAID_PARTS,
    sends=(MAX_TOKENS,),
    judge=lambda seen, target: judge_max_tokens(seen.exchange("max_tokens")),
)


# -- model-name-served ----------------------------------------------------------------------
def models_url(chat_url: str) -> str | None:
    """``.../v1/models`` beside a chat URL, if it ends in chat/completions."""
    base = chat_url.partition("?")[0].rstrip("/")
    if not base.endswith("chat/completions"):
        return None
    return base[: -len("chat/completions")] + "models"


@dataclass(frozen=True)
class ModelList:
    """What GET /v1/models said: the served ids (None: no such route, or refused)."""

    status: int | None
    served: list[str] | None
    failure: str = ""


async def get_json(
    client: httpx.AsyncClient, target: Target, url: str, most: int = MAX_MODEL_LIST_BYTES
) -> tuple[int | None, Any, str]:
    """GET ``url`` with the key: (status, the JSON of a 2xx answer or None, why it failed).

    Bounded: at most ``most`` bytes, inflated with a bound (an answer may be a
    gzip bomb, or never end), within twice the target's timeout.
    """
    raw = bytearray()
    try:
        async with (
            asyncio.timeout(target.timeout * 2),
            client.stream("GET", url, headers=target.headers()) as reply,
        ):
            status = reply.status_code
            if status // 100 == 2:
                async for chunk in ainflated(reply, most):
                    raw += chunk
                    if len(raw) > most:
                        return status, None, "too large"
    except (httpx.HTTPError, TimeoutError, DecodingError) as exc:
        return None, None, snippet(str(exc), 120) or type(exc).__name__
    if status // 100 != 2:
        return status, None, ""
    try:
        return status, json.loads(raw), ""
    except ValueError:
        return status, None, ""


async def list_models(client: httpx.AsyncClient, target: Target) -> ModelList | None:
    """GET /v1/models with the key; None when the URL has no such sibling."""
    url = models_url(target.url)
    if url is None:
        return None
    status, body, failure = await get_json(client, target, url)
    if status is None or failure:
        return ModelList(status, None, failure)
    return ModelList(status, model_ids(body) if status // 100 == 2 else None)


async def _models(ctx: Context, target: Target) -> ModelList | None:
    return await list_models(ctx.client, target)


async def _alias(ctx: Context, target: Target) -> Exchange | None:
    if target.alias is None:
        return None
    body = chat_body(target.alias, stream=False, max_tokens=1)
    return await send(ctx.client, target, body, stream=False)


#: GET /v1/models beside the chat path.
MODELS = Request("models", _models)
#: A chat with the registered modelName, when it differs from ``model``.
ALIAS = Request("alias", _alias)


def _name_state(
    name: str, listing: ModelList | None, ex: Exchange | None, key: str
) -> tuple[bool, dict[str, Fact]]:
    """Whether ``name`` is served, and what was seen, as the ``state`` part's facts."""
    listed = None if listing is None or listing.served is None else name in listing.served
    answered = ex is not None and _ok(ex)
    states: list[str] = []
    facts: dict[str, Fact] = {key: name}
    if listed is True:
        states.append("listed")
    elif listed is False:
        states.append("unlisted")
    if ex is not None and not answered:
        states.append("got")
        facts.update(seen_facts(ex, f"{key}_state_seen", 100))
    elif ex is not None:
        states.append("answered")
        facts[f"{key}_state_status"] = ex.status
    facts[f"{key}_state"] = ",".join(states)
    return listed is not False and answered, facts


def name_suspect(seen: Seen, target: Target) -> bool:
    """The model name may be why the plain request failed (or will fail for the platform)."""
    plain = seen.exchange("plain")
    models = seen.get("models")
    if plain.status in (400, 404) or target.registered_name:
        return True
    return isinstance(models, ModelList) and models.served is not None


def _name_served(seen: Seen, target: Target) -> Check | None:
    """model-name-served over the names the platform may send, with how to align them."""
    if seen.stage in ("refused", "failed") and not name_suspect(seen, target):
        return None  # the checks stopped early: the name is kept only where it may be why
    listing = seen.of("models", ModelList)
    plain_status = seen.exchange("plain").status
    if redirected(plain_status):  # nothing of the name was read
        return MODEL_NAME_SERVED.not_judged(
            "not-judged:redirected", registered=target.url, status=plain_status
        )
    if seen.stage == "refused" and (listing is None or listing.served is None):
        # A 401 says nothing of the name (vLLM checks the key first): no rename advice.
        status = seen.exchange("plain").status
        return MODEL_NAME_SERVED.not_judged("not-judged:refused", status=status)
    alias = seen.maybe("alias")
    names = [(target.model, seen.exchange("plain"), "model")]
    if alias is not None and target.alias is not None:
        names.append((target.alias, alias, "alias"))
    facts: dict[str, Fact] = {}
    served_ok: list[tuple[str, bool, str]] = []
    for name, ex, key in names:
        ok, found = _name_state(name, listing, ex, key)
        facts.update(found)
        served_ok.append((name, ok, key))
    served = listing.served if listing is not None else None
    if not served:  # no list: the names that answered are what is known to be served
        served = [n for n, ok, _k in served_ok if ok]
    facts["also"] = "alias" if len(served_ok) > 1 else ""
    # The platform sends the registered name: when it differs from the one configured (the
    # alias), a chat with it that got no reply is every student's chat failing though the
    # required chat checks passed, which stops go-live (rules.py). The same name for both
    # fails chat-answers itself.
    sent = names[-1][1] if len(names) > 1 else None
    facts["unanswered"] = sent is not None and not _ok(sent)
    if all(ok for _n, ok, _k in served_ok):
        return MODEL_NAME_SERVED.passed(**facts)
    bad = [(n, k) for n, ok, k in served_ok if not ok]
    facts["first"] = "model" if bad[0][1] == "model" else "alias"
    facts["second"] = "alias" if len(bad) > 1 else ""
    facts["named"] = bad[0][0]
    facts["served_first"] = served[0] if served else "<served>"
    if served:
        facts["served"] = ", ".join(served[:10])
        return MODEL_NAME_SERVED.failed("not-served", **facts)
    return MODEL_NAME_SERVED.failed("not-served-unknown", **facts)


_STATE: dict[str, Words] = {
    "listed": Words(N_("listed by GET /v1/models")),
    "unlisted": Words(N_("not listed by GET /v1/models")),
    "got": Words(N_("a chat request with it got {seen}")),
    "answered": Words(N_("a chat request with it answered HTTP {status}")),
}

MODEL_NAME_SERVED = Declared(
    "model-name-served",
    "warning",
    says={
        "passed": Words(N_('"{model}": {model_state}{also}')),
        "not-served": Words(
            N_(
                'the platform will send model "{named}": {first}{second}. The server serves: '
                "{served}. Register the modelName the server serves, or serve an alias (vLLM: "
                "--served-model-name {served_first} {named}; Ollama: ollama cp; a gateway: a "
                "model mapping)"
            )
        ),
        "not-served-unknown": Words(
            N_(
                'the platform will send model "{named}": {first}{second}. Register the '
                "modelName the server serves, or serve an alias (vLLM: --served-model-name "
                "{served_first} {named}; Ollama: ollama cp; a gateway: a model mapping)"
            )
        ),
    },
    parts={
        "model_state": _STATE,
        "alias_state": _STATE,
        "state": _STATE,
        "seen": SEEN,
        **{k: v for k, v in SAID_PARTS.items() if k != "seen"},
        "also": {"": Words(""), "alias": Words(N_('; "{alias}": {alias_state}'))},
        "first": {
            "model": Words("{model_state}", raw=True),
            "alias": Words("{alias_state}", raw=True),
        },
        "second": {
            "": Words(""),
            "alias": Words(N_('; the platform will send model "{alias}": {alias_state}')),
        },
    },
    sends=(PLAIN, MODELS, ALIAS),
    judge=_name_served,
    when=frozenset({"refused", "failed", "answered"}),
    unjudged=frozenset({"wrong-path"}),
)


# -- tls-certificate ------------------------------------------------------------------------
async def _cert_request(ctx: Context, target: Target) -> Certificate | None:
    parts = urlsplit(target.url)
    if parts.scheme != "https" or not parts.hostname:
        return None
    return await inspect_certificate(
        parts.hostname, parts.port or 443, target.timeout, ask_public=True
    )


#: The TLS handshake with the host (https only).
CERT = Request("cert", _cert_request)


def judge_certificate(cert: Certificate) -> Check:
    """Verified (error if not), expiring within 30 days (warning)."""
    days = cert.days_left
    when = cert.not_after.date().isoformat() if cert.not_after is not None else "?"
    expired = days is not None and days < 0
    facts: dict[str, Fact] = {
        "cert": "expired" if expired else "facts",
        "issuer": cert.issuer or "?",
        "when": when,
        "days": "?" if days is None else days,
    }
    if cert.handshake_failed is not None:
        return TLS_CERTIFICATE.failed("handshake-failed", why=snippet(cert.handshake_failed, 100))
    if not cert.verified:
        return TLS_CERTIFICATE.failed("not-verified", why=cert.error or "?", **facts)
    if days is not None and days < EXPIRY_WARNING_DAYS:
        return TLS_CERTIFICATE.failed_as("warning", "expires-soon", **facts)
    if cert.private_ca is not None:  # passes, as DESIGN says; the detail says for whom
        return TLS_CERTIFICATE.passed("passed-private-ca", variable=cert.private_ca, **facts)
    return TLS_CERTIFICATE.passed(**facts)


def _certificate(seen: Seen, target: Target) -> Check | None:
    cert = seen.get("cert")
    if not isinstance(cert, Certificate):
        return None
    if seen.stage == "unreached" and cert.handshake_failed is not None:
        return None  # the reachable row says why (the TLS handshake is its reason)
    return judge_certificate(cert)


TLS_CERTIFICATE = Declared(
    "tls-certificate",
    "error",
    says={
        "passed": Words(N_("verifies; {cert}")),
        "passed-private-ca": Words(
            N_(
                "verifies here only with the CAs {variable} adds, not with the public ones "
                "the platform trusts: unless {issuer} is a public CA, the platform will "
                "refuse it; {cert}"
            )
        ),
        "handshake-failed": Words(
            N_("the TLS handshake failed ({why}): no certificate could be read")
        ),
        "not-verified": Words(
            N_(
                "the certificate does not verify: {why}; {cert}. The platform will refuse the "
                "connection: install a certificate from a public CA for this host name (e.g. "
                "Let's Encrypt), with its whole chain"
            )
        ),
        "expires-soon": Words(
            N_("the certificate expires soon: {cert}. Renew it (and automate renewal)")
        ),
    },
    parts={
        "cert": {
            "facts": Words(N_("issuer {issuer}, expires {when} ({days} days left)")),
            "expired": Words(N_("issuer {issuer}, expired on {when}")),
        }
    },
    sends=(CERT,),
    judge=_certificate,
    when=frozenset({"unreached", "wrong-path", "refused", "failed", "answered"}),
)

#: The row of the connection itself, shown with the address's rows.
CONNECTION: tuple[Declared, ...] = (TLS_CERTIFICATE,)
#: The go-live rows, in the order they are shown (a new one joins here).
CHECKS: tuple[Declared, ...] = (STREAM_UTF8, MAX_TOKENS_HONOURED, MODEL_NAME_SERVED)
