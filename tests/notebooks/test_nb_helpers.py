"""tests/notebooks/nb_helpers.py: the tests' own papermill runs start their kernels as the
runner does, over ipc, each with sockets of its own (over TCP another process took a
kernel's port between its pick and its bind: "Address already in use" in CI)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from nb_helpers import ipc_prefix


@pytest.mark.skipif(os.name == "nt", reason="no ipc transport on Windows: TCP there")
def test_each_run_gets_ipc_sockets_of_its_own_in_its_folder(tmp_path: Path) -> None:
    first, second = ipc_prefix(tmp_path), ipc_prefix(tmp_path)
    assert first is not None and second is not None
    assert first != second  # two runs side by side never pick the same socket files
    for prefix in (first, second):
        assert Path(prefix).parent.parent == tmp_path and Path(prefix).parent.is_dir()
