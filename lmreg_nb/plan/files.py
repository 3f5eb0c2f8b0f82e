"""Reading a file a plan names: a regular file only, bounded, never blocking on a pipe,
and only one that no other user can change (it decides what runs, and with whose secrets)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import ConfigurationError
from ..file_trust import others_can_change
from ..i18n import N_, _

__all__ = ["file_kind", "read_text_file", "refuse_shared"]

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


def refuse_shared(path: Path, what: str) -> None:
    """ConfigurationError when a user other than this one (or root) can change ``path``.

    A plan, the env files and the notebooks it names decide what runs and where a
    school's secrets go: one another user can edit (or swap, from a folder over it)
    would run their code with those secrets.
    """
    reason = others_can_change(path)
    if reason:
        raise ConfigurationError(
            _("{what} {path}: another user can change it ({reason}); keep it in a folder "
              "only you can write, and run chmod go-w on it").format(
                what=what, path=path, reason=reason
            )
        )  # fmt: skip


def read_text_file(path: Path, *, limit: int, what: str) -> str:
    """The text (UTF-8, a byte order mark dropped) of the regular file ``path``.

    ``what`` names the file in the one-line errors: missing, not a regular file (a
    FIFO is never opened for reading: it would wait for a writer), over ``limit``
    bytes, unreadable, not UTF-8, or one another user can change (:func:`refuse_shared`).
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
    refuse_shared(path, what)
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
