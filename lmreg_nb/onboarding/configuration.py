"""The configuration view: what is set (secrets masked) and which .env file was read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..i18n import _
from .display import Outcome

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["configuration"]

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
    rows: list[tuple[str, str]] = []
    missing: list[str] = []
    for name in _SHOWN:
        var = VARIABLES[name]
        value = getattr(current, name)
        if value is None or value == "":
            shown = _("not set")
            missing += [var] if var in _NEEDED else []
        elif var in SECRET_VARIABLES:
            shown = _("set ({masked})").format(masked=value.masked)
        else:
            shown = str(value)
        rows.append((var, shown))
    rows.append((".env", env_file_line(current)))
    title = (
        _("configuration: set {variables}").format(variables=", ".join(missing))
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
        ).format(path=used, variables=", ".join(settings.env_ignored))
    if used is not None:
        return _("read from {path}").format(path=used)
    searched = settings.env_searched
    if not searched:
        return _("none found")
    return _("none found; looked in {places}").format(places=", ".join(str(p) for p in searched))
