"""Issue 43 item 7: the Chinese reads as one careful writer wrote it.

Every CLI start in a folder under /tmp printed the English line "/tmp is not only
this user's: ..." in zh-CN; the catalog said both 你 and 您; spaces stood between
Han characters and Chinese punctuation, and between Han characters and a placeholder
holding Han text ("4 所学校 的模型", "北京市第一中学 的联系人", "2 秒 且"); click's own
headers carried ASCII colons ("用法:", "选项:").
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from fakes.catalog import translations

from lmreg_nb import i18n

ROOT = Path(__file__).resolve().parents[2]
HAN = "\u3400-\u9fff"
#: Full-width punctuation: a space beside one is a stray (the mark carries its own space);
#: two or more are a table's column padding ("首字延迟（毫秒）  p50 ...").
CHINESE_PUNCTUATION = "，。、；：？！「」『』（）《》【】…“”‘’—"
SPACE_BY_PUNCTUATION = re.compile(
    rf"(?<![ \t])[ \t][{CHINESE_PUNCTUATION}]|[{CHINESE_PUNCTUATION}][ \t](?![ \t])"
)
#: Two Han characters with a space between them: never right in a Chinese sentence.
HAN_SPACE_HAN = re.compile(rf"[{HAN}][ \t]+[{HAN}]")
#: Placeholders that hold Han text in Chinese: a school's name; and counted words, which
#: start with the count ("4 所学校", "4 所学校的联系人") and end in Han.
HAN_PLACEHOLDERS = ("school",)
ENDS_IN_HAN = ("school", "schools", "contacts", "targets")


def _show(bad: list[tuple[str, str]]) -> str:
    return "\n".join(f"{i!r}\n  -> {s}" for i, s in bad)


def test_the_catalog_says_您_never_你() -> None:
    bad = [(i, s) for i, s in translations() if "你" in s]
    assert not bad, _show(bad)


def test_the_chinese_notebooks_say_您_never_你() -> None:
    notebooks = sorted((ROOT / "notebooks" / "zh-CN").glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = "".join("".join(c["source"]) for c in cells)
        assert "你" not in text, path.name


def test_no_space_beside_chinese_punctuation() -> None:
    bad = [(i, s) for i, s in translations() if SPACE_BY_PUNCTUATION.search(s)]
    assert not bad, _show(bad)


def test_no_space_between_han_characters() -> None:
    # Table rows keep their columns: two spaces or more between a label and its figures.
    bad = [(i, s) for i, s in translations() if re.search(rf"[{HAN}][ \t][{HAN}]", s)]
    assert not bad, _show(bad)


def test_no_space_between_han_and_a_placeholder_holding_han() -> None:
    names, ends = "|".join(HAN_PLACEHOLDERS), "|".join(ENDS_IN_HAN)
    rule = re.compile(rf"[{HAN}][ \t]+\{{(?:{names})\}}|\{{(?:{ends})\}}[ \t]+[{HAN}]")
    bad = [(i, s) for i, s in translations() if rule.search(s)]
    assert not bad, _show(bad)


def _chinese_sentences() -> dict[str, str]:
    """The three sentences the walkthrough read, made by the code that shows them."""
    from lmreg_nb.onboarding.contact import card_outcome
    from lmreg_nb.probe.load.levels import SLO
    from lmreg_nb.probe.text.capacity_text import slo_phrase
    from lmreg_nb.summary import Contact
    from lmreg_nb.watch.service import start_line

    fleet = SimpleNamespace(
        config=SimpleNamespace(interval=60.0, fail_after=3, state_path="/var/lib/w.sqlite3"),
        fleet=True,
        units=[SimpleNamespace(mail=object()) for _ in range(4)],
        targets=[],
        settings=SimpleNamespace(base_url=None),
    )
    with i18n.speaking("zh-CN"):
        card = card_outcome("北京市第一中学", Contact("李华", "13812345678", "li@school.cn"))
        return {
            "watch": start_line(fleet),  # type: ignore[arg-type]
            "contact": card.title,
            "slo": slo_phrase(SLO(ttft_ms=2000.0, itl_ms=150.0)),
        }


def test_the_sentences_people_read_hold_no_space_between_han() -> None:
    found = _chinese_sentences()
    assert "4 所学校" in found["watch"] and "北京市第一中学" in found["contact"]
    assert "2 秒" in found["slo"]
    bad = {k: v for k, v in found.items() if HAN_SPACE_HAN.search(v)}
    assert not bad, bad


def test_the_rule_catches_what_the_walkthrough_saw() -> None:
    seen = ["每 60 秒监控一次 4 所学校 的模型", "北京市第一中学 的联系人", "低于 2 秒 且字间延迟"]
    assert all(HAN_SPACE_HAN.search(s) for s in seen)
    assert SPACE_BY_PUNCTUATION.search("接入记录：北京 — ok")


@pytest.mark.parametrize("args", [["check", "--help"], ["check", "--no-such-option"]])
def test_clicks_headers_in_chinese_punctuation(args: list[str]) -> None:
    from lmreg_nb.cli import main

    result = CliRunner().invoke(main, ["--lang", "zh-CN", *args], prog_name="lmreg-nb")
    text = result.output
    assert "用法：lmreg-nb check" in text, text
    assert "用法:" not in text and "选项:" not in text and "用法： " not in text
    if "--help" in args:
        assert "\n选项：\n" in text
    english = CliRunner().invoke(main, ["--lang", "en", *args], prog_name="lmreg-nb").output
    assert "Usage: lmreg-nb check" in english
    if "--help" in args:
        assert "\nOptions:\n" in english


def test_the_line_about_a_shared_folder_is_in_chinese(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A folder every user may write, as /tmp: the line that says so at every start."""
    from lmreg_nb.settings import find_env_file

    shared = tmp_path / "shared"
    school = shared / "school"
    school.mkdir(parents=True)
    shared.chmod(0o1777)
    with caplog.at_level(logging.INFO, logger="lmreg_nb"), i18n.speaking("zh-CN"):
        find_env_file(start=school)
    lines = [r.getMessage() for r in caplog.records if str(shared) in r.getMessage()]
    assert lines, caplog.text
    assert all("not only this user's" not in line for line in lines), lines
    assert any("不只属于当前用户：所有用户都能写入" in line for line in lines), lines
