"""In a notebook: toolkit errors show as one line (``error: ...``), not a traceback."""

from __future__ import annotations

import logging
import os
from typing import Any

from ..errors import LmregError
from ..i18n import _, set_language
from .warm import preload_between_cells

__all__ = ["notebook_setup"]

log = logging.getLogger("lmreg_nb")


def notebook_setup(lang: str | None = None) -> None:
    """Show toolkit errors as one line in this IPython kernel; others keep their traceback.

    The cell still fails (papermill stops and marks it). The later cells' modules
    are imported between cells (:mod:`.warm`). ``lang``: the language the
    notebook was written in, the kernel's default unless LMREG_LANG names another.
    """
    if lang:
        # A Chinese notebook shows Chinese forms, whatever the locale of the kernel.
        os.environ.setdefault("LMREG_LANG", lang)
        set_language()
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
        line = _("error: {message}").format(message=value)
        # _showtraceback emits an "error" output (ipykernel) or prints (terminal);
        # the execute reply is marked failed either way, so papermill stops here.
        self._showtraceback(etype, value, [line])
        return [line]

    shell.set_custom_exc((LmregError,), _one_line)
    log.debug("toolkit errors show as one line")
    preload_between_cells(shell)  # the later cells' imports, while the kernel waits for papermill
