"""The record of a run: the scrubbed notebook, its error in one line, its HTML copies.

Every file is checked for secrets before it is written, and written atomically.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..i18n import _
from ..records import records_of
from ..records.export import render_html
from ..records.principal import render_principal_html
from ..records.text import status_label
from ..secret import mask_text
from ..summary import Summary
from .gates import assert_notebook_clean, assert_page_clean
from .kernels import KERNEL_START_EXIT
from .runs import Interrupted
from .scrub import scrub_notebook

__all__ = [
    "Ended",
    "load_output",
    "make_record",
    "preload_html_export",
    "write_atomic",
    "write_record",
]

log = logging.getLogger("lmreg_nb")

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: papermill marks the failing cell with these; the record shows a summary card instead.
_PAPERMILL_ERROR_TAG = "papermill-error-cell-tag"


@dataclass
class Ended:
    """How the papermill child ended."""

    returncode: int | None
    stopped: str | None = None  # one line: a timeout or an interruption
    retried: bool = False
    stderr: str = ""
    interrupt: Interrupted | None = None  # re-raised once the record is written


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(_ANSI.sub("", text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _error_of(nb: Any) -> str | None:
    for cell in nb.cells:
        for output in cell.get("outputs", []) or []:
            if output.get("output_type") == "error":
                ename, evalue = output.get("ename", "Error"), output.get("evalue", "")
                return _one_line(f"{ename}: {evalue}" if evalue else ename)
    return None


def _note_cell(text: str) -> Any:
    import nbformat

    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["tags"] = ["lmreg-run-note"]
    return cell


def load_output(out: Path, source: Path) -> tuple[Any, bool]:
    """The executed notebook, or the input one (marked not executed) when there is none."""
    import nbformat

    if out.is_file():
        try:
            return nbformat.read(out, as_version=4), True
        except Exception as exc:  # a kill during a save leaves half a file
            log.warning("papermill's output was unreadable (%s); keeping the input", exc)
    return nbformat.read(source, as_version=4), False


def _umask() -> int:
    # os.umask() can only be read by setting it, which races with other threads.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def write_atomic(path: Path, text: str, *, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` whole or not at all (a temp file, fsync, rename)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------- the record


def _describe(ended: Ended, clean: Any, secrets: Mapping[str, str]) -> str | None:
    """The run's error in one line, or None; the notebook gets a note for a stopped run."""
    if ended.stopped is not None:
        clean.cells.insert(0, _note_cell(_(
            "**This run was stopped: {reason}.** The cells below show what had run by then."
        ).format(reason=ended.stopped)))  # fmt: skip
        return ended.stopped
    if ended.returncode == 0:
        return None
    tail = [ln for ln in ended.stderr.splitlines() if ln.strip()]
    last = mask_text(tail[-1], secrets) if tail else _("no message")
    if ended.returncode == KERNEL_START_EXIT:
        return _one_line(_("the kernel did not start, twice: {message}").format(message=last))
    return _error_of(clean) or _one_line(
        _("papermill exited with code {code}: {message}").format(
            code=ended.returncode, message=last
        )
    )


def make_record(
    notebook: Path, ended: Ended, raw: Any, executed: bool, secrets: Mapping[str, str]
) -> tuple[Any, dict[str, Any], Summary | None, str | None, bool]:
    """The scrubbed notebook, its records, its summary (read once), the error (None: ok),
    and whether that error is only the summary's status (its go-live list says why)."""
    clean = scrub_notebook(raw, secrets)
    # papermill's "An Exception was encountered" banner: the summary card says it better.
    clean.cells = [
        c for c in clean.cells if _PAPERMILL_ERROR_TAG not in c.get("metadata", {}).get("tags", [])
    ]
    error = _describe(ended, clean, secrets)
    if not executed:
        clean.cells.insert(0, _note_cell(
            _("**This notebook did not run**: {reason}").format(reason=error or "")
        ))  # fmt: skip
    records = records_of(clean)
    data = records.get("summary")
    summary = Summary.from_json(data) if isinstance(data, Mapping) else None
    if error is not None and summary is None and executed and ended.stopped is None:
        # No summary card to show why: say it before the first cell.
        clean.cells.insert(0, _note_cell(_("**This run failed**: {reason}").format(reason=error)))
    status_only = False
    if error is None and summary is not None and summary.status != "ok":
        reason = summary.reason or _("a step has not run")
        error = _one_line(
            _("summary status {status}: {reason}").format(
                status=status_label(summary.status), reason=reason
            )
        )
        status_only = True
    return clean, records, summary, error, status_only


def write_record(
    clean: Any, summary: Summary | None, out_dir: Path, stem: str, secrets: Mapping[str, str],
    what: str,
) -> tuple[Path, Path, Path]:  # fmt: skip
    """Write the notebook and its two HTML copies (full, short), each checked for secrets."""
    import nbformat

    nb_text = nbformat.writes(clean)
    full = render_html(clean, summary)
    # The principal's page: one screen in plain words; without a summary, the charts.
    short = (
        render_principal_html(summary, full_record=f"{stem}.html")
        if summary is not None
        else render_html(clean, summary, short=True)
    )
    assert_notebook_clean(clean, secrets, what=_("the record of {name}").format(name=what))
    for page in (full, short):
        assert_page_clean(page, secrets, what=_("the HTML copy of {name}").format(name=what))
    paths = out_dir / f"{stem}.ipynb", out_dir / f"{stem}.html", out_dir / f"{stem}-short.html"
    for path, text in zip(paths, (nb_text, full, short), strict=True):
        write_atomic(path, text)
    return paths


_warmed = threading.Event()


def preload_html_export() -> None:
    """Import nbconvert and compile its template while papermill runs.

    A cold first export takes ~0.6 s more than a warm one; the parent process is
    idle while it waits for papermill, so the work costs no wall time there.
    """
    if _warmed.is_set():
        return
    _warmed.set()

    def work() -> None:
        import nbformat

        try:
            render_html(nbformat.v4.new_notebook())
        except Exception as exc:  # the real export reports any problem itself
            log.debug("HTML exporter warm-up failed: %s", exc)

    threading.Thread(target=work, name="lmreg-html", daemon=True).start()
