"""The sandbox database's files are private from their first byte: db, -wal and -shm."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lmreg_nb.sandbox.platform.store import Store

pytestmark = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


def _modes(db: Path) -> dict[str, int]:
    return {
        p.name: stat.S_IMODE(p.stat().st_mode)
        for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"))
        if p.exists()
    }


def test_db_wal_and_shm_are_0600_even_with_a_loose_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)  # the usual umask: files 0644 unless created otherwise
    try:
        db = tmp_path / "platform.sqlite3"
        store = Store(db)
        demo = store.demo()  # writes the demo appSecret: the WAL holds it now
        account = store.issue_token(demo.app_id, demo.app_secret, 60)
        assert account is not None
        modes = _modes(db)
        store.close()
    finally:
        os.umask(old)
    assert set(modes) == {db.name, db.name + "-wal", db.name + "-shm"}, modes
    assert all(mode == 0o600 for mode in modes.values()), {k: oct(v) for k, v in modes.items()}


def test_loose_files_left_by_an_older_version_are_made_private(tmp_path: Path) -> None:
    db = tmp_path / "platform.sqlite3"
    Store(db).close()
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        path.touch()
        path.chmod(0o644)
    store = Store(db)
    store.demo()
    modes = _modes(db)
    store.close()
    assert all(mode == 0o600 for mode in modes.values()), {k: oct(v) for k, v in modes.items()}
