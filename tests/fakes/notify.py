"""Alert targets in this process: a webhook Apprise posts to, a mailbox Apprise mails to.

Apprise itself builds, signs and sends each notification (its ``json://`` plugin, its
e-mail plugin with the watch's shared TLS context); only the last step is replaced:
``requests``' adapter hands a post to :class:`Webhook` instead of a socket, and
``smtplib.SMTP`` is :class:`Mailbox`'s session, which checks the login as a server
would and keeps each mail parsed. A real SMTP server (AUTH, STARTTLS, refusals) is
tests/watch/test_watch_smtp.py's point.
"""

from __future__ import annotations

import email
import email.message
import email.policy
import json
import smtplib
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest

__all__ = ["Mailbox", "Webhook"]


@dataclass
class Webhook:
    """The JSON posts received at ``http://127.0.0.1:PORT/hook/TOKEN`` (``fail``: 503)."""

    port: int
    token: str
    posts: list[dict[str, Any]] = field(default_factory=list)
    fail: bool = False

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.port}/hook/{self.token}"

    def install(self, monkeypatch: pytest.MonkeyPatch) -> Webhook:
        """Posts to this address reach :meth:`receive` (any other goes out as usual)."""
        from requests import Response
        from requests.adapters import HTTPAdapter
        from requests.structures import CaseInsensitiveDict

        real = HTTPAdapter.send
        hook = self

        def send(adapter: HTTPAdapter, request: Any, *args: Any, **kwargs: Any) -> Any:
            where = urlsplit(request.url)
            if (where.hostname, where.port) != ("127.0.0.1", hook.port):
                return real(adapter, request, *args, **kwargs)
            answer = Response()
            answer.status_code = hook.receive(where.path, request.body or b"")
            answer.reason = "OK" if answer.status_code == 200 else "Service Unavailable"
            answer.headers = CaseInsensitiveDict({"Content-Length": "0"})
            answer._content = b""
            answer.url, answer.request, answer.encoding = request.url, request, "utf-8"
            return answer

        monkeypatch.setattr(HTTPAdapter, "send", send)
        return self

    def receive(self, path: str, body: bytes | str) -> int:
        """A post's status, as the receiver would answer it."""
        if self.fail or path != f"/hook/{self.token}":
            return 503
        self.posts.append(json.loads(body))
        return 200


@dataclass
class Mailbox:
    """Mails received by an SMTP server at 127.0.0.1:PORT that wants ``user``'s login."""

    port: int
    password: str
    mails: list[email.message.EmailMessage] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> Mailbox:
        """smtplib's sessions to this port are this mailbox's (any other is refused)."""
        box = self

        class Session:
            """What Apprise's sender calls of smtplib.SMTP, answered as the server would."""

            def __init__(self, host: str = "", port: int = 0, *_: Any, **__: Any) -> None:
                if (host, port) != ("127.0.0.1", box.port):
                    raise ConnectionRefusedError(111, "Connection refused")

            def starttls(self, *_: Any, **__: Any) -> Any:
                raise smtplib.SMTPNotSupportedError("STARTTLS extension not supported by server.")

            def login(self, user: str, password: str, **_: Any) -> Any:
                if password != box.password:
                    raise smtplib.SMTPAuthenticationError(535, b"5.7.8 Authentication failed")
                return (235, b"2.7.0 Authentication successful")

            def sendmail(self, sender: str, to: Any, message: str | bytes, *_: Any) -> dict:
                raw = message.encode() if isinstance(message, str) else message
                parsed = email.message_from_bytes(raw, policy=email.policy.default)
                with box._lock:
                    box.mails.append(parsed)  # type: ignore[arg-type]
                return {}

            def quit(self) -> Any:
                return (221, b"Bye")

            def close(self) -> None:
                pass

        from apprise.plugins.email.base import NotifyEmail

        # Apprise waits 5.5 s between two mails of one target (rate limits); not in tests.
        monkeypatch.setattr(NotifyEmail, "request_rate_per_sec", 0)
        monkeypatch.setattr(smtplib, "SMTP", Session)
        monkeypatch.setattr(smtplib, "SMTP_SSL", Session)
        return self
