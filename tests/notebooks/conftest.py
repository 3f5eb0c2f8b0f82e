"""Fixtures for running the notebooks headless: an account on the session's sandbox
process, canaries."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from nb_helpers import execute_in

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

pytestmark = pytest.mark.notebooks

#: A token-like canary: set where a token is not needed (05), it must never show.
TOKEN_CANARY = "tok-canary-Q7w9Zr4LmX2pV8sKd3Fh"


def _leaks(text: str, secrets: Iterable[str], benign: Iterable[str] = ()) -> list[str]:
    """Every form of a secret found in ``text``: raw, JSON-escaped, HTML-escaped, 8-char slices.

    Slices that also occur in ``benign`` text (a fixed prefix like ``sk-sandbox-`` shared
    with a non-secret value) are not counted: they reveal nothing of the secret.
    """
    benign_text = "\n".join(benign)
    found = []
    for secret in secrets:
        forms = {secret, json.dumps(secret)[1:-1], html.escape(secret)}
        forms |= {
            secret[i : i + 8]
            for i in range(len(secret) - 7)
            if secret[i : i + 8] not in benign_text
        }
        found += [f for f in forms if f and f in text]
    return found


@pytest.fixture(scope="module")
def account(sandbox_process: SandboxInfo) -> dict[str, str]:
    """A fresh account of the session sandbox (its appSecret is a canary)."""
    return sandbox_process.add_app("notebooks-" + __name__.rsplit(".", 1)[-1])


@pytest.fixture
def nb_env(
    sandbox_process: SandboxInfo, account: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """The kernels' LMREG_* environment: the account's credentials and the mock model."""
    env = {
        **sandbox_process.env(),
        "LMREG_APP_ID": account["app_id"],
        "LMREG_APP_SECRET": account["app_secret"],
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def canaries(sandbox_process: SandboxInfo, account: dict[str, str]) -> list[str]:
    """Secrets that must not appear in any executed file."""
    return [
        account["app_secret"],
        sandbox_process.app_secret,
        sandbox_process.model_api_key,
        TOKEN_CANARY,
    ]


@pytest.fixture
def execute(tmp_path: Path) -> Callable[..., Path]:
    """``execute(stem, parameters, *, expect_error=False)``: :func:`execute_in` this test's
    folder (in this process: one run at a time; a run beside others is ``start_apart``)."""

    def run(stem: str, parameters: dict[str, Any], **options: Any) -> Path:
        return execute_in(tmp_path, stem, parameters, **options)

    return run


@pytest.fixture
def leaks() -> Callable[..., list[str]]:
    """The leak finder: ``leaks(text, secrets, benign=())`` -> the secret forms found."""
    return _leaks


@pytest.fixture
def failing_endpoint() -> Iterator[str]:
    """A loopback chat endpoint answering every request with HTTP 500."""
    from fakes.hostile import hostile_tcp_server

    with hostile_tcp_server() as base:  # on a port: the notebook runs in a kernel
        yield f"{base}/e500all/v1/chat/completions"


@pytest.fixture
def token_canary() -> str:
    """A token-like canary value."""
    return TOKEN_CANARY
