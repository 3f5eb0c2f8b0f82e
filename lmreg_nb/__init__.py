"""lmreg_nb: register a school's self-hosted model with the platform, in notebooks.

The public names are re-exported here and imported on first use, so
``import lmreg_nb`` stays cheap (no pandas, httpx or matplotlib until needed).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "APIError": "errors",
    "ConfigurationError": "errors",
    "Contact": "contact",
    "LmregError": "errors",
    "ModelDraft": "models",
    "Onboarding": "onboarding",
    "RegisteredModel": "models",
    "RegistryClient": "client",
    "Secret": "secret",
    "Settings": "settings",
    "Token": "models",
    "ValidationError": "errors",
    "Summary": "summary",
    "Target": "probe",
    "build_summary": "summary",
    "check_contact": "contact",
    "check_endpoint": "probe",
    "models_frame": "frames",
    "notebook_setup": "notebook",
    "read_records": "records",
    "record": "records",
    "run_notebook": "batch",
    "stream_chat": "probe",
}

__all__ = [
    "APIError",
    "ConfigurationError",
    "Contact",
    "LmregError",
    "ModelDraft",
    "Onboarding",
    "RegisteredModel",
    "RegistryClient",
    "Secret",
    "Settings",
    "Summary",
    "Target",
    "Token",
    "ValidationError",
    "__version__",
    "build_summary",
    "check_contact",
    "check_endpoint",
    "models_frame",
    "notebook_setup",
    "read_records",
    "record",
    "run_notebook",
    "stream_chat",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lmreg_nb' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from .batch import run_notebook
    from .client import RegistryClient
    from .contact import Contact, check_contact
    from .errors import APIError, ConfigurationError, LmregError, ValidationError
    from .frames import models_frame
    from .models import ModelDraft, RegisteredModel, Token
    from .notebook import notebook_setup
    from .onboarding import Onboarding
    from .probe import Target, check_endpoint, stream_chat
    from .records import read_records, record
    from .secret import Secret
    from .settings import Settings
    from .summary import Summary, build_summary
