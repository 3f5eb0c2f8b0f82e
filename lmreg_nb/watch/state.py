"""The watch's memory between rounds and restarts: one SQLite file, private (0600), WAL.

Tables: ``models`` (one :class:`~lmreg_nb.watch.alerts.ModelState` per
modelId: status, failures in a row, since when, last alert, certificate),
``history`` (each model's last :data:`KEEP_ROUNDS` calls, for the chart and
the page), ``outbox`` (notifications not yet delivered to a target: retried
each round, dropped after :data:`OUTBOX_MAX_AGE_MS`) and ``meta`` (the round
counter). A round is written in one transaction, so a crash leaves the
previous round whole. The file names models, hosts and alert texts, never an
apiKey or a notification URL (targets are known by a hash). SQLite creates
the -wal and -shm files with the database's mode, so all three stay 0600.
One ``lmreg-nb watch`` at a time writes a state file (a lock file beside it).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from ..errors import ConfigurationError
from ..i18n import _
from ..sqlite_files import private_database
from .alerts import ModelState, SchoolState
from .messages import Message

__all__ = [
    "KEEP_ROUNDS",
    "OUTBOX_MAX_AGE_MS",
    "HistoryRow",
    "OutboxRow",
    "StateStore",
    "default_state_path",
]

#: Calls kept per model for the latency chart and the page.
KEEP_ROUNDS = 240
#: A notification a target has not taken for this long is dropped (with a log line).
OUTBOX_MAX_AGE_MS = 24 * 3600 * 1000
_COLUMNS = [f.name for f in fields(ModelState)]
_SCHOOL_COLUMNS = [f.name for f in fields(SchoolState)]
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS models (
    model_id TEXT PRIMARY KEY, model_name TEXT NOT NULL, host TEXT NOT NULL,
    status TEXT NOT NULL, fails INTEGER NOT NULL, since_ms INTEGER, kind TEXT,
    detail TEXT NOT NULL, checked_ms INTEGER, last_ok_ms INTEGER, alerted_ms INTEGER,
    latency_s REAL, tls_days INTEGER, tls_expires_ms INTEGER, tls_issuer TEXT,
    tls_warned_ms INTEGER, school TEXT NOT NULL DEFAULT '', recent TEXT NOT NULL DEFAULT '',
    after_recovery INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS schools (
    key TEXT PRIMARY KEY, name TEXT NOT NULL, problem TEXT NOT NULL, fails INTEGER NOT NULL,
    since_ms INTEGER, alerted_ms INTEGER, detail TEXT NOT NULL, last_ok_ms INTEGER
);
CREATE TABLE IF NOT EXISTS history (
    round INTEGER NOT NULL, model_id TEXT NOT NULL, at_ms INTEGER NOT NULL,
    ok INTEGER NOT NULL, latency_s REAL, kind TEXT, PRIMARY KEY (model_id, round)
);
CREATE INDEX IF NOT EXISTS history_round ON history (round);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT, target TEXT NOT NULL, created_ms INTEGER NOT NULL,
    notify_type TEXT NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, error TEXT NOT NULL DEFAULT ''
);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', '1'), ('round', '0');
"""
assert _COLUMNS[:4] == ["model_id", "model_name", "host", "status"]


def default_state_path() -> Path:
    """$XDG_DATA_HOME/lmreg_nb/watch.sqlite3 (XDG_DATA_HOME defaults to ~/.local/share)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lmreg_nb" / "watch.sqlite3"


@dataclass(frozen=True)
class HistoryRow:
    """One call of one model in one round."""

    round: int
    model_id: str
    at_ms: int
    ok: bool
    latency_s: float | None
    kind: str | None


@dataclass(frozen=True)
class OutboxRow:
    """A notification waiting for one target."""

    id: int
    target: str
    created_ms: int
    message: Message
    attempts: int
    error: str


class StateStore:
    """SQLite access for the watch; one connection behind a lock (rounds are sequential)."""

    def __init__(self, path: str | os.PathLike[str], *, busy_ms: int = 10_000) -> None:
        self.path = Path(path).expanduser()
        if not self.path.parent.is_dir():
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.path.is_symlink():
            # Making it private would change another file's mode; a dangling link would
            # create the state wherever it points.
            raise ConfigurationError(
                _("--state {path} is a symbolic link; give the file itself").format(path=self.path)
            )
        if self.path.is_dir():
            raise ConfigurationError(
                _("--state {path} is a folder; give a file name").format(path=self.path)
            )
        try:
            private_database(self.path)
            self._conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=busy_ms / 1000
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
            self._migrate()
            self._conn.executescript(_SCHEMA)
            self._check_schema()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigurationError(
                _("cannot use the state file {path}: {why}").format(path=self.path, why=exc)
            ) from None
        private_database(self.path)
        self._lock = threading.Lock()
        self._file_lock: object | None = None

    def _check_schema(self) -> None:
        """A file of another program (or a damaged one) is one line, not a traceback later."""
        for table, wanted in (("models", _COLUMNS), ("schools", _SCHOOL_COLUMNS)):
            have = {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}
            missing = [c for c in wanted if c not in have]
            if missing:
                self._conn.close()
                raise ConfigurationError(
                    _(
                        "--state {path} is not a state file of lmreg-nb watch (table {table} "
                        "has no {columns}); give another file"
                    ).format(path=self.path, table=table, columns=", ".join(missing))
                )

    def _migrate(self) -> None:
        """A state file of an older watch gains the columns added since (its rows kept)."""
        have = {row[1] for row in self._conn.execute("PRAGMA table_info(models)")}
        added = {
            "school": "TEXT NOT NULL DEFAULT ''",
            "recent": "TEXT NOT NULL DEFAULT ''",
            "after_recovery": "INTEGER NOT NULL DEFAULT 0",
        }
        for column, kind in added.items():
            if have and column not in have:
                self._conn.execute(f"ALTER TABLE models ADD COLUMN {column} {kind}")

    # -- lifecycle -----------------------------------------------------------

    def acquire(self) -> None:
        """Be the one watch writing this file; ConfigurationError when another one is."""
        from filelock import FileLock, Timeout

        lock = FileLock(self.path.with_name(self.path.name + ".lock"), mode=0o600)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise ConfigurationError(
                _(
                    "another lmreg-nb watch uses the state file {path}; stop it, or give this "
                    "one its own --state"
                ).format(path=self.path)
            ) from None
        self._file_lock = lock

    def close(self) -> None:
        """Close the connection and let another watch take the file."""
        with self._lock:
            self._conn.close()
        lock, self._file_lock = self._file_lock, None
        if lock is not None:
            lock.release()  # type: ignore[attr-defined]

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    # -- models and rounds ---------------------------------------------------

    def models(self) -> dict[str, ModelState]:
        """Every model's stored state, by modelId."""
        with self._lock:
            rows = self._conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM models").fetchall()
        return {row[0]: ModelState(*row) for row in rows}

    def schools(self) -> dict[str, SchoolState]:
        """Every school's reading state, by key."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {', '.join(_SCHOOL_COLUMNS)} FROM schools"
            ).fetchall()
        return {row[0]: SchoolState(*row) for row in rows}

    def waiting_targets(self) -> set[str]:
        """The targets that have notifications waiting."""
        with self._lock:
            rows = self._conn.execute("SELECT DISTINCT target FROM outbox").fetchall()
        return {row[0] for row in rows}

    def last_round(self) -> int:
        """The number of the last round written (0: none yet)."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = 'round'").fetchone()
        return int(row[0]) if row else 0

    def save_round(
        self,
        number: int,
        states: Sequence[ModelState],
        history: Sequence[HistoryRow],
        removed: Sequence[str] = (),
        outbox: Sequence[tuple[str, int, Message]] = (),
        schools: Sequence[SchoolState] = (),
    ) -> None:
        """Write one round at once: states, calls, models gone, notifications to send."""
        marks = ", ".join("?" for _ in _COLUMNS)
        school_marks = ", ".join("?" for _ in _SCHOOL_COLUMNS)
        with self._transaction() as db:
            db.executemany(
                f"INSERT OR REPLACE INTO schools ({', '.join(_SCHOOL_COLUMNS)}) "
                f"VALUES ({school_marks})",
                [astuple(s) for s in schools],
            )
            db.executemany(
                f"INSERT OR REPLACE INTO models ({', '.join(_COLUMNS)}) VALUES ({marks})",
                [astuple(s) for s in states],
            )
            db.executemany("DELETE FROM models WHERE model_id = ?", [(m,) for m in removed])
            db.executemany("DELETE FROM history WHERE model_id = ?", [(m,) for m in removed])
            db.executemany(
                "INSERT OR REPLACE INTO history (round, model_id, at_ms, ok, latency_s, kind) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(h.round, h.model_id, h.at_ms, int(h.ok), h.latency_s, h.kind) for h in history],
            )
            db.execute("DELETE FROM history WHERE round <= ?", (number - KEEP_ROUNDS,))
            db.executemany(
                "INSERT INTO outbox (target, created_ms, notify_type, title, body) "
                "VALUES (?, ?, ?, ?, ?)",
                [(t, at, m.notify_type, m.title, m.body) for t, at, m in outbox],
            )
            db.execute("UPDATE meta SET value = ? WHERE key = 'round'", (str(number),))

    def history(self, model_id: str | None = None, last: int = KEEP_ROUNDS) -> list[HistoryRow]:
        """The calls of the last ``last`` rounds (of one model, or all), oldest first."""
        newest = self.last_round()
        query = "SELECT round, model_id, at_ms, ok, latency_s, kind FROM history WHERE round > ?"
        args: list[object] = [newest - last]
        if model_id is not None:
            query += " AND model_id = ?"
            args.append(model_id)
        with self._lock:
            rows = self._conn.execute(query + " ORDER BY round, model_id", args).fetchall()
        return [HistoryRow(r, m, at, bool(ok), lat, kind) for r, m, at, ok, lat, kind in rows]

    # -- the outbox ------------------------------------------------------------

    def pending(self, target: str) -> list[OutboxRow]:
        """What ``target`` has not taken yet, oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, target, created_ms, notify_type, title, body, attempts, error "
                "FROM outbox WHERE target = ? ORDER BY id",
                (target,),
            ).fetchall()
        return [
            OutboxRow(i, t, at, Message(title, body, kind), n, err)
            for i, t, at, kind, title, body, n, err in rows
        ]

    def delivered(self, row_id: int) -> None:
        """The target took it."""
        with self._transaction() as db:
            db.execute("DELETE FROM outbox WHERE id = ?", (row_id,))

    def delivered_many(self, row_ids: Sequence[int]) -> None:
        """The target took them (as one digest)."""
        with self._transaction() as db:
            db.executemany("DELETE FROM outbox WHERE id = ?", [(i,) for i in row_ids])

    def failed(self, row_id: int, error: str) -> None:
        """The target did not take it: try again next round."""
        with self._transaction() as db:
            db.execute(
                "UPDATE outbox SET attempts = attempts + 1, error = ? WHERE id = ?",
                (error, row_id),
            )

    def expire(self, now_ms: int, max_age_ms: int = OUTBOX_MAX_AGE_MS) -> int:
        """Drop notifications older than ``max_age_ms``; how many were dropped."""
        with self._transaction() as db:
            cursor = db.execute("DELETE FROM outbox WHERE created_ms < ?", (now_ms - max_age_ms,))
            return cursor.rowcount
