"""One call of a registered model, as the platform makes it: the adapter over the probe.

The request path of ``check --registered``: the registered registryUrl and
apiKey, body ``model`` = LMREG_MODEL_NAME when set, else the modelName (the
rule of :meth:`lmreg_nb.probe.Target.from_model`), one short streamed chat with
a Chinese prompt and a small ``max_tokens``, so a probe costs the school a few
tokens. :func:`probe_model` is the only place this package calls the probe; it
never raises for what the server does, and its detail is masked (a server may
echo the key).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ValidationError
from ..i18n import _, ngettext
from ..probe.target import Target
from ..probe.wire.exchange import Exchange, chat_body, send
from ..secret import Masker
from ..terminal import snippet

if TYPE_CHECKING:
    import httpx

    from ..models import RegisteredModel
    from ..probe.wire.tls import Certificate
    from ..settings import Settings

__all__ = [
    "KINDS",
    "MAX_TOKENS",
    "PROMPT",
    "ProbeResult",
    "body_model",
    "probe_model",
    "tls_failure",
]

#: A Chinese question with a one-line answer: the reply is Chinese text (U+FFFD shows up).
PROMPT = "你好，请用一句话介绍你自己。"
#: Enough tokens for a few characters; a probe every minute costs the school almost nothing.
MAX_TOKENS = 16

#: Failure kinds (stable identifiers, kept in the state file and never translated).
KINDS = (
    "refused-key",  # 401 / 403: the registered apiKey is not accepted
    "tls",  # the certificate does not verify
    "timeout",  # no (complete) reply in time
    "unreachable",  # no connection: DNS, refused, TLS handshake, network
    "http-5xx",  # the model server failed
    "http-error",  # another error status (404, 400, 429...)
    "replacement-char",  # the reply holds U+FFFD
    "no-content",  # 2xx without any text
    "bad-reply",  # a broken stream or body
    "registration",  # the registration itself cannot be called (no apiKey, bad URL)
    "private-address",  # registered at a loopback or private address: not called
    "not-called",  # the school's round ended first: its other models held every slot
)


@dataclass(frozen=True)
class ProbeResult:
    """What one call showed: passed, or a failure kind and a one-line detail (masked)."""

    ok: bool
    kind: str | None = None
    detail: str = ""
    latency_s: float | None = None
    status: int | None = None


def body_model(model: RegisteredModel, settings: Settings) -> str:
    """The body ``model`` the platform sends: LMREG_MODEL_NAME when set, else the modelName."""
    return (settings.model_name or "").strip() or model.model_name.strip()


async def probe_model(
    model: RegisteredModel,
    settings: Settings,
    client: httpx.AsyncClient,
    *,
    budget: float | None = None,
) -> ProbeResult:
    """Call ``model`` once as the platform does; the verdict, never an exception.

    The whole call is bounded by the timeout (LMREG_TIMEOUT), or by ``budget`` when
    shorter (what is left of the school's round): a model that hangs costs at most that.
    """
    limit = settings.timeout if budget is None else max(0.001, min(settings.timeout, budget))
    mask = Masker([model.api_key.reveal()] if model.api_key else [])
    try:
        target = Target.from_model(
            model, model=body_model(model, settings), timeout=settings.timeout
        )
    except ValidationError as exc:
        return ProbeResult(False, "registration", mask(str(exc)))
    body = chat_body(target.model, PROMPT, stream=True, max_tokens=MAX_TOKENS)
    started = time.perf_counter()
    try:
        async with asyncio.timeout(limit):
            ex = await send(client, target, body, stream=True, keep_events=True)
    except TimeoutError:
        return ProbeResult(
            False,
            "timeout",
            _("no complete reply within {seconds} s").format(seconds=f"{limit:.3g}"),
            latency_s=time.perf_counter() - started,
        )
    return judge(ex, mask)


def judge(ex: Exchange, mask: Masker) -> ProbeResult:
    """The verdict on one exchange: the kind of failure in the terms an alert uses."""
    latency = ex.latency
    detail = mask(snippet(ex.failure_detail, 200)) if ex.failure_detail else ""
    failure = ex.failure
    if failure is None:
        if "\ufffd" in ex.text:
            return ProbeResult(
                False,
                "replacement-char",
                _("{n} of {total} characters").format(
                    n=ex.text.count("\ufffd"), total=len(ex.text)
                ),
                latency,
                ex.status,
            )
        return ProbeResult(True, latency_s=latency, status=ex.status)
    if failure.startswith("status "):
        status = ex.status or 0
        kind = "refused-key" if status in (401, 403) else "http-5xx" if status >= 500 else None
        return ProbeResult(False, kind or "http-error", detail, latency, status)
    if failure in ("bad stream", "bad body") and not ex.pieces:
        if _reasoned(ex):  # a reasoning model spent the few tokens thinking: it answers
            return ProbeResult(True, latency_s=latency, status=ex.status)
        if not ex.error_events and not ex.non_json:
            return ProbeResult(False, "no-content", detail, latency, ex.status)
    kind = {"timeout": "timeout", "connect": "unreachable"}.get(failure, "bad-reply")
    return ProbeResult(False, kind, detail, latency, ex.status)


def _reasoned(ex: Exchange) -> bool:
    """Whether the stream carried reasoning text (``reasoning_content`` / ``reasoning``)."""
    for data in ex.data_events:
        try:
            obj = json.loads(data)
        except ValueError:
            continue
        choices = obj.get("choices") if isinstance(obj, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            continue
        delta = choices[0].get("delta")
        if isinstance(delta, dict) and any(
            isinstance(delta.get(k), str) and delta.get(k)
            for k in ("reasoning_content", "reasoning")
        ):
            return True
    return False


def tls_failure(result: ProbeResult, cert: Certificate | None, host: str) -> ProbeResult:
    """A failed call whose certificate does not verify is a TLS failure, said as such."""
    if result.ok or cert is None or cert.verified or cert.handshake_failed:
        return result
    days = cert.days_left
    if days is not None and days < 0:
        why = ngettext(
            "the TLS certificate of {host} expired {days} day ago",
            "the TLS certificate of {host} expired {days} days ago",
            -days,
        ).format(host=host, days=-days)
    else:
        why = _("the TLS certificate of {host} does not verify: {error}").format(
            host=host, error=snippet(cert.error or "", 120)
        )
    return ProbeResult(False, "tls", why, result.latency_s, result.status)
