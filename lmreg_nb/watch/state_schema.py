"""The state file's tables, their upgrade from an older watch's file, and rows read back checked.

The file is the watch's own, but it is a file: a damaged or tampered one (a
``meta.round`` of ``'abc'`` or ``'1e400'``, a text where a count belongs) is one
line naming the file, never a traceback in the middle of a round.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ConfigurationError
from ..i18n import _
from .alerts import ModelState, SchoolState

__all__ = [
    "MAX_ROUND",
    "MODEL_COLUMNS",
    "SCHEMA",
    "SCHOOL_COLUMNS",
    "check_schema",
    "copy_older",
    "damaged",
    "prepare_upgrade",
    "round_number",
    "typed_row",
]

MODEL_COLUMNS = [f.name for f in fields(ModelState)]
SCHOOL_COLUMNS = [f.name for f in fields(SchoolState)]
#: The most rounds a state file counts (a round a second for 30,000 years).
MAX_ROUND = 10**12
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS models (
    model_id TEXT NOT NULL, model_name TEXT NOT NULL, host TEXT NOT NULL,
    status TEXT NOT NULL, fails INTEGER NOT NULL, since_ms INTEGER, kind TEXT,
    detail TEXT NOT NULL, checked_ms INTEGER, last_ok_ms INTEGER, alerted_ms INTEGER,
    latency_s REAL, tls_days INTEGER, tls_expires_ms INTEGER, tls_issuer TEXT,
    tls_warned_ms INTEGER, school TEXT NOT NULL DEFAULT '', recent TEXT NOT NULL DEFAULT '',
    after_recovery INTEGER NOT NULL DEFAULT 0, key TEXT PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS schools (
    key TEXT PRIMARY KEY, name TEXT NOT NULL, problem TEXT NOT NULL, fails INTEGER NOT NULL,
    since_ms INTEGER, alerted_ms INTEGER, detail TEXT NOT NULL, last_ok_ms INTEGER
);
CREATE TABLE IF NOT EXISTS history (
    round INTEGER NOT NULL, key TEXT NOT NULL, at_ms INTEGER NOT NULL,
    ok INTEGER NOT NULL, latency_s REAL, kind TEXT, PRIMARY KEY (key, round)
);
CREATE INDEX IF NOT EXISTS history_round ON history (round);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT, target TEXT NOT NULL, created_ms INTEGER NOT NULL,
    notify_type TEXT NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, error TEXT NOT NULL DEFAULT '',
    sending_ms INTEGER
);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', '2'), ('round', '0');
"""
assert MODEL_COLUMNS[:4] == ["model_id", "model_name", "host", "status"]
assert MODEL_COLUMNS[-1] == "key"

_T = TypeVar("_T", ModelState, SchoolState)


def damaged(path: Path, what: str, setting: str = "--state") -> ConfigurationError:
    """The one line for a state file whose content cannot be trusted. ``setting``: what the
    user set it with (the CLI's ``--state``, notebook 06's ``state_path``)."""
    return ConfigurationError(
        _(
            "{setting} {path} is damaged ({what}); give another file, or move this one away "
            "to start afresh"
        ).format(setting=setting, path=path, what=what)
    )


def round_number(path: Path, raw: object, setting: str = "--state") -> int:
    """``meta.round`` as a count of rounds: a decimal integer from 0 to MAX_ROUND."""
    text = str(raw).strip()
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_ROUND:
        shown = text if len(text) <= 20 else text[:20] + "…"
        what = _("its round counter reads {value!r}").format(value=shown)
        raise damaged(path, what, setting)
    return int(text)


def _fits(value: Any, kind: str) -> bool:
    """Whether a stored value fits the dataclass field's annotation (a string)."""
    if value is None:
        return "None" in kind
    if kind.startswith("int"):
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**62
    if kind.startswith("float"):
        return isinstance(value, int | float) and math.isfinite(value)
    return isinstance(value, str)


def typed_row(
    path: Path, cls: type[_T], table: str, row: tuple[Any, ...], setting: str = "--state"
) -> _T:
    """A row as ``cls``; a value of the wrong type is a damaged file, said in one line."""
    for f, value in zip(fields(cls), row, strict=True):
        if not _fits(value, str(f.type)):
            raise damaged(
                path,
                _("table {table}, column {column}: {value!r}").format(
                    table=table, column=f.name, value=str(value)[:20]
                ),
                setting,
            )
    return cls(*row)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def prepare_upgrade(conn: sqlite3.Connection) -> bool:
    """A file of an older watch: its tables set aside (``*_v1``) for :func:`copy_older`.

    Older files keyed models and their history by modelId alone; two schools listing one
    modelId shared one row. Returns whether there is anything to copy.
    """
    have = _columns(conn, "models")
    if "model_id" not in have or "key" in have:
        return False  # a new file, one already upgraded, or another program's (said later)
    added = {
        "school": "TEXT NOT NULL DEFAULT ''",
        "recent": "TEXT NOT NULL DEFAULT ''",
        "after_recovery": "INTEGER NOT NULL DEFAULT 0",
    }
    for column, kind in added.items():
        if column not in have:
            conn.execute(f"ALTER TABLE models ADD COLUMN {column} {kind}")
    conn.execute("DROP INDEX IF EXISTS history_round")
    conn.execute("ALTER TABLE models RENAME TO models_v1")
    if _columns(conn, "history"):
        conn.execute("ALTER TABLE history RENAME TO history_v1")
    if _columns(conn, "outbox") and "sending_ms" not in _columns(conn, "outbox"):
        conn.execute("ALTER TABLE outbox ADD COLUMN sending_ms INTEGER")
    return True


def copy_older(conn: sqlite3.Connection) -> None:
    """Copy the set-aside tables into the new ones (key = school/modelId), then drop them."""
    older = [c for c in MODEL_COLUMNS if c != "key"]
    listed = ", ".join(older)
    conn.execute(
        f"INSERT OR IGNORE INTO models ({listed}, key) "
        f"SELECT {listed}, school || '/' || model_id FROM models_v1"
    )
    if _columns(conn, "history_v1"):
        conn.execute(
            "INSERT OR IGNORE INTO history (round, key, at_ms, ok, latency_s, kind) "
            "SELECT h.round, COALESCE((SELECT m.school || '/' || m.model_id FROM models_v1 m "
            "WHERE m.model_id = h.model_id), '/' || h.model_id), h.at_ms, h.ok, h.latency_s, "
            "h.kind FROM history_v1 h"
        )
        conn.execute("DROP TABLE history_v1")
    conn.execute("DROP TABLE models_v1")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")


def check_schema(conn: sqlite3.Connection, path: Path, setting: str = "--state") -> None:
    """A file of another program, or one damaged: one line (the connection is closed)."""
    for table, wanted in (("models", MODEL_COLUMNS), ("schools", SCHOOL_COLUMNS)):
        missing = [c for c in wanted if c not in _columns(conn, table)]
        if missing:
            conn.close()
            raise ConfigurationError(
                _(
                    "{setting} {path} is not a state file of lmreg-nb watch (table {table} "
                    "has no {columns}); give another file"
                ).format(setting=setting, path=path, table=table, columns=", ".join(missing))
            )
    row = conn.execute("SELECT value FROM meta WHERE key = 'round'").fetchone()
    try:
        round_number(path, row[0] if row else "0", setting)
    except ConfigurationError:
        conn.close()
        raise
