"""A text as a notebook's stream output, through the scrubber: what a record keeps of it."""

from __future__ import annotations

import json
from collections.abc import Mapping

import nbformat

from lmreg_nb.runner.scrub import scrub_notebook

__all__ = ["scrubbed_stream"]


def scrubbed_stream(raw: str, secrets: Mapping[str, str]) -> tuple[str, str]:
    """``raw`` printed by a cell, scrubbed with ``secrets``: (the record as written, the
    output's text in it)."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("chat()")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=raw)]
    nb.cells = [cell]
    record = nbformat.writes(scrub_notebook(nb, dict(secrets)))
    text = json.loads(record)["cells"][0]["outputs"][0]["text"]  # a list of lines on disk
    return record, "".join(text) if isinstance(text, list) else text
