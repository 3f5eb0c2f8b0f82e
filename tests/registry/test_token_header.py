"""A token or env no HTTP header can carry is refused at exchange time (issue 33, item 6).

Before: a non-ASCII env crashed ``models`` with a UnicodeEncodeError traceback, an
env with CR LF gave a wrong "could not connect", and both stayed cached for 72 h.
Now: one line naming the platform's answer, exit 1, nothing cached, and a token
or env cached by an older release is not used. The commands run in-process (CliRunner)
against the in-memory platform of tests/fakes/registry_fakes.py.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fakes.registry_fakes import APP_ID, TOKEN_PATH, FakePlatform, platform_env, route_clients

from lmreg_nb.cli import main
from lmreg_nb.errors import ConfigurationError, MalformedResponseError
from lmreg_nb.registry.client import QUERY_PATH
from lmreg_nb.registry.tokens import TokenCache, TokenProvider, token_from_data
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings

BAD_ENVS = ["env\r\nX-Injected: 1", "环境", "env with space"]
BAD_TOKENS = ["TOKEN\r\nX-Injected: 1", "令牌-TOKEN-12345678"]


@pytest.fixture
def platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakePlatform:
    """The fake platform, reached by every client the commands make; its settings in LMREG_*."""
    fake = FakePlatform()
    route_clients(monkeypatch, fake.transport)
    platform_env(monkeypatch, tmp_path / "tokens.json")
    return fake


def _models() -> Result:
    return CliRunner().invoke(main, ["models"])


@pytest.mark.parametrize("env", BAD_ENVS)
def test_models_says_the_platform_answered_an_unusable_env(
    platform: FakePlatform, tmp_path: Path, env: str, caplog: pytest.LogCaptureFixture
) -> None:
    platform.env = env
    for _attempt in range(2):  # the second run must not find it in the cache
        ran = _models()
        err = ran.stderr
        assert ran.exit_code == 1, err
        assert ran.exception is None or isinstance(ran.exception, SystemExit), ran.exception
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        # Nor a warning logged beside it (a process would print it on stderr too).
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        assert "env" in err and "HTTP header" in err
        assert "could not connect" not in err
    assert platform.count(TOKEN_PATH) == 2  # exchanged each time
    assert platform.count(QUERY_PATH) == 0
    cache = tmp_path / "tokens.json"
    assert not cache.exists() or "X-Injected" not in cache.read_text()


@pytest.mark.parametrize("token", BAD_TOKENS)
def test_an_unusable_token_is_refused_without_showing_it(
    platform: FakePlatform, token: str
) -> None:
    platform.token_value = token
    ran = _models()
    err = ran.stderr
    assert ran.exit_code == 1 and "Traceback" not in err
    assert ran.exception is None or isinstance(ran.exception, SystemExit), ran.exception
    assert "token" in err and "HTTP header" in err
    assert token not in err and "12345678" not in err and "X-Injected" not in err


def test_token_from_data_refuses_before_anything_is_stored() -> None:
    with pytest.raises(MalformedResponseError, match="HTTP header"):
        token_from_data({"token": "abc", "env": "e\nv"})
    with pytest.raises(MalformedResponseError, match="HTTP header"):
        token_from_data({"token": "ab c", "env": "env"})
    assert token_from_data({"token": "abc", "env": "env"}).env == "env"


def test_a_cached_env_no_header_can_carry_is_not_lent(tmp_path: Path) -> None:
    base = "http://127.0.0.1:9"
    cache = tmp_path / "tokens.json"
    now = int(time.time() * 1000)
    entry = {"baseUrl": base, "appId": APP_ID, "token": "TOKEN-ok", "env": "环境"}
    entry |= {"expiresAt": now + 86_400_000, "issuedAt": now}
    cache.write_text(json.dumps({"version": 1, "tokens": [entry]}))
    cache.chmod(0o600)
    assert TokenCache(cache).reusable(base, APP_ID) == []


@pytest.mark.parametrize(
    ("variable", "value"), [("LMREG_TOKEN", "tok\r\nX: 1"), ("LMREG_ENV", "环境")]
)
def test_lmreg_token_and_env_are_checked_too(variable: str, value: str) -> None:
    values = {"token": Secret("TOKEN-123456"), "env": "env"}
    values[variable.removeprefix("LMREG_").lower()] = value
    settings = Settings.load(environ={}, env_file=None).with_(**values)
    provider = TokenProvider(settings, exchange=lambda: pytest.fail("no exchange expected"))
    with pytest.raises(ConfigurationError) as exc:
        provider.get()
    assert exc.value.variable == variable and "tok\r" not in str(exc.value)
