"""Notebook 06's plain functions (issue 32 item 10): a round with no targets is not ✔, a
target added by mistake can be removed, the chart after one round has sane ticks."""

from __future__ import annotations

from pathlib import Path

import pytest
from watch_helpers import Account, SchoolModel, Webhook

from lmreg_nb.errors import ConfigurationError
from lmreg_nb.settings import Settings
from lmreg_nb.watch import Monitor


def _monitor(account: Account, tmp_path: Path) -> Monitor:
    return Monitor(
        "Chart School",
        state_path=tmp_path / "s.sqlite3",
        settings=account.settings,
        allow_private=True,
    )


def test_a_round_without_targets_says_alerts_go_nowhere(
    account: Account, school_model: SchoolModel, tmp_path: Path
) -> None:
    account.register("lonely-llm", school_model.url())
    outcome = _monitor(account, tmp_path).run_round()
    assert not outcome.ok and "no alert targets" in outcome.title
    assert ("alert targets", "none: alerts go nowhere; add one above") in outcome.rows


def test_a_target_added_by_mistake_can_be_removed(webhook: Webhook, tmp_path: Path) -> None:
    from lmreg_nb.settings import Settings

    monitor = Monitor("S", state_path=tmp_path / "s.sqlite3", settings=Settings())
    monitor.add_target(webhook.url)
    monitor.add_target("json://127.0.0.1:9/wrong")
    assert len(monitor.targets()) == 2
    removed = monitor.remove_target()
    assert removed.ok and "json://127.0.0.1:9/wrong" in removed.rows[0][1]
    assert [t.shown for t in monitor.targets()] == [monitor.targets()[0].shown]
    assert not monitor.remove_target(5).ok and len(monitor.targets()) == 1
    assert monitor.remove_target(1).ok and monitor.targets() == []
    assert not monitor.remove_target().ok


def test_the_chart_after_one_round_has_distinct_ticks_and_no_point_on_the_border(
    account: Account, school_model: SchoolModel, webhook: Webhook, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    account.register("chart-llm", school_model.url())
    monitor = _monitor(account, tmp_path)
    monitor.add_target(webhook.url)
    assert monitor.run_round().ok
    view = monitor.latency_chart()
    fig = view.figure  # type: ignore[union-attr]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
    left, right = ax.get_xlim()
    xs = [x for line in ax.get_lines() for x in line.get_xdata()]
    assert xs and all(left < x < right for x in xs)
    span = min(x - left for x in xs), min(right - x for x in xs)
    assert min(span) > (right - left) * 0.1


def test_notebook_settings_come_from_dotenv_like_everything_else(tmp_path: Path) -> None:
    from lmreg_nb.settings import Settings

    env_file = tmp_path / "sandbox.env"
    env_file.write_text("LMREG_ALLOW_PRIVATE=1\nLMREG_BASE_URL=http://127.0.0.1:8765\n")
    settings = Settings.load(environ={}, env_file=env_file)
    assert Monitor("S", state_path=tmp_path / "s.sqlite3", settings=settings).allow_private
    plain = Settings.load(environ={"LMREG_ENV_FILE": "/dev/null"})
    assert not Monitor("S", state_path=tmp_path / "s.sqlite3", settings=plain).allow_private


def test_a_rehearsal_never_mails_the_contact_and_keeps_its_own_state(tmp_path: Path) -> None:
    from lmreg_nb.settings import Settings

    settings = Settings.load(
        environ={
            "LMREG_ENV_FILE": "/dev/null",
            "LMREG_NOTIFY": "json://127.0.0.1:9/hook/RehearsalHook",
            "LMREG_NOTIFY_MAIL": "mailto://watch:Pw-0123456789@127.0.0.1:2525?from=w@p.example",
        }
    )
    state = tmp_path / "watch.sqlite3"
    monitor = Monitor("S", state_path=state, settings=settings, contact_email="li@school.example")
    assert monitor.rehearsal and monitor.state_path == tmp_path / "watch-rehearsal.sqlite3"
    assert [t.shown for t in monitor.targets()] == ["json://127.0.0.1:9/hook/…Hook"]
    assert ["li@school.example", "not mailed: rehearsal"] in monitor.targets_table().rows
    assert monitor.set_rehearsal(False).ok
    assert monitor.state_path == state
    assert "li@school.example" in [t.shown for t in monitor.targets()]


def test_a_round_shows_its_log_as_output_not_stderr(
    account: Account,
    school_model: SchoolModel,
    webhook: Webhook,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    account.register("logged-llm", school_model.url("status-500"))
    monitor = _monitor(account, tmp_path)
    monitor.add_target(webhook.url)
    outcome = monitor.run_round()
    logged = [value for label, value in outcome.rows if label == "log"]
    assert any("model logged-llm failed 1 round in a row (down after 3)" in ln for ln in logged)
    assert any(ln.startswith("round 1: 1 model") for ln in logged)
    assert "logged-llm" not in capsys.readouterr().err


def test_a_fleet_state_shows_each_school_and_those_that_cannot_sign_in(
    make_fleet: object, tmp_path: Path
) -> None:
    from watch_fakes import model

    from lmreg_nb.settings import Settings

    state = tmp_path / "fleet.sqlite3"
    fleet = make_fleet(  # type: ignore[operator]
        {
            "a": ("School A", [model("m1", "qwen", "a", "down")], "a@a.example"),
            "b": ("School B", [model("m1", "qwen", "b")], "b@b.example"),
            "c": ("School C", [], "c@c.example"),
        },
        state=state,
    )
    fleet.registries["c"].query_models = _refused
    fleet.round()
    fleet.close()
    monitor = Monitor("", state_path=state, settings=Settings(), rehearsal=False)
    table = monitor.state_table()
    assert table.columns[0] == "school" and table.columns[-1] == "what failed"
    by_school = {row[0]: row for row in table.rows}
    assert by_school["School A"][2] == "down" and by_school["School B"][2] == "up"
    assert by_school["School C"][2] == "cannot sign in"


def _refused() -> list[object]:
    from lmreg_nb.errors import CredentialsError

    raise CredentialsError("the platform refused the appId or appSecret", status=401, code=40102)


def test_a_state_file_it_cannot_use_is_named_by_the_notebooks_setting(tmp_path: Path) -> None:
    """Notebook 06 sets ``state_path``, not the CLI's ``--state`` (issue 40, item 13)."""
    folder = tmp_path / "state-is-a-folder"
    folder.mkdir()
    monitor = Monitor("S", state_path=folder, settings=Settings(), rehearsal=False)
    with pytest.raises(ConfigurationError) as caught:
        monitor.run_round()
    assert str(caught.value).startswith(f"state_path {folder} is a folder")
    assert "--state" not in str(caught.value)
