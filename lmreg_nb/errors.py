"""The toolkit's exceptions, in one tree (the chat-endpoint checker's ChatEndpointError
lives with the probe, in :mod:`lmreg_nb.probe`; a plan's mistakes, all of them, are one
ConfigurationError, the PlanError of :mod:`lmreg_nb.plan`).

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
│   │   └── ModelNameNotFoundError no model of this modelName (check --registered NAME)
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
from typing import Any

from .i18n import N_, _, pgettext
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
    "ModelNameNotFoundError",
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
    "operation_label",
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

    def __init__(self, field: str, message: str, *, holds_secret: bool = False) -> None:
        # A colon in the language's punctuation ("class_size：应不小于 0" in Chinese).
        super().__init__(
            pgettext("field and its rule", "{field}: {message}").format(
                field=field, message=message
            )
        )
        self.field = field
        self.reason = message
        #: The value holds a key or secret (pasted into the wrong field): a form clears it.
        self.holds_secret = holds_secret
        #: Every field at fault when one error reports several (see :meth:`every`).
        self.errors: list[ValidationError] = [self]

    @classmethod
    def every(cls, errors: list[ValidationError]) -> ValidationError:
        """One error naming every field at fault, so one run shows all there is to fix."""
        if len(errors) == 1:
            return errors[0]
        rest = pgettext("clause separator", "; ").join(str(e) for e in errors[1:])
        joined = cls(
            errors[0].field, pgettext("clause separator", "; ").join([errors[0].reason, rest])
        )
        joined.errors = [e for error in errors for e in error.errors]
        return joined


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


#: The API's operation identifiers -> the words a sentence uses for them.
OPERATIONS = {
    "token": N_("getting a token"),
    "register": N_("registering the model"),
    "modify-model": N_("modifying the model"),
    "query-models": N_("listing the models"),
}


def operation_label(operation: str) -> str:
    """An operation identifier (``token``, ``register``...) as words, in the current language."""
    return _(OPERATIONS[operation]) if operation in OPERATIONS else operation


class APIError(LmregError):
    """The platform answered with an error code (HTTP status or envelope code).

    An error the platform answered (``server=True``) of a known kind says what it
    means in the toolkit's words (:attr:`meaning`) and what to do (:attr:`hint`, or
    :attr:`form_hint` when the value at fault was typed into a form, ``typed``);
    the platform's own text follows as a detail, quoted.
    """

    hint: str | None = N_("check the request and try again")
    #: The hint when the value at fault was typed into a form (None: :attr:`hint`).
    form_hint: str | None = None
    #: What this kind of error means, in our words (None: the message says it).
    meaning: str | None = None

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: int | None = None,
        request_id: str | None = None,
        operation: str | None = None,
        server: bool = False,
        typed: bool = False,
    ) -> None:
        what = operation_label(operation) if operation else None
        details = _details(status, code, request_id)
        chosen = self.form_hint if typed and self.form_hint else self.hint
        hint = _(chosen) if chosen else ""
        if server and self.meaning:
            # The platform's message is quoted: advice it already gives is not said twice.
            template = (
                _("{operation} failed: {meaning} (the platform answered {details}: “{message}”)")
                if not hint or _says_already(message or "", hint)
                else _(
                    "{operation} failed: {meaning}; {hint} (the platform answered {details}: "
                    "“{message}”)"
                )
            )
            text = template.format(
                operation=what or _("the request"),
                meaning=_(self.meaning),
                hint=hint,
                details=details or "-",
                message=message or "-",
            )
        else:
            head = (
                _("{operation} failed").format(operation=what)
                if what
                else _("the platform refused the request")
            )
            # Each join is a template: Chinese punctuates it with full-width marks.
            if details:
                head = _("{head} ({details})").format(head=head, details=details)
            text = _("{head}: {message}").format(head=head, message=message) if message else head
            if hint and not _says_already(message, hint):
                text = _("{text}. {hint}").format(text=text, hint=hint)
        super().__init__(text)
        self.status = status
        self.code = code
        self.server_message = message
        self.request_id = request_id
        self.operation = operation
        self.server = server
        self.typed = typed


def _details(status: int | None, code: int | None, request_id: str | None) -> str:
    return pgettext("list separator", ", ").join(
        x
        for x in (
            f"HTTP {status}" if status is not None else "",
            _("code {code}").format(code=code) if code is not None else "",
            _("request id {id}").format(id=request_id) if request_id else "",
        )
        if x
    )


class BadRequestError(APIError):
    """40000: the body was not accepted."""

    hint = N_("fix the field the platform's message names and send again")
    meaning = N_("the platform did not accept a field of the request")


class AuthenticationError(APIError):
    """40100: the token is missing, malformed or unknown."""

    hint = N_("get a new token (notebook 01 or `lmreg-nb token`)")
    meaning = N_("the platform does not know this token")


class TokenExpiredError(AuthenticationError):
    """40101: the token has expired."""

    hint = N_("get a new token (notebook 01 or `lmreg-nb token`)")
    meaning = N_("the token has expired")


class CredentialsError(AuthenticationError):
    """40102: appId or appSecret is wrong."""

    hint = N_("check LMREG_APP_ID and LMREG_APP_SECRET with the provider")
    form_hint = N_("check the appId and appSecret you typed with the provider")
    meaning = N_("the appId or appSecret is wrong")


class PermissionDeniedError(APIError):
    """40300: X-ENV is missing or not the token's env."""

    hint = N_(
        "get a new token (notebook 01 or `lmreg-nb token`); if LMREG_ENV is set, unset it or "
        "set it to the env returned with the token"
    )
    meaning = N_("the env sent with the request (X-ENV) is not the token's env")


class NotFoundError(APIError):
    """40400: no such model in this account."""

    hint = N_("list the account's models and use one of their modelIds")
    meaning = N_("there is no model with this modelId in the account")


class ModelNameNotFoundError(NotFoundError):
    """No model of this modelName in the account: the account's list said so (no request
    failed), so the message is said as it is, without "listing the models failed" or
    the modelId advice of a 40400."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message, **details)
        # Said as it is: the account's list answered, nothing else failed.
        LmregError.__init__(self, message)
        self.operation = "query-models"


class ConflictError(APIError):
    """40900: the modelName is already used in this account."""

    hint = N_("choose another modelName, or modify the existing model")
    meaning = N_("this modelName is already used in the account")


class PayloadTooLargeError(APIError):
    """41300: the body is over 1 MiB."""

    hint = N_("shorten reqExample/resExample")
    meaning = N_("the request is larger than the platform accepts (1 MiB)")


class RateLimitError(APIError):
    """42900: too many requests."""

    hint = N_("wait a moment and try again")
    meaning = N_("the platform received too many requests in a short time")

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.retry_after = retry_after


class ServerError(APIError):
    """5xx or 50300: the platform failed."""

    hint = N_("try again later; if it persists, contact provider support with the request id")
    meaning = N_("the platform had an internal error")


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
