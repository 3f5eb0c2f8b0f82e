"""Plain reasons for a failed connection: DNS, refused, TLS, timeouts, each with what to do.

httpx wraps the socket's or the ssl module's error; the reason is read from
the exception chain (its types), not only its wording, so a name that does not
resolve, a port nobody listens on, https spoken to a plain-http port and a TLS
handshake the server refuses each get one sentence a school engineer can act on.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from urllib.parse import urlsplit

from ...i18n import N_, _, listing
from ...open_files import open_files_reason
from ...terminal import snippet

__all__ = ["LOCAL_LIMIT", "TOO_LONG", "kinds_text", "transport_reason"]

#: The error kind of a request this computer could not even send (out of file descriptors).
LOCAL_LIMIT = "local limit"
#: The error kind of a reply longer than the client reads (its 4 MiB cap): the client
#: stopped it, the server did not cut it.
TOO_LONG = "too long"

#: Error kinds (stable identifiers, kept as they are in JSON) as people read them.
_KIND_LABELS = {
    "connect": N_("cannot connect"),
    LOCAL_LIMIT: N_("too many open files here (ulimit -n)"),
    "timeout": N_("timed out"),
    "transport": N_("connection broke"),
    "bad stream": N_("malformed stream"),
    "bad body": N_("malformed reply"),
    "cut stream": N_("cut stream"),
    "stalled": N_("stalled after the first token"),
    TOO_LONG: N_("reply over 4 MiB, not read to its end"),
}


def kinds_text(counts: Mapping[str, int]) -> str:
    """``timed out ×3, HTTP 500 ×2``: error kinds and their counts, in the reader's language."""

    def label(kind: str) -> str:
        if kind.startswith("status "):
            return "HTTP " + kind.removeprefix("status ")
        return _(_KIND_LABELS[kind]) if kind in _KIND_LABELS else kind

    return listing(f"{label(kind)} ×{n}" for kind, n in counts.items())


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 10:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _where(url: str) -> tuple[str, str]:
    try:
        parts = urlsplit(url)
        host = parts.hostname or url
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return url, "?"
    return host, str(port)


def _tls_reason(err: ssl.SSLError, host: str, port: str) -> str:
    if isinstance(err, ssl.SSLCertVerificationError):
        return _(
            "the TLS certificate of {host} does not verify ({why}); see the tls-certificate "
            "row. The platform will refuse it too"
        ).format(host=host, why=snippet(err.verify_message or str(err), 120))
    text = str(err)
    if "WRONG_VERSION_NUMBER" in text or "record layer failure" in text.lower():
        return _(
            "{host}:{port} does not speak TLS: https was sent to a plain-http port. Use "
            "http:// for this port, or the port where the server serves https"
        ).format(host=host, port=port)
    return _(
        "the TLS handshake with {host}:{port} failed ({why}): the server closed or refused "
        "it. Check the server's TLS setup (certificate, key, protocol versions)"
    ).format(host=host, port=port, why=snippet(text, 100))


def transport_reason(exc: BaseException, url: str) -> str:
    """One sentence saying why ``url`` could not be reached and what to do (not masked)."""
    host, port = _where(url)
    local = open_files_reason(exc, f"{host}:{port}")
    if local is not None:  # our own limit, not the server's doing
        return local
    chain = _chain(exc)
    for err in chain:
        if isinstance(err, ssl.SSLError):
            return _tls_reason(err, host, port)
        if isinstance(err, socket.gaierror):
            return _(
                "the host name {host} does not resolve (DNS: {why}). Check its spelling, and "
                "that it is a public name the platform can resolve"
            ).format(host=host, why=snippet(err.strerror or str(err), 80))
        if isinstance(err, ConnectionRefusedError):
            return _(
                "nothing listens on {host}:{port} (connection refused). Is the model server "
                "running, on this port, and open to the platform?"
            ).format(host=host, port=port)
        if isinstance(err, ConnectionResetError | BrokenPipeError):
            return _(
                "{host}:{port} closed the connection at once ({why}). Check that the port "
                "serves HTTP(S) and that no firewall drops the platform"
            ).format(host=host, port=port, why=snippet(str(err), 80))
        if isinstance(err, TimeoutError) or type(err).__name__ == "ConnectTimeout":
            if url.lower().startswith("https://"):
                # The TLS handshake's timeout reads the same: a plain-http port that answers
                # no TLS hello (llama.cpp's server) waits without end.
                return _(
                    "connecting to {host}:{port} timed out: a firewall may drop the packets, "
                    "or the host is down, or the port serves plain http and never answers "
                    "the TLS handshake (then register {plain})"
                ).format(host=host, port=port, plain="http://" + url[len("https://") :])
            return _(
                "connecting to {host}:{port} timed out: a firewall may drop the packets, or "
                "the host is down. Open the port to the platform"
            ).format(host=host, port=port)
        if isinstance(err, OSError) and err.errno is not None:
            return _(
                "{host}:{port} cannot be reached from here ({why}). Check the address and "
                "the network path"
            ).format(host=host, port=port, why=snippet(err.strerror or str(err), 80))
    return _("could not connect to {url}: {why}").format(
        url=url, why=snippet(str(exc), 160) or type(exc).__name__
    )
