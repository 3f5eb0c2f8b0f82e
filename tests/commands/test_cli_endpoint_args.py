"""Issue 43 item 2: `check [URL]` and `capacity [URL]` take the address, and `--model NAME`.

`lmreg-nb check URL` was refused ("Got unexpected extra argument"): the address
had to come from LMREG_MODEL_URL, while curl, `vllm bench serve --base-url` and
`guidellm benchmark --target` take it on the command line. The key never is an
argument (it would land in shell history): LMREG_MODEL_API_KEY or a hidden
prompt, as `register` does. The run itself is replaced by a recorder here.
"""

from __future__ import annotations

from typing import Any

import click
import pytest
from click.testing import CliRunner

from lmreg_nb import i18n
from lmreg_nb.cli import main

URL = "https://llm.school.example/v1/chat/completions"
KEY = "sk-endpoint-args-0123456789"
COMMANDS = ["check", "capacity"]


class Recorded(Exception):
    """Raised by the recorder in place of the run: the target was built."""


@pytest.fixture
def targets(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The Target each command would measure (the run itself is never started)."""
    seen: list[Any] = []

    def record(target: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(target)
        raise Recorded

    monkeypatch.setattr("lmreg_nb.probe.check_endpoint", record)
    monkeypatch.setattr("lmreg_nb.probe.load.capacity.find_capacity", record)
    for name in ("LMREG_MODEL_URL", "LMREG_MODEL_NAME", "LMREG_MODEL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LMREG_ENV_FILE", "/dev/null")
    return seen


def _run(args: list[str], env: dict[str, str] | None = None, stdin: str | None = None) -> Any:
    return CliRunner().invoke(main, args, env=env, input=stdin)


@pytest.mark.parametrize("command", COMMANDS)
def test_the_address_and_model_come_from_the_command_line(targets: list[Any], command: str) -> None:
    result = _run([command, URL, "--model", "qwen2.5-7b"], {"LMREG_MODEL_API_KEY": KEY})
    assert isinstance(result.exception, Recorded), result.output
    (target,) = targets
    assert (target.url, target.model, target.api_key.reveal()) == (URL, "qwen2.5-7b", KEY)


@pytest.mark.parametrize("command", COMMANDS)
def test_the_settings_stay_the_default(targets: list[Any], command: str) -> None:
    env = {"LMREG_MODEL_URL": URL, "LMREG_MODEL_NAME": "m", "LMREG_MODEL_API_KEY": KEY}
    result = _run([command], env)
    assert isinstance(result.exception, Recorded), result.output
    assert (targets[0].url, targets[0].model) == (URL, "m")
    other = "https://other.school.example/v1/chat/completions"
    _run([command, other], env)  # the argument wins over LMREG_MODEL_URL
    assert (targets[1].url, targets[1].model) == (other, "m")


@pytest.mark.parametrize("command", COMMANDS)
def test_the_key_is_asked_hidden_on_a_terminal(
    targets: list[Any], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setattr("lmreg_nb.commands._endpoint.interactive", lambda: True)
    result = _run([command, URL, "--model", "m"], stdin=KEY + "\n")
    assert isinstance(result.exception, Recorded), result.output
    assert targets[0].api_key.reveal() == KEY
    assert KEY not in result.output  # hidden: not echoed


@pytest.mark.parametrize(("lang", "words"), [("en", "is not set"), ("zh-CN", "未设置")])
@pytest.mark.parametrize("command", COMMANDS)
def test_no_key_and_no_terminal_is_one_line(
    targets: list[Any], command: str, lang: str, words: str
) -> None:
    result = _run(["--lang", lang, command, URL, "--model", "m"])
    i18n.set_language("en")
    assert result.exit_code == 2 and not targets, result.output
    assert "LMREG_MODEL_API_KEY" in result.stderr and words in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_model_name_is_named(targets: list[Any], command: str) -> None:
    result = _run([command, URL], {"LMREG_MODEL_API_KEY": KEY})
    assert result.exit_code == 2 and not targets
    assert "LMREG_MODEL_NAME" in result.stderr and "--model" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("command", COMMANDS)
def test_an_address_beside_registered_is_a_usage_error(targets: list[Any], command: str) -> None:
    result = _run([command, URL, "--registered", "campus-llm"], {"LMREG_MODEL_API_KEY": KEY})
    assert result.exit_code == 2 and not targets
    assert "--registered" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_address_is_one_line(targets: list[Any], command: str) -> None:
    result = _run([command, "ftp://x", "--model", "m"], {"LMREG_MODEL_API_KEY": KEY})
    assert result.exit_code == 2 and not targets
    assert "registryUrl" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("args", [["", "--model", "m"], [URL, "--model", " "]])
def test_an_empty_address_or_name_is_named_not_called_unset(
    targets: list[Any], command: str, args: list[str]
) -> None:
    env = {"LMREG_MODEL_API_KEY": KEY, "LMREG_MODEL_URL": URL, "LMREG_MODEL_NAME": "m"}
    result = _run([command, *args], env)
    assert result.exit_code == 2 and not targets
    named = "URL" if args[0] == "" else "--model"
    assert named in result.stderr and "is empty" in result.stderr, result.stderr
    assert "is not set" not in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize(("lang", "words"), [("en", "default"), ("zh-CN", "默认")])
@pytest.mark.parametrize("command", COMMANDS)
def test_the_help_shows_the_address_and_no_key_option(command: str, lang: str, words: str) -> None:
    result = _run(["--lang", lang, command, "--help"])
    i18n.set_language("en")
    assert result.exit_code == 0
    assert f"{command} [OPTIONS] [URL]" in result.output and "--model" in result.output
    assert words in result.output and "LMREG_MODEL_URL" in result.output
    params = main.commands[command].params
    assert not [p for p in params if isinstance(p, click.Option) and "key" in p.name.lower()]


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("sk-typed-0123456789 ", None),  # pasted with a space after: trimmed, as in .env
        ("ｓｋ-typed-0123456789", "full-width"),  # a Chinese input method's letters
        ("sk-typed 0123456789", "space"),
    ],
)
def test_a_typed_key_is_trimmed_and_a_bad_one_named_without_lmreg_variables(
    monkeypatch: pytest.MonkeyPatch, typed: str, said: str | None
) -> None:
    # A red-team finding: the typed key was not trimmed, and any bad one was told
    # "LMREG_MODEL_API_KEY must be visible ASCII characters only", a variable never set.
    from lmreg_nb.commands._endpoint import model_api_key
    from lmreg_nb.errors import LmregError
    from lmreg_nb.settings import Settings

    monkeypatch.setattr("lmreg_nb.commands._endpoint.interactive", lambda: True)
    with CliRunner().isolation(input=typed + "\n"):
        if said is None:
            assert model_api_key(Settings.load(environ={}), purpose="x").reveal() == typed.strip()
            return
        with pytest.raises(LmregError) as info:
            model_api_key(Settings.load(environ={}), purpose="x")
    message = str(info.value)
    assert said in message and "LMREG_" not in message
    assert "0123456789" not in message
