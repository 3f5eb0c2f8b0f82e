"""Issue 40: one truth on every screen. Every view renders one typed result.

Each test names the item of the issue it covers and fails on the code before it.
In-process: the platform (tests/fakes/app_platform.py) and a school model that answers its
chat path and 404s elsewhere (an httpx MockTransport the checks' client is given); a
model that is down is an address where nothing listens (127.0.0.1:9). Every view in
both languages.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakes.app_platform import AppPlatform, app_platform
from fakes.chat_model import MODEL, school_model, use_in_checks

from lmreg_nb import i18n
from lmreg_nb.onboarding import Onboarding
from lmreg_nb.probe import Target, check_endpoint
from lmreg_nb.probe.load.capacity import CapacityResult
from lmreg_nb.probe.load.levels import SLO, Level
from lmreg_nb.probe.text.capacity_text import verdict
from lmreg_nb.records.html import render_summary_html
from lmreg_nb.records.principal import obstacles, render_principal_html
from lmreg_nb.records.text import render_summary_text, steps_verdict
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.settings import Settings
from lmreg_nb.summary import CapacityRecord, Check, Step, Summary, build_summary

pytestmark = pytest.mark.timeout(120)

KEY = "sk-one-truth-0123456789abcdef"


#: An address where nothing listens: a model that is down.
DOWN = "http://127.0.0.1:9/v1/chat/completions"
#: The school model of these tests: six words, 5 ms apart.
_school_model = school_model(KEY, [f"w{k} " for k in range(6)])


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks' client talks to :func:`_school_model` (and is refused at 127.0.0.1:9)."""
    use_in_checks(monkeypatch, _school_model)


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppPlatform]:
    with app_platform(tmp_path_factory.mktemp("one-truth") / "platform.sqlite3") as plat:
        yield plat


def _onboarding(
    platform: AppPlatform, tmp_path: Path, lang: str, **kw: Any
) -> tuple[Onboarding, RegistryClient]:
    app = platform.add_app(f"one-truth-{tmp_path.name}")
    env = {
        **platform.info.env(),
        "LMREG_APP_ID": app["app_id"],
        "LMREG_APP_SECRET": app["app_secret"],
        "LMREG_MODEL_API_KEY": KEY,
        "LMREG_MODEL_NAME": "m",
        "LMREG_TIMEOUT": "5",
    }
    settings = Settings.load(environ=env, token_cache=tmp_path / "tokens.json")
    client = RegistryClient(settings, transport=platform.transport())
    run = Onboarding.begin(
        "One Truth School", "Li Hua", "13812345678", "ops@school.edu.cn",
        lang=lang, settings=settings, **kw,
    )  # fmt: skip
    run._client = client  # the platform in this process
    return run, client


def _rows(page: str) -> list[tuple[str, str]]:
    found = re.findall(r'<tr><td>(.*?)</td><td class="who">(.*?)</td></tr>', page)
    return [(html.unescape(a), html.unescape(b)) for a, b in found]


# -- item 1: one capacity number -------------------------------------------------------------


def _level(c: int, p90: float, meets: bool) -> Level:
    return Level(c, requests=2 * c, ttft_ms={"p50": p90 / 2, "p90": p90}, meets_slo=meets)


def test_item1_the_verdict_says_the_capacity_not_the_class_asked_for(lang: str) -> None:
    # The class of 4 met, and the margin level 6 met too: the capacity is 6, everywhere.
    result = CapacityResult(SLO(), [_level(4, 400, True), _level(6, 800, True)], need=4)
    assert result.capacity.concurrency == 6
    said = verdict(result, 4)
    first = said.split("。")[0] if lang == "zh-CN" else said.split(". ")[0]
    assert "6" in first and "4" not in first, said
    record = result.record(4, said)
    summary = build_summary(
        school="S", contact=None, base_url=None, env=None,
        steps=[Step("capacity", True, "x")], models=[], checks=[],
        capacity=record, class_size=4, lang=lang,
    )  # fmt: skip
    page = render_principal_html(summary)
    served = re.search(r'class="capacity">(.*?)</p>', page)
    assert served is not None
    text = html.unescape(served.group(1))
    assert ("6 students" in text or "6 名学生" in text) and "4" in text, text
    enough = "enough for a class of 4" if lang == "en" else "足够一个 4 人的班级"
    assert enough in text.lower() or enough in text


# -- item 2: a registryUrl that stops at /v1 -------------------------------------------------


def test_item2_a_url_that_stops_at_v1_is_the_finding_with_the_school_s_own_address(
    in_process: None, lang: str
) -> None:
    url = f"{MODEL}/v1"
    fixed = f"{MODEL}/v1/chat/completions"
    report = check_endpoint(Target(url, KEY, "m", timeout=5), requests=4)
    rows = {c.name: c for c in report.checks}
    path = rows["url-path"]
    assert path.failed and path.severity == "error" and fixed in path.detail
    assert path.cause == "chat-path" and path.owner == "school" and path.fact("url") == fixed
    assert "llm.school.edu" not in path.detail  # never a made-up example
    # What cannot be judged on a 404 is not judged: no key or model-name blame.
    for name in ("key-accepted", "model-name-served", "errors-are-json"):
        assert rows[name].passed is None, rows[name]
    assert report.to_json()["checks"][[c["name"] for c in report.to_json()["checks"]].index(
        "key-accepted")]["passed"] is None  # fmt: skip
    said = " ".join(c.detail for c in report.checks)
    for blame in ("the key was accepted", "served-model-name", "--served-model-name"):
        assert blame not in said
    assert rows["load-test"].passed is None  # not run: the cause is the path, not "set X"
    # The record: one blocker naming the address to register; the principal's page too.
    summary = build_summary(
        school="S", contact=None, base_url=None, env=None,
        steps=[Step("chat endpoint checks", False, "x")], models=[],
        checks=report.checks, class_size=0, lang=lang, target_urls=[url],
    )  # fmt: skip
    with_fix = [b for b in summary.go_live.blockers if fixed in b]
    assert len(with_fix) == 1 and summary.go_live.blockers[0] == with_fix[0]
    page_rows = _rows(render_principal_html(summary))
    assert any(fixed in text for text, _who in page_rows), page_rows
    school = "School IT staff" if lang == "en" else "学校信息技术人员"
    assert all(who == school for _text, who in page_rows)
    generic = ("the way the platform needs", "回答方式还不符合平台的要求")
    assert not any(g in text for text, _who in page_rows for g in generic)


# -- item 3: registering an address that is down ---------------------------------------------


def test_item3_registering_an_address_that_is_down_is_a_warning_not_a_tick(
    platform: AppPlatform, tmp_path: Path, lang: str
) -> None:
    run, client = _onboarding(platform, tmp_path, lang)
    with client:
        outcome = run.register("down-model", DOWN)
    assert outcome.ok and outcome.warning and outcome.mark == "⚠", outcome
    assert "✔" not in outcome._repr_html_()
    said = dict(outcome.rows)
    cause = said["chat at this address" if lang == "en" else "此地址的对话接口"]
    assert "127.0.0.1" in cause and ("refused" in cause or "拒绝" in cause), cause


def test_item2_registering_a_v1_address_names_the_address_to_register(
    platform: AppPlatform, tmp_path: Path, lang: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lmreg_nb.onboarding.address as address

    def answer(url: str, **_kw: Any) -> tuple[int, None]:  # the school model, in process
        return _school_model(httpx.Request("POST", url, headers={"authorization": f"Bearer {KEY}"},
                                           json={"stream": False})).status_code, None  # fmt: skip

    monkeypatch.setattr(address, "_answer", answer)
    run, client = _onboarding(platform, tmp_path, lang)
    with client:
        outcome = run.register("v1-model", f"{MODEL}/v1")
    assert not outcome.ok and f"{MODEL}/v1/chat/completions" in repr(outcome)


# -- item 4: no advice the run's own parameters contradict -----------------------------------


def test_item4_a_model_that_is_down_gets_one_cause_and_no_contradicted_advice(
    platform: AppPlatform, tmp_path: Path, lang: str
) -> None:
    run, client = _onboarding(platform, tmp_path, lang, class_size=4)
    with client:
        run.connect()
        run.register("down-model", DOWN)
        run.list_models()
        run.check_endpoint(8, 2, chat_prompt="Hello")
        figure = run.figure()
        capacity = run.capacity(4)
        capacity_figure = run.capacity_figure()
    summary = run.summary()
    views = [repr(figure), repr(capacity), repr(capacity_figure), render_summary_text(summary)]
    shown = " ".join([*views, *summary.go_live.blockers])
    for contradicted in ("check_requests above 0", "class_size above 0", "Step not done yet",
                         "check_requests 大于 0", "class_size 大于 0", "步骤尚未完成"):  # fmt: skip
        assert contradicted not in shown, contradicted
    step = next(s for s in summary.steps if s.name == "capacity")
    assert step.skipped and step.skipped_after == "chat endpoint checks"
    skipped = "skipped" if lang == "en" else "已跳过"
    assert skipped in repr(capacity) and skipped in step.detail
    # One cause, one owner: the server does not answer (the chat step says the same).
    rows = _rows(render_principal_html(summary))
    causes = [text for text, _who in rows if "127.0.0.1" not in text]
    down_words = "does not answer" if lang == "en" else "没有应答"
    plain = [t for t, _w in rows if "https" in t or "internet" in t or "互联网" in t]
    assert [t for t in causes if t not in plain] == [t for t, _w in rows if down_words in t]
    assert len([b for b in summary.go_live.blockers if ("127.0.0.1:" in b and "listens" in b)
                or "没有服务在监听" in b]) == 1  # fmt: skip


# -- item 5: the steps headline agrees with the capacity verdict -----------------------------


def _below_class(lang: str) -> Summary:
    steps = [Step(n, True, "") for n in ("contact card", "token", "register", "list models",
                                         "chat endpoint checks", "capacity")]  # fmt: skip
    return build_summary(
        school="S", contact=None, base_url=None, env=None, steps=steps, models=[],
        checks=[Check("reachable", True, "error", "ok")], lang=lang,
        capacity=CapacityRecord(2, limited_by="ttft", need=40), class_size=40,
    )  # fmt: skip


def test_item5_the_steps_headline_says_the_capacity_is_below_the_class(lang: str) -> None:
    summary = _below_class(lang)
    assert summary.status == "ok"
    ok, text = steps_verdict(summary)
    assert not ok and "40" in text and "2" in text
    page = render_summary_html(summary)
    assert "all done, every required check passed." not in page
    assert "全部完成，所有必需检查均已通过。" not in page


# -- item 6: the prefix-cache sentence agrees with its numbers -------------------------------


def test_item6_could_not_tell_says_how_far_the_times_wandered(lang: str) -> None:
    from lmreg_nb.probe.load.prefix import judge_prefix
    from lmreg_nb.probe.text.workload_text import prefix_sentence

    # The first and the next students' medians are alike (2,503 and 2,504 ms), while the
    # short question's times wandered by 1,500 ms: "could not tell", with that number.
    found = judge_prefix([100.0, 1600.0], 2503.0, [1900.0, 2504.0, 2600.0])
    assert found.reused is None and found.noise_ms is not None
    said = prefix_sentence(found)
    assert "2503" in said and "2504" in said and f"{found.noise_ms:.0f}" in said, said


# -- item 8: the summary card once -----------------------------------------------------------


def test_item8_the_html_record_carries_the_summary_card_once(lang: str) -> None:
    import nbformat

    from lmreg_nb.records import RECORD_MIME
    from lmreg_nb.records.export import render_html

    summary = _below_class(lang)
    card = render_summary_html(summary)
    cell = nbformat.v4.new_code_cell("run.finish()")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                RECORD_MIME: {"name": "summary", "value": summary.to_json()},
                "text/html": card,
                "text/plain": "summary",
            },
        )
    ]
    page = render_html(nbformat.v4.new_notebook(cells=[cell]), summary)
    assert page.count('class="lmreg-summary"') == 1


def test_item8_the_checks_panel_shows_the_table_and_leaves_verdict_and_chart_to_their_cells(
    in_process: None,
) -> None:
    from lmreg_nb.display import Table
    from lmreg_nb.ui.checks import ChecksPanel

    run = Onboarding("")
    run.chat_endpoint._given = (f"{MODEL}/v1/chat/completions", "m")
    panel = ChecksPanel(run, requests=4, concurrency=2)
    settings = Settings.load(
        environ={"LMREG_MODEL_URL": f"{MODEL}/v1/chat/completions",
                 "LMREG_MODEL_API_KEY": KEY, "LMREG_MODEL_NAME": "m"}
    )  # fmt: skip
    run._settings = settings
    shown = panel._check()
    assert len(shown) == 1 and isinstance(shown[0], Table)


# -- item 9: the configuration names LMREG_ENV_FILE ------------------------------------------


def test_item9_the_configuration_of_a_run_names_the_file_its_settings_came_from(
    tmp_path: Path, lang: str
) -> None:
    from lmreg_nb.commands.runs import _settings_env
    from lmreg_nb.onboarding.configuration import configuration

    env_file = tmp_path / "school.env"
    env_file.write_text(
        "LMREG_BASE_URL=https://ai.school.example\nLMREG_APP_ID=app\nLMREG_APP_SECRET=s3cret-xyz\n"
        "LMREG_MODEL_URL=https://llm.school.example/v1/chat/completions\n"
        "LMREG_MODEL_API_KEY=sk-abcdef123456\nLMREG_MODEL_NAME=m\n",
        encoding="utf-8",
    )
    env_file.chmod(0o600)
    import os

    os.environ["LMREG_ENV_FILE"] = str(env_file)
    try:
        child = _settings_env({})
    finally:
        del os.environ["LMREG_ENV_FILE"]
    # The child reads no file of its own (the runner's LMREG_ENV_FILE=/dev/null)...
    settings = Settings.load(environ={**child, "LMREG_ENV_FILE": os.devnull})
    line = dict(configuration(settings).rows)[".env"]
    # ...yet its configuration says where every value came from.
    assert str(env_file) in line, line
    assert "none found" not in line and "未找到" not in line


# -- item 10: the lesson's tokens agree across the CSV and the sentence ----------------------


def test_item10_summary_csv_says_the_lesson_s_tokens_the_sentence_says(
    tmp_path: Path, lang: str
) -> None:
    import csv

    from lmreg_nb.batch.report import key_figures, write_summary_csv
    from lmreg_nb.probe.text.workload_text import workload_sentence
    from lmreg_nb.summary import Workload

    work = Workload("lesson", prompt_tokens=1719, shared_prefix_tokens=1693, turns=3,
                    max_tokens=300)  # fmt: skip
    summary = build_summary(
        school="S", contact=None, base_url=None, env=None, steps=[], models=[], checks=[],
        capacity=CapacityRecord(6, workload=work), class_size=4, lang=lang,
    )  # fmt: skip
    said = workload_sentence(work)
    assert "1,693" in said and "1,719" in said  # both figures, each named
    path = tmp_path / "summary.csv"
    write_summary_csv(path, [{"run_id": "r1", "status": "ok", **key_figures(summary)}])
    header, row = list(csv.reader(path.read_text(encoding="utf-8-sig").splitlines()))
    cells = dict(zip(header, row, strict=True))
    lesson = i18n.pgettext("summary.csv column", "lesson_tokens")
    assert cells[lesson] == "1693"


# -- item 11: the batch index says only what was measured ------------------------------------


def _index_row(tmp_path: Path, summary: Summary | None, **run: Any) -> str:
    from lmreg_nb.batch.report import key_figures, write_index_html

    path = tmp_path / "index.html"
    write_index_html(path, [{"run_id": "r1", "status": "failed", **run,
                             **key_figures(summary)}])  # fmt: skip
    page = path.read_text(encoding="utf-8")
    return html.unescape(page[page.index("<tbody>") :])


def test_item11_the_index_states_nothing_unmeasured_and_each_address_once(
    tmp_path: Path, lang: str
) -> None:
    from lmreg_nb.summary.performance import Performance

    url = "http://127.0.0.1:8766/v1/chat/completions"
    one = Performance.from_json({"requests": 1, "errors": 0, "ttft_ms": {"p50": 423.824},
                                 "requests_per_s": 0.0, "load_test": False})  # fmt: skip
    summary = build_summary(
        school="S", contact=None, base_url=None, env=None,
        steps=[Step("token", True, "")], models=[], checks=[Check("reachable", True, "error", "")],
        performance=one, lang=lang, target_urls=[url],
    )  # fmt: skip
    row = _index_row(tmp_path, summary)
    assert row.count(url) == 1, row  # the full registryUrl once in its go-live cell
    assert "423.824" not in row and "424" in row
    assert "requests/s" not in row and "个请求" not in row  # no load test: no rate
    never = build_summary(
        school="S", contact=None, base_url=None, env=None,
        steps=[Step("token", False, "wrong appSecret")], models=[], checks=[], lang=lang,
    )  # fmt: skip
    row = _index_row(tmp_path, never)
    assert "0 passed" not in row and "0 项通过" not in row, row


# -- item 12: the principal's page names the cause and the owner -----------------------------


def test_item12_a_wrong_app_secret_is_the_provider_s_and_nothing_else(
    platform: AppPlatform, tmp_path: Path, lang: str
) -> None:
    run, _client = _onboarding(platform, tmp_path, lang, class_size=4)
    run._settings = run.settings.with_(app_secret="not-the-secret-0000")
    run._client = RegistryClient(run.settings, transport=platform.transport())
    with run._client:
        run.connect()
        run.register("m", "https://llm.school.example/v1/chat/completions")
        run.list_models()
        run.check_endpoint(8, 2)
        run.capacity(4)
    rows = _rows(render_principal_html(run.summary()))
    provider = "Provider" if lang == "en" else "服务商"
    assert rows and all(who == provider for _text, who in rows), rows
    assert len(obstacles(run.summary())) == 1


# -- item 13: error lines that point the right way -------------------------------------------


def test_item13_notebook_05_with_nothing_configured_names_the_registered_parameter(
    lang: str,
) -> None:
    from lmreg_nb.errors import ConfigurationError

    run = Onboarding("", settings=Settings.load(environ={"LMREG_ENV_FILE": "/dev/null"}))
    with pytest.raises(ConfigurationError) as info:
        run.chat_endpoint.checked()
    assert "LMREG_MODEL_URL" in str(info.value) and "`registered`" in str(info.value)


def test_item13_check_registered_names_no_listing_failure_and_no_model_id(
    platform: AppPlatform, tmp_path: Path, lang: str
) -> None:
    from lmreg_nb.errors import NotFoundError

    run, client = _onboarding(platform, tmp_path, lang)
    with client, pytest.raises(NotFoundError) as info:
        Target.from_registered(run.settings, "qwen-zz", client=client)
    said = str(info.value)
    assert "qwen-zz" in said and "modelId" not in said
    assert "failed" not in said and "失败" not in said
    assert said.count("lmreg-nb models") == 1


def test_item13_the_modify_preview_refuses_a_taken_name_before_confirm(
    platform: AppPlatform, tmp_path: Path, lang: str
) -> None:
    from lmreg_nb.ui.modify import ModifyForm

    run, client = _onboarding(platform, tmp_path, lang)
    with client:
        url = "https://llm.school.example/v1/chat/completions"
        client.register_or_update(
            __import__("lmreg_nb.models", fromlist=["ModelDraft"]).ModelDraft(
                model_name="first", registry_url=url, api_key=KEY
            )
        )
        second = client.register_or_update(
            __import__("lmreg_nb.models", fromlist=["ModelDraft"]).ModelDraft(
                model_name="second", registry_url=url, api_key=KEY
            )
        )[0]
        form = ModifyForm(run)
        form.select.value = second.model_id
        form.model_name.value = "first"
        form.submit()
    assert form.confirm.layout.display == "none"  # nothing to confirm: it would fail
    assert "first" in form.message.value and ("already used" in form.message.value
                                              or "已被" in form.message.value)  # fmt: skip


def test_item13_the_sandbox_platform_names_no_variable_of_ours_to_a_form_user(
    platform: AppPlatform, tmp_path: Path, lang: str
) -> None:
    from lmreg_nb.errors import CredentialsError

    run, _client = _onboarding(platform, tmp_path, lang)
    run.use_credentials(run.settings.app_id or "", "typed-but-wrong-0000")
    run._client = RegistryClient(run.settings, transport=platform.transport())
    with run._client, pytest.raises(CredentialsError) as info:
        run._client.token()
    assert "LMREG_APP_SECRET" not in str(info.value) and "LMREG_APP_ID" not in str(info.value)
