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

Also here: the split-horizon DNS test of ``url-public-host`` (a name that
resolves only to private or loopback addresses from here). Each function
judges what the requests saw; the requests are made by :mod:`.suite`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..._decode import DecodingError, ainflated
from ...i18n import _, clauses, ngettext
from ...i18n import listing as join_list
from ...summary import Severity
from ...terminal import snippet
from ..target import Target
from ..wire.exchange import Exchange
from ..wire.shapes import error_message, model_ids, reply_text
from ..wire.tls import EXPIRY_WARNING_DAYS, Certificate
from .conformance import CheckResult

__all__ = [
    "CHINESE_PROMPT",
    "MAX_TOKENS_PROBE",
    "ModelList",
    "cut_in_a_character",
    "list_models",
    "max_tokens_row",
    "model_name_row",
    "models_url",
    "needs_whole",
    "private_only",
    "resolve_row",
    "tls_row",
    "utf8_row",
]

#: The prompt of the stream-utf8 request (a reply in Chinese, many multi-byte characters).
CHINESE_PROMPT = "请用三句话介绍一下你们学校的图书馆。"
#: The max_tokens of the max-tokens-honoured request.
MAX_TOKENS_PROBE = 4
#: The most of a GET /v1/models answer that is read.
MAX_MODEL_LIST_BYTES = 1024 * 1024


def _row(name: str, passed: bool, severity: Severity, detail: str) -> CheckResult:
    return CheckResult(name, passed, severity, detail)


def _failed_request(ex: Exchange) -> str:
    if ex.status is None:
        return ex.failure_detail or (ex.failure or "?")
    said = f": {ex.failure_detail}" if ex.failure_detail else ""
    return f"HTTP {ex.status}{said}"


def utf8_row(ex: Exchange, whole: Exchange | None = None) -> CheckResult:
    """stream-utf8: the Chinese stream decoded event by event, no U+FFFD in its text.

    ``whole``: the same request without streaming, asked for when the stream holds
    U+FFFD. When it holds as many, the model itself wrote them (random or badly
    quantized weights, a byte-fallback tokenizer): a warning about the model, not a
    failure of the server's streaming.
    """
    name = "stream-utf8"
    if ex.status is None or not 200 <= ex.status < 300:
        return _row(
            name,
            False,
            "error",
            _("the streamed Chinese request failed ({seen}); it could not be checked").format(
                seen=_failed_request(ex)
            ),
        )
    text = ex.text
    bad = ex.framing.bad_utf8 if ex.framing is not None else 0
    garbled = text.count("\ufffd")
    if not text:
        return _row(name, False, "error", _("the streamed Chinese reply carried no text"))
    if bad or (garbled and not cut_in_a_character(ex)):
        return _garbled_row(ex, bad, garbled, whole)
    if ex.split_chars:
        detail = ngettext(
            "a Chinese reply of {chars} characters in {events} events, all valid UTF-8 "
            "({split} character arrived split across network reads and was put back together)",
            "a Chinese reply of {chars} characters in {events} events, all valid UTF-8 "
            "({split} characters arrived split across network reads and were put back together)",
            ex.split_chars,
        )
    elif garbled:
        detail = _(
            "a Chinese reply of {chars} characters in {events} events, all valid UTF-8; "
            "max_tokens cut its last character in two, so that one shows as U+FFFD"
        )
    else:
        detail = _("a Chinese reply of {chars} characters in {events} events, all valid UTF-8")
    return _row(
        name,
        True,
        "error",
        detail.format(chars=len(text), events=ex.events, split=ex.split_chars),
    )


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


def _garbled_row(ex: Exchange, bad: int, garbled: int, whole: Exchange | None) -> CheckResult:
    """stream-utf8 for a stream holding U+FFFD or bytes that are not UTF-8 (see utf8_row)."""
    text = ex.text
    where = text.index("\ufffd") if garbled else 0
    sample = repr(snippet(text[max(0, where - 8) :], 30))
    whole_text = reply_text(whole.json_body) if whole is not None and whole.ok else None
    if bad or whole is None:
        return _row(
            "stream-utf8",
            False,
            "error",
            _(
                "the streamed reply to a Chinese prompt holds {garbled} U+FFFD replacement "
                "characters and {bad} events that are not valid UTF-8, e.g. {sample}: students "
                "see garbled text. The server sends pieces of characters (byte-level tokens "
                "decoded one at a time); update it or its detokenizer so each chunk carries "
                "whole characters"
            ).format(garbled=garbled, bad=bad, sample=sample),
        )
    if whole_text is None:
        return _row(
            "stream-utf8",
            False,
            "error",
            _(
                "the streamed reply to a Chinese prompt holds {garbled} U+FFFD replacement "
                "characters, e.g. {sample}: students see garbled text. The same request "
                "without streaming could not be compared ({seen}), so whether the server "
                "sends pieces of characters or the model writes U+FFFD itself is not known; "
                "check the server's detokenizer and the model's weights"
            ).format(garbled=garbled, sample=sample, seen=_failed_request(whole)),
        )
    in_whole = whole_text.count("\ufffd")
    if in_whole >= garbled:
        return _row(
            "stream-utf8",
            False,
            "warning",
            _(
                "the model itself writes U+FFFD replacement characters: the streamed reply "
                "to a Chinese prompt holds {garbled}, e.g. {sample}, and the same request "
                "without streaming holds {whole}, so the server's streaming is not at fault. "
                "Students see garbled text where the model writes broken characters (random "
                "or badly quantized weights, a tokenizer that does not match the model): "
                "serve the model's original weights and tokenizer, or a better quantization"
            ).format(garbled=garbled, sample=sample, whole=in_whole),
        )
    return _row(
        "stream-utf8",
        False,
        "error",
        _(
            "the streamed reply to a Chinese prompt holds {garbled} U+FFFD replacement "
            "characters, e.g. {sample}, while the same request without streaming holds "
            "{whole}: students see garbled text. The server sends pieces of characters (byte-level "
            "tokens decoded one at a time); update it or its detokenizer so each chunk "
            "carries whole characters"
        ).format(garbled=garbled, sample=sample, whole=in_whole),
    )


def max_tokens_row(ex: Exchange, limit: int = MAX_TOKENS_PROBE) -> CheckResult:
    """max-tokens-honoured: at most ``limit`` completion tokens, or finish_reason "length"."""
    name = "max-tokens-honoured"
    if ex.status is None or not 200 <= ex.status < 300:
        return _row(
            name,
            False,
            "warning",
            _("a request with max_tokens {limit} failed ({seen})").format(
                limit=limit, seen=_failed_request(ex)
            ),
        )
    tokens, source = ex.output_tokens
    if ex.failure in ("timeout", "transport") and tokens <= limit and ex.finish != "length":
        # A reply that broke off (a timeout, a closed connection) says nothing of max_tokens.
        return _row(
            name,
            False,
            "warning",
            _("a request with max_tokens {limit} did not finish ({seen})").format(
                limit=limit, seen=ex.failure_detail or ex.failure
            ),
        )
    if tokens <= limit or ex.finish == "length":
        return _row(
            name,
            True,
            "warning",
            _("max_tokens {limit}: {tokens} tokens (from {source}), finish_reason {finish}").format(
                limit=limit, tokens=tokens, source=source, finish=ex.finish or "-"
            ),
        )
    return _row(
        name,
        False,
        "warning",
        _(
            "with max_tokens {limit} the reply had {tokens} tokens (from {source}), "
            "finish_reason {finish}: the server ignores max_tokens, so a runaway reply costs "
            "the platform time. Pass max_tokens through to the model (a gateway may drop it)"
        ).format(limit=limit, tokens=tokens, source=source, finish=ex.finish or "-"),
    )


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
                        return status, None, _("too large")
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


def _name_state(name: str, listing: ModelList | None, ex: Exchange | None) -> tuple[bool, str]:
    """Whether ``name`` is served, and what was seen."""
    listed = None if listing is None or listing.served is None else name in listing.served
    answered = ex is not None and ex.status is not None and 200 <= ex.status < 300
    seen: list[str] = []
    if listed is True:
        seen.append(_("listed by GET /v1/models"))
    elif listed is False:
        seen.append(_("not listed by GET /v1/models"))
    if ex is not None and not answered:
        said = error_message(ex.json_body) if ex.json_body is not None else None
        seen.append(
            _("a chat request with it got {seen}").format(
                seen=f"HTTP {ex.status}: {snippet(said, 100)}" if said else _failed_request(ex)
            )
        )
    elif ex is not None:
        seen.append(_("a chat request with it answered HTTP {status}").format(status=ex.status))
    return listed is not False and answered, clauses(seen)


def model_name_row(
    names: list[tuple[str, Exchange | None]], listing: ModelList | None
) -> CheckResult:
    """model-name-served over the names the platform may send, with how to align them."""
    states = [(name, *_name_state(name, listing, ex)) for name, ex in names]
    served = listing.served if listing is not None else None
    if not served:  # no list: the names that answered are what is known to be served
        served = [n for n, ok, _s in states if ok]
    served_text = join_list(served[:10]) if served else None
    if all(ok for _n, ok, _s in states):
        parts = [_('"{name}": {seen}').format(name=n, seen=seen) for n, _ok, seen in states]
        return _row("model-name-served", True, "warning", clauses(parts))
    bad = [(n, seen) for n, ok, seen in states if not ok]
    detail = clauses(
        _('the platform will send model "{name}": {seen}').format(name=n, seen=seen)
        for n, seen in bad
    ).rstrip(".")
    # Each join is a template: Chinese ends a sentence with "。", not ". " (issue 32).
    if served_text:
        served_said = _("The server serves: {names}").format(names=served_text)
        detail = _("{text}. {hint}").format(text=detail, hint=served_said)
    fix = _(
        "Register the modelName the server serves, or serve an alias "
        "(vLLM: --served-model-name {served} {name}; Ollama: ollama cp; a gateway: a model "
        "mapping)"
    ).format(served=(served[0] if served else "<served>"), name=bad[0][0])
    detail = _("{text}. {hint}").format(text=detail, hint=fix)
    return _row("model-name-served", False, "warning", detail)


def tls_row(cert: Certificate) -> CheckResult:
    """tls-certificate: verified (error if not), expiring within 30 days (warning)."""
    days = cert.days_left
    when = cert.not_after.date().isoformat() if cert.not_after is not None else "?"
    facts = _("issuer {issuer}, expires {when} ({days} days left)").format(
        issuer=cert.issuer or "?", when=when, days="?" if days is None else days
    )
    if cert.handshake_failed is not None:
        return _row(
            "tls-certificate",
            False,
            "error",
            _("the TLS handshake failed ({why}): no certificate could be read").format(
                why=snippet(cert.handshake_failed, 100)
            ),
        )
    if not cert.verified:
        return _row(
            "tls-certificate",
            False,
            "error",
            _(
                "the certificate does not verify: {why}; {facts}. The platform will refuse the "
                "connection: install a certificate from a public CA for this host name (e.g. "
                "Let's Encrypt), with its whole chain"
            ).format(why=cert.error or "?", facts=facts),
        )
    if days is not None and days < EXPIRY_WARNING_DAYS:
        return _row(
            "tls-certificate",
            False,
            "warning",
            _("the certificate expires soon: {facts}. Renew it (and automate renewal)").format(
                facts=facts
            ),
        )
    return _row("tls-certificate", True, "error", _("verifies; {facts}").format(facts=facts))


def private_only(addresses: list[str]) -> bool:
    """Every address is loopback, private, link-local or unspecified."""
    if not addresses:
        return False
    for text in addresses:
        try:
            ip = ipaddress.ip_address(text.split("%")[0])
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if not (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_unspecified):
            return False
    return True


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


def resolve_row(row: CheckResult, url: str, addresses: list[str] | None) -> CheckResult:
    """``url-public-host`` failed too when the name resolves only to private addresses."""
    if not row.passed or not addresses or not private_only(addresses):
        return row
    host = urlsplit(url).hostname or ""
    return _row(
        row.name,
        False,
        row.severity,
        _(
            "{host} resolves only to {addresses} from here (private or loopback): split-horizon "
            "DNS? The platform resolves it from outside and cannot reach these. Register a name "
            "with a public address"
        ).format(host=host, addresses=join_list(addresses[:4])),
    )
