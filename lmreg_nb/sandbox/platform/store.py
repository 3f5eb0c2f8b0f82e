"""The sandbox platform's storage: SQL only, no HTTP.

One SQLite file (WAL) holds accounts, tokens and models, so they survive a
restart and a second process (``lmreg-nb sandbox add-app``) can add an account
while the platform runs.

What a leaked database file gives away: appSecrets and tokens are stored only
as SHA-256 digests (both are 256-bit random values, so a fast hash is enough:
there is nothing to guess). Two exceptions, by design: the *demo* account's
appSecret and the mock model's key sit in plain text in the ``settings``
table, because ``lmreg-nb sandbox`` must print the same demo credentials on
every start with the same database. Models' apiKeys are stored as they are
because the spec returns them in responses.

modelName uniqueness is a ``UNIQUE(account_id, model_name)`` constraint, so it
holds under concurrency; the store never reads before it writes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...models import now_ms
from ...sqlite_files import private_database

__all__ = [
    "Account",
    "DemoSecrets",
    "DuplicateNameError",
    "IssuedToken",
    "ModelNotFoundError",
    "ModelRow",
    "Store",
    "TokenCheck",
    "digest",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS accounts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id      TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    env         TEXT NOT NULL UNIQUE,
    secret_hash TEXT NOT NULL,
    created_ms  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    token_hash TEXT PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    issued_ms  INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS models (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id   INTEGER NOT NULL REFERENCES accounts(id),
    model_id     TEXT NOT NULL UNIQUE,
    model_name   TEXT NOT NULL,
    registry_url TEXT NOT NULL,
    api_key      TEXT NOT NULL,
    req_params   TEXT,
    req_example  TEXT,
    res_example  TEXT,
    create_ms    INTEGER NOT NULL,
    update_ms    INTEGER NOT NULL,
    UNIQUE (account_id, model_name)
);
"""

DEMO_NAME = "demo"


def digest(value: str) -> str:
    """SHA-256 hex digest of a random secret (appSecret or token)."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


class DuplicateNameError(Exception):
    """modelName is already used in this account (the UNIQUE constraint fired)."""


class ModelNotFoundError(Exception):
    """No model with this modelId in this account (or in any account)."""


@dataclass(frozen=True)
class Account:
    """An app (a school's account) with its credentials; ``app_secret`` only when just made."""

    id: int
    app_id: str
    name: str
    env: str
    app_secret: str | None = None


@dataclass(frozen=True)
class DemoSecrets:
    """The demo account and the mock model's key, the same on every start."""

    app_id: str
    app_secret: str
    env: str
    model_api_key: str


@dataclass(frozen=True)
class IssuedToken:
    """A token just issued (the plain value exists only here and in the response)."""

    token: str
    env: str
    issued_ms: int
    expires_ms: int


@dataclass(frozen=True)
class TokenCheck:
    """What a presented token is: unknown (account None), or an account's, maybe expired."""

    account_id: int | None
    env: str = ""
    expires_ms: int = 0


@dataclass(frozen=True)
class ModelRow:
    """A stored model; reserved fields are kept in the database but not here."""

    model_id: str
    model_name: str
    registry_url: str
    api_key: str
    create_ms: int
    update_ms: int

    def to_api(self) -> dict[str, Any]:
        """The response object in the wire's field names."""
        return {
            "modelName": self.model_name,
            "modelId": self.model_id,
            "registryUrl": self.registry_url,
            "apiKey": self.api_key,
            "createTime": self.create_ms,
            "updateTime": self.update_ms,
        }


class Store:
    """SQLite access for the platform; safe to share between threads (one lock)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        private_database(self.path)
        # One connection behind a lock: the platform runs its routes on one event
        # loop, so a lock costs nothing and keeps the code simple. Other processes
        # (add-app) are serialised by SQLite itself (busy_timeout).
        self._conn = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=10.0
        )
        self._lock = threading.Lock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA busy_timeout=10000")
            self._conn.executescript(_SCHEMA)
        private_database(self.path)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    # -- accounts ---------------------------------------------------------

    def add_account(self, name: str) -> Account:
        """Create an account with a random appId, appSecret and env."""
        app_secret = secrets.token_urlsafe(32)
        for _ in range(5):
            app_id = "app_" + secrets.token_hex(8)
            env = "env_" + secrets.token_hex(6)
            try:
                with self._lock:
                    cur = self._conn.execute(
                        "INSERT INTO accounts (app_id, name, env, secret_hash, created_ms)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (app_id, name, env, digest(app_secret), now_ms()),
                    )
                assert cur.lastrowid is not None
                return Account(cur.lastrowid, app_id, name, env, app_secret)
            except sqlite3.IntegrityError:  # pragma: no cover - a 64-bit collision
                continue
        raise RuntimeError("could not create a unique appId")  # pragma: no cover

    def demo(self) -> DemoSecrets:
        """The demo account and model key, made on first use of the database."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                row = self._conn.execute("SELECT value FROM settings WHERE key = 'demo'").fetchone()
                if row is None:
                    app_secret = secrets.token_urlsafe(32)
                    app_id = "app_" + secrets.token_hex(8)
                    env = "env_" + secrets.token_hex(6)
                    self._conn.execute(
                        "INSERT INTO accounts (app_id, name, env, secret_hash, created_ms)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (app_id, DEMO_NAME, env, digest(app_secret), now_ms()),
                    )
                    value = {
                        "app_id": app_id,
                        "app_secret": app_secret,
                        "env": env,
                        "model_api_key": "sk-" + secrets.token_urlsafe(32),
                    }
                    self._conn.execute(
                        "INSERT INTO settings (key, value) VALUES ('demo', ?)",
                        (json.dumps(value),),
                    )
                else:
                    value = json.loads(row[0])
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return DemoSecrets(**value)

    # -- tokens -----------------------------------------------------------

    def issue_token(self, app_id: str, app_secret: str, ttl_s: float) -> IssuedToken | None:
        """A new token for valid credentials, else None; older tokens stay valid."""
        with self._lock:
            row = self._conn.execute(
                "SELECT id, env, secret_hash FROM accounts WHERE app_id = ?", (app_id,)
            ).fetchone()
        # Compare digests in constant time; an unknown appId still does the work.
        expected = row[2] if row else digest(secrets.token_urlsafe(32))
        if not hmac.compare_digest(expected, digest(app_secret)) or row is None:
            return None
        token = secrets.token_urlsafe(32)
        issued = now_ms()
        expires = issued + round(ttl_s * 1000)
        with self._lock:
            self._conn.execute(
                "INSERT INTO tokens (token_hash, account_id, issued_ms, expires_ms)"
                " VALUES (?, ?, ?, ?)",
                (digest(token), row[0], issued, expires),
            )
        return IssuedToken(token, row[1], issued, expires)

    def check_token(self, token: str) -> TokenCheck:
        """Look a presented token up by its digest."""
        with self._lock:
            row = self._conn.execute(
                "SELECT t.account_id, a.env, t.expires_ms FROM tokens t"
                " JOIN accounts a ON a.id = t.account_id WHERE t.token_hash = ?",
                (digest(token),),
            ).fetchone()
        if row is None:
            return TokenCheck(None)
        return TokenCheck(row[0], row[1], row[2])

    # -- models -----------------------------------------------------------

    def register(self, account_id: int, body: dict[str, Any]) -> ModelRow:
        """Insert a model with a random modelId; DuplicateNameError on a used name."""
        now = now_ms()
        for _ in range(5):
            model_id = "mdl_" + secrets.token_hex(12)
            try:
                with self._lock:
                    self._conn.execute(
                        "INSERT INTO models (account_id, model_id, model_name, registry_url,"
                        " api_key, req_params, req_example, res_example, create_ms, update_ms)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            account_id,
                            model_id,
                            body["modelName"],
                            body["registryUrl"],
                            body["apiKey"],
                            _params(body),
                            body.get("reqExample"),
                            body.get("resExample"),
                            now,
                            now,
                        ),
                    )
            except sqlite3.IntegrityError as exc:
                if "model_name" in str(exc):
                    raise DuplicateNameError(body["modelName"]) from None
                continue  # a modelId collision (never in practice): draw again
            return ModelRow(
                model_id, body["modelName"], body["registryUrl"], body["apiKey"], now, now
            )
        raise RuntimeError("could not create a unique modelId")  # pragma: no cover

    def modify(self, account_id: int, body: dict[str, Any]) -> ModelRow:
        """Overwrite name, URL and key (and reserved fields sent); keep createTime."""
        try:
            with self._lock:
                row = self._conn.execute(
                    "UPDATE models SET model_name = ?, registry_url = ?, api_key = ?,"
                    " req_params = COALESCE(?, req_params),"
                    " req_example = COALESCE(?, req_example),"
                    " res_example = COALESCE(?, res_example),"
                    # A new updateTime even when two changes fall in one millisecond.
                    " update_ms = MAX(?, update_ms + 1)"
                    " WHERE model_id = ? AND account_id = ?"
                    " RETURNING model_id, model_name, registry_url, api_key,"
                    " create_ms, update_ms",
                    (
                        body["modelName"],
                        body["registryUrl"],
                        body["apiKey"],
                        _params(body),
                        body.get("reqExample"),
                        body.get("resExample"),
                        now_ms(),
                        body["modelId"],
                        account_id,
                    ),
                ).fetchone()
        except sqlite3.IntegrityError:
            raise DuplicateNameError(body["modelName"]) from None
        if row is None:
            raise ModelNotFoundError(body["modelId"])
        return ModelRow(*row)

    def models(self, account_id: int) -> list[ModelRow]:
        """The account's models in creation order."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT model_id, model_name, registry_url, api_key, create_ms, update_ms"
                " FROM models WHERE account_id = ? ORDER BY seq",
                (account_id,),
            ).fetchall()
        return [ModelRow(*r) for r in rows]

    def reserved(self, model_id: str) -> dict[str, Any]:
        """The reserved fields stored for a model (for tests: they are never returned)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT req_params, req_example, res_example FROM models WHERE model_id = ?",
                (model_id,),
            ).fetchone()
        if row is None:
            raise ModelNotFoundError(model_id)
        return {
            "reqParams": None if row[0] is None else json.loads(row[0]),
            "reqExample": row[1],
            "resExample": row[2],
        }


def _params(body: dict[str, Any]) -> str | None:
    params = body.get("reqParams")
    return None if params is None else json.dumps(params, ensure_ascii=False)
