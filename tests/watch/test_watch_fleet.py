"""The provider's fleet (`watch --plan`), everything in this process (watch_helpers.py).

The sandbox platform with two accounts, the mock school model (switched down and up by
modifying the registration), a mailbox receiving the schools' mails (Apprise's own
e-mail plugin writes them) and a webhook as the provider's target. School A's contact
hears about A's model only; the provider hears everything; a restart during the outage
sends nothing new; no secret comes out. The command as an operator runs it (a real
process, a real SMTP server) is test_watch_e2e.py's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner
from fakes.app_platform import AppPlatform
from leaks import leaks_in
from watch_helpers import (
    MODEL_KEY,
    SMTP_PASSWORD,
    WEBHOOK_TOKEN,
    Clock,
    SchoolModel,
    Smtp,
    Webhook,
    run_round,
)

from lmreg_nb.cli import main
from lmreg_nb.errors import ConfigurationError
from lmreg_nb.models import ModelDraft
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings
from lmreg_nb.watch.fleet import parse_mail, read_fleet
from lmreg_nb.watch.metrics import WatchMetrics
from lmreg_nb.watch.notify import Notifier, parse_targets
from lmreg_nb.watch.state import StateStore
from lmreg_nb.watch.watcher import WatchConfig, Watcher

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

HEADER = "run_id,env_file,school,contact_name,contact_mobile,contact_email,lang\n"


@dataclass
class Fleet:
    plan: Path
    settings: dict[str, Settings]  # run_id -> the school's settings
    secrets: dict[str, str]

    def register(self, run_id: str, name: str, url: str) -> str:
        with RegistryClient(self.settings[run_id]) as client:
            return client.register_model(ModelDraft(name, url, Secret(MODEL_KEY))).model_id

    def modify(self, run_id: str, model_id: str, name: str, url: str) -> None:
        with RegistryClient(self.settings[run_id]) as client:
            client.modify_model(ModelDraft(name, url, Secret(MODEL_KEY), model_id=model_id))

    def tokens(self) -> list[str]:
        found = []
        for settings in self.settings.values():
            with RegistryClient(settings) as client:
                found.append(client.token().token.reveal())
        return found


def _env_file(path: Path, platform: SandboxInfo, app: dict[str, str], cache: Path) -> Path:
    """A school's env file naming ``platform``'s address and ``app``'s credentials."""
    path.write_text(
        f"LMREG_BASE_URL={platform.base_url}\nLMREG_TOKEN_PATH={platform.token_path}\n"
        f"LMREG_APP_ID={app['app_id']}\nLMREG_APP_SECRET={app['app_secret']}\n"
        f"LMREG_TOKEN_CACHE={cache}\nLMREG_TIMEOUT=3\n",
        encoding="utf-8",
    )
    path.chmod(0o600)
    return path


@pytest.fixture
def fleet(platform: AppPlatform, tmp_path: Path) -> Fleet:
    apps = {key: platform.add_app(f"fleet-{key}-{tmp_path.name[-12:]}") for key in ("a", "b")}
    cache = tmp_path / "tokens.json"
    files = {
        k: _env_file(tmp_path / f"{k}.env", platform.info, app, cache) for k, app in apps.items()
    }
    plan = tmp_path / "plan.csv"
    plan.write_text(
        HEADER
        + f"a,{files['a'].name},School A,Li Hua,13812345678,li.hua@a.example,en\n"
        + f"b,{files['b'].name},第二中学,王芳,13912345678,wang.fang@b.example,zh-CN\n",
        encoding="utf-8",
    )
    settings = {
        k: Settings.load(environ={"LMREG_ENV_FILE": str(f)}, env_file=f) for k, f in files.items()
    }
    secrets = {
        "apiKey": MODEL_KEY,
        "appSecret A": apps["a"]["app_secret"],
        "appSecret B": apps["b"]["app_secret"],
        "mail password": SMTP_PASSWORD,
        "webhook token": WEBHOOK_TOKEN,
    }
    return Fleet(plan, settings, secrets)


def _mail_url(smtp: Smtp) -> str:
    # The provider's sender, no recipient: the watch sets to= per school.
    return f"mailto://watch:{SMTP_PASSWORD}@127.0.0.1:{smtp.port}?from=watch@provider.example"


def _watcher(
    plan: Path, state: Path, webhook: Webhook, smtp: Smtp, clock: Clock, metrics: WatchMetrics
) -> Watcher:
    targets = parse_targets([webhook.url])
    store = StateStore(state)
    store.acquire()
    config = WatchConfig(state_path=state, fail_after=2, allow_private=True)
    return Watcher(
        Settings(),
        None,
        store,
        targets,
        Notifier(targets),
        config,
        clock=clock,
        metrics=metrics,
        schools=read_fleet(plan),
        mail=parse_mail(_mail_url(smtp)),
    )


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "fleet" / "state.sqlite3"


def _close(watcher: Watcher) -> None:
    watcher.close()
    watcher.store.close()


def test_each_school_hears_of_its_own_model_and_the_provider_of_all(
    fleet: Fleet,
    school_model: SchoolModel,
    webhook: Webhook,
    smtp: Smtp,
    state: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lmreg_nb")
    clock = Clock()
    a_id = fleet.register("a", "a-llm", school_model.url())
    fleet.register("b", "b-llm", school_model.url())
    metrics = WatchMetrics()
    watcher = _watcher(fleet.plan, state, webhook, smtp, clock, metrics)
    try:
        first = run_round(watcher, clock)
        assert sorted(s.model_name for s in first.states) == ["a-llm", "b-llm"]
        assert first.events == [] and webhook.posts == [] and smtp.mails == []
        fleet.modify("a", a_id, "a-llm", school_model.url("status-500"))
        assert run_round(watcher, clock).events == []  # 1 of 2
        down = run_round(watcher, clock)
        assert [(e.type, e.state.model_name) for e in down.events] == [("alert", "a-llm")]
    finally:
        _close(watcher)
    # A restart during the outage: the new process reads the state and sends nothing new.
    watcher = _watcher(fleet.plan, state, webhook, smtp, clock, metrics)
    try:
        again = run_round(watcher, clock)
        assert again.events == [] and [s.model_name for s in again.down] == ["a-llm"]
        scraped = metrics.text()
        fleet.modify("a", a_id, "a-llm", school_model.url())
        back = run_round(watcher, clock)
        assert [(e.type, e.state.model_name) for e in back.events] == [("recovery", "a-llm")]
    finally:
        _close(watcher)

    # School A's contact: exactly one alert and one recovery, about A's model, in English.
    assert [str(m["To"]) for m in smtp.mails] == ["li.hua@a.example"] * 2
    subjects = [str(m["Subject"]) for m in smtp.mails]
    assert subjects == ["[School A] model a-llm is down", "[School A] model a-llm works again"]
    bodies = "\n".join(m.get_body().get_content() for m in smtp.mails)  # type: ignore[union-attr]
    assert "b-llm" not in bodies and "第二中学" not in bodies
    # The provider's target: both.
    assert [(p["type"], p["title"]) for p in webhook.posts] == [
        ("failure", "[School A] model a-llm is down"),
        ("success", "[School A] model a-llm works again"),
    ]
    # The metrics name the school; the page lists both schools.
    assert 'model="a-llm"' in scraped and 'school="School A"' in scraped
    assert 'school="第二中学"' in scraped
    page = watcher.config.status_path.read_text(encoding="utf-8")
    assert "School A" in page and "第二中学" in page and "a-llm" in page and "b-llm" in page

    # Canaries: no apiKey, appSecret, token or mail password in what the watch wrote.
    secrets = fleet.secrets | {f"token {i}": t for i, t in enumerate(fleet.tokens())}
    stored = b"".join(p.read_bytes() for p in state.parent.glob("state.sqlite3*"))
    written = {
        "mails": "\n".join(m.as_string() for m in smtp.mails),
        "webhook": json.dumps(webhook.posts, ensure_ascii=False),
        "log": caplog.text,
        "page": page,
        "metrics": scraped,
        "state": stored.decode("utf-8", "replace"),
    }
    leaked = {what: leaks_in(text, secrets) for what, text in written.items()}
    assert {what: found for what, found in leaked.items() if found} == {}


def test_a_school_in_chinese_gets_its_alert_in_chinese(
    fleet: Fleet, school_model: SchoolModel, webhook: Webhook, smtp: Smtp, state: Path
) -> None:
    clock = Clock()
    b_id = fleet.register("b", "b-llm", school_model.url())
    watcher = _watcher(fleet.plan, state, webhook, smtp, clock, WatchMetrics())
    try:
        run_round(watcher, clock)
        fleet.modify("b", b_id, "b-llm", school_model.url("status-500"))
        run_round(watcher, clock)
        run_round(watcher, clock)
    finally:
        _close(watcher)
    assert [str(m["To"]) for m in smtp.mails] == ["wang.fang@b.example"]
    assert str(smtp.mails[0]["Subject"]) == "【第二中学】模型「b-llm」无法使用"


def test_a_row_that_cannot_sign_in_is_reported_and_the_others_are_watched(
    fleet: Fleet,
    school_model: SchoolModel,
    webhook: Webhook,
    smtp: Smtp,
    state: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lmreg_nb")
    bad = tmp_path / "bad.env"
    bad.write_text(
        (tmp_path / "a.env").read_text().replace("LMREG_APP_SECRET=", "LMREG_APP_SECRET=x")
    )
    with fleet.plan.open("a", encoding="utf-8") as fh:
        fh.write("gone,missing.env,Gone School,Zhao,13712345678,zhao@gone.example,en\n")
        fh.write("refused,bad.env,Refused School,Qian,13612345678,qian@refused.example,en\n")
    fleet.register("a", "a-llm", school_model.url())
    clock = Clock()
    watcher = _watcher(fleet.plan, state, webhook, smtp, clock, WatchMetrics())
    try:
        first = run_round(watcher, clock)
        second = run_round(watcher, clock)
    finally:
        _close(watcher)
    assert [s.model_name for s in first.states] == ["a-llm"]
    assert sorted(s.key for s in first.blind) == ["gone", "refused"]
    assert all(s.problem == "sign-in" for s in first.blind)
    # One alert each, to the provider only, once (not again in round 2).
    titles = sorted(p["title"] for p in webhook.posts)
    assert titles == [
        "[Gone School] monitoring cannot sign in",
        "[Refused School] monitoring cannot sign in",
    ]
    assert smtp.mails == [] and second.events == []
    lines = [r.getMessage() for r in caplog.records if "cannot sign in" in r.getMessage()]
    assert len([ln for ln in lines if "Gone School" in ln and "round" in ln]) == 1
    page = watcher.config.status_path.read_text(encoding="utf-8")
    assert "Gone School" in page and "cannot sign in" in page and "Refused School" in page
    assert "第二中学" in page  # a school without models is listed too (every school)
    assert "Traceback" not in caplog.text


def test_a_bad_plan_row_is_one_line_naming_the_line_and_column(
    fleet: Fleet, tmp_path: Path
) -> None:
    with fleet.plan.open("a", encoding="utf-8") as fh:
        fh.write("c,a.env,School C,Sun,13512345678,not-an-address,en\n")
    with pytest.raises(ConfigurationError) as caught:
        read_fleet(fleet.plan)
    said = str(caught.value)
    assert "plan.csv line 4" in said and "contact_email" in said and "\n" not in said


def test_the_cli_fleet_form_runs_and_exits_1_for_a_school_it_cannot_sign_in(
    fleet: Fleet, webhook: Webhook, smtp: Smtp, tmp_path: Path
) -> None:
    with fleet.plan.open("a", encoding="utf-8") as fh:
        fh.write("gone,missing.env,Gone School,Zhao,13712345678,zhao@gone.example,en\n")
    env = {"LMREG_NOTIFY": webhook.url, "LMREG_NOTIFY_MAIL": _mail_url(smtp), "LMREG_LANG": "en"}
    env |= {"LMREG_ALLOW_PRIVATE": "1"}
    args = ["--plan", str(fleet.plan), "--state", str(tmp_path / "s.sqlite3"), "--rounds", "1"]
    done = CliRunner().invoke(main, ["watch", *args], env=env)
    assert done.exit_code == 1, done.stderr
    assert "Traceback" not in done.stderr and "Gone School" in done.stderr
    assert "watching the models of 3 schools" in done.stderr
    assert leaks_in(done.stderr, fleet.secrets) == []


def test_each_school_gets_its_own_token_cache_unless_its_env_file_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    base = "LMREG_BASE_URL=https://platform.example\nLMREG_APP_ID=a\nLMREG_APP_SECRET=s-123456\n"
    (tmp_path / "a.env").write_text(base)
    (tmp_path / "b.env").write_text(base + f"LMREG_TOKEN_CACHE={tmp_path / 'mine.json'}\n")
    plan = tmp_path / "plan.csv"
    plan.write_text(HEADER + "a,a.env,A,,,,en\nb,b.env,B,,,,en\n", encoding="utf-8")
    a, b = read_fleet(plan)
    assert a.settings is not None and b.settings is not None
    assert a.settings.token_cache == tmp_path / "cache" / "lmreg_nb" / "fleet" / "a.json"
    assert b.settings.token_cache == tmp_path / "mine.json"
