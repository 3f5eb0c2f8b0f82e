"""Running a stored notebook headless with papermill, from any thread (tests/notebooks)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


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
