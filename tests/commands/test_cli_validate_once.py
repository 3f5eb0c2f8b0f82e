"""Issue 44: each input of `check` and `capacity` is validated once, in the library.

--context-need was checked twice per `check` run (the option's callback and the
report), the workload up to three times (the command, the run, the workload's
preparation). The command now builds the library's typed values before it asks
for the key (a bad value: one line naming the option, exit 2, no prompt, no
request), and the library trusts them by their type; a library caller's bad
value is still a ValidationError naming the field.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from lmreg_nb import i18n
from lmreg_nb.cli import main
from lmreg_nb.errors import ValidationError

KEY = "sk-validate-once-0123456789"
#: Nothing listens on the discard port: every request is refused at once, no server needed.
REFUSED = "http://127.0.0.1:9/v1/chat/completions"
#: The functions that validate a context need and a workload.
VALIDATORS = (
    ("lmreg_nb.probe.checks.context_window", "check_context_need"),
    ("lmreg_nb.probe.load.workload", "check_workload"),
)
#: Every other module of the run that could hold one of them under its own name.
MODULES = (
    "lmreg_nb.commands._workload",
    "lmreg_nb.commands.check",
    "lmreg_nb.commands.capacity",
    "lmreg_nb.probe.report",
    "lmreg_nb.probe.load.capacity",
    "lmreg_nb.probe.load.search",
    "lmreg_nb.probe.load.workload",
    "lmreg_nb.onboarding.parameters",
)


@pytest.fixture(autouse=True)
def _english_after():
    yield
    i18n.set_language("en")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times each validator runs (wherever a module holds it by name)."""
    counted: dict[str, int] = {}
    for source, name in VALIDATORS:
        original = getattr(importlib.import_module(source), name)
        counted[name] = 0

        def counting(*args: Any, _f: Callable[..., Any] = original, _n: str = name) -> Any:
            counted[_n] += 1
            return _f(*args)

        for module in (source, *MODULES):
            held = sys.modules.get(module) or importlib.import_module(module)
            if getattr(held, name, None) is original:
                monkeypatch.setattr(held, name, counting)
    return counted


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("LMREG_ENV_FILE", "/dev/null")
    return {
        "LMREG_MODEL_URL": REFUSED,
        "LMREG_MODEL_API_KEY": KEY,
        "LMREG_MODEL_NAME": "m",
        "LMREG_LANG": "en",
    }


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--json", "--requests", "2", "--context-need", "9000"],
        ["capacity", "--json", "--context-need", "9000", "--max-concurrency", "2"],
    ],
)  # fmt: skip
def test_a_run_validates_the_context_need_and_the_workload_once(
    calls: dict[str, int], env: dict[str, str], args: list[str]
) -> None:
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 1, result.output  # it ran: the refused address fails it
    out = json.loads(result.stdout)
    assert out["workload"] is None or out["workload"]["name"] == "lesson"
    assert calls == {"check_context_need": 1, "check_workload": 1}


def test_check_without_a_load_test_takes_a_small_context_need(
    calls: dict[str, int], env: dict[str, str]
) -> None:
    # 500 tokens leave no room for the lesson, which is sent only by a load test.
    result = CliRunner().invoke(main, ["check", "--json", "--context-need", "500"], env=env)
    assert result.exit_code == 1, result.output
    assert "--context-need" not in result.stderr
    assert json.loads(result.stdout)["workload"] is None  # no load test, no workload
    assert calls == {"check_context_need": 1, "check_workload": 0}


BAD = [
    (["check", "--context-need", "abc"], "--context-need", "whole number of tokens", "整数"),
    (["check", "--requests", "1", "--context-need", "300"], "--context-need", "no room", "调大"),
    (["capacity", "--context-need", "300"], "--context-need", "no room", "调大"),
    (["capacity", "--context-need", "0"], "--context-need", "whole number of tokens", "整数"),
    (["check", "--requests", "1", "--lesson-tokens", "0"], "--lesson-tokens", "between 1", "1"),
    (["capacity", "--lesson-tokens", "100001"], "--lesson-tokens", "between 1", "100000"),
    (["capacity", "--max-tokens", "0"], "--max-tokens", "between 1", "32768"),
    (["check", "--requests", "1", "--max-tokens", "40000"], "--max-tokens", "between 1", "32768"),
]


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize(("args", "option", "en", "zh"), BAD)
def test_a_bad_value_is_one_line_naming_the_option_before_the_key_is_asked(
    monkeypatch: pytest.MonkeyPatch, args: list[str], option: str, en: str, zh: str, lang: str
) -> None:
    monkeypatch.setenv("LMREG_ENV_FILE", "/dev/null")
    monkeypatch.delenv("LMREG_MODEL_API_KEY", raising=False)
    monkeypatch.setattr("lmreg_nb.commands._endpoint.interactive", lambda: True)

    def no_prompt(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("the key was asked for before the value was checked")

    def no_run(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a run started")

    monkeypatch.setattr("click.prompt", no_prompt)
    monkeypatch.setattr("lmreg_nb.probe.check_endpoint", no_run)
    monkeypatch.setattr("lmreg_nb.probe.load.capacity.find_capacity", no_run)
    env = {"LMREG_MODEL_URL": REFUSED, "LMREG_MODEL_NAME": "m", "LMREG_LANG": lang}
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 2, (result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    said = lines[0].replace("：", ":") if lines else ""  # zh-CN's colon is full-width
    assert len(lines) == 1 and f"{option}:" in said, lines
    assert (en if lang == "en" else zh) in lines[0], lines
    assert "Traceback" not in result.output


def test_a_library_caller_still_gets_the_field_named() -> None:
    from lmreg_nb.probe import Target, check_endpoint
    from lmreg_nb.probe.load.capacity import find_capacity
    from lmreg_nb.probe.load.workload import WorkloadSpec

    target = Target(REFUSED, KEY, "m", timeout=2)
    for kwargs, field in [
        ({"context_need": "abc"}, "context_need"),
        ({"context_need": 0}, "context_need"),
        ({"requests": 1, "context_need": 500}, "context_need"),
    ]:
        with pytest.raises(ValidationError) as info:
            check_endpoint(target, **kwargs)  # type: ignore[arg-type]
        assert info.value.field == field
    with pytest.raises(ValidationError) as info:
        find_capacity(target, max_tokens=0)
    assert info.value.field == "max_tokens"
    with pytest.raises(ValidationError) as info:
        find_capacity(target, workload=WorkloadSpec(lesson_tokens=0))
    assert info.value.field == "lesson_tokens"
    with pytest.raises(ValidationError) as info:
        find_capacity(target, workload=WorkloadSpec(context_need=400))
    assert info.value.field == "context_need"
