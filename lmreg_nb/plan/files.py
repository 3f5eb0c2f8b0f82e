"""Reading a file a plan names: a regular file only, bounded, never blocking on a pipe."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import ConfigurationError
from ..i18n import N_, _

__all__ = ["file_kind", "read_text_file"]

_KINDS = (
    (stat.S_ISDIR, N_("a folder")),
    (stat.S_ISFIFO, N_("a named pipe (FIFO)")),
    (stat.S_ISCHR, N_("a character device")),
    (stat.S_ISBLK, N_("a block device")),
    (stat.S_ISSOCK, N_("a socket")),
)


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in the reader's words."""
    for test, words in _KINDS:
        if test(mode):
            return _(words)
    return _("a special file")


def read_text_file(path: Path, *, limit: int, what: str) -> str:
    """The text (UTF-8, a byte order mark dropped) of the regular file ``path``.

    ``what`` names the file in the one-line errors: missing, not a regular file (a
    FIFO is never opened for reading: it would wait for a writer), over ``limit``
    bytes, unreadable or not UTF-8.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ConfigurationError(
            _("{what} {path} does not exist").format(what=what, path=path)
        ) from None
    except OSError as exc:
        raise ConfigurationError(
            _("{what} {path} is unreadable ({reason})").format(
                what=what, path=path, reason=exc.strerror or exc
            )
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigurationError(
            _("{what} {path} is {kind}, not a file: give a file").format(
                what=what, path=path, kind=file_kind(st.st_mode)
            )
        )
    try:
        # O_NONBLOCK: a file swapped for a FIFO after the check above does not hang here.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise OSError(_("not a regular file"))
            data = fh.read(limit + 1)
    except OSError as exc:
        raise ConfigurationError(
            _("{what} {path} is unreadable ({reason})").format(
                what=what, path=path, reason=exc.strerror or exc
            )
        ) from None
    if len(data) > limit:
        raise ConfigurationError(
            _("{what} {path} is over {size} MiB: is it the right file?").format(
                what=what, path=path, size=limit >> 20
            )
        )
    try:
        return data.decode("utf-8-sig")  # utf-8-sig: Excel's byte order mark
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            _("{what} {path} is not UTF-8 text ({reason}); save it as UTF-8").format(
                what=what, path=path, reason=exc.reason
            )
        ) from None
