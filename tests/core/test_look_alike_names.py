"""Look-alike modelNames are refused before registering (issue 33, partial).

Cyrillic ``сafé`` and fullwidth ``ｃafé`` registered next to ``café`` before:
the platform compares exact strings. The toolkit compares TR39 confusable
skeletons first: against the sandbox platform (its app in this process,
tests/fakes/app_platform.py), in the client and in the CLI (CliRunner).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.app_platform import AppPlatform, app_platform
from fakes.registry_fakes import route_clients

from lmreg_nb.cli import main
from lmreg_nb.confusables import confusable_with, skeleton
from lmreg_nb.errors import ValidationError
from lmreg_nb.models import ModelDraft
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.sandbox.process import SandboxInfo
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings

KEY = "LOOKALIKE-apikey-5e2a9c7d1b"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("café", "сafé"),  # Cyrillic es
        ("café", "ｃafé"),  # fullwidth c
        ("café", "ca\u200bfé"),  # a zero-width space
        ("paypal", "раураl"),  # Cyrillic er, a, u
        ("qwen-7b", "qwen-7Ь"),  # Cyrillic soft sign
        ("llama", "IIama"),  # capital I for l
    ],
)
def test_look_alikes_share_a_skeleton(a: str, b: str) -> None:
    assert a != b and skeleton(a) == skeleton(b)


@pytest.mark.parametrize(
    ("a", "b"), [("café", "cafe"), ("通义千问", "通义千问2"), ("qwen", "Qwen")]
)
def test_different_names_do_not(a: str, b: str) -> None:
    assert skeleton(a) != skeleton(b) and confusable_with(a, [b]) is None


def test_the_same_name_in_another_normal_form_is_no_look_alike() -> None:
    # "café" with a combining accent is the same name (the update path), not a look-alike.
    assert confusable_with("cafe\u0301", ["café"]) is None


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppPlatform]:
    with app_platform(tmp_path_factory.mktemp("look-alikes") / "platform.sqlite3") as plat:
        yield plat


@pytest.fixture
def info(platform: AppPlatform, monkeypatch: pytest.MonkeyPatch) -> SandboxInfo:
    """The platform as a sandbox announces it; every client made reaches it."""
    route_clients(monkeypatch, platform.transport)
    return platform.info


@pytest.fixture
def account(platform: AppPlatform) -> dict[str, str]:
    return platform.add_app("look-alikes")


def _settings(info: SandboxInfo, account: dict[str, str], tmp: Path) -> Settings:
    env = dict(info.env())
    env["LMREG_APP_ID"], env["LMREG_APP_SECRET"] = account["app_id"], account["app_secret"]
    return Settings.load(environ=env, token_cache=tmp / "tokens.json")


def _client(info: SandboxInfo, account: dict[str, str], tmp: Path) -> RegistryClient:
    from lmreg_nb.registry import client as client_module  # routed by the ``info`` fixture

    return client_module.RegistryClient(_settings(info, account, tmp))


def test_register_or_update_refuses_a_look_alike_of_a_registered_name(
    info: SandboxInfo, account: dict[str, str], tmp_path: Path
) -> None:
    with _client(info, account, tmp_path) as client:
        client.register_or_update(ModelDraft("café", info.model_url, Secret(KEY)))
        for name in ("сafé", "ｃafé"):
            with pytest.raises(ValidationError) as exc:
                client.register_or_update(ModelDraft(name, info.model_url, Secret(KEY)))
            assert exc.value.field == "modelName" and "'café'" in str(exc.value)
            assert KEY not in str(exc.value)
        # The real name still updates, and nothing else was registered.
        _model, action = client.register_or_update(ModelDraft("café", info.model_url, Secret(KEY)))
        assert action == "updated"
        assert [m.model_name for m in client.query_models()] == ["café"]


def test_renaming_a_model_to_a_look_alike_is_refused(
    info: SandboxInfo, account: dict[str, str], tmp_path: Path
) -> None:
    with _client(info, account, tmp_path) as client:
        client.register_or_update(ModelDraft("café", info.model_url, Secret(KEY)))
        client.register_or_update(ModelDraft("tea", info.model_url, Secret(KEY)))
        with pytest.raises(ValidationError) as exc:
            client.update_model(name="tea", new_name="ｃafé")
        assert "'café'" in str(exc.value)
        # A model may keep its own name, in another form too.
        client.update_model(name="café", new_name="cafe\u0301")
        assert sorted(m.model_name for m in client.query_models()) == ["café", "tea"]


def test_the_register_command_refuses_it_too(
    info: SandboxInfo, account: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _client(info, account, tmp_path) as client:
        client.register_or_update(ModelDraft("café", info.model_url, Secret(KEY)))
    for name, value in {
        **info.env(),
        "LMREG_APP_ID": account["app_id"],
        "LMREG_APP_SECRET": account["app_secret"],
        "LMREG_MODEL_API_KEY": KEY,
        "LMREG_TOKEN_CACHE": str(tmp_path / "tokens.json"),
        "LMREG_LANG": "en",
    }.items():
        monkeypatch.setenv(name, value)
    done = CliRunner().invoke(main, ["register", "--name", "ｃafé", "--url", info.model_url])
    assert done.exit_code == 2, done.stderr
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert "looks the same as" in done.stderr and "Traceback" not in done.stderr
