"""The environment of a run's child: a clean base plus the run's own variables.

One school's secrets never reach another's run, and the operator's shell (its
tokens, its .env) never reaches any. Parameters never carry a secret.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..i18n import _
from ..secret import WINDOW
from .scrub import looks_secret, secret_values

__all__ = [
    "BASE_PREFIXES",
    "BASE_VARIABLES",
    "check_parameters",
    "clean_environment",
    "run_secrets",
]

#: Variables a child inherits from this process; everything else comes from the run's env.
BASE_VARIABLES = (
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
    "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "MPLCONFIGDIR",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NO_PROXY", "no_proxy",
    "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy",
    "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "APPDATA", "LOCALAPPDATA",
    "USERPROFILE", "LMREG_LOCALE_DIR",
)  # fmt: skip
#: Prefixes of inherited variables (locale, XDG folders, Jupyter's own paths).
BASE_PREFIXES = ("LC_", "XDG_", "JUPYTER_")


def clean_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A child's environment: the base variables of this process, then ``env`` on top.

    The child reads no ``.env`` of its own unless ``env`` names one: its kernel works
    in a temporary folder, and a search upwards from there would reach ``$TMPDIR``,
    where any local user can plant a ``.env`` (a notebook folder, a token).
    """
    base = {
        name: value
        for name, value in os.environ.items()
        if (name in BASE_VARIABLES or name.startswith(BASE_PREFIXES)) and not looks_secret(name)
    }
    # Jupyter deps use frozen modules; without this the kernel warns on stderr.
    base.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    base.update({str(k): str(v) for k, v in env.items()})
    if not base.get("LMREG_ENV_FILE"):
        base["LMREG_ENV_FILE"] = os.devnull  # Settings: no file, no search
    return base


def run_secrets(run_env: Mapping[str, str]) -> dict[str, str]:
    secrets = secret_values(run_env)
    env_file = run_env.get("LMREG_ENV_FILE")
    if env_file and Path(env_file).is_file():
        # Settings read this file inside the kernel: its secrets are the run's too.
        from dotenv import dotenv_values

        extra = {k: v for k, v in dotenv_values(env_file).items() if v}
        for name, value in secret_values(extra).items():
            secrets.setdefault(name, value)
    return secrets


def check_parameters(parameters: Mapping[str, Any], secrets: Mapping[str, str]) -> None:
    """Refuse a parameter that looks like a secret or carries a secret's value."""
    for name, value in parameters.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValidationError(str(name), _("a parameter name must be a Python identifier"))
        if looks_secret(name):
            raise ValidationError(
                name,
                _(
                    "looks like a secret: secrets come from the environment "
                    "(LMREG_* variables or an env file), never from parameters"
                ),
            )
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        for label, secret in secrets.items():
            if secret and (secret == text or (len(secret) >= WINDOW and secret in text)):
                raise ValidationError(
                    name,
                    _(
                        "holds the value of {variable}: secrets come from the environment, "
                        "never from parameters"
                    ).format(variable=label),
                )
