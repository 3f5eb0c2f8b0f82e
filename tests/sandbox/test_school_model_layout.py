"""The mock school model's package: one job per module, no circle, no private name across."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import lmreg_nb.sandbox.school_model as package

ROOT = Path(package.__file__).parent


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(sibling module, names) of each relative import in ``path``, TYPE_CHECKING ones too."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            out.append((node.module or "", [a.name for a in node.names]))
    return out


def test_no_module_imports_another_s_private_names_or_anything_above_the_package() -> None:
    for path in ROOT.glob("*.py"):
        for module, names in _imports(path):
            assert not module.startswith("."), f"{path.name} imports {module} above the package"
            private = [n for n in names if n.startswith("_")]
            assert not private, f"{path.name} imports {private} from .{module}"


def test_the_modules_import_one_another_without_a_circle_and_config_imports_nothing() -> None:
    graph = {
        path.stem: {module for module, _ in _imports(path)}
        for path in ROOT.glob("*.py")
        if path.stem != "__init__"
    }
    assert graph["config"] == set() and graph["compute"] == set()
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError on a circle


def test_the_public_names_are_importable_from_the_package() -> None:
    import importlib

    public = importlib.import_module("lmreg_nb.sandbox.school_model")
    names = ("QUIRKS", "THINKING_TOKENS", "MockModelConfig", "app_from_env", "create_app",
             "parse_quirks", "reply_tokens", "serving", "serving_process")  # fmt: skip
    for name in names:  # as ``from lmreg_nb.sandbox.school_model import NAME`` would
        assert getattr(public, name) is not None, name
    assert set(package.__all__) >= {"MockModelConfig", "create_app", "serving", "QUIRKS"}
