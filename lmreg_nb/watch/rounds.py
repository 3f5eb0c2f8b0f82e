"""One round's calls: every registered model at once within a bound, one connection pool.

Each model is called by :func:`~lmreg_nb.watch.call.probe_model` (bounded by
its timeout, so a model that hangs holds one slot for that long and never
the round); each https host's certificate is read once per round
(:func:`lmreg_nb.probe.wire.tls.inspect_certificate`) for the days left and to
tell a TLS failure from other connection failures.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..i18n import _
from ..probe.wire.pool import pooled_transport
from ..probe.wire.tls import Certificate, inspect_certificate
from ..validate import unreachable_ip
from .alerts import TlsSeen
from .call import ProbeResult, probe_model, tls_failure
from .slots import FairSlots

if TYPE_CHECKING:
    import httpx

    from ..models import RegisteredModel
    from ..settings import Settings

__all__ = [
    "DEFAULT_CONCURRENCY",
    "MIN_CALL_S",
    "Observation",
    "make_client",
    "model_host",
    "probe_all",
    "unreachable_address",
]

#: Calls in flight at once: 1,000 models of ~0.2 s each take a few seconds.
DEFAULT_CONCURRENCY = 32
#: A call is not started in the last moment of its school's round (a slot freed then
#: would only start a call that every other model of the school has shown will hang).
MIN_CALL_S = 0.5


@dataclass(frozen=True)
class Observation:
    """What the round saw of one model: the call's verdict and the certificate."""

    model: RegisteredModel
    result: ProbeResult
    tls: TlsSeen | None


def make_client(concurrency: int, timeout: float) -> httpx.AsyncClient:
    """The one connection pool of a watch: ``concurrency`` connections, kept between rounds."""
    import httpx

    return httpx.AsyncClient(
        transport=pooled_transport(concurrency),
        timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
        # A redirect is a proxy or a login page; the platform would not follow it either.
        follow_redirects=False,
    )


def model_host(url: str) -> tuple[str, int, bool]:
    """(host, port, https) of a registryUrl; ("", 0, False) when it has none."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        https = parts.scheme == "https"
        return host, parts.port or (443 if https else 80), https
    except ValueError:
        return "", 0, False


def _seen(cert: Certificate | None) -> TlsSeen | None:
    if cert is None or cert.handshake_failed:
        return None
    expires = int(cert.not_after.timestamp() * 1000) if cert.not_after else None
    return TlsSeen(cert.days_left, expires, cert.issuer, cert.verified)


async def unreachable_address(host: str, timeout: float) -> str | None:
    """The address (after resolving ``host``) the platform cannot reach, or None.

    Loopback, private (carrier-grade NAT too), link-local and unspecified addresses, as
    :func:`lmreg_nb.validate.unreachable_ip` judges them: the platform cannot call them,
    and a registration aimed there would make the watch post the apiKey to the
    provider's own services. A name that does not resolve is left to the call.
    """
    if not host:
        return None
    if unreachable_ip(host):
        return host
    try:
        async with asyncio.timeout(timeout):
            infos = await asyncio.get_running_loop().getaddrinfo(host, None)
    except (OSError, TimeoutError, UnicodeError):
        return None
    found = [str(info[4][0]) for info in infos]
    return next((a for a in found if unreachable_ip(a)), None)


def _private_result(host: str, address: str) -> ProbeResult:
    shown = host if host == address else f"{host} ({address})"
    return ProbeResult(
        False,
        "private-address",
        _("{host} is not an address the platform can reach; not called").format(host=shown),
    )


class _SchoolClock:
    """When a school's round ends: ``idle`` seconds after its last answer.

    The clock starts with the school's first call (time spent waiting for a slot behind
    other schools is the machine's bound, not the school's); any answer, even an error,
    moves the end; a call that times out does not. So a school whose models all hang
    ends one timeout after its calls began, and a school of 2,000 healthy models is
    never cut short.
    """

    def __init__(self, idle: float) -> None:
        self.idle = idle
        self.last: float | None = None

    def end(self) -> float:
        return math.inf if self.last is None else self.last + self.idle

    def answered(self, now: float) -> None:
        self.last = now if self.last is None else max(self.last, now)


async def _take_slot(slots: FairSlots, school: str, clock: _SchoolClock) -> bool:
    """A call slot for ``school``; False when its round ended first (its models hung)."""
    loop = asyncio.get_running_loop()
    while True:
        limit = clock.end() - MIN_CALL_S
        try:
            if math.isinf(limit):
                await slots.acquire(school)
            else:
                async with asyncio.timeout_at(limit):
                    await slots.acquire(school)
        except TimeoutError:
            if clock.end() - MIN_CALL_S > loop.time():
                continue  # a model answered meanwhile: the round goes on
            return False
        if clock.last is None:
            clock.answered(loop.time())  # the school's calls begin: its clock starts
        return True


async def probe_all(
    models: Sequence[RegisteredModel],
    settings: Settings | Sequence[Settings],
    client: httpx.AsyncClient,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    allow_private: bool = True,
    slots: FairSlots | None = None,
    school: str = "",
) -> list[Observation]:
    """Call every model once (at most ``concurrency`` at a time); one Observation each.

    ``settings``: one for all, or one per model (the fleet: each school's own).
    ``allow_private`` False: a model at a loopback or private address is not called.
    ``slots``: the round's call slots, shared fairly with the other schools (``school``
    is this one's key). The school's round ends one timeout after its last answer: its
    models that hang cost it one timeout, not one each; a model whose turn has not come
    by then is ``not-called`` (models are called in the order given: the caller puts
    first those not called last time).

    Each https host's handshake is made once, outside the bound (it waits on the
    network, not on this machine): a host whose handshake does not complete costs its
    models one timeout, in parallel with everything else, and takes no call slot.
    """
    each = [settings] * len(models) if not isinstance(settings, Sequence) else list(settings)
    first = each[0] if each else None
    timeout = first.timeout if first is not None else 10.0
    loop = asyncio.get_running_loop()
    clock = _SchoolClock(timeout)
    slots = slots if slots is not None else FairSlots(max(1, concurrency))
    blocked: dict[str, str | None] = {}
    if not allow_private:
        names = sorted({model_host(m.registry_url)[0] for m in models})
        found_blocked = await asyncio.gather(
            *(unreachable_address(h, min(timeout, 5.0)) for h in names)
        )
        blocked = dict(zip(names, found_blocked, strict=True))
    handshakes: dict[tuple[str, int], asyncio.Task[tuple[Certificate | None, float]]] = {}

    async def handshake(host: str, port: int) -> tuple[Certificate | None, float]:
        began = time.perf_counter()
        cert = await inspect_certificate(host, port, timeout)
        return cert, time.perf_counter() - began

    async def call(model: RegisteredModel, its: Settings) -> Observation:
        host, port, https = model_host(model.registry_url)
        address = blocked.get(host)
        if address is not None:
            return Observation(model, _private_result(host, address), None)
        cert = None
        if https and host:
            if (host, port) not in handshakes:
                handshakes[host, port] = asyncio.ensure_future(handshake(host, port))
            cert, took = await asyncio.shield(handshakes[host, port])
            if cert is None or cert.hung:  # no TLS connection: the call could not make one
                return Observation(model, _no_handshake(host, port, took, timeout, cert), None)
        if not await _take_slot(slots, school, clock):
            return Observation(model, _not_called(timeout), _seen(cert))
        try:
            result = await probe_model(model, its, client)
        finally:
            slots.release(school)
        if result.kind != "timeout":
            clock.answered(loop.time())
        return Observation(model, tls_failure(result, cert, host), _seen(cert))

    return list(await asyncio.gather(*(call(m, s) for m, s in zip(models, each, strict=True))))


def _not_called(timeout: float) -> ProbeResult:
    return ProbeResult(
        False,
        "not-called",
        _(
            "not called within this round's {seconds} s: the school's other models did not "
            "answer and held its call slots"
        ).format(seconds=f"{timeout:g}"),
    )


def _no_handshake(
    host: str, port: int, took: float, timeout: float, cert: Certificate | None
) -> ProbeResult:
    seconds = f"{timeout:g}"
    if cert is not None:  # connected, and the hello was never answered
        why = _(
            "the TLS handshake with {host}:{port} did not complete within {seconds} s: the "
            "port may serve plain http"
        )
    elif took >= timeout * 0.9:
        why = _("connecting to {host}:{port} timed out after {seconds} s")
    else:
        return ProbeResult(
            False,
            "unreachable",
            _("no connection to {host}:{port}").format(host=host, port=port),
            latency_s=took,
        )
    return ProbeResult(
        False, "timeout", why.format(host=host, port=port, seconds=seconds), latency_s=took
    )
