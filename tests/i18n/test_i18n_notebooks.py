"""The zh-CN notebooks: rendered from the same source (notebooks/texts.py) through the catalog.

nbval runs the English notebooks (pyproject ignores notebooks/zh-CN: the same code
cells, outputs checked once); here the Chinese copies must be exactly what
build.py renders now, and every text a person reads in them must be Chinese.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import nbformat
import pytest

from lmreg_nb import i18n

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lmreg_notebook_build", NOTEBOOKS / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build() -> ModuleType:
    return _build()


def _has_cjk(text: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def test_every_notebook_has_a_chinese_copy(build: ModuleType) -> None:
    stored = sorted(p.stem for p in (NOTEBOOKS / "zh-CN").glob("*.ipynb"))
    assert stored == sorted(build.NOTEBOOKS) == sorted(STEMS), "run: build.py --lang zh-CN"


STEMS = [
    "01_get_token",
    "02_register_model",
    "03_modify_model",
    "04_list_models",
    "05_test_chat_endpoint",
    "06_monitor",
    "onboarding",
]


@pytest.mark.parametrize("stem", STEMS)
def test_chinese_copy_is_the_rendered_source(build: ModuleType, stem: str) -> None:
    stored = nbformat.read(NOTEBOOKS / "zh-CN" / f"{stem}.ipynb", as_version=4)
    rendered = build.notebook(stem, "zh-CN")
    assert [c.source for c in stored.cells] == [c.source for c in rendered.cells], (
        "run: python notebooks/build.py --lang zh-CN"
    )
    assert i18n.current_language() == "en"  # build restores the language it found
    for cell in stored.cells:
        if cell.cell_type == "markdown":
            assert _has_cjk(cell.source), cell.source
        if "parameters" in cell.metadata.get("tags", []):
            comments = [line.split("#", 1)[1] for line in cell.source.splitlines() if "#" in line]
            assert comments and all(_has_cjk(c) for c in comments), cell.source


def test_english_notebooks_stay_english(build: ModuleType) -> None:
    for stem in build.NOTEBOOKS:
        nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
        assert not any(_has_cjk(c.source) for c in nb.cells if c.cell_type == "markdown"), stem
