"""ipywidgets forms over the client and probe: each lays out, reads values, calls one function.

Importing this package is cheap; a form's module (and ipywidgets) loads on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CapacityForm",
    "ChatBox",
    "ChecksPanel",
    "ContactForm",
    "CredentialsForm",
    "ModelsTable",
    "ModifyForm",
    "MonitorForm",
    "RegisterForm",
    "stream_reply",
]

_LAZY = {
    "CapacityForm": "capacity",
    "ChecksPanel": "checks",
    "ChatBox": "chat",
    "stream_reply": "chat",
    "ContactForm": "contact",
    "CredentialsForm": "credentials",
    "ModelsTable": "models",
    "ModifyForm": "modify",
    "MonitorForm": "monitor",
    "RegisterForm": "register",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
