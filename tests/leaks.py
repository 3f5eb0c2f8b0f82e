"""A leak detector written for the tests, independently of the toolkit's own masker.

A secret leaks when its raw text, its JSON-escaped, URL-encoded or base64 form, or any
8-character piece of it appears (tests/commands/test_canary_leaks.py checks the detector
itself, and runs the commands against servers that echo the key everywhere).
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

__all__ = ["CANARY_KEY", "WINDOW", "leaks_in", "secret_forms"]

CANARY_KEY = "sk-canary-Zq81Lm3Xv9Tb6Wd2"
WINDOW = 8


def secret_forms(secret: str) -> set[str]:
    """What counts as a leak of ``secret``: its encodings, and every 8-character piece."""
    raw = secret.encode()
    forms = {secret, json.dumps(secret)[1:-1], quote(secret, safe=""), quote(secret)}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for pad in range(3):
            text = encode(b"\0" * pad + raw).decode().rstrip("=")
            # Characters mixing the secret's bits with its neighbours' are not the secret's.
            core = text[(0, 2, 3)[pad] : len(text) - 1]
            if len(core) >= WINDOW:
                forms.add(core)
    forms |= {secret[i : i + WINDOW] for i in range(len(secret) - WINDOW + 1)}
    return forms


def leaks_in(text: str, secrets: dict[str, str]) -> list[str]:
    """The labels of the secrets some form of which appears in ``text``."""
    return [
        label for label, value in secrets.items() if any(f in text for f in secret_forms(value))
    ]
