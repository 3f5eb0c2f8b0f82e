"""`check --registered NAME`: the model as the platform will call it, in a real sandbox.

A model is registered with a wrong apiKey and a modelName the school's server
(a vLLM-like mock serving only "school-llm") does not serve. Checking it as
registered fails key-accepted and flags model-name-served; the plain check with
the engineer's right environment passes. The key never comes out whole or in
8-character pieces, in any output.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner
from fakes.hosts import mock_served

from lmreg_nb.cli import main
from lmreg_nb.errors import NotFoundError
from lmreg_nb.models import ModelDraft
from lmreg_nb.probe import Target
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.sandbox.school_model import MockModelConfig
from lmreg_nb.secret import Secret, find_leaks
from lmreg_nb.settings import Settings

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

pytestmark = pytest.mark.timeout(120)

RIGHT_KEY = "sk-right-Hj4Kl6Mn8Pq0Rs2Tu"
WRONG_KEY = "sk-typo-Vw1Xy3Za5Bc7De9Fg"
SERVED = "school-llm"


@pytest.fixture(scope="module")
def school_url() -> Iterator[str]:
    config = MockModelConfig(api_key=RIGHT_KEY, ttft_ms=5, itl_ms=2, tokens=8, served=(SERVED,))
    with mock_served(config) as base:
        yield base + "/v1/chat/completions"


@pytest.fixture()
def platform_env(sandbox: SandboxInfo, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {k: v for k, v in sandbox.env().items() if not k.startswith("LMREG_MODEL_")}
    env["LMREG_TIMEOUT"] = "3"
    env["LMREG_TOKEN_CACHE"] = str(sandbox.db.parent / f"tokens-{secrets.token_hex(4)}.json")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def _register(name: str, url: str, key: str) -> None:
    client = RegistryClient(Settings.load())
    client.register_model(ModelDraft(model_name=name, registry_url=url, api_key=Secret(key)))


def _check(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", *args], env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _rows(stdout: str) -> dict[str, dict[str, object]]:
    return {c["name"]: c for c in json.loads(stdout)["checks"]}


def _leaks(text: str) -> list[str]:
    pieces = [k[i : i + 8] for k in (RIGHT_KEY, WRONG_KEY) for i in range(len(k) - 7)]
    found = [p for p in pieces if p in text]
    return found + find_leaks(text, [RIGHT_KEY, WRONG_KEY])


def test_registered_model_is_checked_as_the_platform_calls_it(
    platform_env: dict[str, str], school_url: str
) -> None:
    name = f"campus-llm-{secrets.token_hex(3)}"
    _register(name, school_url, WRONG_KEY)

    code, out, err = _check(["--registered", name, "--json"], platform_env)
    assert code == 1, out + err
    rows = _rows(out)
    assert rows["key-accepted"]["passed"] is False
    served = rows["model-name-served"]
    assert served["passed"] is False and served["severity"] == "warning"
    assert f'"{name}"' in str(served["detail"]) and SERVED in str(served["detail"])
    assert "--served-model-name" in str(served["detail"])
    assert err.startswith("error: key-accepted:")

    code, text, err2 = _check(["--registered", name], platform_env)
    assert code == 1 and "model-name-served" in text

    right = platform_env | {
        "LMREG_MODEL_URL": school_url,
        "LMREG_MODEL_API_KEY": RIGHT_KEY,
        "LMREG_MODEL_NAME": SERVED,
    }
    code, plain, err3 = _check(["--json"], right)
    assert code == 0, plain + err3
    assert all(r["passed"] for r in _rows(plain).values() if r["severity"] == "error")
    assert _rows(plain)["model-name-served"]["passed"] is True

    everything = out + err + text + err2 + plain + err3
    assert _leaks(everything) == []


def test_registered_name_differing_from_the_body_model_is_tried_too(
    platform_env: dict[str, str], school_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"alias-{secrets.token_hex(3)}"
    _register(name, school_url, RIGHT_KEY)
    monkeypatch.setenv("LMREG_MODEL_NAME", SERVED)
    target = Target.from_registered(Settings.load(), f"  {name} ")
    assert (target.url, target.model, target.registered_name) == (school_url, SERVED, name)
    assert target.api_key.reveal() == RIGHT_KEY

    code, out, err = _check(["--registered", name, "--json"], platform_env | {
        "LMREG_MODEL_NAME": SERVED})  # fmt: skip
    rows = _rows(out)
    assert code == 0, out + err  # the key works and the body model is served...
    assert rows["model-name-served"]["passed"] is False  # ...but the registered name is not
    assert f'"{name}"' in str(rows["model-name-served"]["detail"])


def test_an_unknown_registered_name_is_one_line(platform_env: dict[str, str]) -> None:
    with pytest.raises(NotFoundError, match="no model named 'nobody-here'"):
        Target.from_registered(Settings.load(), "nobody-here")
    code, _out, err = _check(["--registered", "nobody-here"], platform_env)
    assert code == 1 and "Traceback" not in err
    assert err.count("\n") == 1 and "nobody-here" in err
