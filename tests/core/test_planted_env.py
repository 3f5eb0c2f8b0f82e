"""A `.env` planted where any local user can write steers no run (issue 20, item 1).

The red-team pass planted `.env` in `/tmp`: the run's kernel works in
`$TMPDIR/lmreg-run-*/cwd` and searched upwards, so the file filled every
variable the school had not set. Here the world-writable folder holds TMPDIR
(the kernel's side) or the school's working folder (the parent's side); the
planted file names a notebook folder and another account's token.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.settings import Settings

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

pytestmark = [pytest.mark.notebooks, pytest.mark.slow]

EVIL_NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "execution_count": None, "id": "p", "outputs": [],
         "metadata": {"tags": ["parameters"]}, "source": ["school = ''\n"]},
        {"cell_type": "code", "execution_count": None, "id": "x", "outputs": [],
         "metadata": {}, "source": ["open(MARKER, 'w').write('ran')\n"]},
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                "name": "python3"}},
    "nbformat": 4, "nbformat_minor": 5,
}  # fmt: skip


def _client(sandbox_process: SandboxInfo, account: dict[str, str], cache: Path) -> RegistryClient:
    environ = {**sandbox_process.env(), "LMREG_APP_ID": account["app_id"],
               "LMREG_APP_SECRET": account["app_secret"]}  # fmt: skip
    return RegistryClient(Settings.load(environ=environ, token_cache=str(cache)))


def _names(sandbox_process: SandboxInfo, account: dict[str, str], cache: Path) -> set[str]:
    with _client(sandbox_process, account, cache) as client:
        return {m.model_name for m in client.query_models()}


SCENARIOS = ("tmpdir", "working-folder")


@dataclass(frozen=True)
class Planted:
    """One scenario's onboarding run and what the test looks at afterwards."""

    done: subprocess.CompletedProcess[str]
    marker: Path
    attacker: dict[str, str]
    cache: Path
    name: str


def _plant_and_onboard(
    sandbox_process: SandboxInfo, tmp_path: Path, planted_above: str, attacker: dict[str, str]
) -> Planted:
    """A planted .env above TMPDIR or above the working folder, then `lmreg-nb onboard`."""
    shared = tmp_path / "shared"  # like /tmp: anyone may write here
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    (shared / "tmp").mkdir()
    evil = shared / "evil-notebooks"
    evil.mkdir()
    marker = shared / "attacker-notebook-ran"
    text = json.dumps(EVIL_NOTEBOOK).replace("MARKER", repr(str(marker)))
    (evil / "onboarding.ipynb").write_text(text)
    cache = tmp_path / "test-cache.json"
    with _client(sandbox_process, attacker, cache) as client:
        token = client.token()
    (shared / ".env").write_text(
        f"LMREG_NOTEBOOKS={evil}\nLMREG_TOKEN={token.token.reveal()}\nLMREG_ENV={token.env}\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    work = shared / "school" if planted_above == "working-folder" else home / "school"
    work.mkdir()
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(shared / "tmp"),
        "XDG_CACHE_HOME": str(home / ".cache"), "LMREG_LANG": "en",
        **{k: v for k, v in sandbox_process.env().items() if k != "LMREG_MODEL_NAME"},
        "LMREG_MODEL_NAME": "planted-env-model",
    }  # fmt: skip
    name = f"planted-{planted_above}"
    done = subprocess.run(
        [sys.executable, "-m", "lmreg_nb", "onboard", "--out", str(tmp_path / "out"),
         "-p", "school", "S", "-p", "contact_name", "Li Hua",
         "-p", "contact_mobile", "13812345678", "-p", "contact_email", "a@b.example",
         "-p", "model_name", name, "-p", "check_requests", "0", "-p", "class_size", "0"],
        cwd=work, env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    return Planted(done, marker, attacker, cache, name)


@pytest.fixture(scope="module")
def planted(
    sandbox_process: SandboxInfo, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Planted]:
    """Both scenarios, run at the same time (each its own folders, account and process):
    each only waits on its own notebook run."""
    attackers = {above: sandbox_process.add_app("attacker") for above in SCENARIOS}
    with ThreadPoolExecutor(max_workers=len(SCENARIOS)) as pool:
        runs = {
            above: pool.submit(_plant_and_onboard, sandbox_process,
                               tmp_path_factory.mktemp(above), above, attackers[above])
            for above in SCENARIOS
        }  # fmt: skip
        return {above: run.result() for above, run in runs.items()}


@pytest.mark.parametrize("planted_above", SCENARIOS)
def test_a_planted_dotenv_neither_runs_its_notebook_nor_registers_elsewhere(
    sandbox_process: SandboxInfo, planted: dict[str, Planted], planted_above: str
) -> None:
    run = planted[planted_above]
    assert not run.marker.exists(), "the planted notebook ran"
    assert run.name not in _names(sandbox_process, run.attacker, run.cache), (
        "registered into the attacker's account"
    )
    school = {"app_id": sandbox_process.app_id, "app_secret": sandbox_process.app_secret}
    assert run.name in _names(sandbox_process, school, run.cache), run.done.stdout + run.done.stderr
