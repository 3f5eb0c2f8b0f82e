"""Every declared check, in the order of the rows: what :mod:`.suite` runs.

Each family module declares its checks (:class:`~.declare.Declared`) and lists them in
its ``CHECKS`` (in the order its rows are shown); a new check joins the run by being
declared and listed there. The families' order is this module's.
"""

from __future__ import annotations

from . import conformance, function, golive, measured, streams
from .declare import DECLARED, Declared

__all__ = ["CHECKS", "MEASURED", "declared"]

#: The checks, in the order their rows are shown: the address, the connection, the
#: answers, the stream, the go-live rows, what the course apps send.
CHECKS: tuple[Declared, ...] = (
    *conformance.ADDRESS,
    *golive.CONNECTION,
    *conformance.CHECKS,
    *streams.CHECKS,
    *golive.CHECKS,
    *function.CHECKS,
)
#: Rows of what was measured after the checks (judged by the report, not the suite).
MEASURED: tuple[Declared, ...] = measured.MEASURED


def declared(name: str) -> Declared | None:
    """The declaration of the check called ``name`` (None: no such check)."""
    return DECLARED.get(name)
