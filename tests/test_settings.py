"""Settings: arguments > environment > .env > defaults; missing values name their variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmreg_nb.errors import ConfigurationError
from lmreg_nb.secret import Secret
from lmreg_nb.settings import DEFAULT_TOKEN_PATH, SECRET_VARIABLES, VARIABLES, Settings

ENV_FILE = """
# a comment
LMREG_BASE_URL=https://from-file.example
LMREG_APP_ID=file-app
LMREG_APP_SECRET="file-secret-123456"
LMREG_TIMEOUT=7
"""


def test_defaults() -> None:
    s = Settings.load(environ={})
    assert s.base_url is None and s.app_secret is None and s.token is None
    assert s.token_path == DEFAULT_TOKEN_PATH == "/openapi/v1/token"
    assert s.timeout == 10.0
    assert s.token_cache == Path.home() / ".cache" / "lmreg_nb" / "tokens.json"


def test_default_cache_without_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert Settings.load().token_cache == Path.home() / ".cache" / "lmreg_nb" / "tokens.json"


def test_precedence_arguments_environment_file_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (Path.cwd() / ".env").write_text(ENV_FILE)
    monkeypatch.setenv("LMREG_APP_ID", "env-app")
    s = Settings.load(app_secret="arg-secret-999999")
    assert s.base_url == "https://from-file.example"  # .env only
    assert s.app_id == "env-app"  # environment beats .env
    assert s.app_secret == Secret("arg-secret-999999")  # argument beats both
    assert s.timeout == 7.0
    assert s.token_path == DEFAULT_TOKEN_PATH  # default


def test_env_file_is_read_not_loaded_into_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    (Path.cwd() / ".env").write_text(ENV_FILE)
    Settings.load()
    assert "LMREG_BASE_URL" not in os.environ


def test_lmreg_env_file_names_another_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "school.env"
    other.write_text("LMREG_BASE_URL=https://named.example/\n")
    monkeypatch.setenv("LMREG_ENV_FILE", str(other))
    assert Settings.load().base_url == "https://named.example"  # trailing slash dropped
    assert Settings.load(env_file=other).base_url == "https://named.example"


def test_missing_env_file_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMREG_ENV_FILE", "/nonexistent/x.env")
    with pytest.raises(ConfigurationError, match="LMREG_ENV_FILE") as info:
        Settings.load()
    assert info.value.variable == "LMREG_ENV_FILE"


@pytest.mark.parametrize("name", ["base_url", "app_id", "app_secret", "model_url", "model_api_key"])
def test_require_names_the_variable(name: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings.load(environ={}).require(name)
    variable = VARIABLES[name]
    assert info.value.variable == variable and str(info.value).startswith(f"{variable} is not set")


def test_empty_values_count_as_missing() -> None:
    s = Settings.load(environ={"LMREG_APP_ID": "", "LMREG_APP_SECRET": "  "})
    with pytest.raises(ConfigurationError, match="LMREG_APP_ID"):
        s.require("app_id")
    with pytest.raises(ConfigurationError, match="LMREG_APP_SECRET"):
        s.require("app_secret")
    with pytest.raises(ConfigurationError, match="LMREG_APP_SECRET"):
        Settings.load(environ={}, app_secret="").require("app_secret")


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://ai.school.example", True),
        ("http://127.0.0.1:8765", True),
        ("http://localhost:8765", True),
        ("http://[::1]:8765", True),
        ("http://ai.school.example", False),
        ("ftp://ai.school.example", False),
        ("ai.school.example", False),
        ("https://", False),
    ],
)
def test_base_url_must_be_https_except_localhost(url: str, ok: bool) -> None:
    s = Settings.load(environ={"LMREG_BASE_URL": url})
    if ok:
        assert s.require("base_url") == url
    else:
        with pytest.raises(ConfigurationError, match="LMREG_BASE_URL must be an https://"):
            s.require("base_url")


@pytest.mark.parametrize("raw", ["abc", "0", "-1", "601", "nan", "inf"])
def test_bad_timeout_names_the_variable(raw: str) -> None:
    with pytest.raises(ConfigurationError, match="LMREG_TIMEOUT") as info:
        Settings.load(environ={"LMREG_TIMEOUT": raw})
    assert info.value.variable == "LMREG_TIMEOUT"


def test_secrets_are_secret_and_listed() -> None:
    env = {
        "LMREG_APP_SECRET": " secret-value-aaaa\n",
        "LMREG_TOKEN": "token-value-bbbb",
        "LMREG_MODEL_API_KEY": "key-value-cccc",
    }
    s = Settings.load(environ=env)
    assert isinstance(s.app_secret, Secret) and s.app_secret.reveal() == "secret-value-aaaa"
    assert sorted(s.secret_values()) == ["key-value-cccc", "secret-value-aaaa", "token-value-bbbb"]
    text = repr(s) + str(s)
    assert not any(v in text for v in s.secret_values())
    assert set(SECRET_VARIABLES) == {"LMREG_APP_SECRET", "LMREG_TOKEN", "LMREG_MODEL_API_KEY"}


def test_token_path_and_cache_are_normalised(tmp_path: Path) -> None:
    s = Settings.load(environ={"LMREG_TOKEN_PATH": "api/token", "LMREG_TOKEN_CACHE": "~/t.json"})
    assert s.token_path == "/api/token"
    assert s.token_cache == Path.home() / "t.json"


def test_unknown_argument_is_refused() -> None:
    with pytest.raises(TypeError, match="base_uri"):
        Settings.load(base_uri="x")


def test_with_changes_and_coerces() -> None:
    s = Settings.load(environ={}).with_(app_secret="new-secret-0000", timeout="3")
    assert isinstance(s.app_secret, Secret) and s.timeout == 3.0


def test_every_design_variable_is_known() -> None:
    design = {
        "LMREG_BASE_URL", "LMREG_APP_ID", "LMREG_APP_SECRET", "LMREG_TOKEN_PATH", "LMREG_TOKEN",
        "LMREG_ENV", "LMREG_TOKEN_CACHE", "LMREG_TIMEOUT", "LMREG_MODEL_URL",
        "LMREG_MODEL_API_KEY", "LMREG_MODEL_NAME",
    }  # fmt: skip
    assert set(VARIABLES.values()) == design
