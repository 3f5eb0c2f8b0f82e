"""The provider's fleet: the schools of a batch plan, each with its account and contact.

:func:`read_fleet` reads the plan (:mod:`lmreg_nb.plan`, every mistake at once,
one line each naming the line and the column) and builds one :class:`School`
per row, with no notebook involved: the watch runs none. A row that cannot be
used (its env_file missing, its variables incomplete) keeps its ``problem`` and
is reported by the watch, never stopping the others. A school's alerts go
by the provider's one mail sender (:func:`mail_target`: the sender's Apprise
``mailto://`` URL with ``to=`` set to the school's contact) in the school's
language.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import ConfigurationError, LmregError
from ..i18n import _
from ..secret import Secret
from .names import shown_name

if TYPE_CHECKING:
    from ..plan import PlanRow
    from ..settings import Settings
    from .notify import NotifyTarget

__all__ = ["MAIL_SCHEMES", "School", "mail_target", "parse_mail", "read_fleet", "school_of"]

MAIL_SCHEMES = ("mailto", "mailtos")


@dataclass(frozen=True)
class School:
    """One school watched: its key (the plan's run_id), its name, account and contact."""

    key: str
    name: str
    settings: Settings | None = None
    #: Why the row cannot be used (missing env_file...): reported, never raised.
    problem: str = ""
    contact_email: str = ""
    lang: str | None = None
    line: int = 0
    #: The secrets the school's account holds (its appSecret, token): masked in its
    #: model names too.
    secrets: tuple[Secret, ...] = dataclasses.field(default=(), repr=False)


def parse_mail(url: str) -> NotifyTarget:
    """The provider's mail sender (--mail / LMREG_NOTIFY_MAIL); one line when unusable."""
    from .notify import parse_targets

    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in MAIL_SCHEMES:
        raise ConfigurationError(
            _(
                "--mail: give an Apprise mailtos:// or mailto:// URL naming the sender and "
                "its SMTP server, e.g. mailtos://user:password@smtp.example.edu.cn"
            ),
            variable="LMREG_NOTIFY_MAIL",
        )
    (target,) = parse_targets([url])
    return target


def mail_target(mail: NotifyTarget, to: str) -> NotifyTarget:
    """The sender's URL with ``to=`` the school's contact (any recipient it named replaced).

    ``to`` is an address :func:`lmreg_nb.validate.check_email` accepted; it goes in angle
    brackets, which Apprise reads as one address whatever it holds (``o'brien+x@...``
    without them became ``brien+x@...``, another mailbox). ConfigurationError (one line)
    when Apprise would still mail anyone but exactly ``to``.
    """
    import apprise

    from .notify import NotifyTarget

    parts = urlsplit(mail.url.reveal())
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "to"]
    url = urlunsplit(parts._replace(query=urlencode([*query, ("to", f"<{to}>")])))
    plugin = apprise.Apprise.instantiate(url)
    mailed = [address for _name, address in getattr(plugin, "targets", None) or []]
    if mailed != [to]:
        raise ConfigurationError(
            _("the contact address {address} cannot be mailed as it is (Apprise reads {read})")
            .format(address=to, read=", ".join(mailed) or "-")
        )  # fmt: skip
    secrets = list(mail.secrets)
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return NotifyTarget(Secret(url), digest, to, tuple(secrets))


def read_fleet(plan: Path, *, lang: str | None = None) -> list[School]:
    """The schools of a plan; every mistake of the plan at once (a PlanError, exit 2).

    A row whose env_file is missing or whose variables are incomplete is kept with its
    problem: the watch reports it and watches the other schools. ``lang``: the rows'
    language unless a row has its own (default: the current one).
    """
    from ..i18n import current_language
    from ..plan import read_rows

    rows = read_rows(plan, lang=lang or current_language(), check_contacts=True, env_required=False)
    return [school_of(row) for row in rows]


def school_of(row: PlanRow) -> School:
    """One plan row as a watched school: its account's settings, or why it has none."""
    from ..settings import Settings

    name = shown_name(row.cells.get("school") or row.run_id)
    email = row.contacts.get("contact_email", "")
    if row.env_problem:
        return School(row.run_id, name, None, row.env_problem, email, row.lang, row.line)
    try:
        # The row's variables only: no .env searched, no ${VAR} expanded, nothing of the
        # provider's own environment (its LMREG_NOTIFY_MAIL password) reaches a school.
        settings = Settings.load(environ={**row.env, "LMREG_ENV_FILE": os.devnull})
        settings.require("base_url")
        if "LMREG_TOKEN_CACHE" not in row.env and settings.token_cache is not None:
            # One cache file per school: 1,000 tokens in one file rewrite it 1,000
            # times under its lock (bench_watch: a first round 3x slower).
            # Beside the provider's own LMREG_TOKEN_CACHE when it sets one.
            own = os.environ.get("LMREG_TOKEN_CACHE")
            folder = Path(own).expanduser().parent if own else settings.token_cache.parent
            cache = folder / "fleet" / f"{row.run_id}.json"
            settings = dataclasses.replace(settings, token_cache=cache)
    except LmregError as exc:
        return School(row.run_id, name, None, str(exc), email, row.lang, row.line)
    secrets = tuple(Secret(s) for s in settings.secret_values())
    return School(row.run_id, name, settings, "", email, row.lang, row.line, secrets)
