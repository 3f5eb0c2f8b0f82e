"""The package's public face: one sorted __all__, every name importable, a cheap import."""

from __future__ import annotations

import subprocess
import sys

import lmreg_nb


def test_all_is_sorted_and_complete() -> None:
    assert lmreg_nb.__all__ == sorted(lmreg_nb.__all__)
    assert set(lmreg_nb.__all__) == {*lmreg_nb._EXPORTS, "__version__"}
    for name in lmreg_nb.__all__:
        assert getattr(lmreg_nb, name) is not None, name


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        lmreg_nb.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_is_cheap() -> None:
    """`import lmreg_nb` must not pull in the heavy libraries (notebooks start faster)."""
    code = (
        "import sys, lmreg_nb, lmreg_nb.cli; "
        "heavy = ('pandas', 'matplotlib', 'httpx', 'fastapi', 'papermill', 'ipywidgets'); "
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"imported at import time: {out.stdout.strip()}"


def test_every_error_class_is_exported() -> None:
    import importlib
    import pkgutil

    from lmreg_nb.errors import LmregError

    for info in pkgutil.walk_packages(lmreg_nb.__path__, "lmreg_nb."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found: set[str] = set()
    pending = [LmregError]
    while pending:
        cls = pending.pop()
        found.add(cls.__name__)
        pending += cls.__subclasses__()
    public = {n for n in found if not n.startswith("_")}
    assert public <= set(lmreg_nb.__all__), f"not exported: {public - set(lmreg_nb.__all__)}"
