"""Fixtures for running the notebooks headless: an account on the session's sandbox
process, canaries."""

from __future__ import annotations

import html
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

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


def _kernel_manager_with(env: dict[str, str]) -> type:
    """A kernel manager class whose kernels get exactly ``env`` (not os.environ as it is at
    their start, which a test running beside them may change)."""
    from jupyter_client import AsyncKernelManager

    class _WithEnv(AsyncKernelManager):  # type: ignore[misc]
        async def _async_pre_start_kernel(self, **kw: Any) -> Any:
            kw["env"] = dict(env)
            return await super()._async_pre_start_kernel(**kw)

    return _WithEnv


def execute_in(
    folder: Path, stem: str, parameters: dict[str, Any], *, env: dict[str, str] | None = None,
    expect_error: bool = False,
) -> Path:  # fmt: skip
    """Run a stored notebook with papermill (in a kernel of this venv, its environment
    ``env``, default this process's now); return the output path in ``folder``.

    Safe to call from several threads at once: each run has its own kernel and environment.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    from lmreg_nb.runner.shipped import notebook_path

    out = folder / f"{stem}.out.ipynb"
    cwd = folder / "cwd"
    cwd.mkdir(exist_ok=True)
    manager = _kernel_manager_with(dict(os.environ) if env is None else env)
    try:
        papermill.execute_notebook(
            str(notebook_path(stem)), str(out), parameters=parameters, cwd=str(cwd),
            progress_bar=False, kernel_name="python3", execution_timeout=120,
            kernel_manager_class=manager,
        )  # fmt: skip
    except PapermillExecutionError:
        if not expect_error:
            raise
    else:
        assert not expect_error, f"{stem} ran without the expected error"
    return out


@pytest.fixture
def execute(tmp_path: Path) -> Callable[..., Path]:
    """``execute(stem, parameters, *, env=None, expect_error=False)``: :func:`execute_in`
    this test's folder."""

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
