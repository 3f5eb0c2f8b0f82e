"""Record values into a notebook's outputs and read them back.

A record is a display output whose bundle holds the MIME type
``application/vnd.lmreg.record+json`` with the payload ``{"name": ..., "value": ...}``
(the name lives in the payload, so the record survives tools that drop output
metadata), a readable ``text/plain`` fallback, and for the onboarding ``summary``
a ``text/html`` rendering (:mod:`lmreg_nb.records.html`; text: :mod:`lmreg_nb.records.text`).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
import math
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from ..errors import LmregError
from ..i18n import _
from ..secret import Secret
from ..summary import Summary
from .html import RECORD_MIME, render_summary_html
from .text import render_summary_text

if TYPE_CHECKING:
    import nbformat

__all__ = [
    "RECORD_MIME",
    "read_records",
    "record",
    "records_of",
    "render_summary_html",
    "render_summary_text",
    "to_jsonable",
]

log = logging.getLogger("lmreg_nb")

_TEXT_LIMIT = 4000  # the text fallback of a big value is cut: the JSON payload has it whole


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: Secrets masked, datetimes ISO 8601, NaN as null.

    Raises TypeError (one line, naming the type) for what has no JSON form.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        # NaN and infinities are not JSON: a reader in another language would choke.
        return value if math.isfinite(value) else None
    if isinstance(value, Secret):
        return value.masked
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    to_json = getattr(value, "to_json", None)
    if callable(to_json) and not isinstance(value, type):
        # Summary, EndpointReport and friends know their JSON shape (before the
        # dataclass fallback: a Summary's JSON is not its field dump).
        return to_jsonable(to_json())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    item = getattr(value, "item", None)
    if callable(item):  # numpy scalars
        return to_jsonable(item())
    raise TypeError(f"a record needs JSON data; got a value of type {type(value).__name__}")


def record(name: str, value: Any, *, display_id: str | None = None, update: bool = False) -> None:
    """Display ``value`` as the record ``name`` (JSON payload, text fallback, summary HTML).

    With ``display_id`` and ``update``, the output shown earlier under that id is
    rewritten in place (a live summary). Outside IPython it only logs the text fallback.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError("a record needs a non-empty name")
    data = to_jsonable(value)
    summary = _summary_of(value, data) if name == "summary" else None
    bundle: dict[str, Any] = {
        RECORD_MIME: {"name": name, "value": data},
        "text/plain": _text_fallback(name, data, summary),
    }
    if summary is not None:
        bundle["text/html"] = render_summary_html(summary)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython is a dependency
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        log.info("record %s: %s", name, bundle["text/plain"])
        return
    if display_id is None:
        display(bundle, raw=True)
    else:
        display(bundle, raw=True, display_id=display_id, update=update)


def records_of(nb: nbformat.NotebookNode) -> dict[str, Any]:
    """The records of an in-memory notebook, by name; a later record of a name wins."""
    found: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) or []:
            payload = (output.get("data") or {}).get(RECORD_MIME)
            if isinstance(payload, str):  # a tool stored the JSON as text
                try:
                    payload = json.loads(payload)
                except ValueError:
                    continue
            if isinstance(payload, Mapping) and isinstance(payload.get("name"), str):
                found[payload["name"]] = _plain(payload.get("value"))
    return found


def read_records(path: str | Path) -> dict[str, Any]:
    """The records of the executed notebook at ``path``, by name."""
    import nbformat

    target = Path(path)
    if not target.is_file():
        raise LmregError(
            _("no notebook at {path}: give the path of an executed .ipynb").format(path=target)
        )
    try:
        nb = nbformat.read(target, as_version=4)
    except Exception as exc:  # nbformat raises several unrelated types for a bad file
        raise LmregError(
            _(
                "{path} is not a readable notebook ({error}); give the path of an executed .ipynb"
            ).format(path=target, error=type(exc).__name__)
        ) from exc
    return records_of(nb)


def _plain(value: Any) -> Any:
    # nbformat hands back NotebookNode (a dict subclass); callers want plain data.
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _summary_of(value: Any, data: Any) -> Summary | None:
    """The Summary recorded: the object given, or (a plain dict recorded) its JSON read once."""
    if isinstance(value, Summary):
        return value
    return Summary.from_json(data) if isinstance(data, Mapping) else None


def _text_fallback(name: str, data: Any, summary: Summary | None) -> str:
    if summary is not None:
        return render_summary_text(summary)
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False)
    if len(text) > _TEXT_LIMIT:
        text = text[:_TEXT_LIMIT] + "\n… " + _("(cut; the record holds the whole value)")
    return f"{name}: {text}"
