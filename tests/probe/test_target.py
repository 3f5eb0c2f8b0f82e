"""The chat endpoint as one value: made checked, from the settings or by hand."""

from __future__ import annotations

import dataclasses

import pytest

import lmreg_nb
from lmreg_nb.errors import ConfigurationError, ValidationError
from lmreg_nb.probe import Target
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings

URL = "https://llm.school.example/v1/chat/completions"
KEY = "sk-target-Qw3Er5Ty7Ui9"


def test_a_target_is_checked_and_trimmed_when_made() -> None:
    target = Target(f" {URL} ", f" {KEY} ", " qwen ", registered_name=" campus ", timeout=5)
    assert (target.url, target.model, target.registered_name, target.timeout) == (
        URL, "qwen", "campus", 5.0)  # fmt: skip
    assert isinstance(target.api_key, Secret) and target.api_key.reveal() == KEY
    assert KEY not in repr(target) and KEY[-4:] not in repr(target)
    assert target.alias == "campus" and dataclasses.replace(target, model="campus").alias is None
    assert target.headers()["Accept-Encoding"] == "identity"
    assert lmreg_nb.Target is Target


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("ftp://x/v1/chat/completions", KEY, "m"), "registryUrl"),
        ((URL, " ", "m"), "apiKey"),
        ((URL, "sk-a\r\nX-Injected: 1", "m"), "apiKey"),
        ((URL, "sk-ключ-123456", "m"), "apiKey"),
        ((URL, KEY, " "), "model"),
    ],
)
def test_a_bad_value_is_a_one_line_error(args: tuple[str, str, str], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        Target(*args)
    assert info.value.field == field and "\n" not in str(info.value)


def test_a_bad_timeout_is_refused() -> None:
    for timeout in (0, 601, float("nan")):
        with pytest.raises(ValidationError, match="timeout"):
            Target(URL, KEY, "m", timeout=timeout)


def test_from_settings_names_every_missing_variable_at_once() -> None:
    with pytest.raises(ConfigurationError) as info:
        Target.from_settings(Settings.load(environ={}))
    assert all(v in str(info.value) for v in ("MODEL_URL", "MODEL_API_KEY", "MODEL_NAME"))
    environ = {"LMREG_MODEL_API_KEY": KEY, "LMREG_TIMEOUT": "7"}
    target = Target.from_settings(Settings.load(environ=environ), url=URL, model="given")
    assert (target.url, target.model, target.timeout, target.registered_name) == (
        URL, "given", 7.0, None)  # fmt: skip
