"""RegistryClient against the sandbox platform, SQLite behind it, in this process.

The tests reach the platform app (the routes, errors and SQLite file a sandbox
process serves) through an httpx transport (tests/fakes/app_platform.py): the client's
behaviour is what they check, and many need a platform of their own options (error
style, faults, token lifetime), which a process would take seconds to start. The
sandbox process itself is tested in tests/sandbox/test_process.py, and the client
against it end to end by the notebooks and the CLI's runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakes.app_platform import AppPlatform, app_platform

from lmreg_nb.errors import (
    ConflictError,
    CredentialsError,
    LmregError,
    NotFoundError,
    ValidationError,
)
from lmreg_nb.models import ModelDraft, now_ms
from lmreg_nb.registry import client as client_module
from lmreg_nb.registry import retry
from lmreg_nb.registry.client import REGISTER_PATH, RegistryClient
from lmreg_nb.registry.tokens import TokenCache, credential_id
from lmreg_nb.sandbox.platform import deps as platform_deps
from lmreg_nb.sandbox.platform import store as platform_store
from lmreg_nb.sandbox.platform.app import PlatformConfig
from lmreg_nb.sandbox.process import SandboxInfo
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings

CANARY_KEY = "CANARY-apikey-7d1e5b9f3a2c"
CANARY_KEY_2 = "CANARY-apikey2-0c4f8e6a2b1d"


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    # Real waits would only slow the suite; the retry decisions are what is tested.
    monkeypatch.setattr(client_module, "_sleep", lambda s: time.sleep(min(s, 0.01)))


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppPlatform]:
    """The platform app in this process (plain options), over its own SQLite file."""
    with app_platform(tmp_path_factory.mktemp("client-e2e") / "platform.sqlite3") as plat:
        yield plat


@pytest.fixture(scope="module")
def local_account(local: AppPlatform) -> dict[str, str]:
    return local.add_app("client-e2e")


def settings_for(
    info: SandboxInfo, tmp: Path, app: dict[str, str] | None = None, **kw: Any
) -> Settings:
    env = dict(info.env())
    if app is not None:
        env["LMREG_APP_ID"], env["LMREG_APP_SECRET"] = app["app_id"], app["app_secret"]
    return Settings.load(environ=env, token_cache=tmp / "tokens.json", **kw)


@pytest.fixture
def client(
    local: AppPlatform, local_account: dict[str, str], tmp_path: Path
) -> Iterator[RegistryClient]:
    settings = settings_for(local.info, tmp_path, local_account)
    with RegistryClient(settings, transport=local.transport()) as c:
        yield c


@pytest.fixture
def announced(local: AppPlatform) -> SandboxInfo:
    """What the platform announces (its addresses and demo account), as a process would."""
    return local.info


def draft(info: SandboxInfo, name: str, key: str = CANARY_KEY, **kw: Any) -> ModelDraft:
    return ModelDraft(model_name=name, registry_url=info.model_url, api_key=Secret(key), **kw)


def test_token_register_query_modify(
    client: RegistryClient, announced: SandboxInfo, local_account: dict[str, str]
) -> None:
    token = client.token()
    assert token.env == local_account["env"] and token.seconds_left() > 3600
    model = client.register_model(draft(announced, "e2e-basic"))
    assert model.model_id and model.api_key.reveal() == CANARY_KEY
    assert model.create_time is not None and model.create_time == model.update_time

    listed = {m.model_name: m for m in client.query_models()}
    assert listed["e2e-basic"].model_id == model.model_id

    changed = client.modify_model(
        draft(announced, "e2e-basic-2", CANARY_KEY_2, model_id=model.model_id)
    )
    assert changed.model_name == "e2e-basic-2" and changed.create_time_ms == model.create_time_ms
    assert changed.update_time_ms is not None and changed.update_time_ms >= model.create_time_ms
    assert client.find_model("e2e-basic-2") is not None and client.find_model("e2e-basic") is None
    assert client.exchanges == 1


def test_errors_from_the_platform(client: RegistryClient, announced: SandboxInfo) -> None:
    client.register_model(draft(announced, "e2e-dup"))
    with pytest.raises(ConflictError) as info:
        client.register_model(draft(announced, "e2e-dup"))
    assert (info.value.status, info.value.code) == (409, 40900) and info.value.request_id
    with pytest.raises(NotFoundError) as missing:
        client.modify_model(draft(announced, "e2e-x", model_id="no-such-model"))
    assert missing.value.code == 40400


def test_register_or_update(client: RegistryClient, announced: SandboxInfo) -> None:
    first, how = client.register_or_update(draft(announced, "e2e-upsert"))
    second, how2 = client.register_or_update(draft(announced, "e2e-upsert", CANARY_KEY_2))
    assert (how, how2) == ("registered", "updated") and first.model_id == second.model_id
    assert second.api_key.reveal() == CANARY_KEY_2


def test_wrong_secret_is_credentials_error(local: AppPlatform, tmp_path: Path) -> None:
    app = {"app_id": local.info.app_id, "app_secret": "wrong-secret-value-000"}
    with (
        RegistryClient(settings_for(local.info, tmp_path, app), transport=local.transport()) as c,
        pytest.raises(CredentialsError) as info,
    ):
        c.token()
    assert info.value.code == 40102 and "wrong-secret" not in str(info.value)


def test_tokens_are_shared_through_the_cache(
    local: AppPlatform, local_account: dict[str, str], tmp_path: Path
) -> None:
    settings = settings_for(local.info, tmp_path, local_account)
    with RegistryClient(settings, transport=local.transport()) as first:
        first.query_models()
    with RegistryClient(settings, transport=local.transport()) as second:
        second.query_models()
        assert second.token().source == "cache" and second.exchanges == 0


class LoseAnswer(httpx.BaseTransport):
    """Forwards to the platform, then loses the first register answer."""

    def __init__(self, inner: httpx.BaseTransport, error: type[httpx.TransportError]) -> None:
        self.inner = inner
        self.error = error
        self.registers = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path == REGISTER_PATH:
            self.registers += 1
            if self.registers == 1:
                response.read()
                response.close()
                raise self.error("the answer was lost on the way back", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("error", [httpx.ReadTimeout, httpx.RemoteProtocolError])
def test_register_whose_answer_is_lost_gives_one_model(
    local: AppPlatform,
    local_account: dict[str, str],
    tmp_path: Path,
    error: type[httpx.TransportError],
) -> None:
    name = f"e2e-lost-{error.__name__}"
    transport = LoseAnswer(local.transport(), error)
    settings = settings_for(local.info, tmp_path, local_account)
    with RegistryClient(settings, transport=transport) as c:
        model = c.register_model(draft(local.info, name))
        assert model.model_name == name and model.model_id
        assert transport.registers == 1  # not resent: the lookup found it
        assert [m.model_id for m in c.query_models() if m.model_name == name] == [model.model_id]


def test_envelope_error_style(tmp_path: Path) -> None:
    config = PlatformConfig(error_style="envelope")
    with (
        app_platform(tmp_path / "envelope.sqlite3", config) as plat,
        RegistryClient(settings_for(plat.info, tmp_path), transport=plat.transport()) as c,
    ):
        info = plat.info
        c.register_model(draft(info, "dup"))
        with pytest.raises(ConflictError) as conflict:
            c.register_model(draft(info, "dup"))
        assert (conflict.value.status, conflict.value.code) == (200, 40900)
        with pytest.raises(NotFoundError):
            c.modify_model(draft(info, "dup", model_id="nope"))


def test_fail_rate_queries_succeed_and_nothing_is_registered_twice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The retries wait 10 ms, not 0.5 s and more: what is stored is the point here (the
    # backoff itself: tests/registry/test_client.py).
    monkeypatch.setattr(retry, "BACKOFF_BASE_S", 0.01)
    caplog.set_level(logging.INFO, logger="lmreg_nb")
    names = [f"flaky-{i}" for i in range(8)]
    # 0.3 ** 9: one call in 50 000 would exhaust its retries. The seed fixes which calls
    # fail: unseeded, some 20 calls drew 2 faults or fewer once in 40 runs (a CI run).
    config = PlatformConfig(fail_rate=0.3, fault_seed=44)
    with (
        app_platform(tmp_path / "flaky.sqlite3", config) as plat,
        RegistryClient(
            settings_for(plat.info, tmp_path), max_retries=8, transport=plat.transport()
        ) as c,
    ):
        info = plat.info
        for name in names:
            assert c.register_model(draft(info, name)).model_name == name
        for _ in range(10):
            stored = [m.model_name for m in c.query_models()]
            assert sorted(stored) == sorted(names)  # each exactly once
        model = c.find_model("flaky-0")
        assert model is not None
        changed = c.modify_model(draft(info, "flaky-0", CANARY_KEY_2, model_id=model.model_id))
        assert changed.api_key.reveal() == CANARY_KEY_2
    messages = [r.getMessage() for r in caplog.records]
    # The faults did happen (about 30% of some 40 calls) and were retried or settled.
    assert sum("retry" in m or "not stored" in m for m in messages) >= 3


def test_server_side_expiry_is_refreshed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with app_platform(tmp_path / "ttl.sqlite3", PlatformConfig(token_ttl_s=1)) as plat:
        info = plat.info
        settings = settings_for(info, tmp_path)
        with RegistryClient(settings, transport=plat.transport()) as c:
            first = c.token()
        # Pretend the clock says the token is still good (skew): only the server knows.
        lied = type(first)(first.token, first.env, first.expires_at_ms + 10**9, first.issued_at_ms)
        credential = credential_id(info.base_url, info.app_id, Secret(info.app_secret))
        TokenCache(tmp_path / "tokens.json").store(
            info.base_url, info.app_id, lied, credential=credential
        )
        # The platform's clock moves 1.2 s on (the token's lifetime is 1 s), not this one's.
        for module in (platform_store, platform_deps):
            monkeypatch.setattr(module, "now_ms", lambda: now_ms() + 1200)
        with RegistryClient(settings, transport=plat.transport()) as c:
            assert c.query_models() == []
            assert c.exchanges == 1 and c.token().token != first.token


def test_no_canary_leaks_from_client_logs_or_errors(
    local: AppPlatform, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox = local.info
    app = local.add_app("canary-school")
    settings = settings_for(sandbox, tmp_path, app)
    seen: list[str] = []
    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    with RegistryClient(settings, transport=local.transport()) as c:
        token = c.token().token.reveal()
        model = c.register_model(draft(sandbox, "canary-model"))
        seen += [repr(model), str(model), repr(c.query_models()), repr(c), repr(settings)]
        failures: list[Any] = [
            lambda: c.register_model(draft(sandbox, "canary-model")),
            lambda: c.modify_model(draft(sandbox, "x", model_id="nope")),
            lambda: c.register_model(draft(sandbox, "bad", key="has space " + CANARY_KEY)),
        ]
        for failing in failures:
            with pytest.raises((LmregError, ValidationError)) as info:
                failing()
            exc: BaseException | None = info.value
            while exc is not None:
                seen += [str(exc), repr(exc)]
                exc = exc.__cause__ or exc.__context__
    with RegistryClient(
        settings_for(sandbox, tmp_path, {**app, "app_secret": app["app_secret"] + "x"}),
        transport=local.transport(),
    ) as bad:
        bad.settings.token_cache.unlink()  # type: ignore[union-attr]
        with pytest.raises(CredentialsError) as cred:
            bad.token()
        seen += [str(cred.value), repr(cred.value)]
    seen += [r.getMessage() for r in caplog.records] + [caplog.text]
    assert any(r.name == "httpx" for r in caplog.records)  # the loggers did speak
    text = "\n".join(seen)
    for canary in (CANARY_KEY, app["app_secret"], token):
        assert canary not in text
