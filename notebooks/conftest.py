"""nbval runs the stored notebooks (default parameters) against a sandbox started here.

nbval starts a notebook's kernel while setting up the notebook's first cell, before
any fixture of that cell runs; so the sandbox is started by a hook wrapping test
setup, and its LMREG_* variables are in os.environ when the kernel starts. It
stops, and the environment is restored, when the session ends.

    pytest --nbval-lax --nbval-sanitize-with notebooks/nbval_sanitize.cfg notebooks/
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

_stack = ExitStack()
_saved: dict[str, str | None] = {}

#: A model every nbval run finds in the account (04 shows it; ids and times are sanitized).
SEED_MODEL = "nbval-seed-model"


def _start_sandbox() -> None:
    from lmreg_nb.models import ModelDraft
    from lmreg_nb.registry.client import RegistryClient
    from lmreg_nb.sandbox.process import running_sandbox
    from lmreg_nb.secret import Secret
    from lmreg_nb.settings import Settings

    home = Path(_stack.enter_context(tempfile.TemporaryDirectory(prefix="lmreg-nbval-")))
    info = _stack.enter_context(running_sandbox(db=home / "platform.sqlite3"))
    env = {
        **info.env(),
        # The kernels must not read or write the developer's token cache.
        "LMREG_TOKEN_CACHE": str(home / "tokens.json"),
        "LMREG_NOTEBOOKS": str(Path(__file__).resolve().parent),
        # 06_monitor keeps its state under the data folder: not the developer's.
        "XDG_DATA_HOME": str(home / "data"),
    }
    for name in [n for n in os.environ if n.startswith("LMREG_")] + list(env):
        _saved.setdefault(name, os.environ.get(name))
        os.environ.pop(name, None)
    os.environ.update(env)
    with RegistryClient(Settings.load(environ=env)) as client:
        client.register_model(ModelDraft(SEED_MODEL, info.model_url, Secret(info.model_api_key)))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Start the sandbox before the first notebook's kernel starts."""
    if item.path.suffix == ".ipynb" and not _saved:
        _start_sandbox()
    yield


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the sandbox and put the environment back."""
    _stack.close()
    for name, value in _saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _saved.clear()
