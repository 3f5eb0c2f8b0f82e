"""`lmreg-nb token | models | register | modify` through CliRunner (the real processes against
the sandbox: tests/commands/test_cli_processes.py)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from fakes.registry_fakes import API_KEY, APP_SECRET, FakePlatform

from lmreg_nb import i18n
from lmreg_nb.cli import main
from lmreg_nb.commands import registry
from lmreg_nb.registry import client as client_module
from lmreg_nb.registry.client import RegistryClient

URL = "https://llm.school.example/v1/chat/completions"
TOKEN = "TOKEN-canary-1-0a1b2c3d4e"
CANARIES = (API_KEY, APP_SECRET, TOKEN)


@pytest.fixture
def platform(monkeypatch: pytest.MonkeyPatch) -> FakePlatform:
    fake = FakePlatform()
    monkeypatch.setattr(client_module, "_sleep", lambda s: None)
    # The command's own settings are replaced by the fake platform's.
    monkeypatch.setattr(
        registry,
        "_client",
        lambda settings=None: RegistryClient(fake.settings(), transport=fake.transport()),
    )
    return fake


@pytest.fixture
def run(caplog: pytest.LogCaptureFixture) -> Iterator[object]:
    """Invoke the CLI; assert no canary in its output or in any log record (DEBUG)."""
    runner = CliRunner()
    caplog.set_level(logging.DEBUG)

    def invoke(*args: str, input: str | None = None) -> Result:
        result = runner.invoke(main, list(args), input=input, catch_exceptions=False)
        everything = result.output + (result.stderr if result.stderr_bytes is not None else "")
        everything += caplog.text + "".join(r.getMessage() for r in caplog.records)
        for canary in CANARIES:
            assert canary not in everything, f"{canary[:6]}… leaked by {args}"
        return result

    yield invoke


def test_token_shows_env_expiry_and_masked_token(platform: FakePlatform, run) -> None:
    result = run("token")
    assert result.exit_code == 0
    assert "env:     env-test" in result.output and "token:   …3d4e" in result.output
    assert "expires:" in result.output and "source:  exchange" in result.output
    info = json.loads(run("token", "--json").stdout)
    assert info["env"] == "env-test" and info["token"] == "…3d4e" and info["source"] == "cache"


def test_models_table_and_json(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "no models registered yet" in run("models").output
    monkeypatch.setenv("LMREG_MODEL_API_KEY", API_KEY)
    assert run("register", "--name", "school-llm", "--url", URL).exit_code == 0
    table = run("models").output
    assert "school-llm" in table and "…8d9e" in table and "modelId" in table
    rows = json.loads(run("models", "--json").stdout)
    assert [r["modelName"] for r in rows] == ["school-llm"] and rows[0]["apiKey"] == "…8d9e"
    assert rows[0]["createTime"].endswith("+00:00")


def test_register_takes_api_key_from_environment(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMREG_MODEL_API_KEY", API_KEY)
    result = run("register", "--name", "school-llm", "--url", URL)
    assert result.exit_code == 0 and "registered school-llm (modelId m1" in result.output
    assert platform.models[0]["apiKey"] == API_KEY


def test_register_url_defaults_to_lmreg_model_url(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMREG_MODEL_API_KEY", API_KEY)
    monkeypatch.setenv("LMREG_MODEL_URL", "http://10.0.0.5/v1/chat/completions")
    result = run("register", "--name", "private", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["apiKey"] == "…8d9e"
    assert platform.models[0]["registryUrl"] == "http://10.0.0.5/v1/chat/completions"
    assert "warning: registryUrl host 10.0.0.5 is a private address" in result.stderr


def test_register_prompts_hidden_on_a_terminal(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lmreg_nb.commands._endpoint.interactive", lambda: True)
    result = run("register", "--name", "typed", "--url", URL, input=API_KEY + "\n")
    assert result.exit_code == 0 and platform.models[0]["apiKey"] == API_KEY
    assert "apiKey" in result.output  # the prompt was shown; the key was not echoed (checked)


def test_register_without_key_and_terminal_is_a_configuration_error(
    platform: FakePlatform, run
) -> None:
    result = run("register", "--name", "x", "--url", URL)
    assert result.exit_code == 2 and "LMREG_MODEL_API_KEY" in result.stderr
    assert "Traceback" not in result.output and platform.requests == []


def test_api_key_is_never_an_argument(platform: FakePlatform, run) -> None:
    result = run("register", "--name", "x", "--url", URL, "--api-key", "k")
    assert result.exit_code == 2 and "No such option" in result.stderr


def test_register_conflict_is_exit_1_one_line(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMREG_MODEL_API_KEY", API_KEY)
    run("register", "--name", "dup", "--url", URL)
    result = run("register", "--name", "dup", "--url", URL)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: registering the model failed: this modelName is already used"
    )
    assert "HTTP 409, code 40900" in lines[0]


def test_register_bad_url_is_exit_2(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMREG_MODEL_API_KEY", API_KEY)
    result = run("register", "--name", "x", "--url", "ftp://x.example/")
    assert result.exit_code == 2 and "error: registryUrl: must start with https://" in result.stderr
    assert platform.requests == []


def test_modify_by_name_keeps_what_is_not_given(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMREG_MODEL_API_KEY", API_KEY)
    run("register", "--name", "school-llm", "--url", URL)
    result = run("modify", "--name", "school-llm", "--new-name", "renamed")
    assert result.exit_code == 0 and "modified renamed (modelId m1" in result.output
    stored = platform.models[0]
    assert (stored["modelName"], stored["registryUrl"], stored["apiKey"]) == (
        "renamed",
        URL,
        API_KEY,
    )


def test_modify_by_id_with_a_new_key_and_url(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMREG_MODEL_API_KEY", API_KEY)
    run("register", "--name", "school-llm", "--url", URL)
    monkeypatch.setenv("LMREG_MODEL_API_KEY", "NEWKEY-0000-1111-2222")
    new_url = "https://llm2.school.example/v1/chat/completions"
    result = run("modify", "--model-id", "m1", "--url", new_url, "--new-api-key", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["registryUrl"] == new_url
    assert platform.models[0]["apiKey"] == "NEWKEY-0000-1111-2222"
    assert "NEWKEY-0000-1111-2222" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["modify", "--url", URL], "exactly one of --model-id or --name"),
        (["modify", "--name", "a", "--model-id", "b", "--url", URL], "exactly one of"),
        (["modify", "--name", "a"], "nothing to change"),
    ],
)
def test_modify_usage_errors(platform: FakePlatform, run, args: list[str], message: str) -> None:
    result = run(*args)
    assert result.exit_code == 2 and message in result.stderr


def test_a_row_out_of_range_is_one_marked_row_not_a_traceback(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMREG_MODEL_API_KEY", API_KEY)
    run("register", "--name", "good-llm", "--url", URL)
    run("register", "--name", "bad-llm", "--url", URL)
    platform.models[1]["updateTime"] = 99999999999999999
    result = run("models")
    assert result.exit_code == 0, result.output
    assert "good-llm" in result.output and "bad-llm" in result.output
    assert "invalid" in result.output and "out of range" in result.stderr
    rows = json.loads(run("models", "--json").stdout)
    assert [("invalid" in r) for r in rows] == [False, True]
    assert rows[1]["updateTime"] is None and "updateTime" in rows[1]["invalid"]


def test_modify_by_name_goes_through_the_library(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, object]] = []
    real = RegistryClient.update_model

    def spy(self: RegistryClient, **kw: object) -> object:
        calls.append(kw)
        return real(self, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(RegistryClient, "update_model", spy)
    monkeypatch.setenv("LMREG_MODEL_API_KEY", API_KEY)
    run("register", "--name", "café", "--url", URL)
    # The same name typed in another Unicode form and with spaces finds the model.
    result = run("modify", "--name", " cafe\u0301 ", "--new-name", "renamed")
    assert result.exit_code == 0, result.stderr
    assert calls and calls[0]["name"] == " cafe\u0301 "
    assert platform.models[0]["modelName"] == "renamed"


def test_modify_unknown_model_is_exit_1(platform: FakePlatform, run) -> None:
    result = run("modify", "--model-id", "nope", "--new-name", "x")
    assert result.exit_code == 1 and "no model with modelId nope" in result.stderr


def test_missing_configuration_is_exit_2(run) -> None:
    result = run("models")
    assert result.exit_code == 2
    # Every missing variable at once, in one line, and where a .env was looked for.
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith(
        "error: LMREG_BASE_URL, LMREG_APP_ID, LMREG_APP_SECRET are not set: set them in the "
        "environment or in .env (see .env.example); no .env found in "
    )


def test_help_lists_the_commands(run) -> None:
    output = run("--help").output
    assert all(name in output for name in ("token", "models", "register", "modify"))


def test_register_names_every_missing_variable_at_once(platform: FakePlatform, run) -> None:
    result = run("register", "--name", "school-llm")
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert "\n" not in line and "LMREG_MODEL_URL, LMREG_MODEL_API_KEY are not set" in line
    assert "--url" in line and platform.requests == []


def test_check_with_a_key_no_header_can_carry_is_one_line_exit_2(
    run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMREG_MODEL_URL", "http://127.0.0.1:9/v1/chat/completions")
    monkeypatch.setenv("LMREG_MODEL_API_KEY", "ключ中文")
    monkeypatch.setenv("LMREG_MODEL_NAME", "m")
    result = run("check")
    assert result.exit_code == 2, result.output
    assert "LMREG_MODEL_API_KEY must be visible ASCII" in result.stderr
    assert "Traceback" not in result.output + result.stderr


def _columns(line: str) -> int:
    """How many terminal columns ``line`` takes: a Chinese character takes two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def test_models_table_aligns_chinese_names_and_says_the_zone(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32 item 8: local time with its zone, columns aligned for CJK names."""
    monkeypatch.setenv("LMREG_MODEL_API_KEY", API_KEY)
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    for name in ("第一中学大模型", "qwen"):
        assert run("register", "--name", name, "--url", URL).exit_code == 0
    lines = run("models").output.splitlines()
    table, note = lines[:-1], lines[-1]
    assert len(table) == 3
    assert len({_columns(line) for line in table}) == 1, table  # every line as wide
    assert "Asia/Shanghai (UTC+08:00)" in note
    created = json.loads(run("models", "--json").stdout)[0]["createTime"]
    from datetime import datetime
    from zoneinfo import ZoneInfo

    local = datetime.fromisoformat(created).astimezone(ZoneInfo("Asia/Shanghai"))
    assert f"{local:%Y-%m-%d %H:%M}" in table[1]  # local time, not UTC


@pytest.mark.parametrize(
    ("lang", "labels", "source"),
    [("en", ("env", "token", "expires", "source"), "exchange"),
     ("zh-CN", ("env", "令牌", "到期时间", "来源"), "新换取")],
)  # fmt: skip
def test_token_shows_local_time_with_its_zone_and_labels_in_the_language(
    platform: FakePlatform, run, monkeypatch: pytest.MonkeyPatch, lang: str,
    labels: tuple[str, ...], source: str,
) -> None:  # fmt: skip
    """Issue 43 item 6: `expires: ... UTC` with English labels in zh-CN; `models` is local."""
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    try:
        result = run("--lang", lang, "token")
    finally:
        i18n.set_language("en")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split("：" if lang == "zh-CN" else ":")[0].strip() for line in lines] == list(
        labels
    )
    expires = lines[2]
    assert "Asia/Shanghai (UTC+08:00)" in expires and " UTC " not in expires + " "
    assert lines[3].endswith(source)
    if lang == "zh-CN":
        assert (
            "小时后" in expires and "source" not in result.output and "cache" not in result.output
        )
