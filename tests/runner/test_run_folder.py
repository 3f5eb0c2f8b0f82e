"""A run folder's removal when papermill writes into it at that moment.

When the runner is SIGKILLed, its papermill child's watcher stops the kernel and removes
the folder; papermill, seeing its kernel die, saves the notebook once more. A save that
crossed the removal left the folder holding executed.ipynb (the unscrubbed notebook) in a
full run: `test_a_killed_batch_leaves_no_process_and_no_secret_for_long` waited 15 s.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from lmreg_nb.runner import runs


def test_a_file_written_as_the_folder_goes_goes_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / (runs.RUN_PREFIX + "x")
    (folder / "tmp").mkdir(parents=True)
    (folder / "executed.ipynb").write_text("{}")
    real = shutil.rmtree
    calls = []

    def crossed(path: Any, *args: Any, **kwargs: Any) -> None:
        # The first removal empties the folder but the last save lands in it meanwhile
        # (the directory is not empty when rmtree removes it: ENOTEMPTY, ignored).
        calls.append(path)
        real(path, *args, **kwargs)
        if len(calls) == 1:
            Path(path).mkdir()
            (Path(path) / "executed.ipynb").write_text("{}")

    monkeypatch.setattr(runs.shutil, "rmtree", crossed)
    runs.remove_run_folder(folder)
    assert not folder.exists(), sorted(p.name for p in folder.iterdir())
