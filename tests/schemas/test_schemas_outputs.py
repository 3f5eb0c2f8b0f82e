"""Issue 43 item 1: every `--json` output and the record follow the schemas shipped with them.

Each test makes the real output in this process: the CLI through CliRunner, the platform
as its ASGI app (tests/fakes/app_platform.py), the school's chat endpoint as an httpx
MockTransport the checks' client is given; the record's summary from an onboarding run
against both; summary.csv as the batch writes it, in both languages. A capacity search
needs sockets (the lean client): its output is made here from the search's own result
type, and measured for real in test_schemas_runs.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from contract_schemas import assert_valid, csv_rows, problems, sample_capacity
from fakes import chat_model
from fakes.app_platform import AppPlatform, app_platform
from fakes.chat_model import MODEL, use_in_checks

from lmreg_nb.cli import main

KEY = "sk-schemas-0123456789abcdef"


@pytest.fixture
def school_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks' client talks to a school model in this process (a Chinese reply)."""
    use_in_checks(monkeypatch, chat_model.school_model(KEY, ("你好，", "我是", "学校的", "模型。")))


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppPlatform]:
    with app_platform(tmp_path_factory.mktemp("schemas") / "platform.sqlite3") as plat:
        yield plat


@pytest.fixture
def account(
    platform: AppPlatform, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> dict[str, str]:
    """A fresh account on the in-process platform; the CLI's registry client reaches it."""
    from lmreg_nb.commands import registry
    from lmreg_nb.registry.client import RegistryClient
    from lmreg_nb.settings import Settings

    app = platform.add_app(f"schemas-{tmp_path.name}")
    env = {
        **platform.info.env(),
        "LMREG_APP_ID": app["app_id"],
        "LMREG_APP_SECRET": app["app_secret"],
        "LMREG_MODEL_URL": f"{MODEL}/v1/chat/completions",
        "LMREG_MODEL_API_KEY": KEY,
        "LMREG_MODEL_NAME": "m",
        "LMREG_TIMEOUT": "5",
        "LMREG_TOKEN_CACHE": str(tmp_path / "tokens.json"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def client(settings: Settings | None = None) -> RegistryClient:
        return RegistryClient(settings or Settings.load(), transport=platform.transport())

    monkeypatch.setattr(registry, "_client", client)
    return env


def _json(args: list[str]) -> Any:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


# -- the commands ------------------------------------------------------------------------


def test_check_json(school_model: None, account: dict[str, str]) -> None:
    out = _json(["check", "--json"])
    assert {c["name"] for c in out["checks"]} >= {"reachable", "stream-utf8", "key-accepted"}
    assert out["client"] is not None
    assert_valid("check", out)


def test_check_json_with_checks_not_judged(school_model: None, account: dict[str, str]) -> None:
    """A path that serves nothing: the key and the model name are not judged (null)."""
    out = _json(["check", f"{MODEL}/v1", "--json"])
    assert any(c["passed"] is None for c in out["checks"])
    assert_valid("check", out)


def test_token_json(account: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    exchanged, cached = _json(["token", "--json"]), _json(["token", "--json"])
    assert (exchanged["source"], cached["source"]) == ("exchange", "cache")
    monkeypatch.setenv("LMREG_TOKEN", "token-from-elsewhere-0123456789")
    monkeypatch.setenv("LMREG_ENV", exchanged["env"])
    given = _json(["token", "--json"])
    assert given["source"] == "environment" and given["expires"] is None
    for out in (exchanged, cached, given):
        assert_valid("token", out)


def test_models_register_and_modify_json(account: dict[str, str]) -> None:
    url = "https://llm.school.example/v1/chat/completions"
    registered = _json(["register", "--name", "schema-model", "--url", url, "--json"])
    modified = _json(["modify", "--name", "schema-model", "--new-name", "schema-2", "--json"])
    listed = _json(["models", "--json"])
    assert [m["modelName"] for m in listed] == ["schema-2"]
    assert_valid("model", registered)
    assert_valid("model", modified)
    assert_valid("models", listed)
    assert KEY not in json.dumps([registered, modified, listed])


def test_capacity_json() -> None:
    """The object `capacity --json` prints (the real run: test_schemas_runs.py)."""
    out = json.loads(json.dumps(sample_capacity().to_json()))
    assert out["capacity"]["concurrency"] == 4
    assert_valid("capacity", out)


# -- the record --------------------------------------------------------------------------


def _summary(platform: AppPlatform, account: dict[str, str], lang: str, tmp_path: Path) -> Any:
    from lmreg_nb.onboarding import Onboarding
    from lmreg_nb.registry.client import RegistryClient
    from lmreg_nb.settings import Settings

    settings = Settings.load(environ=account, token_cache=tmp_path / "onboarding-tokens.json")
    run = Onboarding.begin(
        "北京市第一中学", "李华", "13812345678", "ops@school.edu.cn", lang=lang,
        settings=settings, class_size=4,
    )  # fmt: skip
    run._client = RegistryClient(settings, transport=platform.transport())
    with run._client:
        run.connect()
        run.register(f"record-{lang}", f"{MODEL}/v1/chat/completions")
        run.list_models()
        run.check_endpoint(0, 1, chat_prompt="你好")
    summary = run.summary()
    result = sample_capacity()
    summary.capacity = result.record(4, "serves 4")
    return summary


@pytest.mark.usefixtures("school_model")
def test_the_records_summary(
    platform: AppPlatform, account: dict[str, str], lang: str, tmp_path: Path
) -> None:
    from lmreg_nb.records import to_jsonable

    summary = _summary(platform, account, lang, tmp_path)
    data = to_jsonable(summary)  # what record("summary", ...) stores
    assert data["checks"] and data["models"] and data["capacity"]["prefix_cache"]
    assert data["performance"] is not None and data["lang"] == lang
    assert_valid("summary", data)


def test_a_record_with_nothing_done_follows_it_too() -> None:
    from lmreg_nb.records import to_jsonable
    from lmreg_nb.summary import build_summary

    empty = build_summary(
        school="", contact=None, base_url=None, env=None, steps=[], models=[], checks=[]
    )
    assert_valid("summary", to_jsonable(empty))


# -- summary.csv -------------------------------------------------------------------------


@pytest.mark.usefixtures("school_model")
def test_summary_csv_rows(
    platform: AppPlatform, account: dict[str, str], lang: str, tmp_path: Path
) -> None:
    """Rows as the batch writes them: a run with its summary, one failed before it, one
    not run; read back with csv, the Chinese header mapped to the identifiers."""
    from lmreg_nb.batch.report import SUMMARY_COLUMNS, key_figures, write_summary_csv

    summary = _summary(platform, account, lang, tmp_path)
    runs = [
        {"run_id": "school-a", "status": "ok", "error": None, "duration_s": 12.5,
         "kernel_retried": False, "notebook": "onboarding.ipynb", "html": "onboarding.html",
         "short_html": "onboarding-short.html", "finished_at": "2026-05-01T02:00:00+00:00",
         **{k: v for k, v in key_figures(summary).items() if v is not None}},
        {"run_id": "school-b", "status": "failed", "error": "=cmd|' /C calc'!A0",
         "school": "第二中学", "duration_s": 0.4, "kernel_retried": True,
         "finished_at": "2026-05-01T02:00:01+00:00"},
        {"run_id": "school-c", "status": "not run", "school": "School C"},
    ]  # fmt: skip
    path = tmp_path / "summary.csv"
    write_summary_csv(path, runs)
    rows = csv_rows(path)
    assert [r["run_id"] for r in rows] == ["school-a", "school-b", "school-c"]
    assert list(rows[0]) == list(SUMMARY_COLUMNS)
    assert rows[0]["capacity"] == "4" and rows[1]["error"].startswith("'")
    for row in rows:
        assert_valid("summary-csv-row", row)
    assert problems("summary-csv-row", {**rows[0], "capacity": "four"})
