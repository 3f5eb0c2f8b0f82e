"""Notebook 06's plain functions (issue 32 item 10): a round with no targets is not ✔, a
target added by mistake can be removed, the chart after one round has sane ticks."""

from __future__ import annotations

from pathlib import Path

import pytest
from watch_helpers import Account, SchoolModel, Webhook

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
