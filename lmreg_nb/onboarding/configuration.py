"""The configuration view: what is set (secrets masked) and which .env file was read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..i18n import _, listing
from .display import Outcome

if TYPE_CHECKING:
    from ..models import Token
    from ..settings import Settings

__all__ = ["cached_token", "configuration", "token_line"]

_SHOWN = (
    "base_url",
    "app_id",
    "app_secret",
    "token",
    "env",
    "model_url",
    "model_api_key",
    "model_name",
)
_NEEDED = ("LMREG_BASE_URL", "LMREG_APP_ID")


def configuration(settings: Settings | None = None) -> Outcome:
    """What is configured, secrets masked: the first thing to look at when a step fails."""
    from ..settings import SECRET_VARIABLES, VARIABLES, Settings

    current = settings or Settings.load()
    # Without the appSecret a cached token is how the next call gets in: say so. With it,
    # the configuration is complete as it is (and the view does not depend on the cache).
    cached = cached_token(current) if not current.app_secret else None
    rows: list[tuple[str, str]] = []
    missing: list[str] = []
    for name in _SHOWN:
        var = VARIABLES[name]
        value = getattr(current, name)
        if name == "app_id" and not value and cached is not None:
            # Typed into notebook 01's form, not in .env: its token serves this notebook.
            shown = _("not set; the token from notebook 01 is used (appId {app_id})").format(
                app_id=cached[0]
            )
        elif name == "token" and not value and cached is not None:
            shown = token_line(cached[1])
        elif value is None or value == "":
            shown = _("not set")
            missing += [var] if var in _NEEDED else []
        elif var in SECRET_VARIABLES:
            shown = _("set ({masked})").format(masked=value.masked)
        else:
            shown = str(value)
        rows.append((var, shown))
    rows.append((".env", env_file_line(current)))
    title = (
        _("configuration: set {variables}").format(variables=listing(missing))
        if missing
        else _("configuration")
    )
    return Outcome(title, rows, ok=not missing)


def env_file_line(settings: Settings) -> str:
    """Which .env file was read, or where one was looked for."""
    used = settings.env_file
    if used is not None and settings.env_ignored:
        return _(
            "read from {path}; not taken from it: {variables} (a .env found by searching "
            "never sets them: name the file with LMREG_ENV_FILE)"
        ).format(path=used, variables=listing(settings.env_ignored))
    if used is not None:
        return _("read from {path}").format(path=used)
    if settings.env_skipped is not None:
        path, reason = settings.env_skipped
        return _("{path} found but not read: another user could change it ({reason})").format(
            path=path, reason=reason
        )
    searched = settings.env_searched
    if not searched:
        return _("none found")
    return _("none found; looked in {places}").format(places=listing(str(p) for p in searched))


def cached_token(settings: Settings) -> tuple[str, Token] | None:
    """(appId, token) of the cached token the next call would use without the appSecret
    (notebook 01's, typed into its form), or None: what the client would do, not a guess."""
    from ..registry.token_cache import TokenCache
    from ..registry.tokens import REUSE_MIN_S

    if settings.base_url is None or settings.token_cache is None:
        return None
    cache = TokenCache(settings.token_cache)
    try:
        found = cache.reusable(str(settings.base_url), settings.app_id, settings.env)
    except OSError:
        return None
    if settings.app_id is None and len({app for app, _token in found}) > 1:
        return None  # the client asks for LMREG_APP_ID then
    fresh = [(app, t) for app, t in found if t.seconds_left() > REUSE_MIN_S]
    return max(fresh, key=lambda pair: pair[1].expires_at_ms) if fresh else None


def token_line(token: Token) -> str:
    """``token …a1b2, expires 2026-09-01 14:05 Asia/Shanghai (UTC+08:00)``."""
    from ..i18n import format_local_time

    when = format_local_time(token.expires_at)
    return _("a token is cached ({masked}), valid until {when}").format(
        masked=token.token.masked, when=when
    )
