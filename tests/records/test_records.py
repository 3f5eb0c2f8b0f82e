"""Records: displayed in a real IPython shell, read back from a notebook file, rendered safely."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from lmreg_nb.errors import LmregError
from lmreg_nb.records import (
    RECORD_MIME,
    read_records,
    record,
    records_of,
    render_summary_html,
    render_summary_text,
    to_jsonable,
)
from lmreg_nb.secret import Secret
from lmreg_nb.summary import Summary
from lmreg_nb.summary.performance import Performance

SUMMARY: dict[str, Any] = {
    "school": "Example Middle School",
    "contact": {"name": "Li Hua", "mobile": "13812345678", "email": "ai@school.example"},
    "base_url": "https://ai.school.example",
    "env": "env_1",
    "phases": [
        {"name": "preparation", "done": True, "detail": "contract signed"},
        {"name": "technical integration", "done": True, "detail": "model registered"},
        {"name": "go-live", "done": False, "detail": "the provider switches the model"},
    ],
    "steps": [{"name": "token", "passed": True, "detail": "env env_1"}],
    "models": [
        {
            "modelName": "m1",
            "modelId": "mdl_1",
            "registryUrl": "https://m.example/v1/chat/completions",
            "createTime": 1700000000000,
            "updateTime": 1700000000001,
        },
    ],
    "checks": [
        {"name": "reachable", "passed": True, "severity": "error", "detail": "HTTP 200"},
        {"name": "url-https", "passed": False, "severity": "warning", "detail": "plain http"},
    ],
    "performance": {
        "requests": 20,
        "errors": 0,
        "ttft_ms": {"p50": 51.5, "p90": 60.25, "p99": 70.0},
        "itl_ms": {"p50": 10.1, "p90": 11.0, "p99": 12.0},
        "latency_ms": {"p50": 371.0, "p90": 400.0, "p99": 420.0},
        "requests_per_s": 9.5,
        "output_tokens_per_s": 304.0,
    },
    "status": "ok",
    "generated_at": "2026-01-01T00:00:00+00:00",
}


@pytest.fixture
def shell() -> InteractiveShell:
    """A real IPython shell, so display() goes through IPython's display publisher."""
    return InteractiveShell.instance()


def _displayed(shell: InteractiveShell, name: str, value: Any) -> list[Any]:
    with capture_output() as captured:
        record(name, value)
    return captured.outputs


def _notebook_with(outputs: list[dict[str, Any]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("record(...)")
    cell.outputs = [
        nbformat.v4.new_output("display_data", data=o["data"], metadata=o.get("metadata", {}))
        for o in outputs
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), cell]
    return nb


def test_record_displays_payload_text_and_summary_html(shell: InteractiveShell) -> None:
    outputs = _displayed(shell, "summary", SUMMARY)
    assert len(outputs) == 1
    data = outputs[0].data
    assert data[RECORD_MIME] == {"name": "summary", "value": SUMMARY}
    assert "Example Middle School" in data["text/plain"]
    assert "[ ] go-live" in data["text/plain"]
    assert "lmreg-summary" in data["text/html"]


def test_records_round_trip_through_a_notebook_file(
    shell: InteractiveShell, tmp_path: Path
) -> None:
    outputs = []
    for name, value in (("summary", {"status": "failed"}), ("figures", [1, 2.5, None]),
                        ("summary", SUMMARY)):  # fmt: skip
        outputs += [
            {"data": o.data, "metadata": o.metadata} for o in _displayed(shell, name, value)
        ]
    path = tmp_path / "executed.ipynb"
    nbformat.write(_notebook_with(outputs), path)
    records = read_records(path)
    # The later record of a name wins, and values come back as plain JSON data.
    assert records == {"summary": SUMMARY, "figures": [1, 2.5, None]}
    assert type(records["summary"]["contact"]) is dict


def test_read_records_accepts_a_payload_stored_as_text() -> None:
    payload = json.dumps({"name": "x", "value": {"a": 1}})
    assert records_of(_notebook_with([{"data": {RECORD_MIME: payload}}])) == {"x": {"a": 1}}


def test_read_records_bad_paths_fail_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(LmregError, match="no notebook at"):
        read_records(tmp_path / "missing.ipynb")
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    with pytest.raises(LmregError, match="not a readable notebook") as info:
        read_records(broken)
    assert "\n" not in str(info.value)


def test_to_jsonable_masks_secrets_and_normalises_values() -> None:
    value = {
        "key": Secret("sk-abcdefghijklmnop"),
        "when": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "path": Path("/a/b"),
        "bad": math.nan,
        "items": (1, "two"),
    }
    assert to_jsonable(value) == {
        "key": "…mnop",
        "when": "2026-01-02T03:04:05+00:00",
        "path": "/a/b",
        "bad": None,
        "items": [1, "two"],
    }
    with pytest.raises(TypeError, match="type object"):
        to_jsonable({"x": object()})


def test_record_refuses_an_empty_name() -> None:
    with pytest.raises(ValueError, match="non-empty name"):
        record(" ", 1)


def test_summary_html_shows_every_part_and_the_phases_as_a_checklist() -> None:
    page = render_summary_html(Summary.from_json(SUMMARY))
    for text in ("Example Middle School", "Li Hua", "13812345678", "ai@school.example",
                 "https://ai.school.example", "mdl_1", "reachable", "plain http", "51.5", "371",
                 "304", "lmreg-status-ok"):  # fmt: skip
        assert text in page, text
    assert "☑ <b>preparation</b>" in page
    assert "☑ <b>technical integration</b>" in page
    assert "☐ <b>go-live</b>" in page


def test_summary_html_shows_local_times_with_their_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    summary = {
        "generated_at": "2026-01-01T08:00:00+08:00",
        "models": [{"modelName": "m", "createTime": "2026-11-22T05:10:58.251000+00:00"}],
    }
    monkeypatch.setenv("TZ", "UTC")
    page = render_summary_html(Summary.from_json(summary))
    assert "2026-01-01 00:00 UTC" in page
    assert "2026-11-22 05:10 UTC" in page and ".251000" not in page
    # A Chinese record shows Beijing time, named; the JSON keeps UTC.
    monkeypatch.delenv("TZ")
    page = render_summary_html(Summary.from_json({**summary, "lang": "zh-CN"}))
    assert "2026-11-22 13:10 Asia/Shanghai (UTC+08:00)" in page


def test_summary_html_escapes_untrusted_values() -> None:
    evil = "<script>alert(1)</script>"
    summary = {
        "school": evil,
        "contact": {"name": '"><img src=x onerror=alert(1)>', "email": evil},
        "phases": [{"name": evil, "done": True, "detail": evil}],
        "models": [{"modelName": evil, "registryUrl": "javascript:alert(1)"}],
        "checks": [{"name": evil, "passed": False, "severity": evil, "detail": evil}],
        "performance": {"ttft_ms": {"p50": evil}},
        "status": evil,
    }
    page = render_summary_html(Summary.from_json(summary))
    assert "<script" not in page
    assert "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert evil not in page  # an unknown status is decided again from the record, not shown


@pytest.mark.parametrize(
    "summary",
    [
        {},
        {"status": "failed"},
        {"contact": None, "phases": "not a list", "models": [1, "x", None], "performance": None},
        {"performance": {"ttft_ms": None, "requests": 3}, "checks": [{"passed": True}]},
    ],
)
def test_summary_renders_with_missing_or_odd_keys(summary: dict[str, Any]) -> None:
    page = render_summary_html(Summary.from_json(summary))
    text = render_summary_text(Summary.from_json(summary))
    assert page.startswith('<div class="lmreg-summary">') and page.endswith("</div>")
    assert text.startswith("Onboarding record:")


def test_summary_without_load_test_says_so() -> None:
    steps = [{"name": "chat endpoint checks", "passed": True, "detail": "ok"}]
    page = render_summary_html(Summary.from_json({**SUMMARY, "performance": None, "steps": steps}))
    assert "No load test in this run." in page


def test_summary_html_starts_with_two_plain_verdicts_and_what_to_do() -> None:
    from lmreg_nb.summary import ModelRecord, Step, build_summary

    names = ("contact card", "token", "register", "list models", "chat endpoint checks")
    steps = [Step(n, True, "done") for n in names]
    loopback = "http://127.0.0.1:8766/v1/chat/completions"
    summary = build_summary(
        school="Rehearsal School", contact=None, base_url=None, env=None, steps=steps,
        models=[ModelRecord("m", registry_url=loopback)], checks=[],
        performance=Performance.from_json({"requests": 2, "errors": 1}),
    )  # fmt: skip
    page = render_summary_html(summary)
    steps_at = page.index("Onboarding steps: all done")
    not_ready = page.index("Not ready for go-live")
    blockers = page[page.index('<ol class="lmreg-blockers">') : page.index("</ol>")]
    assert steps_at < not_ready < page.index("<h3>")  # the verdicts come first
    assert "127.0.0.1" in blockers and "plain http" in blockers
    assert "2 requests, 1 error," in page and "1 errors" not in page
    text = render_summary_text(Summary.from_json(summary.to_json()))
    assert "[ ] Not ready for go-live" in text and "127.0.0.1" in text


def test_a_summary_object_is_recorded_as_its_json() -> None:
    from lmreg_nb.summary import build_summary

    summary = build_summary(
        school="S", contact=None, base_url=None, env=None, steps=[], models=[], checks=[]
    )
    assert to_jsonable(summary) == summary.to_json()
    assert to_jsonable(summary)["status"] == "incomplete"


def _no_json_reading(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Count the summaries read from JSON (the real reader still runs)."""
    read: list[object] = []
    real = Summary.from_json.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Summary], data: Any) -> Summary:
        read.append(data)
        return real(cls, data)

    monkeypatch.setattr(Summary, "from_json", classmethod(counted))
    return read


def test_recording_a_summary_renders_the_object_and_reads_no_json(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = Summary.from_json(SUMMARY)
    read = _no_json_reading(monkeypatch)
    (output,) = _displayed(shell, "summary", summary)
    assert read == []  # the typed object travels: no renderer parses it again
    assert output.data[RECORD_MIME]["value"] == summary.to_json()
    assert "Example Middle School" in output.data["text/plain"]
    assert "lmreg-summary" in output.data["text/html"]
    _displayed(shell, "summary", SUMMARY)  # a plain dict recorded: read once, at the edge
    assert len(read) == 1


def test_a_run_reads_its_summary_record_once(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from lmreg_nb.runner.record import Ended, make_record, write_record

    outputs = _displayed(shell, "summary", Summary.from_json(SUMMARY))
    nb = _notebook_with([{"data": o.data, "metadata": o.metadata} for o in outputs])
    read = _no_json_reading(monkeypatch)
    clean, records, summary, error, _status_only = make_record(
        tmp_path / "onboarding.ipynb", Ended(0), nb, True, {}
    )
    paths = write_record(clean, summary, tmp_path, "onboarding", {}, "onboarding.ipynb")
    assert len(read) == 1 and error is None
    assert summary is not None and summary.school == "Example Middle School"
    assert records["summary"] == summary.to_json()
    assert all(p.is_file() for p in paths)
    assert "Example Middle School" in paths[1].read_text(encoding="utf-8")
