"""Settings: arguments > environment > .env file > defaults, read in this one place."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .errors import ConfigurationError
from .secret import Secret

__all__ = ["DEFAULT_TOKEN_PATH", "SECRET_VARIABLES", "VARIABLES", "Settings"]

DEFAULT_TOKEN_PATH = "/openapi/v1/token"
DEFAULT_TIMEOUT = 10.0

#: Settings field -> environment variable.
VARIABLES: dict[str, str] = {
    "base_url": "LMREG_BASE_URL",
    "app_id": "LMREG_APP_ID",
    "app_secret": "LMREG_APP_SECRET",
    "token_path": "LMREG_TOKEN_PATH",
    "token": "LMREG_TOKEN",
    "env": "LMREG_ENV",
    "token_cache": "LMREG_TOKEN_CACHE",
    "timeout": "LMREG_TIMEOUT",
    "model_url": "LMREG_MODEL_URL",
    "model_api_key": "LMREG_MODEL_API_KEY",
    "model_name": "LMREG_MODEL_NAME",
}
#: The variables whose values are secrets (never shown, never parameters).
SECRET_VARIABLES = ("LMREG_APP_SECRET", "LMREG_TOKEN", "LMREG_MODEL_API_KEY")
_SECRET_FIELDS = {"app_secret", "token", "model_api_key"}
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lmreg_nb" / "tokens.json"


@dataclass(frozen=True)
class Settings:
    """The toolkit's configuration; see ``.env.example`` for each variable."""

    base_url: str | None = None
    app_id: str | None = None
    app_secret: Secret | None = None
    token_path: str = DEFAULT_TOKEN_PATH
    token: Secret | None = None
    env: str | None = None
    token_cache: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    model_url: str | None = None
    model_api_key: Secret | None = None
    model_name: str | None = None

    @classmethod
    def load(
        cls,
        *,
        environ: Mapping[str, str] | None = None,
        env_file: str | os.PathLike[str] | None = None,
        **overrides: Any,
    ) -> Settings:
        """Read settings: ``overrides`` > ``environ`` (default os.environ) > .env > defaults.

        The .env file is ``env_file``, else ``$LMREG_ENV_FILE``, else ``./.env``;
        it is read, never loaded into the process environment.
        """
        unknown = set(overrides) - set(VARIABLES)
        if unknown:
            raise TypeError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        env = dict(os.environ if environ is None else environ)
        merged = {**_read_env_file(env_file or env.get("LMREG_ENV_FILE")), **env}
        values: dict[str, Any] = {}
        for name, var in VARIABLES.items():
            raw = overrides.get(name)
            if raw is None:
                raw = merged.get(var) or None
            if raw is not None:
                values[name] = _coerce(name, raw)
        if values.get("token_cache") is None:
            values["token_cache"] = _default_cache()
        return cls(**values)

    def with_(self, **changes: Any) -> Settings:
        """A copy with some settings changed."""
        return replace(self, **{k: _coerce(k, v) for k, v in changes.items()})

    def require(self, name: str) -> Any:
        """The setting's value, or a ConfigurationError naming the variable to set."""
        value = getattr(self, name)
        # An empty Secret is as missing as an empty string (Secret("") != "").
        if value is None or value == "" or (isinstance(value, Secret) and not value):
            var = VARIABLES[name]
            raise ConfigurationError(
                f"{var} is not set: set it in the environment or in .env (see .env.example)",
                variable=var,
            )
        if name == "base_url":
            _check_base_url(value)
        return value

    def secret_values(self) -> list[str]:
        """Every secret this configuration holds, in plain text (for scrubbing)."""
        return [
            getattr(self, f.name).reveal()
            for f in fields(self)
            if f.name in _SECRET_FIELDS and getattr(self, f.name)
        ]


def _read_env_file(path: str | os.PathLike[str] | None) -> dict[str, str]:
    target = Path(path) if path else Path.cwd() / ".env"
    if not target.is_file():
        if path:
            raise ConfigurationError(
                f"LMREG_ENV_FILE names {target}, which does not exist", variable="LMREG_ENV_FILE"
            )
        return {}
    from dotenv import dotenv_values  # a small import, only when a file exists

    return {k: v for k, v in dotenv_values(target).items() if v is not None}


def _coerce(name: str, raw: Any) -> Any:
    if name in _SECRET_FIELDS:
        # Surrounding whitespace in a pasted secret is a copy error, never part of it.
        return raw if isinstance(raw, Secret) or raw is None else Secret(str(raw).strip())
    if name == "timeout":
        try:
            timeout = float(raw)
        except (TypeError, ValueError):
            raise ConfigurationError(
                "LMREG_TIMEOUT must be a number of seconds, e.g. 10", variable="LMREG_TIMEOUT"
            ) from None
        if not 0 < timeout <= 600:
            raise ConfigurationError(
                "LMREG_TIMEOUT must be between 0 and 600 seconds", variable="LMREG_TIMEOUT"
            )
        return timeout
    if name == "token_cache":
        return Path(raw).expanduser()
    if name == "base_url" and isinstance(raw, str):
        return raw.strip().rstrip("/")
    if name == "token_path" and isinstance(raw, str):
        raw = raw.strip()
        return raw if raw.startswith("/") else "/" + raw
    return raw.strip() if isinstance(raw, str) else raw


def _check_base_url(url: str) -> None:
    parts = urlsplit(url)
    ok = parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOCAL_HOSTS)
    if not ok or not parts.hostname:
        raise ConfigurationError(
            "LMREG_BASE_URL must be an https:// address (http only for localhost), "
            "e.g. https://ai.school.example",
            variable="LMREG_BASE_URL",
        )
