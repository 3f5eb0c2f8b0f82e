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
    "AuthenticationError": "errors",
    "BadRequestError": "errors",
    "ChatEndpointError": "probe",
    "ConfigurationError": "errors",
    "ConflictError": "errors",
    "ConnectError": "errors",
    "Contact": "onboarding",
    "CredentialsError": "errors",
    "LmregError": "errors",
    "MalformedResponseError": "errors",
    "ModelDraft": "models",
    "NotFoundError": "errors",
    "Onboarding": "onboarding",
    "OutcomeUnknownError": "errors",
    "PayloadTooLargeError": "errors",
    "PermissionDeniedError": "errors",
    "PlanError": "plan",
    "RateLimitError": "errors",
    "RegisteredModel": "models",
    "RegistryClient": "registry.client",
    "RequestTimeout": "errors",
    "SandboxError": "sandbox.process",
    "Secret": "secret",
    "SecretLeakError": "errors",
    "ServerError": "errors",
    "Settings": "settings",
    "Summary": "summary",
    "Target": "probe",
    "Token": "models",
    "TokenExpiredError": "errors",
    "TransportError": "errors",
    "ValidationError": "errors",
    "build_summary": "summary",
    "check_contact": "onboarding",
    "check_endpoint": "probe",
    "models_frame": "registry.frames",
    "notebook_setup": "onboarding",
    "read_records": "records",
    "record": "records",
    "run_notebook": "batch",
    "stream_chat": "probe",
}

__all__ = [
    "APIError",
    "AuthenticationError",
    "BadRequestError",
    "ChatEndpointError",
    "ConfigurationError",
    "ConflictError",
    "ConnectError",
    "Contact",
    "CredentialsError",
    "LmregError",
    "MalformedResponseError",
    "ModelDraft",
    "NotFoundError",
    "Onboarding",
    "OutcomeUnknownError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PlanError",
    "RateLimitError",
    "RegisteredModel",
    "RegistryClient",
    "RequestTimeout",
    "SandboxError",
    "Secret",
    "SecretLeakError",
    "ServerError",
    "Settings",
    "Summary",
    "Target",
    "Token",
    "TokenExpiredError",
    "TransportError",
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
    from .errors import (
        APIError,
        AuthenticationError,
        BadRequestError,
        ConfigurationError,
        ConflictError,
        ConnectError,
        CredentialsError,
        LmregError,
        MalformedResponseError,
        NotFoundError,
        OutcomeUnknownError,
        PayloadTooLargeError,
        PermissionDeniedError,
        RateLimitError,
        RequestTimeout,
        SecretLeakError,
        ServerError,
        TokenExpiredError,
        TransportError,
        ValidationError,
    )
    from .models import ModelDraft, RegisteredModel, Token
    from .onboarding import Onboarding
    from .onboarding.contact import Contact, check_contact
    from .onboarding.notebook import notebook_setup
    from .plan import PlanError
    from .probe import ChatEndpointError, Target, check_endpoint, stream_chat
    from .records import read_records, record
    from .registry.client import RegistryClient
    from .registry.frames import models_frame
    from .sandbox.process import SandboxError
    from .secret import Secret
    from .settings import Settings
    from .summary import Summary, build_summary
