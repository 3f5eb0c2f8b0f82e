"""Write the notebooks of this folder from the cell lists below (the source of truth).

    python notebooks/build.py                      # rewrite the notebooks (checked
                                                   # outputs kept when their cell is unchanged)
    python notebooks/build.py --outputs-from DIR   # keep the outputs of the cells nbval checks,
                                                   # taken from executed copies in DIR
    python notebooks/build.py --lang zh-CN         # the same notebooks in another language,
                                                   # under notebooks/<lang>/

The cells live in ``texts.py``, where every sentence a person reads (markdown,
parameter comments) goes through ``_()`` when :func:`build` runs, so each
language gets its own copy. Stored
notebooks carry no widget state, no papermill metadata and no outputs, except
the cells tagged ``nbval-check-output`` (nbval compares those, after
``nbval_sanitize.cfg``).
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from types import ModuleType

import nbformat
from nbformat.v4 import new_notebook

from lmreg_nb.i18n import current_language, set_language
from lmreg_nb.runner.shipped import NOTEBOOKS

HERE = Path(__file__).resolve().parent


def _texts() -> ModuleType:
    # Loaded by path: this script also runs as a file, not only as a module of a package.
    spec = importlib.util.spec_from_file_location("lmreg_notebook_texts", HERE / "texts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TEXTS = _texts()
CHECK: str = TEXTS.CHECK


def folder(lang: str = "en") -> Path:
    """Where the notebooks of ``lang`` live: this folder for English, ``<lang>/`` otherwise."""
    return HERE if lang == "en" else HERE / lang


def notebook(
    stem: str, lang: str = "en", outputs_from: Path | None = None
) -> nbformat.NotebookNode:
    """The notebook ``stem`` in ``lang`` with clean metadata (checked outputs from a run)."""
    previous = current_language()
    set_language(lang)
    try:
        cells = TEXTS.CELLS[stem]()
    finally:
        set_language(previous)
    nb = new_notebook(cells=cells)
    nb.metadata = nbformat.from_dict(
        {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        }
    )
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{stem.replace('_', '-')}-{i:02d}"
    source = (outputs_from or folder(lang)) / f"{stem}.ipynb"
    if source.is_file():
        executed = nbformat.read(source, as_version=4)
        for cell, done in zip(nb.cells, executed.cells, strict=False):
            # Without --outputs-from, the stored outputs of unchanged checked cells are kept.
            if CHECK in cell.metadata.get("tags", []) and done.source == cell.source:
                # nbval treats a cell with outputs and no execution count as never run.
                cell.execution_count = done.execution_count
                cell.outputs = [_clean_output(o) for o in done.outputs]
    return nb


def build(lang: str = "en", outputs_from: Path | None = None) -> list[Path]:
    """Write the notebooks of ``lang`` (English: into this folder); return their paths."""
    out = folder(lang)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for stem in NOTEBOOKS:
        nb = notebook(stem, lang, outputs_from)
        nbformat.validate(nb)
        nbformat.write(nb, out / f"{stem}.ipynb")
        written.append(out / f"{stem}.ipynb")
    return written


def _sanitize(text: str) -> str:
    """Apply nbval_sanitize.cfg, so stored outputs hold placeholders, not a run's ports and ids."""
    import re

    config = (HERE / "nbval_sanitize.cfg").read_text(encoding="utf-8")
    for regex, replace in re.findall(r"^regex: (.*)$\n^replace: (.*)$", config, flags=re.MULTILINE):
        text = re.sub(regex, replace, text)
    return text


def _clean_output(output: nbformat.NotebookNode) -> nbformat.NotebookNode:
    output = nbformat.from_dict(dict(output))
    output.pop("metadata", None)
    if "text" in output:
        output["text"] = _sanitize(output["text"])
    for mime, value in output.get("data", {}).items():
        if isinstance(value, str) and mime.startswith("text/"):
            output["data"][mime] = _sanitize(value)
    if output.get("output_type") in ("display_data", "execute_result"):
        output["metadata"] = {}
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--outputs-from", type=Path)
    parser.add_argument("--lang", action="append", help="en (default) or zh-CN; repeatable")
    args = parser.parse_args()
    for lang in args.lang or ["en"]:
        for path in build(lang, args.outputs_from):
            print(f"wrote {path.relative_to(HERE)}")


if __name__ == "__main__":
    main()
