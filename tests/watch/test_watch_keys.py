"""The fleet keys models by (school row, modelId) (issue 42, FW5, W14, FW17). In-process."""

from __future__ import annotations

from typing import Any

from watch_fakes import model

from lmreg_nb.watch.metrics import WatchMetrics


def test_two_schools_listing_one_model_id_are_watched_apart(make_fleet: Any) -> None:
    fleet = make_fleet(
        {
            "a": ("School A", [model("m1", "qwen", "a", "down")], "li@a.example"),
            "b": ("School B", [model("m1", "qwen", "b")], "wang@b.example"),
        },
        fail_after=3,
    )
    metrics = WatchMetrics()
    fleet.watcher.metrics = metrics
    reports = [fleet.round() for _ in range(4)]
    alerts = [(e.type, e.state.school) for r in reports for e in r.events]
    assert alerts == [("alert", "a")]  # once, at the third failed round, for school A only
    assert reports[2].events[0].state.fails == 3
    stored = fleet.watcher.store.models()
    assert sorted(stored) == ["a/m1", "b/m1"]
    assert stored["a/m1"].status == "down" and stored["b/m1"].status == "up"
    text = metrics.text()
    assert 'lmreg_model_up{model="qwen",model_id="m1",run_id="a",school="School A"} 0.0' in text
    assert 'lmreg_model_up{model="qwen",model_id="m1",run_id="b",school="School B"} 1.0' in text
    assert [m.title for m in fleet.notifier.to("li@a.example")] == ["[School A] model qwen is down"]
    assert fleet.notifier.to("wang@b.example") == []


def test_two_models_sharing_a_model_id_in_one_account_send_no_false_recovery(
    make_fleet: Any,
) -> None:
    fleet = make_fleet(
        {"a": ("School A", [model("m1", "up-one", "a"), model("m1", "down-one", "a", "down")],
               "li@a.example")},
    )  # fmt: skip
    events = [e for _ in range(5) for e in fleet.round().events]
    assert [(e.type, e.state.model_name) for e in events] == [("alert", "down-one")]
    assert sorted(fleet.watcher.store.models()) == ["a/m1", "a/m1#2"]


def test_two_rows_of_one_school_name_keep_their_own_platform_series(make_fleet: Any) -> None:
    fleet = make_fleet(
        {
            "north": ("No. 1 School", [model("m1", "qwen", "n")], "a@n.example"),
            "south": ("No. 1 School", [model("m2", "qwen", "s")], "b@s.example"),
        }
    )
    metrics = WatchMetrics()
    fleet.watcher.metrics = metrics
    fleet.registries["south"].query_models = _refuse  # type: ignore[method-assign]
    fleet.round()
    text = metrics.text()
    assert 'lmreg_platform_up{run_id="north",school="No. 1 School"} 1.0' in text
    assert 'lmreg_platform_up{run_id="south",school="No. 1 School"} 0.0' in text


def _refuse() -> list[Any]:
    from lmreg_nb.errors import ServerError

    raise ServerError("listing the models failed: the platform is down", status=503, code=50300)
