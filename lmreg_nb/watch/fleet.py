"""The provider's fleet: the schools of a batch plan, each with its account and contact.

The CLI reads the plan (the batch's parser, one line naming the line and the
column for a bad row) and builds one :class:`School` per row; a row that cannot
be used (its env_file missing, its variables incomplete) keeps its ``problem``
and is reported by the watch, never stopping the others. A school's alerts go
by the provider's one mail sender (:func:`mail_target`: the sender's Apprise
``mailto://`` URL with ``to=`` set to the school's contact) in the school's
language.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import ConfigurationError
from ..i18n import _
from ..secret import Masker, Secret

if TYPE_CHECKING:
    from ..settings import Settings
    from .notify import NotifyTarget

__all__ = ["MAIL_SCHEMES", "School", "mail_target", "parse_mail"]

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
    """The sender's URL with ``to=`` the school's contact (any recipient it named replaced)."""
    from .notify import NotifyTarget

    parts = urlsplit(mail.url.reveal())
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "to"]
    url = urlunsplit(parts._replace(query=urlencode([*query, ("to", to)])))
    secrets = list(mail.secrets)
    shown = Masker(secrets)(url)
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return NotifyTarget(Secret(url), digest, shown, tuple(secrets))
