"""Token parsing, the 0600 cache file, refresh margins, and one exchange for many callers."""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path

import pytest
from fakes.registry_fakes import APP_ID, APP_SECRET, BASE_URL, TOKEN_PATH, FakePlatform

from lmreg_nb.errors import CredentialsError, MalformedResponseError
from lmreg_nb.models import Token, now_ms
from lmreg_nb.registry import client as client_module
from lmreg_nb.registry.client import QUERY_PATH, RegistryClient
from lmreg_nb.registry.tokens import (
    DEFAULT_LIFETIME_MS,
    TokenCache,
    TokenProvider,
    needs_refresh,
    token_from_data,
)
from lmreg_nb.secret import Secret

HOUR_MS = 3600 * 1000


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "_sleep", lambda s: None)


def make_token(
    value: str = "TOKEN-abcdef-123456", *, left_ms: int, lifetime_ms: int, env: str = "env-a"
) -> Token:
    at = now_ms()
    expires = at + left_ms
    return Token(Secret(value), env, expires, expires - lifetime_ms)


# -- parsing an exchange answer -------------------------------------------------------------


def test_token_from_contract_shape() -> None:
    token = token_from_data({"token": "t-1234567890", "env": "e1", "expireTime": 1_900_000_000_000})
    assert token.token.reveal() == "t-1234567890" and token.env == "e1"
    assert token.expires_at_ms == 1_900_000_000_000 and token.expires_at.tzinfo is not None


def test_token_from_alternative_names_and_expires_in() -> None:
    token = token_from_data(
        {"accessToken": "a-1", "xEnv": "e2", "expiresIn": 3600}, issued_at_ms=1000
    )
    assert (token.token.reveal(), token.env, token.expires_at_ms) == ("a-1", "e2", 1000 + HOUR_MS)
    token = token_from_data({"access_token": "a-2", "env": "e3", "expiresIn": "60"}, issued_at_ms=0)
    assert token.expires_at_ms == 60_000


def test_token_without_expiry_lasts_three_days() -> None:
    token = token_from_data({"token": "t", "env": "e"}, issued_at_ms=5)
    assert token.expires_at_ms == 5 + DEFAULT_LIFETIME_MS == 5 + 3 * 24 * HOUR_MS


@pytest.mark.parametrize(
    "data",
    [
        {"expireTime": 99999999999999999},
        {"expireTime": "99999999999999999"},
        {"expireTime": -5},
        {"expireTime": float("inf")},
        {"expiresIn": 10**30},
        # A hostile platform's (red-team pass, issue 44): each was a bare OverflowError or
        # ValueError from `lmreg-nb token`.
        {"expireTime": int("9" * 400)},
        {"expireTime": "9" * 400},
        {"expireTime": "\u00b2"},  # "²": str.isdigit() says yes, float() says no
        {"expireTime": "\u0661\u0662"},  # Arabic-Indic digits
        {"expiresIn": int("9" * 400)},
        {"expiresIn": "9" * 400},
    ],
)
def test_an_expiry_out_of_range_means_three_days_not_a_traceback(data: dict[str, object]) -> None:
    token = token_from_data({"token": "t", "env": "e", **data}, issued_at_ms=5)
    assert token.expires_at_ms == 5 + DEFAULT_LIFETIME_MS
    assert token.expires_at.year >= 1970  # representable: `lmreg-nb token` can print it


def test_token_expire_time_in_seconds_is_understood() -> None:
    token = token_from_data({"token": "t", "env": "e", "expireTime": 1_900_000_000})
    assert token.expires_at_ms == 1_900_000_000_000


@pytest.mark.parametrize(
    ("data", "names"),
    [
        ({"jwt": "VALUE-SECRET-1", "env": "e"}, "env, jwt"),
        ({"token": "VALUE-SECRET-1"}, "token"),
        ({}, "none"),
        ({"token": 12345, "env": "e"}, "env, token"),
    ],
)
def test_unexpected_answer_names_keys_never_values(data: dict[str, object], names: str) -> None:
    with pytest.raises(MalformedResponseError) as info:
        token_from_data(data)
    assert f"keys were: {names}" in str(info.value)
    assert "VALUE-SECRET" not in str(info.value)


# -- refresh margin -------------------------------------------------------------------------


def test_refresh_margin_is_ten_percent_of_a_long_lifetime() -> None:
    three_days = 72 * HOUR_MS  # margin 7.2 h
    assert not needs_refresh(make_token(left_ms=8 * HOUR_MS, lifetime_ms=three_days))
    assert needs_refresh(make_token(left_ms=7 * HOUR_MS, lifetime_ms=three_days))


def test_refresh_margin_is_at_least_five_minutes() -> None:
    ten_minutes = 10 * 60 * 1000  # 10% would be 1 minute; the floor is 5
    assert not needs_refresh(make_token(left_ms=6 * 60 * 1000, lifetime_ms=ten_minutes))
    assert needs_refresh(make_token(left_ms=4 * 60 * 1000, lifetime_ms=ten_minutes))
    assert needs_refresh(make_token(left_ms=-1000, lifetime_ms=ten_minutes))


# -- the cache file -------------------------------------------------------------------------


def test_cache_file_is_private_and_holds_no_app_secret(tmp_path: Path) -> None:
    platform = FakePlatform()
    cache = tmp_path / "deep" / "lmreg" / "tokens.json"
    with RegistryClient(platform.settings(token_cache=cache), transport=platform.transport()) as c:
        c.query_models()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    text = cache.read_text()
    assert APP_SECRET not in text
    entry = json.loads(text)["tokens"][0]
    assert set(entry) == {"baseUrl", "appId", "env", "token", "expiresAt", "issuedAt", "credential"}
    assert entry["token"] == "TOKEN-canary-1-0a1b2c3d4e" and entry["appId"] == APP_ID
    # No temp file is left behind by the atomic write.
    assert sorted(p.name for p in cache.parent.iterdir()) == ["tokens.json", "tokens.json.lock"]


def test_default_cache_location_is_private(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME")
    platform = FakePlatform()
    with RegistryClient(platform.settings(), transport=platform.transport()) as c:
        c.token()
    cache = Path.home() / ".cache" / "lmreg_nb" / "tokens.json"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700


def test_loose_existing_cache_file_is_replaced_by_a_private_one(tmp_path: Path) -> None:
    cache = tmp_path / "tokens.json"
    cache.write_text("{}")
    cache.chmod(0o644)
    TokenCache(cache).store(BASE_URL, APP_ID, make_token(left_ms=HOUR_MS, lifetime_ms=2 * HOUR_MS))
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600


def test_second_client_reuses_the_cached_token(tmp_path: Path) -> None:
    platform = FakePlatform()
    settings = platform.settings(token_cache=tmp_path / "t.json")
    for _ in range(3):
        with RegistryClient(settings, transport=platform.transport()) as c:
            token = c.token()
            c.query_models()
    assert platform.exchanges == 1 and token.source == "cache"


def test_cache_is_per_base_url_app_and_env(tmp_path: Path) -> None:
    cache = TokenCache(tmp_path / "t.json")
    a = make_token("TOKEN-env-a-000", left_ms=HOUR_MS, lifetime_ms=2 * HOUR_MS)
    b = Token(Secret("TOKEN-env-b-000"), "env-b", a.expires_at_ms, a.issued_at_ms)
    cache.store(BASE_URL, APP_ID, a)
    cache.store(BASE_URL, APP_ID, b)
    cache.store("https://other.test", APP_ID, a)
    loaded_a = cache.load(BASE_URL, APP_ID, "env-a")
    loaded_b = cache.load(BASE_URL, APP_ID, "env-b")
    assert loaded_a is not None and loaded_a.token.reveal() == "TOKEN-env-a-000"
    assert loaded_b is not None and loaded_b.token.reveal() == "TOKEN-env-b-000"
    assert cache.load(BASE_URL, "other-app") is None
    assert len(json.loads(cache.path.read_text())["tokens"]) == 3


def test_expired_entries_are_pruned(tmp_path: Path) -> None:
    cache = TokenCache(tmp_path / "t.json")
    old = make_token("TOKEN-old-0000", left_ms=-HOUR_MS, lifetime_ms=2 * HOUR_MS)
    cache.store("https://old.test", APP_ID, old)
    cache.store(BASE_URL, APP_ID, make_token(left_ms=HOUR_MS, lifetime_ms=2 * HOUR_MS))
    assert [e["baseUrl"] for e in json.loads(cache.path.read_text())["tokens"]] == [BASE_URL]


@pytest.mark.parametrize(
    "content", ["not json", '{"tokens": 5}', "[1]", '{"tokens": [1, {"x": 1}]}']
)
def test_corrupt_cache_is_ignored_and_rewritten(tmp_path: Path, content: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(content)
    platform = FakePlatform()
    with RegistryClient(platform.settings(token_cache=path), transport=platform.transport()) as c:
        c.query_models()
    assert platform.exchanges == 1
    assert json.loads(path.read_text())["tokens"][0]["token"].startswith("TOKEN-canary")


def test_unusable_cache_does_not_stop_the_work(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    platform = FakePlatform()
    settings = platform.settings(token_cache=blocker / "t.json")  # its folder is a file
    with RegistryClient(settings, transport=platform.transport()) as c:
        assert c.query_models() == []
        c.query_models()
    assert platform.exchanges == 1  # the memory still holds it
    assert any("LMREG_TOKEN_CACHE" in r.getMessage() for r in caplog.records)


def test_expired_cached_token_is_replaced(tmp_path: Path) -> None:
    platform = FakePlatform()
    path = tmp_path / "t.json"
    near_end = make_token(left_ms=60_000, lifetime_ms=72 * HOUR_MS)
    TokenCache(path).store(
        BASE_URL,
        APP_ID,
        Token(near_end.token, "env-test", near_end.expires_at_ms, near_end.issued_at_ms),
    )
    with RegistryClient(platform.settings(token_cache=path), transport=platform.transport()) as c:
        c.query_models()
    assert platform.exchanges == 1
    entries = {e["env"]: e["token"] for e in json.loads(path.read_text())["tokens"]}
    assert entries["env-test"] == "TOKEN-canary-1-0a1b2c3d4e"


# -- one exchange for many callers ----------------------------------------------------------


def test_twenty_threads_with_an_expired_cached_token_cause_one_exchange(tmp_path: Path) -> None:
    platform = FakePlatform(exchange_delay_s=0.05)  # wide window for a race
    path = tmp_path / "t.json"
    TokenCache(path).store(BASE_URL, APP_ID, make_token(left_ms=-1000, lifetime_ms=72 * HOUR_MS))
    barrier = threading.Barrier(20)
    errors: list[BaseException] = []
    with RegistryClient(platform.settings(token_cache=path), transport=platform.transport()) as c:

        def work() -> None:
            try:
                barrier.wait()
                c.query_models()
            except BaseException as exc:  # collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert errors == []
    assert platform.exchanges == 1 and platform.count(TOKEN_PATH) == 1
    assert platform.count(QUERY_PATH) == 20


def test_twenty_threads_refused_at_once_cause_one_exchange(tmp_path: Path) -> None:
    platform = FakePlatform(exchange_delay_s=0.02)
    with RegistryClient(
        platform.settings(token_cache=tmp_path / "t.json"), transport=platform.transport()
    ) as c:
        c.token()
        platform.refused_tokens.add("TOKEN-canary-1-0a1b2c3d4e")  # server-side expiry (40101)
        barrier = threading.Barrier(20)

        def work() -> None:
            barrier.wait()
            c.query_models()

        threads = [threading.Thread(target=work) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert platform.exchanges == 2  # the first token, and exactly one replacement


def test_provider_refresh_skips_the_refused_cached_token(tmp_path: Path) -> None:
    platform = FakePlatform()
    settings = platform.settings(token_cache=tmp_path / "t.json")
    with RegistryClient(settings, transport=platform.transport()) as c:
        first = c.token()
    calls: list[int] = []

    def exchange() -> Token:
        calls.append(1)
        return make_token("TOKEN-fresh-999999", left_ms=72 * HOUR_MS, lifetime_ms=72 * HOUR_MS)

    provider = TokenProvider(settings, exchange)
    assert provider.get().token == first.token and calls == []  # from the file
    assert provider.refresh(first).token.reveal() == "TOKEN-fresh-999999" and calls == [1]


def test_short_lived_token_is_reused_for_half_its_life() -> None:
    two_minutes = 120_000  # a test platform's token: a 5-minute margin would exceed it
    assert not needs_refresh(make_token(left_ms=100_000, lifetime_ms=two_minutes))
    assert needs_refresh(make_token(left_ms=50_000, lifetime_ms=two_minutes))


def test_a_wrong_app_secret_is_not_hidden_by_a_cached_token(tmp_path: Path) -> None:
    """A token earned with the right secret must not make a mistyped one look fine."""
    path = tmp_path / "t.json"
    platform = FakePlatform()
    with RegistryClient(platform.settings(token_cache=path), transport=platform.transport()) as c:
        c.query_models()
    wrong = platform.settings(token_cache=path, app_secret="not-the-secret-000000")
    with (
        RegistryClient(wrong, transport=platform.transport()) as c,
        pytest.raises(CredentialsError),
    ):
        c.query_models()
    assert platform.count(TOKEN_PATH) == 2  # the wrong secret was sent, and refused
    assert APP_SECRET not in path.read_text()


def test_a_shared_cache_folder_is_said_once_with_the_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmreg_nb.registry import token_cache

    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o755)
    token = make_token(left_ms=HOUR_MS, lifetime_ms=2 * HOUR_MS)
    cache = TokenCache(folder / "t.json")
    with caplog.at_level("WARNING", logger="lmreg_nb"):
        cache.store(BASE_URL, APP_ID, token)
        cache.store(BASE_URL, APP_ID, token)
    said = [r.getMessage() for r in caplog.records if "readable by others" in r.getMessage()]
    assert len(said) == 1 and f"chmod 700 {folder}" in said[0], said
    caplog.clear()
    # Windows keeps access in ACLs: a folder's mode bits say nothing there, so no warning.
    monkeypatch.setattr(token_cache, "MODES_MEAN_ACCESS", False)
    with caplog.at_level("WARNING", logger="lmreg_nb"):
        TokenCache(folder / "t.json").store(BASE_URL, APP_ID, token)
    assert not [r for r in caplog.records if "readable by others" in r.getMessage()]
