"""The watch's memory between rounds and restarts: one SQLite file, private (0600), WAL.

Tables (:mod:`.state_schema`): ``models`` (one
:class:`~lmreg_nb.watch.alerts.ModelState` per key, school and modelId: status,
failures in a row, since when, last alert, certificate), ``history`` (each
model's last :data:`KEEP_ROUNDS` calls, for the chart and the page), ``outbox``
(notifications not yet delivered to a target: retried each round, dropped after
:data:`OUTBOX_MAX_AGE_MS`; one being sent is marked first, so a watch killed
while sending never sends it again) and ``meta`` (the round counter). A round is
written in one transaction, so a crash leaves the previous round whole. The
file names models, hosts and alert texts, never an apiKey or a notification
URL (targets are known by a hash). SQLite creates the -wal and -shm files with
the database's mode, so all three stay 0600.
One ``lmreg-nb watch`` at a time writes a state file (a lock file beside it).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path

from ..errors import ConfigurationError
from ..i18n import _
from ..sqlite_files import private_database
from .alerts import ModelState, SchoolState
from .messages import Message
from .state_schema import (
    MODEL_COLUMNS,
    SCHEMA,
    SCHOOL_COLUMNS,
    check_schema,
    copy_older,
    prepare_upgrade,
    round_number,
    typed_row,
)

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


def default_state_path() -> Path:
    """$XDG_DATA_HOME/lmreg_nb/watch.sqlite3 (XDG_DATA_HOME defaults to ~/.local/share)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lmreg_nb" / "watch.sqlite3"


@dataclass(frozen=True)
class HistoryRow:
    """One call of one model in one round."""

    round: int
    key: str  # the model's key (alerts.model_key)
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

    def __init__(
        self, path: str | os.PathLike[str], *, busy_ms: int = 10_000, setting: str = "--state"
    ) -> None:
        self.path = Path(path).expanduser()
        #: How the user named the file (the CLI's --state, notebook 06's state_path).
        self.setting = setting
        if not self.path.parent.is_dir():
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.path.is_symlink():
            # Making it private would change another file's mode; a dangling link would
            # create the state wherever it points.
            raise ConfigurationError(
                _("{setting} {path} is a symbolic link; give the file itself").format(
                    setting=setting, path=self.path
                )
            )
        if self.path.is_dir():
            raise ConfigurationError(
                _("{setting} {path} is a folder; give a file name").format(
                    setting=setting, path=self.path
                )
            )
        try:
            private_database(self.path)
            self._conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=busy_ms / 1000
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
            # One transaction: an older file is upgraded whole or not at all.
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                older = prepare_upgrade(self._conn)
                for statement in filter(str.strip, SCHEMA.split(";")):
                    self._conn.execute(statement)
                if older:
                    copy_older(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            check_schema(self._conn, self.path, setting)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigurationError(
                _("cannot use the state file {path}: {why}").format(path=self.path, why=exc)
            ) from None
        private_database(self.path)
        self._lock = threading.Lock()
        self._file_lock: object | None = None

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
                    "one its own {setting}"
                ).format(path=self.path, setting=self.setting)
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
        """Every model's stored state, by key (school and modelId)."""
        with self._lock:
            rows = self._conn.execute(f"SELECT {', '.join(MODEL_COLUMNS)} FROM models").fetchall()
        states = (typed_row(self.path, ModelState, "models", row, self.setting) for row in rows)
        return {s.key: s for s in states}

    def schools(self) -> dict[str, SchoolState]:
        """Every school's reading state, by key."""
        with self._lock:
            rows = self._conn.execute(f"SELECT {', '.join(SCHOOL_COLUMNS)} FROM schools").fetchall()
        states = (typed_row(self.path, SchoolState, "schools", row, self.setting) for row in rows)
        return {s.key: s for s in states}

    def waiting_targets(self) -> set[str]:
        """The targets that have notifications waiting."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT DISTINCT target FROM outbox WHERE sending_ms IS NULL"
            ).fetchall()
        return {row[0] for row in rows}

    def last_round(self) -> int:
        """The number of the last round written (0: none yet)."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = 'round'").fetchone()
        return round_number(self.path, row[0], self.setting) if row else 0

    def save_round(
        self,
        number: int,
        states: Sequence[ModelState],
        history: Sequence[HistoryRow],
        removed: Sequence[str] = (),
        outbox: Sequence[tuple[str, int, Message]] = (),
        schools: Sequence[SchoolState] = (),
    ) -> None:
        """Write one round at once: states, calls, models gone (keys), notifications to send."""
        marks = ", ".join("?" for _ in MODEL_COLUMNS)
        school_marks = ", ".join("?" for _ in SCHOOL_COLUMNS)
        with self._transaction() as db:
            db.executemany(
                f"INSERT OR REPLACE INTO schools ({', '.join(SCHOOL_COLUMNS)}) "
                f"VALUES ({school_marks})",
                [astuple(s) for s in schools],
            )
            db.executemany(
                f"INSERT OR REPLACE INTO models ({', '.join(MODEL_COLUMNS)}) VALUES ({marks})",
                [astuple(s) for s in states],
            )
            db.executemany("DELETE FROM models WHERE key = ?", [(m,) for m in removed])
            db.executemany("DELETE FROM history WHERE key = ?", [(m,) for m in removed])
            db.executemany(
                "INSERT OR REPLACE INTO history (round, key, at_ms, ok, latency_s, kind) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(h.round, h.key, h.at_ms, int(h.ok), h.latency_s, h.kind) for h in history],
            )
            db.execute("DELETE FROM history WHERE round <= ?", (number - KEEP_ROUNDS,))
            db.executemany(
                "INSERT INTO outbox (target, created_ms, notify_type, title, body) "
                "VALUES (?, ?, ?, ?, ?)",
                [(t, at, m.notify_type, m.title, m.body) for t, at, m in outbox],
            )
            db.execute("UPDATE meta SET value = ? WHERE key = 'round'", (str(number),))

    def history(self, key: str | None = None, last: int = KEEP_ROUNDS) -> list[HistoryRow]:
        """The calls of the last ``last`` rounds (of one model's key, or all), oldest first."""
        newest = self.last_round()
        query = "SELECT round, key, at_ms, ok, latency_s, kind FROM history WHERE round > ?"
        args: list[object] = [newest - last]
        if key is not None:
            query += " AND key = ?"
            args.append(key)
        with self._lock:
            rows = self._conn.execute(query + " ORDER BY round, key", args).fetchall()
        return [HistoryRow(r, m, at, bool(ok), lat, kind) for r, m, at, ok, lat, kind in rows]

    # -- the outbox ------------------------------------------------------------

    def pending(self, target: str) -> list[OutboxRow]:
        """What ``target`` has not taken yet, oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, target, created_ms, notify_type, title, body, attempts, error "
                "FROM outbox WHERE target = ? AND sending_ms IS NULL ORDER BY id",
                (target,),
            ).fetchall()
        return [
            OutboxRow(i, t, at, Message(title, body, kind), n, err)
            for i, t, at, kind, title, body, n, err in rows
        ]

    def enqueue(self, outbox: Sequence[tuple[str, int, Message]]) -> None:
        """Notifications to send (target id, created at, message), outside a round's write."""
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO outbox (target, created_ms, notify_type, title, body) "
                "VALUES (?, ?, ?, ?, ?)",
                [(t, at, m.notify_type, m.title, m.body) for t, at, m in outbox],
            )

    def sending(self, row_ids: Sequence[int], now_ms: int) -> None:
        """Mark notifications as being sent, before they are: a watch killed while sending
        finds them marked and never sends them again (a contact gets an alert at most once).
        """
        with self._transaction() as db:
            db.executemany(
                "UPDATE outbox SET sending_ms = ? WHERE id = ?", [(now_ms, i) for i in row_ids]
            )

    def interrupted(self) -> list[OutboxRow]:
        """Notifications a stopped watch was sending (maybe delivered): removed, returned."""
        with self._transaction() as db:
            rows = db.execute(
                "SELECT id, target, created_ms, notify_type, title, body, attempts, error "
                "FROM outbox WHERE sending_ms IS NOT NULL ORDER BY id"
            ).fetchall()
            db.execute("DELETE FROM outbox WHERE sending_ms IS NOT NULL")
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

    def failed(self, row_id: int, error: str, others: Sequence[int] = ()) -> None:
        """The target did not take it (nor ``others``, sent with it): try again next round."""
        with self._transaction() as db:
            db.executemany(
                "UPDATE outbox SET sending_ms = NULL WHERE id = ?", [(i,) for i in others]
            )
            db.execute(
                "UPDATE outbox SET attempts = attempts + 1, error = ?, sending_ms = NULL "
                "WHERE id = ?",
                (error, row_id),
            )

    def expire(self, now_ms: int, max_age_ms: int = OUTBOX_MAX_AGE_MS) -> int:
        """Drop notifications older than ``max_age_ms``; how many were dropped."""
        with self._transaction() as db:
            cursor = db.execute("DELETE FROM outbox WHERE created_ms < ?", (now_ms - max_age_ms,))
            return cursor.rowcount
