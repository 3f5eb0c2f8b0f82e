"""RegistryClient: token exchange, register / modify / query, retries and typed errors.

Every registration call carries ``Authorization: Bearer <token>`` and ``X-ENV``.
Retries are limited to what is safe to repeat:

* a connection that was never made is retried for every operation;
* timeouts, dropped connections, 5xx and 429 are retried for query and modify
  (query reads, modify overwrites: sending either twice changes nothing); a
  Retry-After is honoured up to 5 s, a longer one ends the call at once;
* a register whose outcome is unknown (the request may have reached the
  server) is never resent blindly: the client looks the name up first and
  returns the stored model when it is the one just sent.

Every answer is read with a size cap and an overall deadline, and turned into
data or a typed error by :func:`~lmreg_nb.registry.envelope.parse_envelope` (both error
styles: an HTTP error status, or HTTP 200 with a non-zero code).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from types import TracebackType
from typing import Any, NoReturn

import httpx

from .. import validate
from .._tls import through_env_proxy, tls_context
from ..confusables import refuse_look_alike
from ..errors import (
    APIError,
    AuthenticationError,
    ConflictError,
    CredentialsError,
    LmregError,
    MalformedResponseError,
    NotFoundError,
    OutcomeUnknownError,
    RateLimitError,
    ServerError,
    ValidationError,
)
from ..i18n import _
from ..models import ModelDraft, RegisteredModel, Token, find_in, model_name_key
from ..secret import Masker, Secret
from ..settings import Settings
from .envelope import (
    HOPELESS,
    NEVER_SENT,
    AnswerTooLarge,
    DeadlineExceeded,
    bounded_error,
    clean_message,
    not_found_error,
    parse_envelope,
    read_answer,
    transport_error,
)
from .retry import RETRY_AFTER_CAP_S, backoff_delay
from .tokens import TokenProvider, token_from_data

__all__ = [
    "MODIFY_PATH",
    "QUERY_PATH",
    "REGISTER_PATH",
    "RETRY_AFTER_CAP_S",
    "RegistryClient",
    "backoff_delay",
    "model_name_key",
]

log = logging.getLogger("lmreg_nb")

REGISTER_PATH = "/openapi/v1/registry-model"
MODIFY_PATH = "/openapi/v1/modify-model"
QUERY_PATH = "/openapi/v1/query-models"

CONNECT_TIMEOUT_CAP_S = 5.0

# Tests patch this to make backoff instant.
_sleep = time.sleep


class _OutcomeUnknown(Exception):
    """Internal: a non-repeatable request may have been applied; carries the error seen."""

    def __init__(self, error: LmregError) -> None:
        super().__init__(str(error))
        self.error = error


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
        # Every missing variable in one message, not one per run (LMREG_TOKEN replaces the app;
        # a token cached by notebook 01 replaces the appSecret, see below).
        reuse = not self.settings.token and not self.settings.app_secret
        reuse = reuse and bool(self.settings.base_url)  # no platform: no cache to look in
        needed = () if self.settings.token or reuse else ("app_id", "app_secret")
        self.base_url: str = self.settings.require("base_url", *needed)
        self.max_retries = max(0, int(max_retries))
        self.last_warnings: list[validate.UrlWarning] = []
        timeout = self.settings.timeout
        self._http = httpx.Client(
            base_url=self.base_url,
            transport=transport,
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_CAP_S)),
            verify=tls_context(),
            # A campus proxy for the internet, never for this machine or the local network.
            trust_env=through_env_proxy(self.base_url),
            # One connection per call: the deadline's watchdog (envelope) shuts the
            # socket it saw opened; a reused idle connection would go unseen.
            limits=httpx.Limits(max_keepalive_connections=0),
            # A redirect of a POST is a proxy or login page; following it would
            # resend the body (and maybe the token) somewhere else.
            follow_redirects=False,
            headers={"Accept": "application/json", "User-Agent": "lmreg_nb"},
        )
        self._tokens = TokenProvider(self.settings, self._exchange)
        self._secrets: set[str] = set(self.settings.secret_values())
        # Credentials typed into a form: an error's hint names the form, not LMREG_*.
        self._typed = bool(self.settings.typed & {"app_id", "app_secret"})
        if reuse:
            # No appSecret: only a cached token will do; say now when there is none.
            self.token()

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
        if not isinstance(models, list):
            keys = clean_message(", ".join(sorted(map(str, data))), self._secrets) or "none"
            raise MalformedResponseError(
                _("the answer's data has no list of models (keys: {keys})").format(keys=keys),
                operation="query-models",
            )
        entries = [m for m in models if isinstance(m, dict)]
        if len(entries) < len(models):
            # One bad entry (null, a string) must not hide every other model: skip it, say so.
            log.warning(
                "%s",
                _("query-models: skipped {n} entries that are not models").format(
                    n=len(models) - len(entries)
                ),
            )
        return [RegisteredModel.from_api(m) for m in entries]

    def find_model(
        self, name: str | None = None, *, model_id: str | None = None
    ) -> RegisteredModel | None:
        """The account's model with this modelName or modelId, or None (one query).

        Names compare by :func:`model_name_key` (trimmed, NFC), ids trimmed: the
        same rule everywhere a model is looked up.
        """
        return find_in(self.query_models(), name=name, model_id=model_id)

    def update_model(
        self,
        *,
        name: str | None = None,
        model_id: str | None = None,
        new_name: str | None = None,
        registry_url: str | None = None,
        api_key: Secret | str | None = None,
    ) -> RegisteredModel:
        """Modify the model found by ``name`` or ``model_id``; None keeps a value as stored.

        The spec's modify overwrites all three fields, so the stored ones are sent
        again for what does not change. Raises NotFoundError when no model
        matches, ValidationError when no apiKey is given and the platform did not
        return the stored one.
        """
        models = self.query_models()
        current = find_in(models, name=name, model_id=model_id)
        if current is not None and new_name is not None:
            others = [m.model_name for m in models if m.model_id != current.model_id]
            refuse_look_alike(new_name, others)
        if current is None:
            wanted = (
                _("modelId {id}").format(id=model_id)
                if model_id is not None
                else _("modelName '{name}'").format(name=name)
            )
            raise NotFoundError(
                _("no model with {wanted} in this account").format(wanted=wanted),
                operation="modify-model",
            )
        key = api_key if api_key else current.api_key
        if not key:
            raise ValidationError(
                "apiKey",
                _("the platform did not return the stored apiKey: give a new one"),
            )
        draft = ModelDraft(
            model_name=new_name if new_name is not None else current.model_name,
            registry_url=registry_url if registry_url is not None else current.registry_url,
            api_key=key if isinstance(key, Secret) else Secret(key),
            model_id=current.model_id,
        )
        return self.modify_model(draft)

    def modify_model(self, draft: ModelDraft) -> RegisteredModel:
        """Overwrite modelName, registryUrl and apiKey of the model ``draft.model_id``."""
        if not draft.model_id:
            raise ValidationError(
                "modelId",
                _("is required to modify a model; find it with query_models() or lmreg-nb models"),
            )
        body = self._validated(draft, modify=True)
        data = self._call("modify-model", MODIFY_PATH, body, repeatable=True)
        return _model_from(data, "modify-model", self._secrets)

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
                return _model_from(data, "register", self._secrets)
            except _OutcomeUnknown as unknown:
                uncertain = unknown.error
                found = self._settle(body, uncertain)
                if found is not None:
                    return found
                # Not stored: sending again cannot make a duplicate (the name is unique,
                # and a late first copy would make this one a 409, settled below).
                if attempt >= self.max_retries:
                    raise OutcomeUnknownError(
                        _(
                            "register of modelName '{name}' failed {n} times ({error}) and it "
                            "is not stored; try again later"
                        ).format(name=body["modelName"], n=attempt + 1, error=uncertain)
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

    def shown(self, models: list[RegisteredModel]) -> list[RegisteredModel]:
        """``models`` as people may see them: every secret this client knows (the
        configuration's, each apiKey sent or listed, its tokens) masked in their names and
        ids (whole secrets) and addresses. A key the school put in the registryUrl's
        query, or one registered as a name before the toolkit refused that, shows as
        ``…abcd``."""
        secrets = [*self._secrets, *(m.api_key.reveal() for m in models if m.api_key)]
        # Under 4 characters is no real key; masking it would garble every table cell.
        masker = Masker([s for s in secrets if len(s) >= 4])
        # A name or id is masked where it holds a whole secret: one that shares a word with
        # its key ("qwen2.5-7b" and "sk-qwen2.5-7b-…") is the school's name, shown whole.
        return [
            dataclasses.replace(
                m,
                model_id=masker(m.model_id, whole=True),
                model_name=masker(m.model_name, whole=True),
                registry_url=masker(m.registry_url),
            )
            for m in models
        ]

    def register_or_update(self, draft: ModelDraft) -> tuple[RegisteredModel, str]:
        """Register the model, or modify the one with the same modelName.

        Returns the model and ``"registered"`` or ``"updated"``.
        """
        name = validate.check_model_name(draft.model_name)
        models = self.query_models()
        existing = find_in(models, name=name)
        if existing is None:
            refuse_look_alike(name, [m.model_name for m in models])
            try:
                return self.register_model(draft), "registered"
            except ConflictError:
                # Registered by someone else between the lookup and the register.
                existing = self.find_model(name=name)
                if existing is None:
                    raise
        update = dataclasses.replace(draft, model_id=existing.model_id)
        return self.modify_model(update), "updated"

    # -- internals -----------------------------------------------------------

    def _validated(self, draft: ModelDraft, *, modify: bool) -> dict[str, Any]:
        if not isinstance(draft.api_key, Secret):
            if not isinstance(draft.api_key, str):
                raise ValidationError("apiKey", _("must be a string"))
            draft = dataclasses.replace(draft, api_key=Secret(draft.api_key))
        self._secrets.add(draft.api_key.reveal())
        self._refuse_secret_name(draft.model_name)
        body = validate.model_body(draft.to_body(), modify=modify)
        self.last_warnings = validate.url_warnings(body["registryUrl"])
        # INFO, not WARNING: callers show last_warnings themselves, and a WARNING would
        # be printed a second time by logging's last-resort handler.
        for warning in self.last_warnings:
            log.info("%s", warning.message)
        return body

    def _refuse_secret_name(self, name: str) -> None:
        """A modelName holding a whole secret (an apiKey pasted into the wrong field) is
        refused before it is sent: the platform shows names to anyone who lists the
        account's models. A shared word ("qwen2.5" in both the name and a key) is no
        reason; only a whole key is."""
        if Masker(list(self._secrets)).leaks(name, whole=True):
            raise ValidationError(
                "modelName",
                _(
                    "holds a key or secret of this account (the apiKey, the appSecret or "
                    "the token): anyone who lists the account's models would read it. "
                    "Type the model's name, for example qwen2.5-7b"
                ),
                holds_secret=True,
            )

    def _settle(self, body: dict[str, Any], cause: LmregError) -> RegisteredModel | None:
        """After an unknown outcome: the stored model if it is the one sent, else None."""
        name = body["modelName"]
        try:
            found = self.find_model(name=name)
        except LmregError as exc:
            raise OutcomeUnknownError(
                _(
                    "register of modelName '{name}' may or may not have been stored ({error}); "
                    "the lookup failed too: list the models (`lmreg-nb models`) before "
                    "registering again"
                ).format(name=name, error=cause)
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
            _(
                "modelName '{name}' is already used by modelId {id} with another "
                "registryUrl or apiKey"
            ).format(name=name, id=found.model_id),
            operation="register",
        )

    def _exchange(self) -> Token:
        """POST appId/appSecret to the token path; a Token or a typed error."""
        app_secret: Secret = self.settings.require("app_secret")
        body = {"appId": self.settings.require("app_id"), "appSecret": app_secret.reveal()}
        data = self._call("token", self.settings.token_path, body, repeatable=True, auth=False)
        try:
            token = token_from_data(data)
        except MalformedResponseError as exc:
            # Its message names the answer's keys: server text, so masked like any other.
            raise MalformedResponseError(
                clean_message(exc.server_message, self._secrets), operation="token"
            ) from None
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
                return parse_envelope(response, operation, secrets=self._secrets, typed=self._typed)
            except (AnswerTooLarge, DeadlineExceeded) as exc:
                self._raise_bounded(exc, operation, repeatable=repeatable)
            except NotFoundError as exc:
                replaced = not_found_error(exc, operation, self.base_url, path)
                if replaced is exc:
                    raise
                raise replaced from exc
            except httpx.TransportError as exc:
                delay, reason = self._transport_retry(
                    exc, operation, repeatable=repeatable, attempt=attempt
                )
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
                delay, reason = self._api_retry(exc, repeatable=repeatable, attempt=attempt)
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

    def _raise_bounded(
        self, exc: AnswerTooLarge | DeadlineExceeded, operation: str, *, repeatable: bool
    ) -> NoReturn:
        """An answer too large or too slow: never retried (the server would do it again)."""
        error = bounded_error(exc, operation, httpx.URL(self.base_url).host)
        error.__cause__ = exc
        if not repeatable:
            raise _OutcomeUnknown(error) from exc
        raise error from exc

    def _transport_retry(
        self, exc: httpx.TransportError, operation: str, *, repeatable: bool, attempt: int
    ) -> tuple[float, str]:
        """The delay and reason of a retry after a transport failure; raises if none is safe."""
        error = transport_error(
            exc,
            operation,
            httpx.URL(self.base_url).host,
            timeout=self.settings.timeout,
            secrets=self._secrets,
        )
        error.__cause__ = exc  # kept even when it travels inside _OutcomeUnknown
        if isinstance(exc, HOPELESS):
            raise error from exc
        if not isinstance(exc, NEVER_SENT) and not repeatable:
            raise _OutcomeUnknown(error) from exc
        if attempt >= self.max_retries:
            raise error from exc
        return backoff_delay(attempt), type(exc).__name__

    def _api_retry(self, exc: APIError, *, repeatable: bool, attempt: int) -> tuple[float, str]:
        """The delay and reason of a retry after a 5xx or 429; re-raises what is not transient."""
        status = exc.status or 0
        transient = isinstance(exc, ServerError | RateLimitError) or status >= 500
        if not transient:
            raise exc
        if not repeatable:
            if isinstance(exc, RateLimitError):
                raise exc  # a 429 was refused before anything was stored
            raise _OutcomeUnknown(exc) from exc
        retry_after = exc.retry_after if isinstance(exc, RateLimitError) else None
        if attempt >= self.max_retries or (retry_after or 0) > RETRY_AFTER_CAP_S:
            raise exc
        reason = f"HTTP {status} code {exc.code}"
        return backoff_delay(attempt, retry_after), reason

    def _post(self, path: str, body: dict[str, Any], token: Token | None) -> httpx.Response:
        headers = {}
        if token is not None:
            headers = {"Authorization": f"Bearer {token.token.reveal()}", "X-ENV": token.env}
        return read_answer(self._http, path, body, headers, deadline_s=self.settings.timeout)


def _model_from(data: dict[str, Any], operation: str, secrets: set[str]) -> RegisteredModel:
    if not isinstance(data.get("modelId"), str | int) or data.get("modelId") in ("", None):
        keys = clean_message(", ".join(sorted(map(str, data))), secrets) or "none"
        raise MalformedResponseError(
            _("the answer's data has no modelId (keys: {keys})").format(keys=keys),
            operation=operation,
        )
    return RegisteredModel.from_api(data)
