"""The watch where the real thing is the point; everything else is in-process (watch_helpers).

- Mail as a real SMTP server takes it (aiosmtpd on loopback, a thread of this process):
  the real cause of a refused mail in both languages, TLS through one shared context.
- `lmreg-nb watch` as a real process against the session's sandbox process (its platform
  and its mock school model): SIGTERM mid-round, and a fleet as an operator runs it, its
  schools' mails to a real SMTP server.
- /metrics served on loopback, and what it serves is what the in-process tests read.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import trustme
from leaks import leaks_in

from lmreg_nb import i18n
from lmreg_nb.models import ModelDraft
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings
from lmreg_nb.watch.alerts import ModelState
from lmreg_nb.watch.messages import Message
from lmreg_nb.watch.metrics import WatchMetrics
from lmreg_nb.watch.notify import Notifier, parse_targets, smtp_cause
from lmreg_nb.watch.state import StateStore

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

pytestmark = pytest.mark.slow  # real servers and processes are the point (AUTH, STARTTLS, signals)

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


# -- the command as a real process ------------------------------------------------------

HEADER = "run_id,env_file,school,contact_name,contact_mobile,contact_email,lang\n"
SMTP_PASSWORD = "SmtpCanaryPassw0rd7Zk"


def _env_file(path: Path, sandbox_process: SandboxInfo, app: dict[str, str], cache: Path) -> Path:
    path.write_text(
        f"LMREG_BASE_URL={sandbox_process.base_url}\nLMREG_TOKEN_PATH={sandbox_process.token_path}\n"
        f"LMREG_APP_ID={app['app_id']}\nLMREG_APP_SECRET={app['app_secret']}\n"
        f"LMREG_TOKEN_CACHE={cache}\nLMREG_TIMEOUT=3\n",
        encoding="utf-8",
    )
    path.chmod(0o600)
    return path


def _model_url(sandbox_process: SandboxInfo, quirks: str = "") -> str:
    """The sandbox's own mock school model, failing as ``quirks`` say."""
    base = sandbox_process.model_url.removesuffix("/v1/chat/completions")
    return f"{base}{'/quirks/' + quirks if quirks else ''}/v1/chat/completions"


def _register(sandbox_process: SandboxInfo, env_file: Path, name: str, url: str) -> None:
    settings = Settings.load(environ={}, env_file=env_file)
    with RegistryClient(settings) as client:
        client.register_model(ModelDraft(name, url, Secret(sandbox_process.model_api_key)))


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")}
    return env | {"LMREG_LANG": "en"} | extra


def test_sigterm_finishes_the_round_writes_the_state_and_exits_0(
    sandbox_process: SandboxInfo, tmp_path: Path
) -> None:
    app = sandbox_process.add_app(f"sigterm-{tmp_path.name[-10:]}")
    account = _env_file(tmp_path / "school.env", sandbox_process, app, tmp_path / "tokens.json")
    _register(
        sandbox_process, account, "hangs", _model_url(sandbox_process, "slow")
    )  # holds the round 3 s
    state = tmp_path / "state.sqlite3"
    env = _clean_env(
        LMREG_ENV_FILE=str(account), LMREG_NOTIFY="json://127.0.0.1:9/nobody",
        LMREG_ALLOW_PRIVATE="1",
    )  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "lmreg_nb", "watch", "--state", str(state), "--interval", "600"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    started = proc.stderr.readline()
    assert "watching the models of" in started, started
    time.sleep(1.0)  # the round is waiting for the model that hangs
    proc.send_signal(signal.SIGTERM)
    began = time.monotonic()
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, rest
    assert time.monotonic() - began < 30
    assert "SIGTERM: finishing this round, then stopping" in rest
    assert "round 1: 1 model, 0 up, 0 down, 1 failing" in rest  # the counts add up (issue 32)
    with StateStore(state) as store:
        assert store.last_round() == 1
        (hangs,) = store.models().values()
    assert hangs.kind == "timeout" and hangs.fails == 1


@pytest.fixture
def smtp(serve: Any) -> Iterator[tuple[int, _Box]]:
    """A real SMTP server that wants a login (any password)."""
    yield serve(login=True)


def test_four_schools_with_a_sender_and_no_provider_target_as_an_operator_runs_it(
    sandbox_process: SandboxInfo, smtp: tuple[int, _Box], tmp_path: Path
) -> None:
    port, box = smtp
    apps = {k: sandbox_process.add_app(f"op-{k}-{tmp_path.name[-10:]}") for k in "abcd"}
    cache = tmp_path / "tokens.json"
    rows = []
    long_name = "长" * 100_000  # a 100,000-character school name must not spin the sender
    for key, app in apps.items():
        env_file = _env_file(tmp_path / f"{key}.env", sandbox_process, app, cache)
        name = long_name if key == "d" else f"School {key.upper()}"
        rows.append(
            f"{key},{env_file.name},{name},Li,13812345678,it-{key}@school-{key}.example,en\n"
        )
        _register(
            sandbox_process,
            env_file,
            f"llm-{key}",
            _model_url(sandbox_process, "status-500" if key in "ad" else ""),
        )
    plan = tmp_path / "plan.csv"
    plan.write_text(HEADER + "".join(rows), encoding="utf-8")
    mail = f"mailto://watch:{SMTP_PASSWORD}@127.0.0.1:{port}?from=watch@provider.example"
    (tmp_path / ".env").write_text("LMREG_ALLOW_PRIVATE=1\n")  # read from .env, as documented
    env = _clean_env(LMREG_NOTIFY_MAIL=mail, LMREG_ENV_FILE=str(tmp_path / ".env"))
    args = ["--plan", str(plan), "--state", str(tmp_path / "s.sqlite3"), "--rounds", "1",
            "--fail-after", "1"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "lmreg_nb", "watch", *args],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "alerts go to the contacts of 4 schools; no provider target" in done.stderr
    assert "school School A: model llm-a is down: alert queued for 1 target" in done.stderr
    assert sorted(to for e in box.mails for to in e.rcpt_tos) == [
        "it-a@school-a.example",
        "it-d@school-d.example",
    ]
    assert max(len(line) for line in done.stderr.splitlines()) < 1000
    subjects = [_subject(e.content) for e in box.mails]
    assert all(len(s) < 300 for s in subjects), subjects
    secrets = {"mail password": SMTP_PASSWORD, "apiKey": sandbox_process.model_api_key}
    secrets |= {f"appSecret {k}": app["app_secret"] for k, app in apps.items()}
    assert leaks_in(done.stderr, secrets) == []
    # The same plan without a sender is refused, naming both ways to give one.
    del env["LMREG_NOTIFY_MAIL"]
    refused = subprocess.run(
        [sys.executable, "-m", "lmreg_nb", "watch", *args],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2
    lines = [ln for ln in refused.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "--mail" in lines[0] and "LMREG_NOTIFY_MAIL" in lines[0]


def _subject(raw: bytes) -> str:
    import email
    import email.policy

    return str(email.message_from_bytes(raw, policy=email.policy.default)["Subject"])


# -- /metrics on loopback ---------------------------------------------------------------


def test_metrics_are_served_on_loopback_only() -> None:
    metrics = WatchMetrics()
    down = ModelState(
        "m1", "campus-llm", host="llm.example", status="down", fails=4, since_ms=1000,
        kind="timeout", detail="no reply", tls_days=9, key="/m1",
    )  # fmt: skip
    metrics.update([down])
    port = metrics.serve(0)
    try:
        assert metrics._server.server_address[0] == "127.0.0.1"
        body = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        assert 'lmreg_model_failures_in_a_row{model="campus-llm",model_id="m1"' in body
        # What the in-process tests read (metrics.text()) is what Prometheus scrapes.
        assert body == metrics.text()
    finally:
        metrics.close()
