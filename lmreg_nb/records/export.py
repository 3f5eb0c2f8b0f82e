"""An executed notebook as one self-contained HTML page that opens offline.

nbconvert's ``lab`` template references require.js, MathJax, Mermaid and the
widget manager on public CDNs (slow or blocked for many schools); the template
here leaves those blocks empty, so the page loads nothing from outside. The
onboarding summary (two plain verdicts first) goes at the top. ``short=True``
is the principal's view: the summary and the charts, no code.
"""

from __future__ import annotations

import ast
import copy
import functools
import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..i18n import _
from ..summary import Summary
from ..terminal import shown_name, terminal_text
from .html import render_summary_html
from .text import fmt_name

if TYPE_CHECKING:
    import nbformat

__all__ = ["render_html"]

#: Blocks of nbconvert's lab template that load scripts from a CDN, emptied.
_TEMPLATE = """\
{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""
_TEMPLATE_NAME = "lmreg_offline.html.j2"
_IMAGE_TYPES = ("image/png", "image/svg+xml", "image/jpeg")

# One exporter per kind, used by one thread at a time (batch runs share them).
_LOCK = threading.Lock()


@functools.cache
def _exporter(short: bool) -> Any:
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({_TEMPLATE_NAME: _TEMPLATE})],
        exclude_anchor_links=True,
    )
    exporter.template_file = _TEMPLATE_NAME
    if short:
        exporter.exclude_input = True
        exporter.exclude_input_prompt = True
        exporter.exclude_output_prompt = True
    return exporter


def render_html(
    nb: nbformat.NotebookNode,
    summary: Summary | None = None,
    *,
    title: str | None = None,
    short: bool = False,
) -> str:
    """The notebook as one offline HTML page, the summary (when given) on top.

    ``short``: the principal's view, the summary and the charts only (no code cells).
    """
    if title is None:
        title = (
            _("Onboarding record: {school}").format(school=fmt_name(summary.school))
            if summary is not None and summary.school
            else _("Notebook record")
        )
    page_nb = _charts_only(nb) if short else _readable_parameters(nb)
    with _LOCK:
        body, _resources = _exporter(short).from_notebook_node(
            page_nb, resources={"metadata": {"name": title}}
        )
    # Outputs may hold what a server or a parameter sent: no control or bidi character
    # reaches the page raw (nbconvert renders only well-formed colour escapes).
    body = terminal_text(body.replace("\r\n", "\n"), lines=True, limit=None)
    lang = summary.lang if summary is not None and summary.lang else None
    if lang:
        body = re.sub(r"<html(\s|>)", f'<html lang="{lang}"\\1', body, count=1)
    if summary is None:
        return body
    top = render_summary_html(summary)
    match = re.search(r"<main[^>]*>", body) or re.search(r"<body[^>]*>", body)
    if match is None:
        return top + body
    return body[: match.end()] + top + body[match.end() :]


def _charts_only(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy holding one code cell per chart, without its code (the principal's view)."""
    import nbformat

    cells = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        images = [
            o
            for o in cell.get("outputs", []) or []
            if any(t in (o.get("data") or {}) for t in _IMAGE_TYPES)
        ]
        if images:
            chart = nbformat.v4.new_code_cell("")
            chart.outputs = copy.deepcopy(images)
            cells.append(chart)
    short = nbformat.v4.new_notebook(cells=cells)
    short.metadata = copy.deepcopy(nb.get("metadata", {}))
    return short


def _readable_parameters(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy whose papermill parameters cell shows non-ASCII text as itself (北京, not \\u5317)."""
    if not any(_is_parameters(c) for c in nb.get("cells", [])):
        return nb
    page = copy.deepcopy(nb)
    for cell in page.cells:
        if _is_parameters(cell):
            cell.source = _readable_source(cell.source)
    return page


def _is_parameters(cell: Mapping[str, Any]) -> bool:
    return "injected-parameters" in (cell.get("metadata", {}).get("tags") or [])


def _readable_source(source: str) -> str:
    """Each ``name = "..."`` line with escaped text written again as a plain Python literal."""
    lines = []
    for line in source.splitlines():
        match = re.fullmatch(r"(\s*[A-Za-z_]\w*\s*=\s*)(.+)", line)
        if match and ("\\u" in match.group(2) or not match.group(2).isascii()):
            try:
                value = ast.literal_eval(match.group(2))
            except (ValueError, SyntaxError):
                value = None
            if isinstance(value, str):
                line = match.group(1) + _visible_literal(value)
        lines.append(line)
    return "\n".join(lines)


def _visible_literal(value: str) -> str:
    """``repr(value)`` with every character a reader would not see (a variation selector,
    a filler, a blank, a joiner) written as its escape, as repr writes a control one."""
    return "".join(
        ch if ch.isascii() or shown_name(ch) == ch else ascii(ch)[1:-1] for ch in repr(value)
    )
