"""In a notebook: toolkit errors show as one line (``error: ...``), not a traceback."""

from __future__ import annotations

import logging
from typing import Any

from .errors import LmregError

__all__ = ["notebook_setup"]

log = logging.getLogger("lmreg_nb")


def notebook_setup() -> None:
    """Show toolkit errors as one line in this IPython kernel; others keep their traceback.

    The cell still fails (papermill stops and marks it).
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - notebooks always have IPython
        return
    shell = get_ipython()
    if shell is None:
        return

    def _one_line(
        self: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None
    ) -> list[str]:
        line = f"error: {value}"
        # _showtraceback emits an "error" output (ipykernel) or prints (terminal);
        # the execute reply is marked failed either way, so papermill stops here.
        self._showtraceback(etype, value, [line])
        return [line]

    shell.set_custom_exc((LmregError,), _one_line)
    log.debug("toolkit errors show as one line")
