"""Settings: arguments > environment > .env file > defaults, read in this one place.

The .env file is the one ``LMREG_ENV_FILE`` names, else the first ``.env``
found in the working directory or its parents (up to the home folder, or the
filesystem root outside it): a notebook's kernel starts in ``notebooks/`` while
the README puts ``.env`` beside the repository. :attr:`Settings.env_file` says
which file was read, :attr:`Settings.env_searched` where it was looked for.

A file found by searching is trusted less than one that is named: the search
stops at the first folder another user could write in (``/tmp`` and the like,
where anyone may plant a ``.env``), skips a ``.env`` others could change, and
never takes from it the variables that decide what runs or whose account is
used (:data:`NAMED_FILE_ONLY`). ``LMREG_ENV_FILE=/dev/null`` turns the search off;
a run's kernel gets that, so its environment is decided by the parent only.
"""

from __future__ import annotations

import io
import logging
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .errors import ConfigurationError
from .file_trust import above_reason, others_can_write
from .i18n import _, listing, normalize_language
from .secret import Secret, split_urls, url_secrets
from .validate import is_header_value, looks_numeric, numeric_host_reason

log = logging.getLogger("lmreg_nb")

__all__ = [
    "DEFAULT_TOKEN_PATH",
    "ENV_FROM",
    "NAMED_FILE_ONLY",
    "SECRET_VARIABLES",
    "VARIABLES",
    "Settings",
    "check_header_value",
    "find_env_file",
]

DEFAULT_TOKEN_PATH = "/openapi/v1/token"
DEFAULT_TIMEOUT = 10.0

#: Settings field -> environment variable.
VARIABLES: dict[str, str] = {
    "base_url": "LMREG_BASE_URL",
    "app_id": "LMREG_APP_ID",
    "app_secret": "LMREG_APP_SECRET",
    "token_path": "LMREG_TOKEN_PATH",
    "token": "LMREG_TOKEN",
    "env": "LMREG_ENV",
    "token_cache": "LMREG_TOKEN_CACHE",
    "timeout": "LMREG_TIMEOUT",
    "model_url": "LMREG_MODEL_URL",
    "model_api_key": "LMREG_MODEL_API_KEY",
    "model_name": "LMREG_MODEL_NAME",
    "lang": "LMREG_LANG",
    "notebooks": "LMREG_NOTEBOOKS",
    "notify": "LMREG_NOTIFY",
    "notify_mail": "LMREG_NOTIFY_MAIL",
    "allow_private": "LMREG_ALLOW_PRIVATE",
}
#: Set by ``onboard`` and ``batch`` for a run's child: the .env file its settings came from.
ENV_FROM = "LMREG_ENV_FROM"
#: The variables whose values are secrets (never shown, never parameters).
SECRET_VARIABLES = (
    "LMREG_APP_SECRET",
    "LMREG_TOKEN",
    "LMREG_MODEL_API_KEY",
    "LMREG_NOTIFY",
    "LMREG_NOTIFY_MAIL",
)
_SECRET_FIELDS = {"app_secret", "token", "model_api_key", "notify", "notify_mail"}
#: Notification URLs: only their secret parts are masked (not hosts and addresses).
_URL_FIELDS = ("notify", "notify_mail")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
#: Variables a .env found by searching never sets: which notebooks run, and whose token
#: (and cache) the run uses. Only the environment or a named LMREG_ENV_FILE sets them.
NAMED_FILE_ONLY = ("LMREG_NOTEBOOKS", "LMREG_TOKEN", "LMREG_ENV", "LMREG_TOKEN_CACHE")
#: A .env larger than this is not a configuration file.
_MAX_ENV_FILE = 1 << 20
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lmreg_nb" / "tokens.json"


@dataclass(frozen=True)
class Settings:
    """The toolkit's configuration; see ``.env.example`` for each variable."""

    base_url: str | None = None
    app_id: str | None = None
    app_secret: Secret | None = None
    token_path: str = DEFAULT_TOKEN_PATH
    token: Secret | None = None
    env: str | None = None
    token_cache: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    model_url: str | None = None
    model_api_key: Secret | None = None
    model_name: str | None = None
    #: "zh-CN" or "en" (LMREG_LANG); None: the locale decides.
    lang: str | None = None
    #: The folder holding the notebooks (LMREG_NOTEBOOKS); None: the shipped ones.
    notebooks: Path | None = None
    #: Where `watch` sends alerts (LMREG_NOTIFY): Apprise URLs, comma-separated.
    notify: Secret | None = None
    #: The provider's mail sender for the schools' contacts (LMREG_NOTIFY_MAIL): an
    #: Apprise mailto:// / mailtos:// URL without a recipient.
    notify_mail: Secret | None = None
    #: `watch` calls models registered at loopback or private addresses too
    #: (LMREG_ALLOW_PRIVATE=1: rehearsals on the sandbox).
    allow_private: bool = False
    #: The .env file that was read, or None.
    env_file: Path | None = None
    #: The places a .env file was looked for, in order (the last one is env_file when found).
    env_searched: tuple[Path, ...] = ()
    #: Variables of a searched-for .env that were not taken (see NAMED_FILE_ONLY).
    env_ignored: tuple[str, ...] = ()
    #: A .env the search found but did not read, and why (another user could change it).
    env_skipped: tuple[Path, str] | None = None
    #: The file the command that started this run read the settings from (LMREG_ENV_FROM,
    #: set by ``onboard`` and ``batch`` for their child): its values came with the
    #: environment, so the configuration view names it instead of "no .env found".
    env_from: str | None = None
    #: Settings typed into a form (field names, e.g. "app_secret"): hints then name the
    #: form, not the LMREG_* variable.
    typed: frozenset[str] = frozenset()

    @classmethod
    def load(
        cls,
        *,
        environ: Mapping[str, str] | None = None,
        env_file: str | os.PathLike[str] | None = None,
        **overrides: Any,
    ) -> Settings:
        """Read settings: ``overrides`` > ``environ`` (default os.environ) > .env > defaults.

        The .env file is ``env_file``, else ``$LMREG_ENV_FILE``, else the first
        ``.env`` in the working directory or its parents; it is read, never
        loaded into the process environment.
        """
        unknown = set(overrides) - set(VARIABLES)
        if unknown:
            raise TypeError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        env = dict(os.environ if environ is None else environ)
        named = env_file or env.get("LMREG_ENV_FILE")
        found, searched, skipped = _search_env_file(named)
        # ${VAR} in a searched file could carry the appSecret into a URL: never expanded.
        from_file = _read_env_file(found, interpolate=bool(named))
        ignored: tuple[str, ...] = ()
        if found is not None and not named:
            ignored = tuple(v for v in NAMED_FILE_ONLY if from_file.pop(v, None))
        merged = {**from_file, **env}
        values: dict[str, Any] = {}
        for name, var in VARIABLES.items():
            raw = overrides.get(name)
            if raw is None:
                raw = merged.get(var) or None
            if raw is not None:
                _check_text(var, raw)
                values[name] = _coerce(name, raw)
        if values.get("token_cache") is None:
            values["token_cache"] = _default_cache()
        came_from = env.get(ENV_FROM) or None
        return cls(
            **values,
            env_file=found,
            env_searched=searched,
            env_ignored=ignored,
            env_skipped=skipped,
            env_from=came_from,
        )

    def with_(self, **changes: Any) -> Settings:
        """A copy with some settings changed."""
        typed = changes.pop("typed", None)
        values: dict[str, Any] = {k: _coerce(k, v) for k, v in changes.items()}
        if typed is not None:
            values["typed"] = frozenset(typed)
        return replace(self, **values)

    def missing(self, *names: str) -> list[str]:
        """The variables of ``names`` (settings fields) that are not set."""
        # An empty Secret is as missing as an empty string (Secret("") != "").
        return [
            VARIABLES[n]
            for n in names
            if (v := getattr(self, n)) is None or v == "" or (isinstance(v, Secret) and not v)
        ]

    def require(self, name: str, *more: str) -> Any:
        """The value of setting ``name``; ConfigurationError naming every unset variable.

        With ``more`` names, all are checked at once (one message lists every
        missing variable); the value of ``name`` is returned.
        """
        missing = self.missing(name, *more)
        if missing:
            raise ConfigurationError(self._missing_message(missing), variable=missing[0])
        value = getattr(self, name)
        if "base_url" in (name, *more):
            _check_base_url(self.base_url or "")
        if "model_api_key" in (name, *more) and self.model_api_key:
            check_header_value("LMREG_MODEL_API_KEY", self.model_api_key.reveal())
        return value

    def _missing_message(self, missing: list[str]) -> str:
        if len(missing) == 1:
            text = _("{variables} is not set: set it in the environment or in {file}")
        else:
            text = _("{variables} are not set: set them in the environment or in {file}")
        text = text.format(variables=listing(missing), file=self.env_file or ".env")
        text = _("{message} (see .env.example)").format(message=text)
        if self.env_file is None and self.env_skipped is not None:
            path, reason = self.env_skipped
            text = _(
                "{message}; {path} was found but not read: another user could change it "
                "({reason}); make it and its folders only yours (chmod g-w,o-w), or name "
                "it with LMREG_ENV_FILE"
            ).format(message=text, path=path, reason=reason)
        elif self.env_file is None and self.env_searched:
            places = listing(str(p.parent) for p in self.env_searched[:3])
            more = " …" if len(self.env_searched) > 3 else ""
            text = _("{message}; no .env found in {places}").format(
                message=text, places=places + more
            )
        return text

    def secret_values(self) -> list[str]:
        """Every secret this configuration holds, in plain text (for scrubbing).

        Of LMREG_NOTIFY only the secret parts of its URLs (passwords, tokens): masking
        every 8 characters of a URL would also mask host names and e-mail addresses.
        """
        values = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _URL_FIELDS and value:
                values += [s for url in split_urls(value.reveal()) for s in url_secrets(url)]
            elif f.name in _SECRET_FIELDS and value:
                values.append(value.reveal())
        return values


def find_env_file(
    named: str | os.PathLike[str] | None = None, start: Path | None = None
) -> tuple[Path | None, tuple[Path, ...]]:
    """The .env file to read and the places looked at: ``named``, else a search upwards.

    The search starts in ``start`` (default: the working directory) and stops
    after the home folder when it is above, else at the filesystem root, and
    before the first folder another user could write in. ``named`` equal to
    ``os.devnull`` means: no file, no search.
    """
    found, searched, _skipped = _search_env_file(named, start)
    return found, searched


def _search_env_file(
    named: str | os.PathLike[str] | None = None, start: Path | None = None
) -> tuple[Path | None, tuple[Path, ...], tuple[Path, str] | None]:
    """:func:`find_env_file`, and the .env it found but did not trust, with why."""
    if named and str(named) == os.devnull:
        return None, (), None
    if named:
        target = Path(named).expanduser()
        if not target.is_file():
            raise ConfigurationError(
                _("LMREG_ENV_FILE names {path}, which does not exist").format(path=target),
                variable="LMREG_ENV_FILE",
            )
        return target, (target,), None
    here = (start or Path.cwd()).resolve()
    home = Path.home().resolve()
    searched: list[Path] = []
    for folder in (here, *here.parents):
        candidate = folder / ".env"
        reason = _distrust(folder)
        if reason is not None:
            # Anyone may have planted a .env here, or above.
            return None, tuple(searched), _skipped(candidate, reason)
        searched.append(candidate)
        if candidate.is_file():
            reason = _distrust(candidate) or _distrust_above(folder)
            if reason is not None:
                return None, tuple(searched), _skipped(candidate, reason)
            return candidate, tuple(searched), None
        if folder == home:
            break
    return None, tuple(searched), None


def _skipped(candidate: Path, reason: str) -> tuple[Path, str] | None:
    """``candidate`` and why it is not read, when it exists (logged as a warning)."""
    try:
        exists = candidate.is_file()
    except OSError:
        exists = False
    if not exists:
        return None
    log.warning(
        "%s",
        _("ignored {path}: another user could change it ({reason})").format(
            path=candidate, reason=reason
        ),
    )
    return candidate, reason


def _distrust(path: Path) -> str | None:
    """Why another user can change ``path`` (None: only this user can).

    Mode bits, POSIX ACL entries and group members all count (:mod:`.file_trust`):
    group write only for a group known to hold no other user.
    """
    if getattr(os, "getuid", None) is None:
        return None  # Windows: ACLs, not modes; the search still stops at the home folder
    reason = others_can_write(path)
    if reason:
        log.info(
            "%s", _("{path} is not only this user's: {reason}").format(path=path, reason=reason)
        )
    return reason


def _distrust_above(folder: Path) -> str | None:
    """Why another user can replace ``folder`` from above (None: every folder over it is
    this user's or root's, and only they can write it, or it is sticky, as /tmp)."""
    if getattr(os, "getuid", None) is None:
        return None
    return above_reason(folder, frozenset({os.getuid(), 0}))


def _read_env_file(target: Path | None, *, interpolate: bool = True) -> dict[str, str]:
    if target is None:
        return {}
    from dotenv import dotenv_values  # a small import, only when a file exists

    try:
        with open(target, "rb") as raw:
            if not stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
                raise OSError("not a regular file")
            data = raw.read(_MAX_ENV_FILE + 1)
    except OSError as exc:
        raise ConfigurationError(
            _("cannot read {path}: {reason}").format(path=target, reason=exc.strerror or exc),
            variable="LMREG_ENV_FILE",
        ) from None
    if len(data) > _MAX_ENV_FILE:
        raise ConfigurationError(
            _("{path} is too large for a .env file (over 1 MiB): name the right file").format(
                path=target
            ),
            variable="LMREG_ENV_FILE",
        )
    text = _env_text(target, data)
    _check_lines(target, text)
    logging.getLogger("dotenv.main").addFilter(_no_dotenv_warnings)  # said above, once
    values = dotenv_values(stream=io.StringIO(text), interpolate=interpolate)
    return {k: v for k, v in values.items() if v is not None}


def _env_text(target: Path, data: bytes) -> str:
    """A .env file's text: UTF-8 (a BOM allowed); a line of ours in another encoding is
    an error (GBK, Notepad's "ANSI" on a Chinese Windows: a value decoded wrong would be
    used, or registered), a comment in one is read as it can be."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigurationError(
            _('{path} is saved as UTF-16 (Notepad\'s "Unicode"): save it as UTF-8').format(
                path=target
            ),
            variable="LMREG_ENV_FILE",
        )
    data = data.removeprefix(b"\xef\xbb\xbf")
    for number, line in enumerate(data.split(b"\n"), 1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            if not line.strip().startswith(b"#"):
                raise ConfigurationError(
                    _(
                        "{path} line {line} is not UTF-8 text (saved as GBK or ANSI?): save "
                        "the file as UTF-8"
                    ).format(path=target, line=number),
                    variable="LMREG_ENV_FILE",
                ) from None
    return data.decode("utf-8", errors="replace")


def _check_lines(target: Path, text: str) -> None:
    """Refuse a line meant for an LMREG_ variable that python-dotenv would skip or keep
    under another name (a full-width ＝, ``NAME: value``, a name in lower case)."""
    from dotenv.parser import parse_stream

    for binding in parse_stream(io.StringIO(text)):
        original = binding.original.string
        line = original.strip()
        # A statement python-dotenv could not parse starts with the blank lines before it.
        number = binding.original.line + original[: len(original) - len(original.lstrip())].count(
            "\n"
        )
        name = _LINE_NAME.match(line)
        if name is None:
            continue
        key = binding.key or ""
        if binding.error or binding.value is None or not _VARIABLE_NAME.fullmatch(key):
            raise ConfigurationError(
                _(
                    "{path} line {line} ({name}) is not NAME=value: write LMREG_ names in "
                    "upper case, then an ASCII =, then the value"
                ).format(path=target, line=number, name=name.group(1)),  # never the value
                variable="LMREG_ENV_FILE",
            )


_VARIABLE_NAME = re.compile(r"LMREG_[A-Z0-9_]+")
#: A line meant for one of ours: its name as written (what an error may show of it).
_LINE_NAME = re.compile(r"(?:export\s+)?(lmreg_[a-z0-9_]*)", re.IGNORECASE)


def _no_dotenv_warnings(record: logging.LogRecord) -> bool:
    """python-dotenv's "could not parse statement" warnings (in English, twice, no file):
    the lines that concern us are an error of ours (:func:`_check_lines`)."""
    return "could not parse" not in record.getMessage()


def _check_text(variable: str, raw: Any) -> None:
    """Refuse a value holding bytes that are not UTF-8 (Python keeps them as lone
    surrogates: every later encode would be a traceback)."""
    text = raw.reveal() if isinstance(raw, Secret) else raw
    if not isinstance(text, str) or variable in ("LMREG_TOKEN_CACHE", "LMREG_NOTEBOOKS"):
        return  # a path may hold any bytes the filesystem allows
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigurationError(
            _("{variable} holds bytes that are not UTF-8 text: set it again as plain text").format(
                variable=variable
            ),
            variable=variable,
        ) from None


def _coerce(name: str, raw: Any) -> Any:
    if name in _SECRET_FIELDS:
        # Surrounding whitespace in a pasted secret is a copy error, never part of it.
        return raw if isinstance(raw, Secret) or raw is None else Secret(str(raw).strip())
    if name == "timeout":
        try:
            timeout = float(raw)
        except (TypeError, ValueError):
            raise ConfigurationError(
                _("LMREG_TIMEOUT must be a number of seconds, e.g. 10"), variable="LMREG_TIMEOUT"
            ) from None
        if not 0 < timeout <= 600:
            raise ConfigurationError(
                _("LMREG_TIMEOUT must be between 0 and 600 seconds"), variable="LMREG_TIMEOUT"
            )
        return timeout
    if name == "token_cache" and raw not in (None, ""):
        return _cache_file(Path(raw).expanduser())
    if name in ("token_cache", "notebooks", "env_file"):
        return None if raw in (None, "") else Path(raw).expanduser()
    if name == "lang" and raw is not None:
        lang = normalize_language(str(raw))
        if lang is None:
            raise ConfigurationError(
                _("LMREG_LANG must be zh-CN or en, not {value!r}").format(value=str(raw)[:40]),
                variable="LMREG_LANG",
            )
        return lang
    if name == "allow_private":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text not in (*_TRUE, *_FALSE):
            raise ConfigurationError(
                _("LMREG_ALLOW_PRIVATE must be 1 or 0, not {value!r}").format(value=text[:20]),
                variable="LMREG_ALLOW_PRIVATE",
            )
        return text in _TRUE
    if name == "base_url" and isinstance(raw, str):
        return raw.strip().rstrip("/")
    if name == "token_path" and isinstance(raw, str):
        raw = raw.strip()
        return raw if raw.startswith("/") else "/" + raw
    return raw.strip() if isinstance(raw, str) else raw


def check_header_value(variable: str, value: str) -> None:
    """ConfigurationError unless ``value`` (of ``variable``) can be sent in an HTTP header."""
    # Sent as "Authorization: Bearer <value>": anything but visible ASCII cannot be
    # sent at all (before: a UnicodeEncodeError traceback in the middle of a check).
    if not is_header_value(value):
        raise ConfigurationError(
            _(
                "{variable} must be visible ASCII characters only (letters, digits, "
                "punctuation), no spaces: an HTTP header cannot carry anything else"
            ).format(variable=variable),
            variable=variable,
        )


def _cache_file(path: Path) -> Path:
    """LMREG_TOKEN_CACHE must name a file: ``/`` or an existing folder cannot hold tokens."""
    if not path.name or path.is_dir():
        raise ConfigurationError(
            _(
                "LMREG_TOKEN_CACHE must name a file, not a folder ({path}), e.g. "
                "~/.cache/lmreg_nb/tokens.json"
            ).format(path=path),
            variable="LMREG_TOKEN_CACHE",
        )
    return path


def _check_base_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (urlsplit checks the port only when it is read)
    except ValueError:
        # "http://[::1", a port over 65535: urllib's ValueError would be a traceback.
        raise ConfigurationError(
            _("LMREG_BASE_URL is not a valid address: write it as https://ai.school.example"),
            variable="LMREG_BASE_URL",
        ) from None
    ok = parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOCAL_HOSTS)
    if not ok or not parts.hostname:
        raise ConfigurationError(
            _(
                "LMREG_BASE_URL must be an https:// address (http only for localhost), "
                "e.g. https://ai.school.example"
            ),
            variable="LMREG_BASE_URL",
        )
    if looks_numeric(parts.hostname):
        # httpx refuses 0177.0.0.1 with a traceback; resolvers read 127.1 as loopback.
        raise ConfigurationError(
            "LMREG_BASE_URL: " + numeric_host_reason(parts.hostname), variable="LMREG_BASE_URL"
        )
