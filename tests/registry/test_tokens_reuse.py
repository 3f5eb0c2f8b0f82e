"""A token obtained once (notebook 01, the secret typed into its form) serves the later
notebooks, which have no appSecret: the cache is found by base_url and appId.

What the cache promised before still holds: the file is 0600 in a 0700 folder and never
holds the appSecret, and a secret that is given must be the one the cached token was
earned with (a mistyped or someone else's secret never rides on a cached token).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fakes.registry_fakes import APP_ID, APP_SECRET, BASE_URL, TOKEN_PATH, FakePlatform

from lmreg_nb.errors import AuthenticationError, ConfigurationError, CredentialsError
from lmreg_nb.models import Token, now_ms
from lmreg_nb.registry import client as client_module
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.registry.tokens import TokenCache
from lmreg_nb.secret import Secret

HOUR_MS = 3600 * 1000


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "_sleep", lambda s: None)


def _earn(platform: FakePlatform, cache: Path, **settings: object) -> Token:
    """Notebook 01: the secret typed into the form gives a token, cached."""
    with RegistryClient(
        platform.settings(token_cache=cache, **settings), transport=platform.transport()
    ) as c:
        return c.token()


def _without_secret(platform: FakePlatform, cache: Path, **settings: object) -> RegistryClient:
    """Notebooks 02-05: the same platform and appId, no appSecret anywhere."""
    values: dict[str, object] = {"token_cache": cache, "app_secret": None, **settings}
    return RegistryClient(platform.settings(**values), transport=platform.transport())


def test_a_token_earned_with_a_typed_secret_serves_the_next_notebooks(tmp_path: Path) -> None:
    platform, cache = FakePlatform(), tmp_path / "c" / "tokens.json"
    first = _earn(platform, cache)
    with _without_secret(platform, cache) as c:
        assert c.query_models() == []
        assert c.token().token == first.token and c.token().source == "cache"
    assert platform.exchanges == 1
    assert APP_SECRET not in cache.read_text()
    assert oct(cache.stat().st_mode & 0o777) == "0o600"
    assert oct(cache.parent.stat().st_mode & 0o777) == "0o700"


def test_without_the_app_id_the_one_app_cached_for_the_platform_is_used(tmp_path: Path) -> None:
    platform, cache = FakePlatform(), tmp_path / "tokens.json"
    _earn(platform, cache)  # appId typed into the form, too
    with _without_secret(platform, cache, app_id=None) as c:
        assert c.query_models() == []
    assert platform.exchanges == 1


def test_two_apps_cached_for_the_platform_need_the_app_id(tmp_path: Path) -> None:
    platform, cache = FakePlatform(), tmp_path / "tokens.json"
    _earn(platform, cache)
    other = Token(Secret("TOKEN-other-app-0001"), "env-x", now_ms() + HOUR_MS, now_ms())
    TokenCache(cache).store(BASE_URL, "another-app", other)
    with pytest.raises(ConfigurationError) as caught:
        _without_secret(platform, cache, app_id=None)
    assert "LMREG_APP_ID" in str(caught.value)


def test_nothing_cached_says_to_run_notebook_01_or_set_the_secret(tmp_path: Path) -> None:
    platform = FakePlatform()
    with pytest.raises(ConfigurationError) as caught:
        _without_secret(platform, tmp_path / "tokens.json")
    text = str(caught.value)
    assert "LMREG_APP_SECRET" in text and "01" in text
    assert platform.requests == []


def test_another_platform_or_app_never_lends_its_token(tmp_path: Path) -> None:
    platform, cache = FakePlatform(), tmp_path / "tokens.json"
    _earn(platform, cache)
    with pytest.raises(ConfigurationError):
        _without_secret(platform, cache, app_id="someone-else")
    with pytest.raises(ConfigurationError):
        _without_secret(platform, cache, base_url="https://other-platform.test")


def test_a_given_secret_must_still_be_the_one_the_token_was_earned_with(tmp_path: Path) -> None:
    platform, cache = FakePlatform(), tmp_path / "tokens.json"
    _earn(platform, cache)
    with pytest.raises(CredentialsError):
        _earn(platform, cache, app_secret="not-the-secret-000000")
    assert platform.count(TOKEN_PATH) == 2  # the wrong secret was sent, and refused


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
@pytest.mark.parametrize("loosen", ["file", "folder"])
def test_a_cache_others_could_write_lends_no_token_without_the_secret(
    tmp_path: Path, loosen: str
) -> None:
    """Anyone who can write the file could plant their own account's token in it: the
    school's model would then be registered into a stranger's account."""
    platform, cache = FakePlatform(), tmp_path / "c" / "tokens.json"
    _earn(platform, cache)
    (cache if loosen == "file" else cache.parent).chmod(0o666 if loosen == "file" else 0o777)
    with pytest.raises(ConfigurationError):
        _without_secret(platform, cache)


def test_an_expired_cached_token_without_the_secret_says_run_01_again(tmp_path: Path) -> None:
    platform, cache = FakePlatform(), tmp_path / "tokens.json"
    at = now_ms()
    almost_gone = Token(Secret("TOKEN-almost-gone-01"), "env-test", at + 10_000, at - HOUR_MS)
    TokenCache(cache).store(BASE_URL, APP_ID, almost_gone)
    with pytest.raises(ConfigurationError) as caught:
        _without_secret(platform, cache)
    assert "01" in str(caught.value) and "LMREG_APP_SECRET" in str(caught.value)


def test_a_refused_cached_token_without_the_secret_is_not_retried(tmp_path: Path) -> None:
    platform, cache = FakePlatform(), tmp_path / "tokens.json"
    first = _earn(platform, cache)
    platform.refused_tokens.add(first.token.reveal())
    with _without_secret(platform, cache) as c, pytest.raises(AuthenticationError) as caught:
        c.query_models()
    assert "01" in str(caught.value)
    assert platform.exchanges == 1


def test_the_cache_entry_names_no_secret_and_keeps_its_fingerprint(tmp_path: Path) -> None:
    platform, cache = FakePlatform(), tmp_path / "tokens.json"
    _earn(platform, cache)
    entry = json.loads(cache.read_text())["tokens"][0]
    assert entry["appId"] == APP_ID and entry["credential"] and APP_SECRET not in json.dumps(entry)
