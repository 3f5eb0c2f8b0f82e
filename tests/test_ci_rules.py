"""CI runs every test it claims: a skip is a failure under CI=1, except in the peer lane."""

from __future__ import annotations

import pytest
from ci_rules import deselect_peers, fail_skip_in_ci


def _skipped(reason: str = "setfacl is not installed") -> pytest.TestReport:
    return pytest.TestReport(
        "tests/x.py::t", ("tests/x.py", 1, "t"), {}, "skipped", ("tests/x.py", 1, reason), "setup"
    )


def test_a_skip_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    report = _skipped()
    fail_skip_in_ci(report, peer=False)
    assert report.failed
    assert "setfacl is not installed" in str(report.longrepr)


def test_a_peer_test_may_skip_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    report = _skipped("LMREG_PEER_VLLM_URL is not set")
    fail_skip_in_ci(report, peer=True)
    assert report.skipped


def test_outside_ci_a_skip_stays_a_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    report = _skipped()
    fail_skip_in_ci(report, peer=False)
    assert report.skipped


def test_a_whole_file_skipped_at_collection_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    report = pytest.CollectReport(
        "tests/x.py", "skipped", ("tests/x.py", 1, "Skipped: could not import 'babel'"), []
    )
    fail_skip_in_ci(report, peer=False)
    assert report.failed


class _Item:
    def __init__(self, nodeid: str, *markers: str) -> None:
        self.nodeid, self.markers = nodeid, markers

    def get_closest_marker(self, name: str) -> object:
        return name if name in self.markers else None


class _Config:
    def __init__(self, markexpr: str) -> None:
        self.markexpr, self.deselected = markexpr, []  # type: list[object]
        self.hook = self

    def getoption(self, name: str) -> str:
        assert name == "markexpr"
        return self.markexpr

    def pytest_deselected(self, items: list[object]) -> None:
        self.deselected += items


@pytest.mark.parametrize(
    ("markexpr", "kept"),
    [("", ["tests/a.py::t"]), ("not slow", ["tests/a.py::t"]),
     ("peer", ["tests/a.py::t", "tests/peer/v.py::t"])],
)  # fmt: skip
def test_the_peer_lane_runs_only_when_asked(markexpr: str, kept: list[str]) -> None:
    """`.ci/run`'s selection never holds a peer test: they need servers CI does not start."""
    items = [_Item("tests/a.py::t"), _Item("tests/peer/v.py::t", "peer")]
    config = _Config(markexpr)
    deselect_peers(config, items)  # type: ignore[arg-type]
    assert sorted(i.nodeid for i in items) == kept
    assert len(config.deselected) == 2 - len(kept)
