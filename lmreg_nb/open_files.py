"""This computer out of file descriptors: a limit here, never the server's fault.

At the limit (EMFILE for this program, ENFILE for the whole system) a new socket
fails like a connection that was refused; the platform's client and the probe's
wire both tell it apart with these, and say so in one sentence.
"""

from __future__ import annotations

import errno

from .i18n import _

__all__ = ["open_files_reason", "out_of_files"]


def _open_files_errno(exc: BaseException) -> int | None:
    """EMFILE or ENFILE when one of ``exc``'s causes is this computer running out of files."""
    current: BaseException | None = exc
    for _depth in range(10):
        if current is None:
            return None
        if isinstance(current, OSError) and current.errno in (errno.EMFILE, errno.ENFILE):
            return current.errno
        current = current.__cause__ or current.__context__
    return None


def out_of_files(exc: BaseException) -> bool:
    """Whether ``exc`` comes from this computer running out of file descriptors."""
    return _open_files_errno(exc) is not None


def open_files_reason(exc: BaseException, host: str) -> str | None:
    """The sentence for a connection this computer could not open for want of file
    descriptors (EMFILE, ENFILE), or None for any other cause.

    A new socket needs one; at the limit the error looks like a connection failure,
    but it is a limit here, not the server's fault (the server never saw a thing).
    """
    code = _open_files_errno(exc)
    if code is None:
        return None
    if code == errno.ENFILE:
        return _(
            "this computer has run out of open files for all its programs (ENFILE), so no "
            "connection to {host} was even tried: a limit here, not a fault of {host}. Close "
            "programs or raise the system's limit (fs.file-max), then try again"
        ).format(host=host)
    try:
        import resource  # POSIX only

        limit = str(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    except (ImportError, OSError, ValueError):
        limit = "?"
    return _(
        "this program has reached its limit of {limit} open files (ulimit -n), so no "
        "connection to {host} was even tried: a limit here, not a fault of {host}. Raise "
        "it (e.g. ulimit -n 4096 before the command) or use fewer connections at once, "
        "then try again"
    ).format(limit=limit, host=host)
