"""Every declared check, in the order of the rows: what :mod:`.suite` runs.

A family module declares its checks (:class:`~.declare.Declared`); a check joins the
run by being listed here, at the place its row is shown.
"""

from __future__ import annotations

from .conformance import (
    CHAT_ANSWERS,
    CHAT_REPLY_SHAPE,
    CHAT_USAGE,
    COMPLETION_FORM,
    ERRORS_ARE_JSON,
    KEY_ACCEPTED,
    REACHABLE,
    URL_HTTPS,
    URL_PATH,
    URL_PUBLIC_HOST,
    WRONG_KEY_REJECTED,
)
from .context_window import CONTEXT_WINDOW
from .declare import Declared
from .function import REASONING_SEPARATED, STREAMS_NOT_CUT, SYSTEM_ROLE
from .golive import MAX_TOKENS_HONOURED, MODEL_NAME_SERVED, STREAM_UTF8, TLS_CERTIFICATE
from .measured import LOAD_TEST, PREFIX_CACHE
from .streams import STREAM_CHECKS

__all__ = ["CHECKS", "MEASURED", "declared"]

#: The checks, in the order their rows are shown.
CHECKS: tuple[Declared, ...] = (
    URL_HTTPS,
    URL_PATH,
    URL_PUBLIC_HOST,
    TLS_CERTIFICATE,
    REACHABLE,
    KEY_ACCEPTED,
    CHAT_ANSWERS,
    CHAT_REPLY_SHAPE,
    CHAT_USAGE,
    WRONG_KEY_REJECTED,
    *STREAM_CHECKS,
    COMPLETION_FORM,
    STREAM_UTF8,
    MAX_TOKENS_HONOURED,
    MODEL_NAME_SERVED,
    SYSTEM_ROLE,
    CONTEXT_WINDOW,
    STREAMS_NOT_CUT,
    REASONING_SEPARATED,
    ERRORS_ARE_JSON,
)

#: Rows of what was measured after the checks (judged by the report, not the suite).
MEASURED: tuple[Declared, ...] = (PREFIX_CACHE, LOAD_TEST)

_BY_NAME = {c.name: c for c in (*CHECKS, *MEASURED)}


def declared(name: str) -> Declared | None:
    """The declaration of the check called ``name`` (None: no such check)."""
    return _BY_NAME.get(name)
