"""`lmreg-nb watch` in this process (CliRunner): exit codes, one-line errors. The platform,
the school model and the webhook are in-process (watch_helpers.py); the command as a real
process (a signal mid-round) is test_watch_e2e.py's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from leaks import leaks_in
from watch_helpers import MODEL_KEY, WEBHOOK_TOKEN, Account, SchoolModel, Webhook

from lmreg_nb.cli import main
from lmreg_nb.registry import retry
from lmreg_nb.watch import config as watch_config
from lmreg_nb.watch import service
from lmreg_nb.watch.watcher import WatchConfig

SECRETS = {"apiKey": MODEL_KEY, "webhook token": WEBHOOK_TOKEN}


def _env(account: Account, webhook: Webhook) -> dict[str, str]:
    return account.env | {
        "LMREG_NOTIFY": webhook.url,
        "LMREG_LANG": "en",
        "LMREG_ALLOW_PRIVATE": "1",
    }


def _watch(args: list[str], env: dict[str, str]) -> Result:
    return CliRunner().invoke(main, ["watch", *args], env=env)


@pytest.fixture
def short_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rounds 0.05 s apart: the command still parses and checks --interval (1 s at
    least), then the watch's floor is lowered and it waits less between rounds (the exit
    codes and the lines are the point)."""
    run_watch = service.run_watch
    monkeypatch.setattr(watch_config, "MIN_INTERVAL_S", 0.05)

    def quick(config: WatchConfig, *args: Any, **kwargs: Any) -> int:
        return run_watch(replace(config, interval=0.05), *args, **kwargs)

    monkeypatch.setattr(service, "run_watch", quick)


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (["--interval", "0"], {}, "error: --interval: must be 1 s or more"),
        (["--fail-after", "0"], {}, "error: --fail-after: must be 1 or more"),
        (["--rounds", "0"], {}, "error: --rounds: must be 1 or more"),
        ([], {}, "error: no alert targets: give --notify URL"),
        ([], {"LMREG_NOTIFY": " , "}, "error: no alert targets"),
        (["--notify", "smtp-ish://u:Pw-0123456789@mail.example"], {}, "unknown scheme 'smtp-ish'"),
        (["--notify", "mailto://"], {}, "notify target mailto://: Apprise cannot use it"),
        (["--mail", "mailtos://u:Pw-0123456789@smtp.example"], {}, "--mail needs --plan"),
        (["--plan", "no-such-plan.csv", "--no-school-mail"], {}, "plan no-such-plan.csv does not"),
        (
            ["--plan", "plan.csv"],
            {},
            "--plan needs a mail sender for the schools' contacts: give "
            "--mail URL or set LMREG_NOTIFY_MAIL",
        ),
        (
            ["--plan", "plan.csv", "--no-school-mail", "--mail", "mailto://u:Pw-0123456789@x.cn"],
            {},
            "--mail and --no-school-mail: give one of them",
        ),
        (["--plan", "/dev/null", "--no-school-mail"], {}, "plan /dev/null is a character device"),
        (["--fail-after", str(10**20)], {}, "error: --fail-after: must be 1 or more (at most"),
        (["--rounds", str(10**20)], {}, "error: --rounds: must be 1 or more, at most"),
        (["--interval", "1e300"], {}, "error: --interval: must be 1 s or more (at most"),
        (
            ["--notify", "json://127.0.0.1:9/x"],
            {"LMREG_BASE_URL": ""},
            "error: LMREG_BASE_URL, LMREG_APP_ID, LMREG_APP_SECRET are not set",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str],
    env: dict[str, str],
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    (tmp_path / "a.env").write_text("LMREG_BASE_URL=https://platform.example.cn\n")
    (tmp_path / "plan.csv").write_text("run_id,env_file,school,contact_email\na,a.env,A,a@a.cn\n")
    args = [str(tmp_path / a) if a == "plan.csv" else a for a in args]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(main, ["watch", *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0], result.stderr
    assert "Pw-0123456789" not in result.output + result.stderr


@pytest.mark.usefixtures("short_interval")
def test_rounds_exit_0_when_all_are_up_and_1_when_one_is_down(
    account: Account, school_model: SchoolModel, webhook: Webhook, tmp_path: Path
) -> None:
    env = _env(account, webhook)
    state = tmp_path / "state.sqlite3"
    account.register("cli-ok", school_model.url())
    base = ["--state", str(state), "--interval", "1", "--fail-after", "2"]
    done = _watch([*base, "--rounds", "2"], env)
    assert done.exit_code == 0, done.stderr
    assert "round 2: 1 model, 1 up, 0 down" in done.stderr and "Traceback" not in done.stderr
    account.register("cli-down", school_model.url("status-500"))
    done = _watch([*base, "--rounds", "2", "--school", "CLI School"], env)
    assert done.exit_code == 1, done.stderr
    assert "school CLI School: model cli-down is down: alert queued for 1 target" in done.stderr
    assert [p["title"] for p in webhook.posts] == ["[CLI School] model cli-down is down"]
    assert leaks_in(done.stderr, SECRETS) == []
    assert f"json://127.0.0.1:{webhook.port}/hook/…" in done.stderr  # shown, masked
    assert (state.stat().st_mode & 0o777) == 0o600
    assert all((p.stat().st_mode & 0o777) == 0o600 for p in tmp_path.glob("state*"))
    assert (tmp_path / "state-status.html").is_file()


@pytest.mark.usefixtures("short_interval")
def test_a_platform_that_is_down_is_logged_and_tried_again(
    account: Account, webhook: Webhook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retry, "BACKOFF_BASE_S", 0.01)  # the rounds are the point, not the retries
    env = _env(account, webhook) | {"LMREG_BASE_URL": "http://127.0.0.1:9"}  # refused
    done = _watch(["--state", str(tmp_path / "s.sqlite3"), "--rounds", "2", "--interval", "1"], env)
    assert done.exit_code == 1 and "Traceback" not in done.stderr
    lines = [ln for ln in done.stderr.splitlines() if "cannot read the models" in ln]
    assert len(lines) == 2 and "trying again next round" in lines[0]


def test_wrong_credentials_in_the_first_round_stop_with_one_line(
    account: Account, webhook: Webhook, tmp_path: Path
) -> None:
    env = _env(account, webhook) | {"LMREG_APP_SECRET": "not-the-secret-0000"}
    env["LMREG_TOKEN_CACHE"] = str(tmp_path / "other-tokens.json")
    done = _watch(["--state", str(tmp_path / "s.sqlite3"), "--rounds", "3"], env)
    assert done.exit_code == 1 and "Traceback" not in done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "appSecret" in errors[0], done.stderr


def test_a_mail_sender_that_is_not_mail_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text("run_id,env_file,school,contact_email\na,a.env,A,ai@a.example\n")
    monkeypatch.setenv("LMREG_NOTIFY", "json://127.0.0.1:9/x")
    monkeypatch.setenv("LMREG_NOTIFY_MAIL", "json://127.0.0.1:9/Pw-0123456789")
    args = ["watch", "--plan", str(plan), "--state", str(tmp_path / "s.sqlite3")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--mail: give an Apprise mailtos://" in lines[0], result.stderr
