"""A notebook's parameters as its parameters cell declares them: the one source of their types.

``lmreg-nb onboard -p`` and a batch plan's columns both ask the notebook
(``papermill.inspect_notebook``), so a parameter a notebook gains needs no
second list anywhere.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

__all__ = ["convert", "declared_types"]

_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}


def declared_types(notebook: Path) -> dict[str, str]:
    """Parameter name -> type name (``int``, ``str``, ...), in the order the cell declares them.

    papermill's own errors for an unreadable notebook pass through.
    """
    import papermill

    types: dict[str, str] = {}
    for name, info in papermill.inspect_notebook(str(notebook)).items():
        kind = info.get("inferred_type_name") or "None"
        if kind == "None":
            # papermill reads only annotations; an unannotated default tells the type.
            try:
                kind = type(ast.literal_eval(info.get("default") or "None")).__name__
            except (ValueError, SyntaxError):
                kind = "str"
        types[name] = kind
    return types


def convert(raw: str, kind: str) -> Any:
    """``raw`` text as a value of the declared ``kind``; ValueError when it is not one."""
    kind = kind.lower()
    if kind == "int":
        return int(raw)
    if kind == "float":
        return float(raw)
    if kind == "bool":
        low = raw.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError("not a bool")
    if kind in ("list", "dict", "tuple"):
        value = json.loads(raw)
        if not isinstance(value, list | dict):
            raise ValueError(f"not a {kind}")
        return value
    return raw  # str, NoneType and anything papermill could not name
