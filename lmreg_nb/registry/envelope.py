"""The platform's answers: read them within bounds, turn them into data or a typed error.

:func:`read_answer` sends one POST and reads the answer with a size cap and an
overall deadline (httpx's timeouts apply to each read, so a server trickling
bytes, or sending without end, would otherwise hold the client forever and
fill its memory). :func:`parse_envelope` is the one place that turns an answer
into the envelope's ``data`` or the typed error it stands for (both error
styles: an HTTP error status, or HTTP 200 with a non-zero code). Any text from
the server is masked (:func:`clean_message`) before it reaches a message.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Iterable
from typing import Any

import httpx

from .._decode import IDENTITY, DecodingError, inflated
from ..errors import (
    AuthenticationError,
    ConfigurationError,
    ConnectError,
    CredentialsError,
    LmregError,
    MalformedResponseError,
    NotFoundError,
    RateLimitError,
    RequestTimeout,
    TransportError,
    api_error_for,
    operation_label,
)
from ..i18n import _
from ..open_files import open_files_reason
from ..secret import mask_text

__all__ = [
    "HOPELESS",
    "MAX_ANSWER_BYTES",
    "NEVER_SENT",
    "AnswerTooLarge",
    "DeadlineExceeded",
    "bounded_error",
    "clean_message",
    "not_found_error",
    "parse_envelope",
    "parse_retry_after",
    "read_answer",
    "transport_error",
]

log = logging.getLogger("lmreg_nb")

#: An answer of the registration API is a small JSON envelope; a listing of many
#: models stays far below this. Anything longer is not the platform speaking.
MAX_ANSWER_BYTES = 8 * 1024 * 1024
_MAX_MESSAGE = 300
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


class AnswerTooLarge(Exception):
    """The answer's body went over the cap; what was read is dropped."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"over {limit} bytes")
        self.limit = limit


class DeadlineExceeded(Exception):
    """The whole answer did not arrive within the deadline (each read may have been quick)."""

    def __init__(self, seconds: float, received: int) -> None:
        super().__init__(f"no complete answer within {seconds:g} s")
        self.seconds = seconds
        self.received = received


def read_answer(
    http: httpx.Client,
    path: str,
    body: dict[str, Any],
    headers: dict[str, str],
    *,
    deadline_s: float,
    limit: int = MAX_ANSWER_BYTES,
) -> httpx.Response:
    """POST ``body`` and read the whole answer, at most ``limit`` bytes within ``deadline_s``.

    A watchdog shuts the socket at the deadline, headers included, so the
    whole call ends within ``deadline_s``. Raises AnswerTooLarge,
    DeadlineExceeded, or httpx's own TransportError.
    """
    started = time.monotonic()
    try:
        response = _read(http, path, body, headers, started + deadline_s, deadline_s, limit)
    except (httpx.TransportError, AnswerTooLarge, DeadlineExceeded) as exc:
        log.debug(
            "POST %s failed after %.0f ms: %s",
            path,
            (time.monotonic() - started) * 1000,
            type(exc).__name__,
        )
        raise
    log.debug(
        "POST %s -> %d in %.0f ms (request id %s)",
        path,
        response.status_code,
        (time.monotonic() - started) * 1000,
        response.headers.get("x-request-id") or "-",
    )
    return response


class _Watchdog:
    """Shuts the request's socket when the deadline passes.

    httpx's timeouts apply to each read, and h11 takes headers of up to 16 KiB:
    a server sending its headers a byte at a time would hold the call for
    hours. The trace extension hands over the socket when the connection
    opens (the client keeps no idle connections, so every call opens one); a
    timer shuts it at the deadline, which ends a blocked read at once.
    """

    def __init__(self, ends: float) -> None:
        self.fired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, ends - time.monotonic()), self._fire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._timer.cancel()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: keep the newest socket (plain, then TLS)."""
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            with self._lock:
                self._sock = stream.get_extra_info("socket") if stream is not None else None
                if self.fired:
                    self._shut()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            self._shut()

    def _shut(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)


def _read(
    http: httpx.Client,
    path: str,
    body: dict[str, Any],
    headers: dict[str, str],
    ends: float,
    deadline_s: float,
    limit: int,
) -> httpx.Response:
    with _Watchdog(ends) as watchdog:
        try:
            with http.stream(
                "POST",
                path,
                json=body,
                headers={**headers, **IDENTITY},
                extensions={"trace": watchdog.trace},
            ) as response:
                content = _body(response, ends, deadline_s, limit)
        except httpx.TransportError as exc:
            if watchdog.fired:
                raise DeadlineExceeded(deadline_s, 0) from exc
            raise
    kept = [
        (k, v)
        for k, v in response.headers.multi_items()
        if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        response.status_code, headers=kept, content=content, request=response.request
    )


def _body(response: httpx.Response, ends: float, deadline_s: float, limit: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise AnswerTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    try:
        # Inflated with a bound: httpx's iter_bytes inflates a whole network read
        # (64 KiB of a gzip bomb is 64 MiB) before the cap could count it.
        for chunk in inflated(response, limit):
            size += len(chunk)
            if size > limit:
                raise AnswerTooLarge(limit)
            chunks.append(chunk)
            if time.monotonic() > ends:
                raise DeadlineExceeded(deadline_s, size)
    except DecodingError as exc:  # as httpx said it before
        raise httpx.DecodingError(str(exc), request=response.request) from exc
    if time.monotonic() > ends:
        raise DeadlineExceeded(deadline_s, size)
    return b"".join(chunks)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds (delta-seconds or an HTTP date); None when absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def clean_message(text: str, secrets: Iterable[str]) -> str:
    """One line, bounded, with every known secret masked (in any of its encodings)."""
    # Cut first so masking stays cheap; a secret cut at the edge is cut again below.
    # Values under 4 characters are test stubs, not secrets: masking them would garble text.
    text = mask_text(text[: _MAX_MESSAGE * 8], [s for s in secrets if len(s) >= 4])
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _describe_body(response: httpx.Response) -> str:
    ctype = response.headers.get("content-type", "").split(";")[0].strip()
    content = response.content
    if not content:
        return _("an empty body")
    if "html" in ctype or content.lstrip()[:15].lower().startswith((b"<!doctype", b"<html")):
        match = _TITLE.search(content[:65536])
        title = match.group(1).decode("utf-8", "replace").strip() if match else ""
        if title:
            return _('an HTML page ("{title}")').format(title=title[:80])
        return _("an HTML page")
    if not ctype:
        return _("a body that is not JSON (no content-type)")
    return _("a body that is not JSON ({content_type})").format(content_type=ctype)


def parse_envelope(
    response: httpx.Response,
    operation: str,
    *,
    secrets: Iterable[str] = (),
    typed: bool = False,
) -> dict[str, Any]:
    """The envelope's ``data``, or the typed APIError the response stands for.

    Both error styles are errors: an HTTP error status, or HTTP 200 with a
    non-zero code. Anything that is not the JSON envelope raises
    MalformedResponseError (never a JSONDecodeError). ``typed``: the credentials
    were typed into a form (the error's hint then names the form, not LMREG_*).
    """
    status = response.status_code
    request_id = response.headers.get("x-request-id") or None
    secrets = list(secrets)
    if request_id:
        request_id = clean_message(request_id, secrets)[:80]

    def malformed(what: str) -> MalformedResponseError:
        return MalformedResponseError(
            clean_message(what, secrets), status=status, request_id=request_id, operation=operation
        )

    if 300 <= status < 400:
        where = httpx.URL(response.headers.get("location", ""))
        target = f"{where.host}{where.path}" if where.host else where.path or "elsewhere"
        raise malformed(
            _("the platform redirected to {target} instead of answering").format(target=target)
        )
    try:
        payload = json.loads(response.content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise malformed(
            _("the answer was {what}, not the JSON envelope").format(what=_describe_body(response))
        ) from None
    if not isinstance(payload, dict) or "code" not in payload:
        keys = ", ".join(sorted(map(str, payload))) if isinstance(payload, dict) else ""
        if isinstance(payload, dict):
            text = _("the answer was an object without the envelope's code (keys: {keys})")
        else:
            text = _("the answer was a JSON {kind} without the envelope's code (keys: {keys})")
        raise malformed(text.format(kind=type(payload).__name__, keys=keys or "none"))
    code = _as_code(payload.get("code"))
    if code is None:
        raise malformed(_("the envelope's code is not an integer"))
    raw_message = payload.get("message")
    message = clean_message(raw_message, secrets) if isinstance(raw_message, str) else ""
    if status >= 400 or code != 0:
        cls = api_error_for(status, code if code != 0 else None)
        if operation == "token" and issubclass(cls, AuthenticationError):
            # The exchange sends no token: "unknown" or "expired" can only mean the app.
            cls = CredentialsError
        kw: dict[str, Any] = {"status": status, "code": code or None, "request_id": request_id}
        if issubclass(cls, RateLimitError):
            kw["retry_after"] = parse_retry_after(response.headers.get("retry-after"))
        raise cls(message or f"HTTP {status}", operation=operation, server=True, typed=typed, **kw)
    data = payload.get("data")
    if not isinstance(data, dict):
        raise malformed(_("the envelope's data is not an object"))
    return data


def _as_code(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,9}", value.strip()):
        return int(value)
    return None


# -- failures in plain words ---------------------------------------------------------

# httpx failures in which the request certainly never reached the server.
NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# httpx failures that a retry cannot fix (a bad URL, an unsupported scheme).
HOPELESS = (httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.ProxyError)


def bounded_error(exc: AnswerTooLarge | DeadlineExceeded, operation: str, host: str) -> LmregError:
    """The one-line error for an answer that went over the cap or the deadline."""
    if isinstance(exc, AnswerTooLarge):
        return MalformedResponseError(
            _(
                "the answer from {host} went over {mib} MiB; it is not the platform's envelope"
            ).format(host=host, mib=exc.limit // (1024 * 1024)),
            operation=operation,
        )
    return RequestTimeout(
        _(
            "{operation}: {host} did not finish its answer within {seconds} s "
            "({received} bytes arrived); try again, or raise LMREG_TIMEOUT"
        ).format(
            operation=operation_label(operation),
            host=host,
            seconds=f"{exc.seconds:g}",
            received=exc.received,
        )
    )


def not_found_error(exc: NotFoundError, operation: str, base_url: str, path: str) -> LmregError:
    """A 404: an unknown modelId for modify; for anything else, a wrong address."""
    base = httpx.URL(base_url)
    base_path = base.path.rstrip("/")
    if base_path.endswith("/openapi/v1"):
        fixed = str(base.copy_with(path=base_path[: -len("/openapi/v1")] or "/")).rstrip("/")
        return ConfigurationError(
            _(
                "LMREG_BASE_URL ends in /openapi/v1: drop that suffix (set it to {fixed}); "
                "the toolkit adds the operation paths itself"
            ).format(fixed=fixed),
            variable="LMREG_BASE_URL",
        )
    if operation == "modify-model" and exc.code == 40400:
        return exc
    variable = "LMREG_TOKEN_PATH" if operation == "token" else "LMREG_BASE_URL"
    return ConfigurationError(
        _(
            "{operation}: {host} has no {path} (HTTP 404); check {variable} "
            "(LMREG_BASE_URL is the platform's address, e.g. https://ai.school.example)"
        ).format(
            operation=operation_label(operation), host=base.host, path=path, variable=variable
        ),
        variable=variable,
    )


def transport_error(
    exc: httpx.TransportError,
    operation: str,
    host: str,
    *,
    timeout: float,
    secrets: Iterable[str] = (),
) -> TransportError:
    """The one-line error for a request that got no answer."""
    local = open_files_reason(exc, host)
    if local is not None:
        return TransportError(_("{operation}: {reason}").format(operation=operation, reason=local))
    if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
        # A read or write timeout: connected, then no answer (ConnectTimeout is below).
        return RequestTimeout(
            _(
                "{operation}: no answer from {host} within {seconds} s; "
                "try again, or raise LMREG_TIMEOUT"
            ).format(operation=operation_label(operation), host=host, seconds=f"{timeout:g}")
        )
    if isinstance(exc, httpx.ProxyError):
        # The environment's proxy (campus networks set one) answered instead of the host.
        return ConnectError(
            _(
                "{operation}: the proxy this machine's environment names (https_proxy, "
                "http_proxy or all_proxy) did not get through to {host}: {reason}; check the "
                "proxy, or add {host} to no_proxy"
            ).format(
                operation=operation_label(operation),
                host=host,
                reason=_connect_reason(str(exc) or type(exc).__name__, secrets),
            )
        )
    if isinstance(exc, (*NEVER_SENT, *HOPELESS)):
        reason = _connect_reason(str(exc) or type(exc).__name__, secrets)
        return ConnectError(
            _("{operation}: could not connect to {host}: {reason}").format(
                operation=operation_label(operation), host=host, reason=reason
            )
        )
    return TransportError(
        _(
            "{operation}: the connection to {host} broke before an answer arrived "
            "({kind}); try again"
        ).format(operation=operation_label(operation), host=host, kind=type(exc).__name__)
    )


def _connect_reason(text: str, secrets: Iterable[str]) -> str:
    """A plain sentence for what stopped the connection (TLS codes are not for people)."""
    if any(code in text for code in ("WRONG_VERSION_NUMBER", "record layer failure", "EOF")):
        return _(
            "it does not speak https on that port (a plain-http server?); use http:// in "
            "LMREG_BASE_URL, or the platform's https port"
        )
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return _(
            "its TLS certificate does not verify (self-signed, expired or for another host); "
            "ask for a valid certificate, or point SSL_CERT_FILE at the CA that signed it"
        )
    if "Name or service not known" in text or "nodename nor servname" in text:
        return _("the host name does not resolve; check LMREG_BASE_URL")
    if "Connection refused" in text:
        return _("the connection was refused (nothing listens on that port); check LMREG_BASE_URL")
    return _("{detail}; check LMREG_BASE_URL and the network").format(
        detail=clean_message(text, secrets)
    )
