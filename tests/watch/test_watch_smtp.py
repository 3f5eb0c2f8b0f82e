"""Mail as a real SMTP server takes it (aiosmtpd on loopback, a thread of this process): the
real cause of a refused mail in both languages, and TLS through one shared context."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
import trustme

from lmreg_nb import i18n
from lmreg_nb.watch.messages import Message
from lmreg_nb.watch.notify import Notifier, parse_targets, smtp_cause

pytestmark = pytest.mark.slow  # a real SMTP server on loopback is the point (AUTH, STARTTLS)

MESSAGE = Message("[A] model qwen is down", "body", "failure")


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Box:
    def __init__(self) -> None:
        self.mails: list[Any] = []

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str,
                          options: Any) -> str:  # fmt: skip
        if address.startswith("nobody@"):
            return "550 5.1.1 no such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.mails.append(envelope)
        return "250 OK"


@pytest.fixture
def serve() -> Iterator[Any]:
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult

    started: list[Any] = []

    def start(**options: Any) -> tuple[int, _Box]:
        box, port = _Box(), _port()
        if options.pop("login", False):
            options |= {"authenticator": lambda *a: AuthResult(success=True),
                        "auth_require_tls": False}  # fmt: skip
        controller = Controller(box, hostname="127.0.0.1", port=port, **options)
        controller.start()
        started.append(controller)
        return port, box

    yield start
    for controller in started:
        controller.stop()


def _send(url: str) -> str | None:
    (target,) = parse_targets([url])
    notifier = Notifier([target], timeout=10)
    try:
        return notifier.send(target, MESSAGE)
    finally:
        notifier.close()


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_real_cause_of_a_refused_mail_in_both_languages(serve: Any, lang: str) -> None:
    i18n.set_language(lang)
    try:
        plain, _box = serve()  # no AUTH offered
        noauth = _send(
            f"mailto://u:Pw-0123456789@127.0.0.1:{plain}?from=w@p.example&to=a@b.example"
        )
        login, _box2 = serve(login=True)
        rcpt = _send(f"mailto://u:Pw-0123456789@127.0.0.1:{login}?from=w@p.example"
                     "&to=nobody@b.example")  # fmt: skip
        notls = _send(f"mailtos://u:Pw-0123456789@127.0.0.1:{login}?from=w@p.example"
                      "&to=a@b.example&mode=starttls")  # fmt: skip
    finally:
        i18n.set_language("en")
    said = [noauth, rcpt, notls]
    assert all(s and "Pw-0123456789" not in s for s in said), said
    if lang == "en":
        assert noauth is not None and "takes no login (it offers no SMTP AUTH)" in noauth
        assert (
            rcpt == "the mail server refused the recipient (550 5.1.1 no such user here): "
            "check the contact_email"
        )
        assert notls is not None and "offers no TLS (STARTTLS)" in notls
    else:
        assert noauth is not None and "邮件服务器不接受登录" in noauth
        assert rcpt is not None and "拒收该收件人（550 5.1.1 no such user here）" in rcpt
        assert notls is not None and "不提供 TLS（STARTTLS）" in notls


def test_a_refused_password_is_said_as_such() -> None:
    lines = ["Connection error while submitting email to \"smtp.example\"",
             "Socket Exception: (535, b'5.7.8 Username and Password not accepted')"]  # fmt: skip
    assert smtp_cause(lines) == (
        "the mail server refused the sender's user name or password (SMTP AUTH): check "
        "--mail / LMREG_NOTIFY_MAIL"
    )
    assert smtp_cause(["Socket Exception: [Errno 111] Connection refused"]) is None


def test_mail_over_starttls_goes_through_the_shared_context(
    serve: Any, ca: trustme.CA, trusted: None
) -> None:
    import ssl

    server = ca.issue_cert("127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.configure_cert(context)
    port, box = serve(login=True, tls_context=context, require_starttls=True)
    base = f"mailtos://u:Pw-0123456789@127.0.0.1:{port}?from=w@p.example&mode=starttls"
    assert _send(base + "&to=a@b.example") is None
    assert _send(base + "&to=c@d.example") is None  # the second mail: the same context
    assert [e.rcpt_tos for e in box.mails] == [["a@b.example"], ["c@d.example"]]
