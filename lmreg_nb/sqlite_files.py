"""A SQLite database's files kept private (0600): the sandbox's and the watch's."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["private_database"]


def private_database(db: Path) -> None:
    """Make the database, its WAL and its shared-memory file 0600 before SQLite writes.

    SQLite creates -wal and -shm with the database file's mode, so a database
    created 0600 keeps its companions private; files an older version left
    readable are tightened here (a WAL holds what the database holds, in clear).
    """
    if not db.exists():
        with contextlib.suppress(FileExistsError):
            os.close(os.open(db, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        with contextlib.suppress(OSError):  # absent, or a file system without modes
            if path.stat().st_mode & 0o077:
                path.chmod(0o600)
