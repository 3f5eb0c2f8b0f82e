"""RegistryClient: token exchange, register / modify / query, retries and typed errors.

Every registration call carries ``Authorization: Bearer <token>`` and ``X-ENV``.
Retries are limited to what is safe to repeat:

* a connection that was never made is retried for every operation;
* timeouts, dropped connections, 5xx and 429 are retried for query and modify
  (query reads, modify overwrites: sending either twice changes nothing);
* a register whose outcome is unknown (the request may have reached the
  server) is never resent blindly: the client looks the name up first and
  returns the stored model when it is the one just sent.

:func:`parse_envelope` is the one place that turns a response into data or a
typed error (both error styles: an HTTP error status, or HTTP 200 with a
non-zero code).
"""

from __future__ import annotations

import dataclasses
import email.utils
import json
import logging
import random
import re
import time
from collections.abc import Iterable
from types import TracebackType
from typing import Any

import httpx

from . import validate
from ._tls import tls_context
from .errors import (
    APIError,
    AuthenticationError,
    ConflictError,
    ConnectError,
    CredentialsError,
    LmregError,
    MalformedResponseError,
    OutcomeUnknownError,
    RateLimitError,
    RequestTimeout,
    ServerError,
    TransportError,
    ValidationError,
    api_error_for,
)
from .models import ModelDraft, RegisteredModel, Token
from .secret import Secret, mask_text
from .settings import Settings
from .tokens import TokenProvider, token_from_data

__all__ = [
    "MODIFY_PATH",
    "QUERY_PATH",
    "REGISTER_PATH",
    "RegistryClient",
    "backoff_delay",
    "parse_envelope",
    "parse_retry_after",
]

log = logging.getLogger("lmreg_nb")

REGISTER_PATH = "/openapi/v1/registry-model"
MODIFY_PATH = "/openapi/v1/modify-model"
QUERY_PATH = "/openapi/v1/query-models"

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
#: A server asking for a longer pause than this gets this (a notebook must not hang).
RETRY_AFTER_CAP_S = 30.0
CONNECT_TIMEOUT_CAP_S = 5.0
_MAX_MESSAGE = 300

# Tests patch this to make backoff instant.
_sleep = time.sleep


def backoff_delay(attempt: int, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number ``attempt + 1``.

    Retry-After wins when given (capped); otherwise capped exponential backoff
    with jitter, so clients that failed together do not retry together.
    """
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, RETRY_AFTER_CAP_S)
    delay = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt)
    return delay * (0.5 + random.random() / 2)  # jitter, not crypto


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


def _scrub(text: str, secrets: Iterable[str]) -> str:
    """One line, bounded, with every known secret masked (in any of its encodings)."""
    # Cut first so masking stays cheap; a secret cut at the edge is cut again below.
    # Values under 4 characters are test stubs, not secrets: masking them would garble text.
    text = mask_text(text[: _MAX_MESSAGE * 8], [s for s in secrets if len(s) >= 4])
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def _describe_body(response: httpx.Response) -> str:
    ctype = response.headers.get("content-type", "").split(";")[0].strip() or "no content-type"
    content = response.content
    if not content:
        return "an empty body"
    if "html" in ctype or content.lstrip()[:15].lower().startswith((b"<!doctype", b"<html")):
        match = _TITLE.search(content[:65536])
        title = match.group(1).decode("utf-8", "replace").strip() if match else ""
        return f'an HTML page ("{title[:80]}")' if title else "an HTML page"
    return f"a body that is not JSON ({ctype})"


def parse_envelope(
    response: httpx.Response, operation: str, *, secrets: Iterable[str] = ()
) -> dict[str, Any]:
    """The envelope's ``data``, or the typed APIError the response stands for.

    Both error styles are errors: an HTTP error status, or HTTP 200 with a
    non-zero code. Anything that is not the JSON envelope raises
    MalformedResponseError (never a JSONDecodeError).
    """
    status = response.status_code
    request_id = response.headers.get("x-request-id") or None
    secrets = list(secrets)

    def malformed(what: str) -> MalformedResponseError:
        return MalformedResponseError(
            _scrub(what, secrets), status=status, request_id=request_id, operation=operation
        )

    if 300 <= status < 400:
        where = httpx.URL(response.headers.get("location", ""))
        target = f"{where.host}{where.path}" if where.host else where.path or "elsewhere"
        raise malformed(f"the platform redirected to {target} instead of answering")
    try:
        payload = json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        raise malformed(
            f"the answer was {_describe_body(response)}, not the JSON envelope"
        ) from None
    if not isinstance(payload, dict) or "code" not in payload:
        keys = ", ".join(sorted(map(str, payload))) if isinstance(payload, dict) else "none"
        kind = "an object" if isinstance(payload, dict) else f"a JSON {type(payload).__name__}"
        raise malformed(
            f"the answer was {kind} without the envelope's code (keys: {keys or 'none'})"
        )
    code = _as_code(payload.get("code"))
    if code is None:
        raise malformed("the envelope's code is not an integer")
    raw_message = payload.get("message")
    message = _scrub(raw_message, secrets) if isinstance(raw_message, str) else ""
    if status >= 400 or code != 0:
        cls = api_error_for(status, code if code != 0 else None)
        kw: dict[str, Any] = {"status": status, "code": code or None, "request_id": request_id}
        if cls is RateLimitError or issubclass(cls, RateLimitError):
            kw["retry_after"] = parse_retry_after(response.headers.get("retry-after"))
        raise cls(message or f"HTTP {status}", operation=operation, **kw)
    data = payload.get("data")
    if not isinstance(data, dict):
        raise malformed("the envelope's data is not an object")
    return data


def _as_code(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,9}", value.strip()):
        return int(value)
    return None


class _OutcomeUnknown(Exception):
    """Internal: a non-repeatable request may have been applied; carries the error seen."""

    def __init__(self, error: LmregError) -> None:
        super().__init__(str(error))
        self.error = error


# httpx failures in which the request certainly never reached the server.
_NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# httpx failures that a retry cannot fix (a bad URL, an unsupported scheme).
_HOPELESS = (httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.ProxyError)


class RegistryClient:
    """A client of the registration service (register, modify, query) with token handling.

    ``settings`` None reads :meth:`Settings.load`. ``transport`` replaces the
    network (tests pass ``httpx.MockTransport``). ``max_retries`` bounds the
    retries of one call. After a register or modify, :attr:`last_warnings`
    lists what the platform may not like about the registryUrl (also logged).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        max_retries: int = 3,
    ) -> None:
        self.settings = settings if settings is not None else Settings.load()
        self.base_url: str = self.settings.require("base_url")
        self.max_retries = max(0, int(max_retries))
        self.last_warnings: list[validate.UrlWarning] = []
        timeout = self.settings.timeout
        self._http = httpx.Client(
            base_url=self.base_url,
            transport=transport,
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_CAP_S)),
            verify=tls_context(),
            # A redirect of a POST is a proxy or login page; following it would
            # resend the body (and maybe the token) somewhere else.
            follow_redirects=False,
            headers={"Accept": "application/json", "User-Agent": "lmreg_nb"},
        )
        self._tokens = TokenProvider(self.settings, self._exchange)
        self._secrets: set[str] = set(self.settings.secret_values())

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RegistryClient(base_url={self.base_url!r}, app_id={self.settings.app_id!r})"

    # -- public operations ---------------------------------------------------

    def token(self) -> Token:
        """A valid token (from LMREG_TOKEN, memory, the cache file or a new exchange)."""
        token = self._tokens.get()
        self._secrets.add(token.token.reveal())
        return token

    @property
    def exchanges(self) -> int:
        """How many token exchanges this client has made."""
        return self._tokens.exchanges

    def query_models(self) -> list[RegisteredModel]:
        """Every model of the account, in creation order."""
        data = self._call("query-models", QUERY_PATH, {}, repeatable=True)
        models = data.get("models")
        if models is None and "models" in data:
            models = []
        if not isinstance(models, list) or not all(isinstance(m, dict) for m in models):
            keys = ", ".join(sorted(map(str, data))) or "none"
            raise MalformedResponseError(
                f"the answer's data has no list of models (keys: {keys})",
                operation="query-models",
            )
        return [RegisteredModel.from_api(m) for m in models]

    def find_model(self, model_name: str) -> RegisteredModel | None:
        """The account's model with this modelName (compared after trimming), or None."""
        name = model_name.strip()
        return next((m for m in self.query_models() if m.model_name.strip() == name), None)

    def modify_model(self, draft: ModelDraft) -> RegisteredModel:
        """Overwrite modelName, registryUrl and apiKey of the model ``draft.model_id``."""
        if not draft.model_id:
            raise ValidationError(
                "modelId",
                "is required to modify a model; find it with query_models() or `lmreg-nb models`",
            )
        body = self._validated(draft, modify=True)
        data = self._call("modify-model", MODIFY_PATH, body, repeatable=True)
        return _model_from(data, "modify-model")

    def register_model(self, draft: ModelDraft) -> RegisteredModel:
        """Register a new model; raises ConflictError when the modelName is taken.

        When the outcome of a send is unknown (timeout, dropped connection, 5xx),
        the name is looked up before anything is sent again, so a model is never
        registered twice.
        """
        body = self._validated(draft, modify=False)
        uncertain: LmregError | None = None
        attempt = 0
        while True:
            try:
                data = self._call("register", REGISTER_PATH, body, repeatable=False)
                return _model_from(data, "register")
            except _OutcomeUnknown as unknown:
                uncertain = unknown.error
                found = self._settle(body, uncertain)
                if found is not None:
                    return found
                # Not stored: sending again cannot make a duplicate (the name is unique,
                # and a late first copy would make this one a 409, settled below).
                if attempt >= self.max_retries:
                    raise OutcomeUnknownError(
                        f"register of modelName '{body['modelName']}' failed {attempt + 1} "
                        f"times ({uncertain}) and it is not stored; try again later"
                    ) from unknown.error
                log.info("register: not stored after %s; sending again", type(uncertain).__name__)
                _sleep(backoff_delay(attempt))
                attempt += 1
            except ConflictError:
                if uncertain is None:
                    raise
                # An earlier send that looked lost was stored after all: is it ours?
                found = self._settle(body, uncertain)
                if found is None:
                    raise
                return found

    def register_or_update(self, draft: ModelDraft) -> tuple[RegisteredModel, str]:
        """Register the model, or modify the one with the same modelName.

        Returns the model and ``"registered"`` or ``"updated"``.
        """
        name = validate.check_model_name(draft.model_name)
        existing = self.find_model(name)
        if existing is None:
            try:
                return self.register_model(draft), "registered"
            except ConflictError:
                # Registered by someone else between the lookup and the register.
                existing = self.find_model(name)
                if existing is None:
                    raise
        update = dataclasses.replace(draft, model_id=existing.model_id)
        return self.modify_model(update), "updated"

    # -- internals -----------------------------------------------------------

    def _validated(self, draft: ModelDraft, *, modify: bool) -> dict[str, Any]:
        if not isinstance(draft.api_key, Secret):
            if not isinstance(draft.api_key, str):
                raise ValidationError("apiKey", "must be a string")
            draft = dataclasses.replace(draft, api_key=Secret(draft.api_key))
        self._secrets.add(draft.api_key.reveal())
        body = validate.model_body(draft.to_body(), modify=modify)
        self.last_warnings = validate.url_warnings(body["registryUrl"])
        for warning in self.last_warnings:
            log.warning("%s", warning.message)
        return body

    def _settle(self, body: dict[str, Any], cause: LmregError) -> RegisteredModel | None:
        """After an unknown outcome: the stored model if it is the one sent, else None."""
        name = body["modelName"]
        try:
            found = self.find_model(name)
        except LmregError as exc:
            raise OutcomeUnknownError(
                f"register of modelName '{name}' may or may not have been stored ({cause}); "
                "the lookup failed too: list the models (`lmreg-nb models`) before "
                "registering again"
            ) from exc
        if found is None:
            return None
        same_key = not found.api_key or found.api_key.reveal() == body["apiKey"]
        if found.registry_url == body["registryUrl"] and same_key:
            log.warning(
                "register of '%s' got no clear answer (%s), but it was stored: modelId %s",
                name,
                type(cause).__name__,
                found.model_id,
            )
            return found
        raise ConflictError(
            f"modelName '{name}' is already used by modelId {found.model_id} "
            "with another registryUrl or apiKey",
            operation="register",
        )

    def _exchange(self) -> Token:
        """POST appId/appSecret to the token path; a Token or a typed error."""
        app_secret: Secret = self.settings.require("app_secret")
        body = {"appId": self.settings.require("app_id"), "appSecret": app_secret.reveal()}
        data = self._call("token", self.settings.token_path, body, repeatable=True, auth=False)
        token = token_from_data(data)
        self._secrets.add(token.token.reveal())
        log.info("token exchanged: env %s, expires %s", token.env, token.expires_at.isoformat())
        return token

    def _call(
        self,
        operation: str,
        path: str,
        body: dict[str, Any],
        *,
        repeatable: bool,
        auth: bool = True,
    ) -> dict[str, Any]:
        """Send with retries; the envelope's data. Raises _OutcomeUnknown if not repeatable."""
        attempt = 0
        refreshed = False
        while True:
            token = self.token() if auth else None
            try:
                response = self._post(path, body, token)
                return parse_envelope(response, operation, secrets=self._secrets)
            except httpx.TransportError as exc:
                error = self._transport_error(exc, operation)
                error.__cause__ = exc  # kept even when it travels inside _OutcomeUnknown
                if isinstance(exc, _HOPELESS):
                    raise error from exc
                if not isinstance(exc, _NEVER_SENT) and not repeatable:
                    raise _OutcomeUnknown(error) from exc
                if attempt >= self.max_retries:
                    raise error from exc
                delay = backoff_delay(attempt)
                reason = type(exc).__name__
            except AuthenticationError as exc:
                # 40100/40101: the token is refused; exchange once and resend once.
                refusable = token is not None and not isinstance(exc, CredentialsError)
                if not refusable or refreshed or not self._tokens.can_exchange:
                    raise
                assert token is not None
                log.info("%s: token refused (code %s); exchanging once", operation, exc.code)
                refreshed = True
                self._tokens.refresh(token)
                continue
            except APIError as exc:
                status = exc.status or 0
                transient = isinstance(exc, ServerError | RateLimitError) or status >= 500
                if not transient:
                    raise
                if not repeatable:
                    if isinstance(exc, RateLimitError):
                        raise  # a 429 was refused before anything was stored
                    raise _OutcomeUnknown(exc) from exc
                if attempt >= self.max_retries:
                    raise
                delay = backoff_delay(attempt, getattr(exc, "retry_after", None))
                reason = f"HTTP {status} code {exc.code}"
            attempt += 1
            log.info(
                "%s: retry %d of %d in %.2f s after %s",
                operation,
                attempt,
                self.max_retries,
                delay,
                reason,
            )
            _sleep(delay)

    def _post(self, path: str, body: dict[str, Any], token: Token | None) -> httpx.Response:
        headers = {}
        if token is not None:
            headers = {"Authorization": f"Bearer {token.token.reveal()}", "X-ENV": token.env}
        started = time.perf_counter()
        try:
            response = self._http.post(path, json=body, headers=headers)
        except httpx.TransportError as exc:
            log.debug(
                "POST %s failed after %.0f ms: %s",
                path,
                (time.perf_counter() - started) * 1000,
                type(exc).__name__,
            )
            raise
        log.debug(
            "POST %s -> %d in %.0f ms (request id %s)",
            path,
            response.status_code,
            (time.perf_counter() - started) * 1000,
            response.headers.get("x-request-id") or "-",
        )
        return response

    def _transport_error(self, exc: httpx.TransportError, operation: str) -> TransportError:
        host = httpx.URL(self.base_url).host
        detail = _scrub(str(exc) or type(exc).__name__, self._secrets)
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
            return RequestTimeout(
                f"{operation}: no answer from {host} within {self.settings.timeout:g} s; "
                "try again, or raise LMREG_TIMEOUT"
            )
        if isinstance(exc, (*_NEVER_SENT, *_HOPELESS)):
            return ConnectError(
                f"{operation}: could not connect to {host} ({detail}); "
                "check LMREG_BASE_URL and the network"
            )
        return TransportError(
            f"{operation}: the connection to {host} broke before an answer arrived "
            f"({type(exc).__name__}); try again"
        )


def _model_from(data: dict[str, Any], operation: str) -> RegisteredModel:
    if not isinstance(data.get("modelId"), str | int) or data.get("modelId") in ("", None):
        keys = ", ".join(sorted(map(str, data))) or "none"
        raise MalformedResponseError(
            f"the answer's data has no modelId (keys: {keys})", operation=operation
        )
    return RegisteredModel.from_api(data)
