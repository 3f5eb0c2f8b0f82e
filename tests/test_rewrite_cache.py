"""tests/rewrite_cache.py: the files pytest rewrites, written to pytest's own cache once.

In this process (the fast lane forks nothing): the files it picks, the cache files a
worker then reads, a warm tree left alone, and nothing done in a worker or without
workers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc
from rewrite_cache import _rewrite, _rewritten_files, rewrite_before_workers


class _Config:
    """What the rewrite reads of a pytest config, for a tree of its own."""

    def __init__(self, root: Path, stash: Any, workers: int) -> None:
        self.rootpath = root
        self.stash = stash
        self.workers = workers

    def getini(self, name: str) -> Any:
        return {"python_files": ["test_*.py"], "testpaths": ["tests"]}.get(name, False)

    def getoption(self, name: str, default: Any = None) -> Any:
        return self.workers if name == "numprocesses" else default


def _tree(root: Path) -> list[Path]:
    (root / "tests" / "deep").mkdir(parents=True)
    files = {
        "tests/conftest.py": "X = 1\n",
        "tests/deep/test_a.py": "def test_a():\n    assert [1] == [2]\n",
        "tests/helper.py": "Y = 2\n",  # not a test module: imported as is
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return [root / name for name in files]


def _pyc(path: Path) -> Path:
    return path.parent / "__pycache__" / (path.name[:-3] + PYC_TAIL)


def test_test_modules_and_conftests_are_rewritten_into_pytests_cache(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    conftest, test_a, helper = _tree(tmp_path)
    config = _Config(tmp_path, request.config.stash, workers=2)
    files = _rewritten_files(config)  # type: ignore[arg-type]
    assert files == [conftest.resolve(), test_a.resolve()]
    _rewrite(config, files)  # type: ignore[arg-type]
    code = _read_pyc(test_a, _pyc(test_a))
    assert code is not None  # what a worker's import finds, and uses instead of rewriting
    # Rewritten: the assert explains itself (pytest's @py_assert names are in the code).
    assert any(name.startswith("@py_assert") for c in code.co_consts
               if hasattr(c, "co_varnames") for name in c.co_varnames)  # fmt: skip
    assert not _pyc(helper).exists()

    # A warm tree: nothing written again.
    stamp = _pyc(test_a).stat().st_mtime_ns
    os.utime(_pyc(test_a), ns=(stamp - 10**9, stamp - 10**9))
    _rewrite(config, files)  # type: ignore[arg-type]
    assert _pyc(test_a).stat().st_mtime_ns == stamp - 10**9


def test_nothing_is_written_in_a_worker_or_without_workers(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    _conftest, test_a, _helper = _tree(tmp_path)
    without = _Config(tmp_path, request.config.stash, workers=0)
    rewrite_before_workers(without)  # type: ignore[arg-type]
    worker = _Config(tmp_path, request.config.stash, workers=2)
    worker.workerinput = {}  # type: ignore[attr-defined]
    rewrite_before_workers(worker)  # type: ignore[arg-type]
    assert not _pyc(test_a).exists()
