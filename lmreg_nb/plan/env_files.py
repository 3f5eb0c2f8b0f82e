"""A row's env_file: that school's LMREG_* variables, read as written.

No ``${VAR}`` is expanded, ever: python-dotenv would fill it from this process's
environment, and a school's env_file could then carry the provider's own secrets
(the SMTP password of LMREG_NOTIFY_MAIL, a webhook token) to the school's platform
inside its appId. A searched ``.env`` is read the same way (settings.py).
"""

from __future__ import annotations

import io
from pathlib import Path

from ..errors import ConfigurationError
from ..i18n import _
from .files import read_text_file

__all__ = ["MAX_ENV_FILE", "load_env_file"]

#: An env file larger than this is not one.
MAX_ENV_FILE = 1 << 20


def load_env_file(path: Path, where: str) -> dict[str, str]:
    """The variables of an env file, as written; ConfigurationError naming ``where``."""
    from dotenv import dotenv_values

    try:
        text = read_text_file(path, limit=MAX_ENV_FILE, what=_("env file"))
    except ConfigurationError as exc:
        raise ConfigurationError(_("{where}: {reason}").format(where=where, reason=exc)) from None
    values = dotenv_values(stream=io.StringIO(text), interpolate=False)
    return {k: v for k, v in values.items() if v is not None}
