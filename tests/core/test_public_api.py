"""The package's public face: one sorted __all__, every name importable (its cheap import:
test_import_cost.py)."""

from __future__ import annotations

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
