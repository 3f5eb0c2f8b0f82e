"""The status page puts health first, for the fleet and for one account (issue 41). In-process."""

from __future__ import annotations

import re
from typing import Any

from watch_fakes import model

from lmreg_nb.watch.alerts import ModelState, SchoolState
from lmreg_nb.watch.status_html import render_status, school_health


def _schools(page: str) -> list[tuple[str, str]]:
    body = page.split('class="sort schools"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<tr class="school h-row-(\w+)"><td>.*?</td><td><span class="n">(.*?)<',
                      body)  # fmt: skip


def test_a_school_is_red_amber_or_green_by_its_models_and_sign_in() -> None:
    def m(status: str) -> ModelState:
        return ModelState("m", "n", status=status)

    ok = SchoolState("a", "A")
    assert school_health(ok, [m("down"), m("down")])[0] == "red"
    assert school_health(SchoolState("a", "A", problem="sign-in", fails=1), [])[0] == "red"
    assert school_health(ok, [m("down"), m("up")])[0] == "amber"
    assert school_health(ok, [m("failing"), m("up")])[0] == "amber"
    assert school_health(SchoolState("a", "A", problem="blind", fails=1), [m("up")])[0] == "amber"
    assert school_health(ok, [m("up")])[0] == "green"


def test_the_fleet_page_lists_the_worst_school_first(make_fleet: Any) -> None:
    fleet = make_fleet(
        {
            "a": ("Alpha", [model("a1", "qwen", "a")], "a@a.example"),
            "b": ("Bravo", [model("b1", "qwen", "b", "down"), model("b2", "x", "b", "down")],
                  "b@b.example"),
            "c": ("Charlie", [model("c1", "qwen", "c", "down"), model("c2", "x", "c")],
                  "c@c.example"),
        }
    )  # fmt: skip
    fleet.round()
    page = fleet.watcher.config.status_path.read_text(encoding="utf-8")
    assert _schools(page) == [("red", "Bravo"), ("amber", "Charlie"), ("green", "Alpha")]
    assert "href=" not in page


def test_one_accounts_page_has_its_health_too() -> None:
    down = ModelState("m1", "qwen", status="down", fails=3, kind="timeout", key="/m1")
    page = render_status(
        [down], {}, school="No. 1 School", generated_ms=1_790_000_000_000, round_number=3,
        fail_after=3, schools=[SchoolState("", "No. 1 School")],
    )  # fmt: skip
    assert _schools(page) == [("red", "No. 1 School")]
    assert "it did not reply in time" in page
