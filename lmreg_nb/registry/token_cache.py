"""The token cache file: one entry per (base_url, appId, env), private and atomic.

The file (``LMREG_TOKEN_CACHE``, default ``~/.cache/lmreg_nb/tokens.json``) is
created 0600 inside a 0700 folder and holds the token, its env and its expiry,
never the appSecret: a token earned with a secret carries a keyed fingerprint of
it (:func:`credential_id`). Writes are atomic (a temp file created 0600, then
``os.replace``) under a ``filelock`` lock (fcntl on POSIX, msvcrt on Windows).
A file that is not a regular one, too big or not ours is not read (see
:meth:`TokenCache.private`). When to use the cache is :mod:`lmreg_nb.registry.tokens`'s.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import stat
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from filelock import FileLock

from ..i18n import N_, _
from ..models import MAX_TIMESTAMP_MS, Token, now_ms
from ..secret import Secret
from ..validate import is_header_value

__all__ = ["MAX_CACHE_BYTES", "TokenCache", "credential_id"]

log = logging.getLogger("lmreg_nb")

#: A cache holds a few entries; a bigger file is not ours and is not read.
MAX_CACHE_BYTES = 1024 * 1024


def credential_id(base_url: str, app_id: str, app_secret: Secret) -> str:
    """A short keyed fingerprint of the credentials a cached token was earned with.

    An HMAC keyed by the appSecret: it tells two secrets apart without revealing
    anything about either (the cache never holds the appSecret itself).
    """
    message = f"{base_url}\n{app_id}".encode()
    return hmac.new(app_secret.reveal().encode(), message, hashlib.sha256).hexdigest()[:24]


#: Whether a folder's mode bits say who may read it (POSIX); Windows keeps that in ACLs and
#: reports every folder as 0777, which would warn on every command.
MODES_MEAN_ACCESS = os.name != "nt"


class TokenCache:
    """The token cache file: one entry per (base_url, appId, env)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._warned = False
        self._said: set[str] = set()  # warnings about the file already given (read twice)

    # -- reading ---------------------------------------------------------------

    def load(
        self,
        base_url: str,
        app_id: str,
        env: str | None = None,
        *,
        credential: str | None = None,
    ) -> Token | None:
        """The newest cached token for this platform and appId (and env, when given).

        With ``credential`` (see :func:`credential_id`) only a token obtained with
        the same appSecret counts: a mistyped or rotated secret is never hidden
        by a token the old one earned.
        """
        best: Token | None = None
        for entry in self._entries():
            if entry.get("baseUrl") != base_url or entry.get("appId") != app_id:
                continue
            if env is not None and entry.get("env") != env:
                continue
            if credential is not None and entry.get("credential") != credential:
                continue
            token = _entry_token(entry)
            if token is not None and (best is None or token.expires_at_ms > best.expires_at_ms):
                best = token
        return best

    def reusable(
        self, base_url: str, app_id: str | None, env: str | None = None
    ) -> list[tuple[str, Token]]:
        """(appId, token) of every entry for this platform (and appId, env when given),
        expired ones included, for use without the appSecret; none from a file that
        someone else could have written (see :meth:`private`)."""
        if not self.private():
            return []
        found = []
        for entry in self._entries():
            if entry.get("baseUrl") != base_url:
                continue
            if (app_id is not None and entry.get("appId") != app_id) or (
                env is not None and entry.get("env") != env
            ):
                continue
            token = _entry_token(entry)
            if token is not None and isinstance(entry.get("appId"), str):
                found.append((str(entry["appId"]), token))
        return found

    def private(self) -> bool:
        """Whether only this user can write the file and its folder (POSIX; elsewhere True)."""
        getuid = getattr(os, "getuid", None)
        if getuid is None:
            return True  # Windows: the file lives in the user's profile, behind its ACL
        try:
            mine, folder = self.path.stat(), self.path.parent.stat()
        except OSError:
            return False
        uid = getuid()
        return (
            mine.st_uid == uid
            and folder.st_uid == uid
            and not stat.S_IMODE(mine.st_mode) & 0o022
            and not stat.S_IMODE(folder.st_mode) & 0o022
        )

    def _entries(self) -> list[dict[str, Any]]:
        try:
            raw = _read_regular(self.path, MAX_CACHE_BYTES)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self._warn_once(
                N_("token cache {path} is unreadable ({reason}); ignoring it"),
                reason=str(exc.strerror),
            )
            return []
        if raw is None:
            self._warn_once(
                N_(
                    "token cache {path} is not a file of at most {limit} bytes; it will be replaced"
                ),
                limit=str(MAX_CACHE_BYTES),
            )
            return []
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            self._warn_once(N_("token cache {path} is not JSON; it will be rewritten"))
            return []
        entries = doc.get("tokens") if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            return []
        return [e for e in entries if isinstance(e, dict)]

    def _warn_once(self, message: str, **values: str) -> None:
        # Translated when shown: a notebook's log says it in the reader's language.
        if message not in self._said:
            self._said.add(message)
            log.warning("%s", _(message).format(path=self.path, **values))

    # -- writing ---------------------------------------------------------------

    def store(
        self, base_url: str, app_id: str, token: Token, *, credential: str | None = None
    ) -> None:
        """Save (replace) the entry for (base_url, app_id, token.env); drop expired ones."""
        with self.locked():
            self._store_unlocked(base_url, app_id, token, credential=credential)

    def _store_unlocked(
        self, base_url: str, app_id: str, token: Token, *, credential: str | None = None
    ) -> None:
        at = now_ms()
        keep = [
            e
            for e in self._entries()
            if not (
                e.get("baseUrl") == base_url
                and e.get("appId") == app_id
                and e.get("env") == token.env
            )
            and isinstance(e.get("expiresAt"), int)
            and e["expiresAt"] > at
        ]
        keep.append(
            {
                "baseUrl": base_url,
                "appId": app_id,
                "env": token.env,
                "token": token.token.reveal(),
                "expiresAt": token.expires_at_ms,
                "issuedAt": token.issued_at_ms,
                **({"credential": credential} if credential else {}),
            }
        )
        self._write(keep)

    def _ensure_folder(self) -> None:
        folder = self.path.parent
        if not folder.exists():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(folder, 0o700)  # mkdir's mode is filtered by the umask
            return
        mode = stat.S_IMODE(folder.stat().st_mode)
        if MODES_MEAN_ACCESS and mode & 0o077 and not self._warned:
            self._warned = True
            log.warning(
                "%s",
                _(
                    "token cache folder {folder} is readable by others (mode {mode}); the file "
                    "itself is 0600. To keep it yours: chmod 700 {folder}"
                ).format(folder=folder, mode=f"{mode:o}"),
            )

    def _write(self, entries: list[dict[str, Any]]) -> None:
        self._ensure_folder()
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        data = json.dumps({"version": 1, "tokens": entries}, indent=1).encode("utf-8")
        # 0600 from the first byte: created by os.open with the mode, never chmod-ed later.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def locked(self, timeout: float = -1) -> Iterator[None]:
        """An exclusive lock shared by every thread and process using this cache file.

        ``timeout`` seconds at most (negative: no limit), then ``filelock.Timeout``.
        """
        self._ensure_folder()
        # A new FileLock each time: each holds its own open file, so threads of one
        # process exclude each other as processes do (a shared instance is reentrant).
        lock = FileLock(self.path.with_name(self.path.name + ".lock"), mode=0o600)
        with lock.acquire(timeout=timeout):
            yield


def _read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes, else None.

    Opened without blocking (a FIFO planted there would wait for a writer forever)
    and checked on the open file, not on its name, so nothing can swap it in between.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks) if size <= limit else None


def _entry_token(entry: Mapping[str, Any]) -> Token | None:
    token, env = entry.get("token"), entry.get("env")
    expires, issued = entry.get("expiresAt"), entry.get("issuedAt")
    if not (isinstance(token, str) and token and isinstance(env, str) and env):
        return None
    if not (is_header_value(token) and is_header_value(env)):
        return None  # cached by an older release: no header can carry it (CR LF, non-ASCII)
    if not (isinstance(expires, int) and isinstance(issued, int)):
        return None
    if not (0 < expires <= MAX_TIMESTAMP_MS and 0 <= issued <= MAX_TIMESTAMP_MS):
        return None  # a hand-edited or foreign file: not a token worth trusting
    return Token(Secret(token), env, expires, issued, source="cache")
