"""Where alerts go: Apprise URLs (e-mail, DingTalk, WeCom, Feishu, webhooks...), secrets masked.

Apprise builds, signs and sends every kind of notification; this module only
checks the URLs once at the start (an unknown scheme or a URL Apprise refuses
is one clear line, exit 2), shows them masked, and sends one message to one
target, returning the reason it failed instead of raising. A notification
URL holds secrets (a password, a bot token), so each target carries those
secrets (:func:`lmreg_nb.secret.url_secrets` plus the ones Apprise's plugin
marks private) for the one masker; Apprise's own log, which prints URLs, is
kept out of ours.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ..i18n import _
from ..secret import Masker, Secret, split_urls, url_secrets
from ..terminal import snippet
from .names import shown_address

if TYPE_CHECKING:
    from ..settings import Settings
    from .messages import Message

__all__ = [
    "SEND_CONCURRENCY",
    "SEND_TIMEOUT_S",
    "Notifier",
    "NotifyTarget",
    "parse_targets",
    "targets_masker",
]

#: The longest one notification may take (an SMTP server that does not answer).
SEND_TIMEOUT_S = 30.0
#: Targets sent to at once (each send is a thread: Apprise blocks). 500 schools' mails
#: of ~0.2 s each leave within seconds, and one SMTP server sees at most this many
#: connections from the watch.
SEND_CONCURRENCY = 16
_EXAMPLES = "mailtos://, dingtalk://, wecombot://, feishu://, json://"


def _quiet_apprise() -> None:
    # Apprise logs the URLs it posts to (tokens in their paths) at DEBUG; its lines never
    # reach our handlers. What a failure says is read from the result, masked.
    from .smtp_tls import share_tls_contexts

    share_tls_contexts()  # one TLS context per process, not ~57 ms of CPU per mail
    logger = logging.getLogger("apprise")
    logger.propagate = False
    # Its DEBUG lines carry the SMTP exception that says why a mail failed (read from
    # the result of each send, masked); without this level they are never made.
    logger.setLevel(logging.DEBUG)


@dataclass(frozen=True)
class NotifyTarget:
    """One Apprise URL: kept as a Secret, shown masked, identified by a hash (for the state)."""

    url: Secret
    id: str
    shown: str
    secrets: tuple[Secret, ...] = field(default=(), repr=False)

    def __str__(self) -> str:
        return self.shown


def _asset() -> Any:
    import apprise

    # Memory only: Apprise's persistent storage would write files named after the URLs.
    return apprise.AppriseAsset(storage_mode=apprise.PersistentStoreMode.MEMORY)


def _private_values(plugin: Any) -> list[str]:
    """The values of the tokens an Apprise plugin marks private (bot tokens, keys)."""
    found: list[str] = []
    specs = {**getattr(plugin, "template_tokens", {}), **getattr(plugin, "template_args", {})}
    for key, spec in specs.items():
        if not isinstance(spec, dict) or not spec.get("private"):
            continue
        value = getattr(plugin, spec.get("map_to") or key, None)
        values = value if isinstance(value, list | tuple | set) else [value]
        found += [v for v in values if isinstance(v, str) and v]
    return found


def _scheme(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else ""


def _refusal(logs: str, mask: Masker) -> str:
    """Apprise's reason for refusing a URL (its last warning or error line), masked."""
    lines = [ln.split(" - ", 2)[-1] for ln in logs.splitlines() if " - " in ln]
    useful = [ln for ln in lines if not ln.startswith("Could not load")] or lines
    return snippet(mask(useful[-1]), 160) if useful else ""


def parse_targets(urls: Iterable[str]) -> list[NotifyTarget]:
    """Check every URL with Apprise; ConfigurationError (one line, URL masked) for a bad one.

    An empty list is refused too: a watch that can tell no one is a mistake.
    """
    import apprise
    from apprise.manager_plugins import NotificationManager

    _quiet_apprise()
    known = NotificationManager()
    targets: list[NotifyTarget] = []
    for url in (u.strip() for u in urls):
        if not url:
            continue
        mask = Masker(url_secrets(url))
        shown = mask(url)
        scheme = _scheme(url)
        if not scheme or scheme not in known:
            raise ConfigurationError(
                _(
                    "notify target {target}: unknown scheme {scheme!r}; give an Apprise URL "
                    "such as {examples}"
                ).format(target=shown, scheme=scheme or url[:12], examples=_EXAMPLES),
                variable="LMREG_NOTIFY",
            )
        with apprise.LogCapture(level=logging.WARNING) as logs:
            plugin = apprise.Apprise.instantiate(url, asset=_asset())
        if plugin is None:
            reason = _refusal(logs.getvalue(), mask) or _("the URL is incomplete")
            raise ConfigurationError(
                _("notify target {target}: Apprise cannot use it: {reason}").format(
                    target=shown, reason=reason
                ),
                variable="LMREG_NOTIFY",
            )
        secrets = list(dict.fromkeys([*url_secrets(url), *_private_values(plugin)]))
        shown = shown_address(url, Masker(secrets))  # alerts%40school.cn as alerts@school.cn
        digest = hashlib.sha256(url.encode()).hexdigest()[:16]
        targets.append(NotifyTarget(Secret(url), digest, shown, tuple(Secret(s) for s in secrets)))
    if not targets:
        raise ConfigurationError(
            _(
                "no alert targets: give --notify URL (repeatable) or set LMREG_NOTIFY to "
                "Apprise URLs, comma-separated"
            ),
            variable="LMREG_NOTIFY",
        )
    return targets


def configured_urls(settings: Settings, given: Sequence[str] = ()) -> list[str]:
    """The URLs given (``--notify``), else those of LMREG_NOTIFY."""
    if given:
        return [u for g in given for u in split_urls(g)]
    return split_urls(settings.notify.reveal()) if settings.notify else []


def targets_masker(targets: Iterable[NotifyTarget], *more: str | Secret) -> Masker:
    """One masker for every target's secrets (and ``more``: apiKeys)."""
    return Masker([*(s for t in targets for s in t.secrets), *more])


class Notifier:
    """Sends one message to one target; says why it failed instead of raising."""

    def __init__(self, targets: Sequence[NotifyTarget], timeout: float = SEND_TIMEOUT_S) -> None:
        _quiet_apprise()
        self.targets = list(targets)
        self.timeout = timeout
        # One Apprise object per target, made at its first message (a fleet has 1,000 mail
        # targets, most of which never get one).
        self._apprise: dict[str, Any] = {}
        self._pool: ThreadPoolExecutor | None = None

    async def asend(self, target: NotifyTarget, message: Message) -> str | None:
        """:meth:`send` on a thread of the notifier's own (SEND_CONCURRENCY of them)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(SEND_CONCURRENCY, thread_name_prefix="lmreg-send")
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, self.send, target, message
        )

    def close(self) -> None:
        """Let the sending threads go (a send in progress finishes on its own)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)

    def _sender(self, target: NotifyTarget) -> Any:
        import apprise

        sender = self._apprise.get(target.id)
        if sender is None:
            sender = apprise.Apprise(asset=_asset())
            sender.add(target.url.reveal())
            self._apprise[target.id] = sender
        return sender

    def send(self, target: NotifyTarget, message: Message) -> str | None:
        """Send ``message``; None when delivered, else the reason (one line, masked)."""
        import apprise

        mask = Masker(list(target.secrets))
        try:
            result = self._sender(target).notify(
                body=message.body,
                title=message.title,
                notify_type=message.notify_type,
                body_format=apprise.NotifyFormat.TEXT,
                timeout=self.timeout,
                # DEBUG: the SMTP exception that says why (AUTH, TLS, a refused recipient)
                # is only logged there; these lines stay in the result, never in our log.
                log_level=logging.DEBUG,
            )
        except Exception as exc:  # a plugin's bug must not stop the watch; say what it was
            return mask(snippet(f"{type(exc).__name__}: {exc}", 200))
        if result:
            return None
        if getattr(result, "timeout_count", 0):
            return _("no answer within {seconds} s").format(seconds=f"{self.timeout:g}")
        said = [mask(snippet(e.message, 300)) for e in result.logs()]
        cause = smtp_cause(said)
        if cause is not None:
            return cause
        warned = [
            mask(snippet(e.message, 200))
            for e in result.logs()
            if e.level in ("WARNING", "ERROR", "CRITICAL")
        ]
        if not warned:
            return _("the service did not accept the notification")
        return plain_reason(warned[-1])


#: Apprise's English reasons, in the reader's words (its text stays as the detail).
_STATUS = re.compile(r"\b([1-5][0-9]{2})\b")
_SMTP_CODE = re.compile(r"\(?\b([45][0-9]{2})\b[,:\s]+b?['\"]?([^'\")]{0,120})")


def smtp_cause(lines: Sequence[str]) -> str | None:
    """The real reason an e-mail was not sent, from Apprise's log of the send, or None.

    Apprise says "Connection error while submitting email" for all of them; the SMTP
    exception it logs at DEBUG ("Socket Exception: ...") says which: the server takes
    no login, refuses the password, offers no TLS, refuses TLS, or refuses the recipient.
    """
    raised = [
        ln.split("Socket Exception:", 1)[1].strip() for ln in lines if "Socket Exception:" in ln
    ]
    refused = [ln for ln in lines if "recipient" in ln.lower() and "refused" in ln.lower()]
    said = (raised or refused or [""])[-1]
    lowered = said.lower()
    if not said:
        return None
    if "auth extension not supported" in lowered:
        return _(
            "the mail server takes no login (it offers no SMTP AUTH): use its submission "
            "port (587 with mailtos://, or 465) or the sending address your mail provider gives"
        )
    if "(535" in said or "authentication" in lowered or "username and password" in lowered:
        return _(
            "the mail server refused the sender's user name or password (SMTP AUTH): check "
            "--mail / LMREG_NOTIFY_MAIL"
        )
    if "starttls extension not supported" in lowered:
        return _(
            "the mail server offers no TLS (STARTTLS): use its TLS port, or mailto:// for a "
            "server on your own network"
        )
    if any(word in lowered for word in ("ssl", "certificate", "tls", "wrong version")):
        return _("the mail server's TLS was refused: {detail}").format(detail=snippet(said, 120))
    code = _SMTP_CODE.search(said)
    if refused or (code is not None and code.group(1) in ("550", "551", "553", "554")):
        shown = f"{code.group(1)} {code.group(2).strip()}" if code else snippet(said, 120)
        return _("the mail server refused the recipient ({said}): check the contact_email").format(
            said=shown
        )
    return None


def plain_reason(said: str) -> str:
    """Apprise's reason for a failed send as a sentence in the current language."""
    lowered = said.lower()
    if "connection error" in lowered or "connection refused" in lowered:
        return _("could not connect to the alert service")
    if "timed out" in lowered or "timeout" in lowered:
        return _("the alert service did not answer in time")
    status = _STATUS.search(said)
    if status is not None and ("response" in lowered or "failed to send" in lowered):
        return _("the alert service answered HTTP {status}").format(status=status.group(1))
    return _("the alert service refused the notification ({said})").format(said=said)
