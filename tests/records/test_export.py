"""The HTML record: self-contained (nothing loaded from outside), readable, a short view."""

from __future__ import annotations

from html.parser import HTMLParser

import nbformat
import pytest

from lmreg_nb.records.export import render_html
from lmreg_nb.summary import ModelRecord, Step, Summary, build_summary


class _Refs(HTMLParser):
    """Every URL the page would load: src/href of any tag, @import and url() in styles."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "data-src", "xlink:href") and value:
                self.refs.append(value)


def _external(page: str) -> list[str]:
    parser = _Refs()
    parser.feed(page)
    import re

    refs = parser.refs + re.findall(r"@import\s+(?:url\()?['\"]?([^'\")\s;]+)", page)
    refs += re.findall(r"url\(\s*['\"]?(https?:[^'\")]+)", page)
    # Script text that builds a script element from a URL would also load it.
    refs += re.findall(r"\.src\s*=\s*['\"](https?:[^'\"]+)", page)
    return [r for r in refs if not r.startswith(("data:", "#"))]


def _notebook() -> nbformat.NotebookNode:
    params = nbformat.v4.new_code_cell('school = "\\u5317\\u4eac\\u4e2d\\u5b66"\nclass_size = 40')
    params.metadata["tags"] = ["injected-parameters"]
    code = nbformat.v4.new_code_cell("print('secret code')")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
    chart = nbformat.v4.new_code_cell("run.figure()")
    chart.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "x"}
        )
    ]
    maths = nbformat.v4.new_markdown_cell("Time to first token $t_0$ and a [link](#top)")
    return nbformat.v4.new_notebook(cells=[maths, params, code, chart])


def _summary() -> Summary:
    names = ("contact card", "token", "register", "list models", "chat endpoint checks")
    return build_summary(
        school="北京中学", contact=None, base_url=None, env=None,
        steps=[Step(n, True, "done") for n in names],
        models=[ModelRecord("m", registry_url="http://127.0.0.1:8766/v1/chat/completions")],
        checks=[],
    )  # fmt: skip


@pytest.mark.parametrize("short", [False, True])
def test_the_html_record_loads_nothing_from_outside(short: bool) -> None:
    page = render_html(_notebook(), _summary(), short=short)
    assert _external(page) == []
    assert "cdnjs" not in page and "require.js" not in page and "unpkg" not in page


def test_the_detector_sees_an_external_script() -> None:
    assert _external('<script src="https://cdn.example/x.js"></script>') == [
        "https://cdn.example/x.js"
    ]


def test_the_html_record_shows_the_verdicts_and_readable_parameters() -> None:
    page = render_html(_notebook(), _summary())
    assert page.index("Not ready for go-live") < page.index("secret code")
    assert "北京中学" in page and "\\u5317" not in page
    assert "Onboarding record: 北京中学" in page  # the title


def test_the_short_view_has_the_summary_and_charts_but_no_code() -> None:
    page = render_html(_notebook(), _summary(), short=True)
    assert "Not ready for go-live" in page and "iVBORw0KGgo=" in page
    assert "print(" not in page and "secret code" not in page and "hello" not in page
