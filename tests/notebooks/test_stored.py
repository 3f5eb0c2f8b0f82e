"""The stored notebooks: what notebooks/build.py writes, and nothing that a run leaves."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
STEMS = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("notebooks_build", NOTEBOOKS / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_notebook_is_built() -> None:
    assert sorted(_builder().NOTEBOOKS) == STEMS


@pytest.mark.parametrize("stem", STEMS)
def test_stored_notebook_is_what_build_writes(stem: str) -> None:
    stored = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    built = json.loads(nbformat.writes(_builder().notebook(stem)))
    assert stored == built, f"run `python notebooks/build.py` after editing it ({stem})"


@pytest.mark.parametrize("stem", STEMS)
def test_stored_notebook_holds_nothing_a_run_leaves(stem: str) -> None:
    nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    assert "widgets" not in nb.metadata and "papermill" not in nb.metadata
    assert nb.metadata.kernelspec.name == "python3"
    parameters = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(parameters) == 1
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert "injected-parameters" not in cell.metadata.get("tags", [])
        if "nbval-check-output" not in cell.metadata.get("tags", []):
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
