"""The zh-CN notebooks speak Chinese in their code too, and the onboarding's interactive
checks panel runs the load test its parameters ask for."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import papermill

ROOT = Path(__file__).resolve().parents[2] / "notebooks"
CJK = re.compile(r"[\u4e00-\u9fff]")


def test_every_code_comment_of_the_chinese_notebooks_is_chinese() -> None:
    english = []
    for path in sorted((ROOT / "zh-CN").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            for line in cell.source.splitlines():
                comment = line.split("#", 1)[1] if "#" in line else ""
                if comment.strip() and not CJK.search(comment):
                    english.append(f"{path.name}: {line}")
    assert english == []


def test_the_chinese_onboarding_chats_in_chinese_by_default() -> None:
    found = papermill.inspect_notebook(str(ROOT / "zh-CN" / "onboarding.ipynb"))
    assert CJK.search(found["chat_prompt"]["default"])
    assert "\\u" not in found["chat_prompt"]["default"]
    english = papermill.inspect_notebook(str(ROOT / "onboarding.ipynb"))
    assert english["chat_prompt"]["default"] == '"Hello! Introduce yourself in one sentence."'


def test_the_interactive_checks_panel_honours_check_requests() -> None:
    for path in (ROOT / "onboarding.ipynb", ROOT / "zh-CN" / "onboarding.ipynb"):
        sources = [c.source for c in nbformat.read(path, as_version=4).cells]
        assert any("ui.ChecksPanel(run, load, check_concurrency)" in s for s in sources), path
