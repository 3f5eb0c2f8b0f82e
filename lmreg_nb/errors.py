"""The toolkit's exceptions, in one tree (the chat-endpoint checker's ChatEndpointError
lives with the probe, in :mod:`lmreg_nb.probe`).

```
LmregError                      base: str(exc) is one line that says what to do
├── ConfigurationError          a setting is missing or invalid (names the variable)
├── ValidationError             a field breaks a rule before anything is sent (.field)
├── TransportError              the platform could not be reached or did not answer
│   ├── ConnectError            connection refused, DNS, TLS, connect timeout
│   └── RequestTimeout          connected, but no complete answer in time
├── APIError                    the platform answered with an error (.status, .code, .request_id)
│   ├── BadRequestError         40000
│   ├── AuthenticationError     40100 bad or missing token
│   │   ├── TokenExpiredError   40101
│   │   └── CredentialsError    40102 wrong appId or appSecret
│   ├── PermissionDeniedError   40300 X-ENV missing or not the token's env
│   ├── NotFoundError           40400
│   ├── ConflictError           40900 modelName already used
│   ├── PayloadTooLargeError    41300
│   ├── RateLimitError          42900 (.retry_after)
│   ├── ServerError             5xx, 50300
│   └── MalformedResponseError  an HTML page, a non-JSON body or a broken envelope
├── OutcomeUnknownError         a register may or may not have been stored
└── SecretLeakError             a record still holds a secret; nothing was written
```

Messages never contain a secret: callers build them from names, codes and
masked values only, and any text from a server goes through
:func:`lmreg_nb.secret.mask_text` first. A message is one line with control
and bidi characters replaced (:func:`lmreg_nb.terminal.terminal_text`). An
APIError adds its class's hint unless the server's message already says the
same (no advice said twice).
"""

from __future__ import annotations

import re

from .i18n import N_, _
from .terminal import terminal_text

__all__ = [
    "APIError",
    "AuthenticationError",
    "BadRequestError",
    "ConfigurationError",
    "ConflictError",
    "ConnectError",
    "CredentialsError",
    "LmregError",
    "MalformedResponseError",
    "NotFoundError",
    "OutcomeUnknownError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "RequestTimeout",
    "SecretLeakError",
    "ServerError",
    "TokenExpiredError",
    "TransportError",
    "ValidationError",
    "api_error_for",
]


class LmregError(Exception):
    """Base of every toolkit error; ``str()`` is a single line."""

    def __init__(self, message: str) -> None:
        # One line, always, and safe on a terminal (a message may quote a server):
        # notebooks and the CLI print it as it is.
        super().__init__(terminal_text(" ".join(str(message).split())))

    @property
    def message(self) -> str:
        """The one-line message."""
        return str(self.args[0])


class ConfigurationError(LmregError):
    """A setting is missing or invalid; the message names the variable to set."""

    def __init__(self, message: str, *, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


class ValidationError(LmregError, ValueError):
    """A value breaks a field rule; ``field`` names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class TransportError(LmregError):
    """The request did not get an answer."""


class ConnectError(TransportError):
    """The server could not be reached (refused, DNS, TLS, or the connect timed out)."""


class RequestTimeout(TransportError):
    """Connected, but no complete answer in time (a read timeout or the overall deadline)."""


class OutcomeUnknownError(LmregError):
    """A register may have reached the server, and a lookup could not settle it."""


class SecretLeakError(LmregError):
    """A secret is still in a file about to be written; nothing was written."""


class APIError(LmregError):
    """The platform answered with an error code (HTTP status or envelope code)."""

    hint = N_("check the request and try again")

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: int | None = None,
        request_id: str | None = None,
        operation: str | None = None,
    ) -> None:
        head = (
            _("{operation} failed").format(operation=operation)
            if operation
            else _("the platform refused the request")
        )
        details = ", ".join(
            x
            for x in (
                f"HTTP {status}" if status is not None else "",
                _("code {code}").format(code=code) if code is not None else "",
                _("request id {id}").format(id=request_id) if request_id else "",
            )
            if x
        )
        if details:
            head += f" ({details})"
        text = f"{head}: {message}" if message else head
        hint = _(self.hint) if self.hint else ""
        if hint and not _says_already(message, hint):
            text = f"{text}. {hint}"
        super().__init__(text)
        self.status = status
        self.code = code
        self.server_message = message
        self.request_id = request_id
        self.operation = operation


class BadRequestError(APIError):
    """40000: the body was not accepted."""

    hint = N_("fix the field the message names and send again")


class AuthenticationError(APIError):
    """40100: the token is missing, malformed or unknown."""

    hint = N_("get a new token (notebook 01 or `lmreg-nb token`)")


class TokenExpiredError(AuthenticationError):
    """40101: the token has expired."""

    hint = N_("get a new token (notebook 01 or `lmreg-nb token`)")


class CredentialsError(AuthenticationError):
    """40102: appId or appSecret is wrong."""

    hint = N_("check LMREG_APP_ID and LMREG_APP_SECRET with the provider")


class PermissionDeniedError(APIError):
    """40300: X-ENV is missing or not the token's env."""

    hint = N_("use the env returned with the token (LMREG_ENV), or get a new token")


class NotFoundError(APIError):
    """40400: no such model in this account."""

    hint = N_("list the account's models and use one of their modelIds")


class ConflictError(APIError):
    """40900: the modelName is already used in this account."""

    hint = N_("choose another modelName, or modify the existing model")


class PayloadTooLargeError(APIError):
    """41300: the body is over 1 MiB."""

    hint = N_("shorten reqExample/resExample")


class RateLimitError(APIError):
    """42900: too many requests."""

    hint = N_("wait a moment and try again")

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.retry_after = retry_after


class ServerError(APIError):
    """5xx or 50300: the platform failed."""

    hint = N_("try again later; if it persists, contact provider support with the request id")


class MalformedResponseError(APIError):
    """The answer was not the JSON envelope of the spec (a proxy page, say)."""

    hint = N_("check LMREG_BASE_URL points at the platform, not a proxy or login page")


_NAMES = re.compile(r"LMREG_[A-Z_]+|`[^`]+`")


def _says_already(message: str, hint: str) -> bool:
    """Whether the server's message already gives the hint's advice (its variables or
    commands, or the hint itself): then repeating it would only add noise."""
    if hint.lower() in message.lower():
        return True
    names = _NAMES.findall(hint)
    return bool(names) and all(n.strip("`") in message for n in names)


_BY_CODE: dict[int, type[APIError]] = {
    40000: BadRequestError,
    40100: AuthenticationError,
    40101: TokenExpiredError,
    40102: CredentialsError,
    40300: PermissionDeniedError,
    40400: NotFoundError,
    40900: ConflictError,
    41300: PayloadTooLargeError,
    42900: RateLimitError,
    50300: ServerError,
}
_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    429: RateLimitError,
}


def api_error_for(status: int | None, code: int | None) -> type[APIError]:
    """The error class for an envelope code, falling back to the HTTP status.

    An unlisted 5-digit code counts as the status in its first 3 digits
    (40001 -> 400, 50000 -> 500), which is how platforms extend this scheme.
    """
    if code is not None and code in _BY_CODE:
        return _BY_CODE[code]
    if code is not None and 10000 <= code <= 59999 and (status is None or status < 400):
        status = code // 100
    if status is not None:
        if status in _BY_STATUS:
            return _BY_STATUS[status]
        if status >= 500:
            return ServerError
    return APIError
