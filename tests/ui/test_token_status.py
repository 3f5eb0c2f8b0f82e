"""Issue 32 item 1: a token typed in notebook 01 is recognised on every screen after it.

With appId/appSecret typed into 01's form (not in .env), the onboarding's
configuration view is not red about LMREG_APP_ID and says a token is cached,
until when; the token form prefills the appId and connects with the secret
left empty, as the model list already does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lmreg_nb.onboarding import Onboarding, configuration
from lmreg_nb.settings import Settings
from lmreg_nb.ui import CredentialsForm

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo


def _after_notebook_01(sandbox: SandboxInfo, cache: Path, name: str) -> tuple[dict[str, str], str]:
    """Notebook 01: appId and appSecret typed into the form; the token lands in ``cache``."""
    app = sandbox.add_app(name)
    env = {**sandbox.env(), "LMREG_TOKEN_CACHE": str(cache)}
    bare = {k: v for k, v in env.items() if k not in ("LMREG_APP_ID", "LMREG_APP_SECRET")}
    first = Onboarding(name, settings=Settings.load(environ=bare))
    form = CredentialsForm(first)
    form.app_id.value = app["app_id"]
    form.app_secret.value = app["app_secret"]
    form.button.click()
    assert form.last_error is None, form.last_error
    return bare, app["app_id"]


def test_the_configuration_view_sees_the_token_from_01(
    sandbox: SandboxInfo, tmp_path: Path, lang: str
) -> None:
    env, app_id = _after_notebook_01(sandbox, tmp_path / "c" / "tokens.json", f"ts-cfg-{lang}")
    view = configuration(Settings.load(environ=env))
    assert view.ok, view.title  # not red: the next call uses the cached token
    rows = dict(view.rows)
    assert app_id in rows["LMREG_APP_ID"]
    assert rows["LMREG_TOKEN"].startswith("已缓存令牌" if lang == "zh-CN" else "a token is cached")
    assert "LMREG_APP_ID" not in view.title


def test_without_a_cached_token_the_view_still_asks_for_the_app_id(tmp_path: Path) -> None:
    env = {"LMREG_BASE_URL": "https://ai.school.example", "LMREG_TOKEN_CACHE": str(tmp_path / "t")}
    view = configuration(Settings.load(environ=env))
    assert not view.ok and "LMREG_APP_ID" in view.title


def test_the_token_form_connects_with_the_cached_token(
    sandbox: SandboxInfo, tmp_path: Path, lang: str
) -> None:
    env, app_id = _after_notebook_01(sandbox, tmp_path / "c" / "tokens.json", f"ts-form-{lang}")
    run = Onboarding("later", settings=Settings.load(environ=env))
    form = CredentialsForm(run)
    assert form.app_id.value == app_id  # the appId typed in 01
    assert ("有效期至" if lang == "zh-CN" else "valid until") in form.app_secret.placeholder
    form.button.click()  # the secret left empty
    assert form.last_error is None, form.last_error
    assert run.token is not None and run.token.source == "cache"
