"""The files pytest rewrites (test modules, conftests) rewritten once, before xdist's workers.

Every worker imports every test module. On a clean clone each rewrote the same asserts
into the same cache: four workers did the same 4 s of CPU each on CI's two cores, so
the fast lane spent its first 19 s collecting. The controller now writes pytest's own
cache files first, in two processes, and the workers read them. Only an optimization:
whatever goes wrong leaves the work to the workers, as before. It uses pytest's private
rewrite functions (pytest is pinned by constraints.txt).
"""

from __future__ import annotations

import contextlib
import fnmatch
import multiprocessing
import os
import sys
from pathlib import Path

import pytest

__all__ = ["rewrite_before_workers"]


def rewrite_before_workers(config: pytest.Config) -> None:
    """In xdist's controller, with workers to come: rewrite what they would each rewrite."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return  # a worker, or no workers
    if sys.dont_write_bytecode or "fork" not in multiprocessing.get_all_start_methods():
        return  # no cache to write; or no fork (Windows): the config cannot be handed over
    with contextlib.suppress(Exception):
        files = _rewritten_files(config)
        half = len(files) // 2
        # fork: the child has the config (rewriting reads its ini) without pickling it.
        child = multiprocessing.get_context("fork").Process(
            target=_rewrite, args=(config, files[:half]), daemon=True
        )
        child.start()
        try:
            _rewrite(config, files[half:])
        finally:
            child.join(60)


def _rewritten_files(config: pytest.Config) -> list[Path]:
    """Test modules (python_files) and conftests under the testpaths."""
    patterns = [*config.getini("python_files"), "conftest.py"]
    found = []
    for top in config.getini("testpaths") or ["."]:
        for path in sorted((config.rootpath / top).rglob("*.py")):
            if "__pycache__" not in path.parts and any(
                fnmatch.fnmatch(path.name, p) for p in patterns
            ):
                found.append(path.resolve())
    return found


def _rewrite(config: pytest.Config, files: list[Path]) -> None:
    """Write the cache file of each of ``files`` that has none up to date; never raises
    (in the forked child a traceback would only be noise before the run)."""
    try:
        from _pytest.assertion import assertstate_key
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            get_cache_dir,
        )

        state = config.stash[assertstate_key]
    except (ImportError, KeyError):
        return  # another pytest, or asserts not rewritten (--assert=plain): nothing to do
    for path in files:
        pyc = get_cache_dir(path) / (path.name[:-3] + PYC_TAIL)
        if _read_pyc(path, pyc) is not None:
            continue  # up to date: a warm tree costs a stat and a read each
        try:
            source_stat, code = _rewrite_test(path, config)
            os.makedirs(pyc.parent, exist_ok=True)
            _write_pyc(state, code, source_stat, pyc)
        except Exception:  # a syntax error, an unreadable file: the worker's import says it
            continue
