"""The sandbox in this process: what `lmreg-nb sandbox` serves, at addresses of fakes/hosts.py.

:func:`local_sandbox` builds the platform's app and the mock school model's app exactly
as the sandbox command does (:func:`lmreg_nb.sandbox.server.sandbox_apps`, the same
options) and serves each at an address of this process; the :class:`LocalSandbox` it
yields is the :class:`~lmreg_nb.sandbox.process.SandboxInfo` a sandbox process
announces, its ``add_app`` writing the account to the store as `sandbox add-app` does.
Any client the code under test makes reaches both by their URLs; no port, no process.
A child process cannot reach them: where the process is the point (papermill, the
browser, the CLI as a real process, signals), tests take ``sandbox_process``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakes import hosts
from lmreg_nb.sandbox.platform.store import Store
from lmreg_nb.sandbox.process import SandboxInfo
from lmreg_nb.sandbox.server import SandboxOptions, sandbox_apps

__all__ = ["LocalSandbox", "local_sandbox"]


@dataclass(frozen=True, repr=False)
class LocalSandbox(SandboxInfo):
    """A sandbox served in this process; accounts are made in its store."""

    store: Any = field(default=None, compare=False)

    def add_app(self, name: str) -> dict[str, str]:
        made = self.store.add_account(name)
        assert made.app_secret is not None
        return {"app_id": made.app_id, "app_secret": made.app_secret, "env": made.env}


@contextmanager
def local_sandbox(db: Path, options: SandboxOptions | None = None) -> Iterator[LocalSandbox]:
    """The sandbox over ``db`` with ``options`` (the command's defaults), for the block."""
    chosen = options or SandboxOptions(db=db)
    store = Store(db)
    try:
        demo = store.demo()
        platform_app, model_app = sandbox_apps(chosen, store)
        with hosts.served(platform_app) as base, hosts.served(model_app) as model:
            yield LocalSandbox(
                base_url=base,
                token_path=chosen.platform.token_path,
                model_url=model + "/v1/chat/completions",
                app_id=demo.app_id,
                app_secret=demo.app_secret,
                model_api_key=demo.model_api_key,
                db=Path(db),
                store=store,
            )
    finally:
        store.close()
