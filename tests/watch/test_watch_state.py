"""The state file (private, one writer, a round at once) and the metrics (four, on loopback)."""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path

import pytest

from lmreg_nb.errors import ConfigurationError
from lmreg_nb.watch.alerts import ModelState
from lmreg_nb.watch.messages import Message
from lmreg_nb.watch.metrics import METRIC_NAMES, WatchMetrics
from lmreg_nb.watch.state import KEEP_ROUNDS, HistoryRow, StateStore, default_state_path

DOWN = ModelState(
    "m1",
    "campus-llm",
    host="llm.example",
    status="down",
    fails=4,
    since_ms=1000,
    kind="timeout",
    detail="no reply",
    tls_days=9,
    key="/m1",
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_file_and_its_wal_are_private_and_the_folder_too(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "watch.sqlite3"
    with StateStore(path) as store:
        store.save_round(1, [DOWN], [HistoryRow(1, "/m1", 1000, False, None, "timeout")])
        files = sorted(p.name for p in path.parent.iterdir())
        assert {"watch.sqlite3", "watch.sqlite3-wal", "watch.sqlite3-shm"} <= set(files)
        assert {p.name: _mode(p) for p in path.parent.iterdir() if "sqlite3" in p.name} == {
            name: 0o600 for name in files if "sqlite3" in name
        }
    assert _mode(path.parent) == 0o700


def test_a_readable_file_left_by_someone_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "watch.sqlite3"
    StateStore(path).close()
    os.chmod(path, 0o644)
    StateStore(path).close()
    assert _mode(path) == 0o600


def test_the_default_is_under_the_data_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", "/srv/data")
    assert default_state_path() == Path("/srv/data/lmreg_nb/watch.sqlite3")


def test_one_watch_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "watch.sqlite3"
    with StateStore(path) as first:
        first.acquire()
        second = StateStore(path)
        with pytest.raises(ConfigurationError, match="another lmreg-nb watch uses the state file"):
            second.acquire()
        second.close()
    with StateStore(path) as third:
        third.acquire()  # the first one is gone


def test_a_folder_as_state_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="is a folder; give a file name"):
        StateStore(tmp_path)


def test_states_history_and_outbox_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "watch.sqlite3"
    message = Message("title", "body", "failure")
    with StateStore(path) as store:
        for n in range(1, KEEP_ROUNDS + 6):
            store.save_round(
                n,
                [DOWN],
                [HistoryRow(n, "/m1", n * 1000, False, None, "timeout")],
                outbox=[("target-a", n * 1000, message)] if n == 1 else [],
            )
    with StateStore(path) as store:
        assert store.models() == {"/m1": DOWN}
        assert store.last_round() == KEEP_ROUNDS + 5
        rounds = [h.round for h in store.history("/m1")]
        assert rounds == list(range(6, KEEP_ROUNDS + 6))  # older ones pruned
        (row,) = store.pending("target-a")
        assert row.message == message and store.pending("target-b") == []
        store.failed(row.id, "refused")
        assert store.pending("target-a")[0].attempts == 1
        assert store.expire(now_ms=1000 + 24 * 3600 * 1000 + 1) == 1
        assert store.pending("target-a") == []
        store.save_round(KEEP_ROUNDS + 6, [], [], removed=["/m1"])
        assert store.models() == {} and store.history("/m1") == []


def test_the_four_metrics_follow_the_models(tmp_path: Path) -> None:
    metrics = WatchMetrics()
    up = ModelState("m2", "other-llm", status="up", latency_s=0.25, key="/m2")
    metrics.update([DOWN, up])
    text = metrics.text()
    for name in METRIC_NAMES:
        assert f"# TYPE {name} gauge" in text
    m1, m2 = (
        'model="campus-llm",model_id="m1",run_id="",school=""',
        'model="other-llm",model_id="m2",run_id="",school=""',
    )
    assert f"lmreg_model_up{{{m1}}} 0.0" in text
    assert f"lmreg_model_up{{{m2}}} 1.0" in text
    assert f"lmreg_model_latency_seconds{{{m2}}} 0.25" in text
    assert f"lmreg_model_failures_in_a_row{{{m1}}} 4.0" in text
    assert f"lmreg_tls_days_left{{{m1}}} 9.0" in text
    assert 'lmreg_tls_days_left{model="other-llm"' not in text
    latency = metrics.latency.labels("campus-llm", "m1", "", "")._value.get()
    assert math.isnan(latency)
    renamed = ModelState("m1", "campus-llm-2", status="up", latency_s=0.3, key="/m1")
    metrics.update([renamed])  # m2 removed, m1 renamed
    text = metrics.text()
    assert 'campus-llm"' not in text and "other-llm" not in text
    assert 'lmreg_model_up{model="campus-llm-2",model_id="m1",run_id="",school=""} 1.0' in text


def test_a_symlinked_state_path_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    from lmreg_nb.errors import ConfigurationError

    target = tmp_path / "someone-elses.db"
    target.write_text("data")
    target.chmod(0o644)
    link = tmp_path / "state.sqlite3"
    link.symlink_to(target)
    with pytest.raises(ConfigurationError, match="symbolic link"):
        StateStore(link)
    assert (target.stat().st_mode & 0o777) == 0o644 and target.read_text() == "data"
    dangling = tmp_path / "dangling.sqlite3"
    dangling.symlink_to(tmp_path / "elsewhere" / "made.db")
    with pytest.raises(ConfigurationError, match="symbolic link"):
        StateStore(dangling)
    assert not (tmp_path / "elsewhere").exists()


def test_a_file_of_another_program_is_one_line(tmp_path: Path) -> None:
    import sqlite3

    from lmreg_nb.errors import ConfigurationError

    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE models (id INTEGER PRIMARY KEY, name TEXT)")
    with pytest.raises(ConfigurationError) as caught:
        StateStore(other)
    assert "not a state file of lmreg-nb watch" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("value", ["abc", "1e400", "-1", "9" * 400])
def test_a_tampered_round_counter_is_one_line(tmp_path: Path, value: str) -> None:
    import sqlite3

    path = tmp_path / "watch.sqlite3"
    StateStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'round'", (value,))
    with pytest.raises(ConfigurationError) as caught:
        StateStore(path)
    said = str(caught.value)
    assert "is damaged" in said and "round counter" in said and "\n" not in said


def test_a_tampered_count_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "watch.sqlite3"
    with StateStore(path) as store:
        store.save_round(1, [DOWN], [])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE models SET fails = 'many'")
    with StateStore(path) as store, pytest.raises(ConfigurationError, match="column fails"):
        store.models()


def test_a_notification_being_sent_when_the_watch_died_is_never_sent_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "watch.sqlite3"
    message = Message("[A] model qwen is down", "body", "failure")
    with StateStore(path) as store:
        store.save_round(1, [DOWN], [], outbox=[("contact", 1000, message)])
        (row,) = store.pending("contact")
        store.sending([row.id], 2000)  # then kill -9: the process is gone mid-send
        assert store.pending("contact") == []
    with StateStore(path) as store:  # the next watch
        (gone,) = store.interrupted()
        assert gone.message == message
        assert store.pending("contact") == [] and store.waiting_targets() == set()
        assert store.interrupted() == []


def test_an_older_state_file_is_upgraded_with_its_rows(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "watch.sqlite3"
    with sqlite3.connect(path) as db:  # the schema of the fourth release
        db.executescript(
            """
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE models (
                model_id TEXT PRIMARY KEY, model_name TEXT NOT NULL, host TEXT NOT NULL,
                status TEXT NOT NULL, fails INTEGER NOT NULL, since_ms INTEGER, kind TEXT,
                detail TEXT NOT NULL, checked_ms INTEGER, last_ok_ms INTEGER, alerted_ms INTEGER,
                latency_s REAL, tls_days INTEGER, tls_expires_ms INTEGER, tls_issuer TEXT,
                tls_warned_ms INTEGER, school TEXT NOT NULL DEFAULT '');
            CREATE TABLE history (round INTEGER NOT NULL, model_id TEXT NOT NULL,
                at_ms INTEGER NOT NULL, ok INTEGER NOT NULL, latency_s REAL, kind TEXT,
                PRIMARY KEY (model_id, round));
            CREATE INDEX history_round ON history (round);
            CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, target TEXT NOT NULL,
                created_ms INTEGER NOT NULL, notify_type TEXT NOT NULL, title TEXT NOT NULL,
                body TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
                error TEXT NOT NULL DEFAULT '');
            INSERT INTO meta VALUES ('schema', '1'), ('round', '7');
            INSERT INTO models VALUES ('m1', 'campus-llm', 'llm.example', 'down', 4, 1000,
                'timeout', 'no reply', NULL, NULL, NULL, NULL, 9, NULL, NULL, NULL, 'a');
            INSERT INTO history VALUES (7, 'm1', 7000, 0, NULL, 'timeout');
            INSERT INTO outbox (target, created_ms, notify_type, title, body)
                VALUES ('t', 7000, 'failure', 'title', 'body');
            """
        )
    with StateStore(path) as store:
        (state,) = store.models().values()
        assert state.key == "a/m1" and state.status == "down" and state.fails == 4
        assert store.last_round() == 7
        assert [h.key for h in store.history()] == ["a/m1"]
        assert [r.message.title for r in store.pending("t")] == ["title"]
