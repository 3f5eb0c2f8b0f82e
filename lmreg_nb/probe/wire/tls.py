"""The TLS certificate of an https endpoint, read the way the platform's client will verify it.

One handshake with the toolkit's verifying context (certifi, or SSL_CERT_FILE /
SSL_CERT_DIR) says whether the certificate verifies for the host; when it does
not, a second handshake without verification reads the certificate anyway, so
the check can name its issuer and expiry date (parsed with ``cryptography``
when it is installed; without it only the verification error is shown).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from ..._tls import ca_variable, public_tls_context, tls_context
from ...i18n import _

__all__ = ["EXPIRY_WARNING_DAYS", "Certificate", "inspect_certificate"]

#: A certificate expiring within this many days gets a warning.
EXPIRY_WARNING_DAYS = 30


@dataclass(frozen=True)
class Certificate:
    """What the handshake showed: verified or why not, issuer, expiry."""

    verified: bool
    error: str | None = None  # the verification error, when not verified
    issuer: str | None = None
    not_after: datetime | None = None
    handshake_failed: str | None = None  # no certificate at all: the handshake itself failed
    #: The TCP connection was made and the TLS handshake never finished (a plain-http
    #: port that waits for a request: llama.cpp's server), as against no connection.
    hung: bool = False
    #: Verified only with the CAs a variable adds (SSL_CERT_FILE, SSL_CERT_DIR), which
    #: the platform does not have: that variable's name; None otherwise.
    private_ca: str | None = None

    @property
    def days_left(self) -> int | None:
        """Whole days until expiry; once expired, minus the whole days since (a day and a
        half ago is -1, as people count it: a timedelta's own days would say -2)."""
        if self.not_after is None:
            return None
        left = self.not_after - datetime.now(UTC)
        return left.days if left.days >= 0 else -(-left).days


def _name(parts: tuple[tuple[tuple[str, str], ...], ...]) -> str:
    fields = {k: v for rdn in parts for k, v in rdn}
    return fields.get("organizationName") or fields.get("commonName") or "?"


def _from_peercert(cert: Mapping[str, object]) -> tuple[str | None, datetime | None]:
    issuer = cert.get("issuer")
    after = cert.get("notAfter")
    when = None
    if isinstance(after, str):
        when = datetime.fromtimestamp(ssl.cert_time_to_seconds(after), UTC)
    return (_name(issuer) if isinstance(issuer, tuple) else None), when


def _from_der(der: bytes | None) -> tuple[str | None, datetime | None]:
    if not der:
        return None, None
    try:
        from cryptography import x509
        from cryptography.x509.oid import NameOID
    except ImportError:  # optional: only the verification error is shown then
        return None, None
    try:
        cert = x509.load_der_x509_certificate(der)
        names = cert.issuer.get_attributes_for_oid(
            NameOID.ORGANIZATION_NAME
        ) or cert.issuer.get_attributes_for_oid(NameOID.COMMON_NAME)
        issuer = str(names[0].value) if names else cert.issuer.rfc4514_string()
        return issuer, cert.not_valid_after_utc
    except ValueError:
        return None, None


class _Hung(Exception):
    """The TCP connection was made; the TLS handshake did not finish within the timeout."""


async def _handshake(
    host: str, port: int, context: ssl.SSLContext, timeout: float
) -> ssl.SSLObject | None:
    # TCP first, then TLS: a port that accepts and never answers the hello is told apart
    # from one nothing answers at all (a firewall that drops the packets).
    writer: asyncio.StreamWriter | None = None
    shaken = False
    try:
        async with asyncio.timeout(timeout):
            _reader, writer = await asyncio.open_connection(host, port)
            await writer.start_tls(context, server_hostname=host, ssl_handshake_timeout=timeout)
            shaken = True
    except TimeoutError:
        if writer is None:
            raise
        raise _Hung from None
    finally:
        if writer is not None and not shaken:
            writer.close()
    obj = writer.get_extra_info("ssl_object")
    writer.close()
    with contextlib.suppress(Exception):  # the peer may drop the connection first
        await asyncio.wait_for(writer.wait_closed(), 1)
    return obj if isinstance(obj, ssl.SSLObject) else None


async def _private_ca(host: str, port: int, timeout: float) -> str | None:
    """The variable whose CAs alone verify the certificate (a campus CA in SSL_CERT_FILE,
    set for pip behind a TLS-inspecting proxy), or None: certifi's public CAs verify it
    too, or no such variable is set. One more handshake, only when one is set."""
    variable = ca_variable()
    if variable is None:
        return None
    try:
        await _handshake(host, port, public_tls_context(), timeout)
    except ssl.SSLCertVerificationError:
        return variable
    except (OSError, TimeoutError, _Hung):
        return None  # not said: the first handshake verified, this one did not finish
    return None


async def inspect_certificate(
    host: str, port: int, timeout: float, *, ask_public: bool = False
) -> Certificate | None:
    """The certificate at ``host:port``; None when no TCP connection could be made.

    A handshake that fails for another reason than verification gives
    ``handshake_failed`` (the connection checks explain it further); one that never
    finishes is also ``hung``. ``ask_public`` (the check's row, which says it; not the
    watch's rounds): whether only the CAs of SSL_CERT_FILE/SSL_CERT_DIR verify it.
    """
    try:
        obj = await _handshake(host, port, tls_context(), timeout)
    except _Hung:
        return Certificate(
            False,
            handshake_failed=_(
                "no answer to the TLS handshake within {seconds} s (does the port serve "
                "plain http?)"
            ).format(seconds=f"{timeout:g}"),
            hung=True,
        )
    except ssl.SSLCertVerificationError as exc:
        error = exc.verify_message or str(exc)
    except ssl.SSLError as exc:
        return Certificate(False, handshake_failed=str(exc))
    except (OSError, TimeoutError):
        return None
    else:
        peer = obj.getpeercert() if obj is not None else None
        issuer, when = _from_peercert(peer) if peer else (None, None)
        private = await _private_ca(host, port, timeout) if ask_public else None
        return Certificate(True, issuer=issuer, not_after=when, private_ca=private)
    unverified = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE
    try:
        obj = await _handshake(host, port, unverified, timeout)
        der = obj.getpeercert(binary_form=True) if obj is not None else None
    except (OSError, TimeoutError, _Hung):
        der = None
    issuer, when = _from_der(der)
    return Certificate(False, error=error, issuer=issuer, not_after=when)
