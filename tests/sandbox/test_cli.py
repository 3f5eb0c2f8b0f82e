"""`lmreg-nb sandbox` and `lmreg-nb sandbox add-app` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lmreg_nb.cli import main

KEYS = {"base_url", "token_path", "model_url", "app_id", "app_secret", "model_api_key"}


def test_the_demo_secrets_are_random_per_database(tmp_path: Path) -> None:
    runner = CliRunner()
    apps = []
    for name in ("a", "b"):
        db = tmp_path / f"{name}.sqlite3"
        result = runner.invoke(main, ["sandbox", "add-app", "--db", str(db), "--name", "x"])
        assert result.exit_code == 0, result.output
        from lmreg_nb.sandbox.platform.store import Store

        store = Store(db)
        apps.append(store.demo())
        store.close()
    assert apps[0].app_secret != apps[1].app_secret
    assert apps[0].model_api_key != apps[1].model_api_key
    assert len(apps[0].app_secret) >= 32


def test_add_app_prints_a_new_account(tmp_path: Path) -> None:
    db = tmp_path / "apps.sqlite3"
    result = CliRunner().invoke(main, ["sandbox", "add-app", "--db", str(db), "--name", "School B"])
    assert result.exit_code == 0, result.output
    app = json.loads(result.output)
    assert set(app) == {"app_id", "app_secret", "env"}
    again = json.loads(
        CliRunner().invoke(main, ["sandbox", "add-app", "--db", str(db), "--name", "C"]).output
    )
    assert again["app_id"] != app["app_id"] and again["env"] != app["env"]


def test_add_app_uses_the_default_database(tmp_path: Path) -> None:
    # tests/conftest.py points XDG_DATA_HOME into a temporary home.
    result = CliRunner().invoke(main, ["sandbox", "add-app", "--name", "default"])
    assert result.exit_code == 0, result.output
    import os

    assert (Path(os.environ["XDG_DATA_HOME"]) / "lmreg_nb" / "sandbox.sqlite3").exists()


@pytest.mark.parametrize("name", ["", "   ", "x" * 65])
def test_add_app_refuses_a_bad_name(tmp_path: Path, name: str) -> None:
    db = tmp_path / "apps.sqlite3"
    result = CliRunner().invoke(main, ["sandbox", "add-app", "--db", str(db), "--name", name])
    assert result.exit_code == 2
    assert "--name" in result.output


def test_refuses_a_non_loopback_host_without_the_flag(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    result = CliRunner().invoke(main, ["sandbox", "--host", "0.0.0.0", "--db", str(db)])
    assert result.exit_code == 2
    assert "--allow-remote" in result.output
    assert not db.exists(), "nothing was started"


def test_refuses_an_unknown_quirk(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["sandbox", "--quirk", "no-done", "--quirk", "bogus", "--db", str(tmp_path / "s")]
    )
    assert result.exit_code == 2
    assert "bogus" in result.output


def test_a_file_that_is_not_a_database_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "not.sqlite3"
    bad.write_text("hello, I am not SQLite" * 100)
    for args in (
        ["sandbox", "--port", "0", "--model-port", "0"],
        ["sandbox", "add-app", "--name", "x"],
    ):
        result = CliRunner().invoke(main, [*args, "--db", str(bad)])
        assert result.exit_code in (1, 2), result.output
        assert str(bad) in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
