"""Tokens: parse an exchange answer, keep tokens in the cache, refresh in time.

The cache file is :mod:`lmreg_nb.registry.token_cache`'s. A cached token is found by base_url and
appId, so a token obtained once (notebook 01, the secret typed into its form)
serves the later notebooks, which have no appSecret; when a secret is given, only
a token earned with that same secret counts (a keyed fingerprint, never the
secret). Without a secret, a token is lent only from a file and folder no one
else can write: a planted entry would steer the school's work into a stranger's
account. Its lock is held through an exchange, so two processes exchange once.
Nobody waits for that lock longer than LMREG_TIMEOUT: past it (a platform that
hangs during the holder's exchange) a caller exchanges on its own.
No HTTP here: :class:`TokenProvider` is handed the function that performs an
exchange.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Callable, Mapping
from typing import Any

from filelock import Timeout as FileLockTimeout

from ..errors import ConfigurationError, MalformedResponseError
from ..i18n import _
from ..models import MAX_TIMESTAMP_MS, Token, now_ms
from ..secret import Secret
from ..settings import Settings, check_header_value
from ..validate import is_header_value
from .token_cache import TokenCache, credential_id

__all__ = [
    "DEFAULT_LIFETIME_MS",
    "MIN_MARGIN_S",
    "TokenCache",
    "TokenProvider",
    "credential_id",
    "needs_refresh",
    "refresh_margin_s",
    "token_from_data",
]

log = logging.getLogger("lmreg_nb")

#: Spec section 5: a token is valid for 3 days (assumed when the answer gives no expiry).
DEFAULT_LIFETIME_MS = 3 * 24 * 3600 * 1000
#: A cached token with less than this left is not lent out without the appSecret.
REUSE_MIN_S = 60.0
#: Refresh when less than max(MIN_MARGIN_S, MARGIN_FRACTION x lifetime) is left.
MIN_MARGIN_S = 300.0
MARGIN_FRACTION = 0.10

_TOKEN_KEYS = ("token", "accessToken", "access_token")
_ENV_KEYS = ("env", "xEnv")


def token_from_data(data: Mapping[str, Any], *, issued_at_ms: int | None = None) -> Token:
    """A Token from the ``data`` of a token answer (tolerant of the known field names).

    Raises MalformedResponseError naming the keys it got (names only, never values).
    """
    issued = now_ms() if issued_at_ms is None else issued_at_ms
    token = next((data[k] for k in _TOKEN_KEYS if isinstance(data.get(k), str) and data[k]), None)
    env = next((data[k] for k in _ENV_KEYS if isinstance(data.get(k), str) and data[k]), None)
    if token is None or env is None:
        missing = (
            _("no usable token (a text in token, accessToken or access_token)")
            if token is None
            else _("no usable env (a text in env or xEnv)")
        )
        keys = ", ".join(sorted(str(k) for k in data)) or "none"
        raise MalformedResponseError(
            _("the token answer has {missing}; its data keys were: {keys}").format(
                missing=missing, keys=keys
            ),
            operation="token",
        )
    _check_sendable(token, env)
    expires = _expiry_ms(data, issued)
    return Token(token=Secret(token), env=env, expires_at_ms=expires, issued_at_ms=issued)


def _check_sendable(token: str, env: str) -> None:
    """Refuse a token or env that no HTTP header can carry (non-ASCII, CR LF, spaces).

    Checked at exchange time, before the cache: sent later, it would crash each call
    (or, with CR LF, end the header early) and stay cached for days.
    """
    if not is_header_value(env):
        # The env is no secret: shown (escaped, short) so the operator sees what came.
        raise MalformedResponseError(
            _(
                "the token answer's env {env} cannot be sent in an HTTP header (only visible "
                "ASCII characters can): the platform answered an unusable env"
            ).format(env=ascii(env[:40])),
            operation="token",
        )
    if not is_header_value(token):
        raise MalformedResponseError(
            _(
                "the token answer's token cannot be sent in an HTTP header (it holds "
                "non-ASCII characters, spaces or line breaks): the platform answered an "
                "unusable token"
            ),
            operation="token",
        )


def _expiry_ms(data: Mapping[str, Any], issued: int) -> int:
    expire_time: Any = data.get("expireTime")
    value = _as_number(expire_time)
    if value is not None:
        # A 10-digit value is seconds: the spec says 13-digit ms, some platforms differ.
        ms = int(value) * 1000 if 0 < value < 10**11 else int(value)
        if 0 < ms <= MAX_TIMESTAMP_MS:
            return ms
        # Out of range: as if no expiry were given (a traceback helps nobody).
        log.warning("the token's expireTime %s is out of range; assuming 3 days", expire_time)
    expires_in = _as_number(data.get("expiresIn", data.get("expires_in")))
    if expires_in is not None and 0 < expires_in < 10 * 365 * 24 * 3600:
        return issued + int(expires_in * 1000)
    return issued + DEFAULT_LIFETIME_MS


#: Larger than any time in milliseconds; a longer number is no time (and no float).
_MAX_DIGITS = 18


def _as_number(value: object) -> float | None:
    """``value`` as a finite number; None for a bool, NaN, infinity, a number of over 18
    digits, and a string that is not ASCII digits ("²" and "١٢" are digits to Python)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if not (value.isascii() and value.isdigit()) or len(value) > _MAX_DIGITS:
            return None
        return float(value)
    if isinstance(value, int):
        return float(value) if abs(value) < 10**_MAX_DIGITS else None
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def refresh_margin_s(token: Token) -> float:
    """Seconds before expiry at which the token is replaced.

    max(5 minutes, 10% of the lifetime), but never more than half the lifetime:
    a token that lives under 10 minutes (a test platform) would otherwise be
    replaced before every call.
    """
    margin = max(MIN_MARGIN_S, MARGIN_FRACTION * token.lifetime_s)
    return min(margin, token.lifetime_s / 2) if token.lifetime_s > 0 else margin


def needs_refresh(token: Token, at_ms: int | None = None) -> bool:
    """True when less than the refresh margin (:func:`refresh_margin_s`) is left."""
    return token.seconds_left(at_ms) < refresh_margin_s(token)


class TokenProvider:
    """Hands out a valid token: LMREG_TOKEN, the memory, the cache file or an exchange.

    Thread-safe: threads that need a new token at once cause one exchange (a lock
    and a re-check), and when it fails every thread that waited gets its error
    (not an exchange of its own, one after another); processes share the cache
    file under its lock, so they too exchange once.
    """

    def __init__(
        self,
        settings: Settings,
        exchange: Callable[[], Token],
        *,
        cache: TokenCache | None = None,
    ) -> None:
        self.settings = settings
        self._exchange = exchange
        path = settings.token_cache
        self.cache = cache if cache is not None else (TokenCache(path) if path else None)
        self._lock = threading.Lock()
        self._current: Token | None = None
        self.exchanges = 0  # how many exchanges this provider made (tests, diagnostics)
        # Threads that waited while an attempt failed get its error, not an attempt of
        # their own: N callers wait for one exchange, not for N in a row.
        self._attempts = 0
        self._failure: Exception | None = None

    @property
    def fixed(self) -> bool:
        """True when the token comes from LMREG_TOKEN."""
        return self.settings.token is not None

    @property
    def can_exchange(self) -> bool:
        """True when base_url, appId and appSecret are all set."""
        s = self.settings
        return bool(s.base_url and s.app_id and s.app_secret)

    def get(self) -> Token:
        """A token with more than the refresh margin left."""
        current = self._current
        if current is not None and not needs_refresh(current):
            return current
        seen = self._attempts
        with self._lock:
            # Re-check: another thread may have refreshed while this one waited.
            current = self._current
            if current is not None and not needs_refresh(current):
                return current
            return self._attempt(seen, refused=None)

    def refresh(self, refused: Token) -> Token:
        """A new token after the server refused ``refused`` (40100/40101)."""
        seen = self._attempts
        with self._lock:
            current = self._current
            if (
                current is not None
                and current.token != refused.token
                and not needs_refresh(current)
            ):
                return current  # another thread already replaced it
            return self._attempt(seen, refused=refused)

    def _attempt(self, seen: int, *, refused: Token | None) -> Token:
        """Obtain a token (under ``self._lock``), or re-raise the failure of an attempt
        that ended while this caller waited (``seen``: the attempt count it saw)."""
        if self._attempts != seen and self._failure is not None:
            raise self._failure
        try:
            self._current = self._obtain(refused=refused)
        except Exception as exc:
            self._failure = exc
            raise
        else:
            self._failure = None
            return self._current
        finally:
            self._attempts += 1

    def _obtain(self, refused: Token | None) -> Token:
        settings = self.settings
        if settings.token is not None and refused is None:
            env = settings.env
            if not env:
                raise ConfigurationError(
                    _(
                        "LMREG_TOKEN is set but LMREG_ENV is not: set LMREG_ENV to the env "
                        "returned with the token"
                    ),
                    variable="LMREG_ENV",
                )
            check_header_value("LMREG_TOKEN", settings.token.reveal())
            check_header_value("LMREG_ENV", env)
            issued = now_ms()
            # Its real expiry is unknown; the server will say 40101 when it ends.
            return Token(settings.token, env, issued + DEFAULT_LIFETIME_MS, issued, "environment")
        if not settings.app_secret:
            return self._reuse(refused)
        base_url: str = settings.require("base_url", "app_id", "app_secret")
        app_id: str = settings.require("app_id")
        if self.cache is None:
            return self._do_exchange()
        try:
            return self._obtain_cached(base_url, app_id, refused, self.cache)
        except OSError as exc:
            # A read-only home or a bad LMREG_TOKEN_CACHE must not stop the work.
            log.warning(
                "token cache %s is unusable (%s); set LMREG_TOKEN_CACHE to a writable file",
                self.cache.path,
                exc.strerror or type(exc).__name__,
            )
            return self._do_exchange()

    def _obtain_cached(
        self, base_url: str, app_id: str, refused: Token | None, cache: TokenCache
    ) -> Token:
        settings = self.settings
        credential = credential_id(base_url, app_id, settings.require("app_secret"))
        # The lock is held through the exchange, so processes sharing the cache exchange
        # once; but nobody waits for it longer than one request may take (a platform
        # that hangs, a holder stopped with Ctrl-Z): then this caller exchanges itself.
        wait = settings.timeout
        try:
            with cache.locked(timeout=wait):
                # Another process may have exchanged while this one waited for the lock.
                cached = cache.load(base_url, app_id, settings.env, credential=credential)
                if refused is not None and cached is not None and cached.token == refused.token:
                    cached = None
                if cached is not None and not needs_refresh(cached):
                    log.debug("token from cache %s (env %s)", cache.path, cached.env)
                    return cached
                token = self._do_exchange()
                self._store(cache, base_url, app_id, token, credential)
                return token
        except FileLockTimeout:
            log.warning(
                "token cache %s stayed locked by another call for %s s; exchanging without it",
                cache.path,
                f"{wait:g}",
            )
        token = self._do_exchange()
        # Still locked, or unusable: the token is good all the same (OSError covers both).
        with contextlib.suppress(OSError), cache.locked(timeout=wait):
            self._store(cache, base_url, app_id, token, credential)
        return token

    @staticmethod
    def _store(
        cache: TokenCache, base_url: str, app_id: str, token: Token, credential: str
    ) -> None:
        """Write the token into the cache (its lock held); a write error is only logged."""
        try:
            cache._store_unlocked(base_url, app_id, token, credential=credential)
        except OSError as exc:
            # A full disk must not stop the work: the token is still good.
            log.warning("could not write token cache %s: %s", cache.path, exc.strerror)

    def _reuse(self, refused: Token | None) -> Token:
        """A cached token for base_url (and appId) without the appSecret, or a one-line
        ConfigurationError that says to run notebook 01 or set the secret."""
        settings = self.settings
        base_url: str = settings.require("base_url")
        found: list[tuple[str, Token]] = []
        if self.cache is not None:
            try:
                with self.cache.locked(timeout=settings.timeout):
                    found = self.cache.reusable(base_url, settings.app_id, settings.env)
            except OSError as exc:
                log.warning("token cache %s is unusable (%s)", self.cache.path, exc.strerror)
        if settings.app_id is None and len({app for app, _token in found}) > 1:
            raise ConfigurationError(
                _(
                    "tokens of several appIds are cached for {base_url}: set LMREG_APP_ID to "
                    "the one to use"
                ).format(base_url=base_url),
                variable="LMREG_APP_ID",
            )
        fresh = [
            token
            for _app, token in found
            if token.seconds_left() > REUSE_MIN_S
            and (refused is None or token.token != refused.token)
        ]
        if fresh:
            best = max(fresh, key=lambda t: t.expires_at_ms)
            log.debug("token from cache %s without the appSecret (env %s)", base_url, best.env)
            return best
        if found:
            raise ConfigurationError(
                _(
                    "the token from notebook 01 has expired and LMREG_APP_SECRET is not set: "
                    "run notebook 01 again (type the appSecret there), or set LMREG_APP_SECRET"
                ),
                variable="LMREG_APP_SECRET",
            )
        try:
            settings.require("app_id", "app_secret")
        except ConfigurationError as exc:
            hint = _(
                "Or get a token in notebook 01 first (type the appSecret into its form): the "
                "next notebooks reuse it."
            )
            raise ConfigurationError(f"{exc} {hint}", variable=exc.variable) from None
        raise AssertionError("unreachable: the appSecret is missing")  # pragma: no cover

    def _do_exchange(self) -> Token:
        token = self._exchange()
        self.exchanges += 1
        if self.settings.env and token.env != self.settings.env:
            log.warning(
                "the token's env %s differs from LMREG_ENV %s; using the token's env",
                token.env,
                self.settings.env,
            )
        return token
