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
    assert set(SECRET_VARIABLES) == {
        "LMREG_APP_SECRET",
        "LMREG_TOKEN",
        "LMREG_MODEL_API_KEY",
        "LMREG_NOTIFY",
        "LMREG_NOTIFY_MAIL",
    }


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
        "LMREG_MODEL_API_KEY", "LMREG_MODEL_NAME", "LMREG_LANG", "LMREG_NOTEBOOKS", "LMREG_NOTIFY",
        "LMREG_NOTIFY_MAIL", "LMREG_ALLOW_PRIVATE",
    }  # fmt: skip
    assert set(VARIABLES.values()) == design


def test_dotenv_is_found_in_a_parent_folder_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel of a notebook starts in notebooks/; .env sits beside the repository.
    repo = Path.home() / "repo"
    (repo / "notebooks").mkdir(parents=True)
    (repo / ".env").write_text(ENV_FILE)
    monkeypatch.chdir(repo / "notebooks")
    s = Settings.load()
    assert s.base_url == "https://from-file.example"
    assert s.env_file == (repo / ".env").resolve()
    assert s.env_searched == ((repo / "notebooks" / ".env").resolve(), (repo / ".env").resolve())


def test_the_search_stops_at_home_and_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A home of its own inside tmp_path: the .env above it stays inside this test's folder
    # (above the shared home it would sit in the worker's folder, read by later tests).
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (home.parent / ".env").write_text(ENV_FILE)  # above home: never read
    (home / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(home / "a" / "b")
    s = Settings.load()
    assert s.env_file is None and s.base_url is None
    assert [p.parent for p in s.env_searched] == [
        (home / "a" / "b").resolve(), (home / "a").resolve(), home.resolve()
    ]  # fmt: skip
    with pytest.raises(ConfigurationError) as info:
        s.require("base_url", "app_id", "app_secret")
    message = str(info.value)
    assert message.startswith("LMREG_BASE_URL, LMREG_APP_ID, LMREG_APP_SECRET are not set")
    assert str((home / "a" / "b").resolve()) in message and "no .env found" in message
    assert info.value.variable == "LMREG_BASE_URL"


def test_lmreg_env_file_wins_over_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (Path.cwd() / ".env").write_text("LMREG_APP_ID=from-cwd\n")
    named = tmp_path / "school.env"
    named.write_text("LMREG_APP_ID=from-named\n")
    monkeypatch.setenv("LMREG_ENV_FILE", str(named))
    s = Settings.load()
    assert s.app_id == "from-named" and s.env_file == named and s.env_searched == (named,)
    with pytest.raises(ConfigurationError) as info:
        s.require("base_url")
    assert str(named) in str(info.value)


def test_lang_and_notebooks(tmp_path: Path) -> None:
    s = Settings.load(environ={"LMREG_LANG": "zh_CN.UTF-8", "LMREG_NOTEBOOKS": str(tmp_path)})
    assert s.lang == "zh-CN" and s.notebooks == tmp_path
    assert Settings.load(environ={"LMREG_LANG": "en"}).lang == "en"
    assert Settings.load(environ={}).lang is None and Settings.load(environ={}).notebooks is None
    with pytest.raises(ConfigurationError, match="LMREG_LANG must be zh-CN or en"):
        Settings.load(environ={"LMREG_LANG": "fr"})


def test_a_model_api_key_no_header_can_carry_is_a_configuration_error() -> None:
    s = Settings.load(environ={"LMREG_MODEL_API_KEY": "ключ中文"})
    with pytest.raises(ConfigurationError) as info:
        s.require("model_api_key")
    assert info.value.variable == "LMREG_MODEL_API_KEY" and "ключ" not in str(info.value)
    ok = Settings.load(environ={"LMREG_MODEL_API_KEY": "sk-visible-ascii-1234"})
    assert ok.require("model_api_key").reveal() == "sk-visible-ascii-1234"


# ---------------------------------------------------------------- a planted .env (issue 20, item 1)

PLANTED = """
LMREG_BASE_URL=https://attacker.example
LMREG_NOTEBOOKS=/tmp/attacker-notebooks
LMREG_TOKEN=attacker-token-123456
LMREG_ENV=attacker-env
LMREG_TOKEN_CACHE=/tmp/attacker-cache.json
"""


def _shared_folder(tmp_path: Path) -> Path:
    """A folder like /tmp: anyone may write in it (sticky, world-writable)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    return shared


def test_the_search_stops_below_a_folder_others_can_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = _shared_folder(tmp_path)
    (shared / ".env").write_text(PLANTED)  # planted by another user of the machine
    work = shared / "school" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    s = Settings.load()
    assert s.env_file is None and s.token is None and s.notebooks is None and s.base_url is None
    assert s.env_searched == ((work / ".env").resolve(), (work.parent / ".env").resolve())


@pytest.mark.parametrize("mode", [0o777, 0o757])
def test_a_folder_writable_by_others_is_not_searched_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: int
) -> None:
    open_folder = tmp_path / "open"
    (open_folder / "work").mkdir(parents=True)
    (open_folder / ".env").write_text(PLANTED)
    open_folder.chmod(mode)
    monkeypatch.chdir(open_folder / "work")
    assert Settings.load().env_file is None


def test_a_dotenv_others_can_write_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".env").write_text(ENV_FILE)
    (work / ".env").chmod(0o666)
    monkeypatch.chdir(work)
    assert Settings.load().env_file is None


def test_a_fifo_named_dotenv_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    work = Path.home() / "work"
    work.mkdir()
    os.mkfifo(work / ".env")  # reading it would block forever
    monkeypatch.chdir(work)
    assert Settings.load().env_file is None


def test_a_searched_dotenv_never_sets_notebooks_or_token_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work = Path.home() / "work"
    work.mkdir()
    (work / ".env").write_text(PLANTED)
    monkeypatch.chdir(work)
    s = Settings.load()
    assert s.env_file == (work / ".env").resolve()
    assert s.base_url == "https://attacker.example"  # an ordinary variable is read
    assert s.notebooks is None and s.token is None and s.env is None
    assert s.token_cache != Path("/tmp/attacker-cache.json")
    assert s.env_ignored == ("LMREG_NOTEBOOKS", "LMREG_TOKEN", "LMREG_ENV", "LMREG_TOKEN_CACHE")
    from lmreg_nb.onboarding.configuration import env_file_line

    assert "not taken from it: LMREG_NOTEBOOKS, LMREG_TOKEN" in env_file_line(s)


def test_a_named_env_file_may_set_them(tmp_path: Path) -> None:
    named = tmp_path / "school.env"
    named.write_text(PLANTED)
    s = Settings.load(environ={"LMREG_ENV_FILE": str(named)})
    assert s.token is not None and s.token.reveal() == "attacker-token-123456"
    assert s.notebooks == Path("/tmp/attacker-notebooks") and s.env_ignored == ()


def test_lmreg_env_file_devnull_turns_the_search_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    (Path.cwd() / ".env").write_text(ENV_FILE)
    s = Settings.load(environ={"LMREG_ENV_FILE": os.devnull})
    assert s.env_file is None and s.env_searched == () and s.base_url is None


def test_an_oversized_env_file_is_one_clear_error(tmp_path: Path) -> None:
    named = tmp_path / "huge.env"
    named.write_text("LMREG_APP_ID=x\n" + "#" * (2 << 20))
    with pytest.raises(ConfigurationError, match="too large"):
        Settings.load(environ={"LMREG_ENV_FILE": str(named)})


# A red-team finding: a .env as a Chinese Windows user saves it was read wrong in silence:
# GBK bytes replaced (学校模型 became "ѧУģ��", and could be registered so), UTF-16 or a
# full-width ＝ left every variable unset ("LMREG_MODEL_URL ... not set", no file named).
@pytest.mark.parametrize(
    ("data", "said"),
    [
        ("LMREG_MODEL_NAME=学校模型\n".encode("gbk"), "line 1 is not UTF-8"),
        ("LMREG_MODEL_NAME=m\n".encode("utf-16"), "UTF-16"),
        ("LMREG_MODEL_URL＝http://127.0.0.1:8000/v1/chat/completions\n".encode(), "line 1"),
        (b"LMREG_APP_ID=a\nlmreg_model_name=m\n", "line 2"),
        (b"LMREG_APP_ID=a\n\nLMREG_MODEL_NAME: m\n", "line 3"),
        ("LMREG_APP_SECRET：Sec-ret-value-1234\n".encode(), r"line 1 \(LMREG_APP_SECRET\)"),
    ],
)
def test_a_dotenv_read_wrong_is_one_error_naming_the_file_and_line(
    tmp_path: Path, data: bytes, said: str
) -> None:
    named = tmp_path / "school.env"
    named.write_bytes(data)
    with pytest.raises(ConfigurationError, match=said) as raised:
        Settings.load(environ={"LMREG_ENV_FILE": str(named)})
    assert str(named) in str(raised.value) and "Sec-ret" not in str(raised.value)


def test_a_dotenv_with_a_gbk_comment_and_a_bom_is_read(tmp_path: Path) -> None:
    named = tmp_path / "school.env"
    # A comment in another encoding changes no value: it is not worth an error.
    named.write_bytes(
        b"\xef\xbb\xbf" + "# 学校的设置\n".encode("gbk") + "LMREG_MODEL_NAME=学校模型\r\n".encode()
    )
    assert Settings.load(environ={"LMREG_ENV_FILE": str(named)}).model_name == "学校模型"
