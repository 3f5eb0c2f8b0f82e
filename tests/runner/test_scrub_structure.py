"""Issue 42 item 7: the masker masks secrets in values, never in the record's own structure.

An apiKey holding a word of the notebook's format ("display": ``display_name``,
``display_data``) or of the page's CSS ("padding", "overflow") had its pieces
matched there: the kernelspec lost its ``display_name`` (a NotebookValidationError
traceback, no record), or the HTML copy was refused ("would still show
LMREG_MODEL_API_KEY ... nothing was written"). Keys, the format's own fields and
the page's CSS are structure; the secret is still masked wherever a value holds
it, whole or in pieces, and a whole secret in the structure still stops the write
with one line.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from fakes.summaries import demo_summary

from lmreg_nb.errors import SecretLeakError
from lmreg_nb.records import RECORD_MIME
from lmreg_nb.runner.gates import assert_page_clean
from lmreg_nb.runner.record import write_record
from lmreg_nb.runner.scrub import scrub_notebook
from lmreg_nb.secret import WINDOW

#: Keys made of words the notebook format or the page's CSS uses.
STRUCTURAL_KEYS = [
    "sk-display-0a1b2c3d4e5f",
    "sk-padding-0a1b2c3d4e5f",
    "sk-overflow-0a1b2c3d4e",
    "sk-language_info-kernelspec-9z8y",
    "sk-execution_count-output_type-1q2w",
]


def _notebook(key: str) -> nbformat.NotebookNode:
    """An executed onboarding-like notebook: a kernelspec, a summary record, an echo."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    nb.metadata["language_info"] = {"name": "python", "file_extension": ".py"}
    summary = demo_summary("en")
    record = nbformat.v4.new_code_cell("record('summary', s)")
    record.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                RECORD_MIME: {"name": "summary", "value": summary.to_json()},
                "text/plain": "summary",
            },
        )
    ]
    echo = nbformat.v4.new_code_cell("chat()")
    echo.outputs = [
        nbformat.v4.new_output(
            "stream", name="stdout", text=f"server said: bad key {key}; head {key[:12]}\n"
        ),
        nbformat.v4.new_output("execute_result", data={"text/plain": "done"}, execution_count=2),
    ]
    nb.cells = [record, echo]
    return nb


@pytest.mark.parametrize("key", STRUCTURAL_KEYS)
def test_a_structural_word_in_the_key_leaves_the_notebook_valid(key: str) -> None:
    secrets = {"LMREG_MODEL_API_KEY": key}
    clean = scrub_notebook(_notebook(key), secrets)
    nbformat.validate(clean)  # before: '…_name' instead of display_name
    assert clean.metadata.kernelspec.display_name == "Python 3"
    assert [o.output_type for o in clean.cells[1].outputs] == ["stream", "execute_result"]
    assert clean.cells[1].outputs[1].execution_count == 2
    text = clean.cells[1].outputs[0].text
    assert key not in text and key[:WINDOW] not in text  # the value is still masked


@pytest.mark.parametrize("key", STRUCTURAL_KEYS)
def test_the_record_is_written_and_masked(tmp_path: Path, key: str) -> None:
    secrets = {"LMREG_MODEL_API_KEY": key}
    clean = scrub_notebook(_notebook(key), secrets)
    summary = demo_summary("en")
    paths = write_record(clean, summary, tmp_path, "onboarding", secrets, "onboarding.ipynb")
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert key not in text and key[:12] not in text, path.name
    nbformat.validate(nbformat.read(paths[0], as_version=4))
    page = paths[1].read_text(encoding="utf-8")
    assert "padding" in page and "overflow" in page and "display" in page  # the CSS is whole
    assert "server said: bad key …" in page


def test_a_whole_key_in_the_structure_still_stops_the_write(tmp_path: Path) -> None:
    key = "sk-structural-0a1b2c3d4e5f"
    secrets = {"LMREG_MODEL_API_KEY": key}
    nb = _notebook("nothing")
    nb.cells[1].outputs[1].data["application/json"] = {key: "a key as a key"}
    clean = scrub_notebook(nb, secrets)
    with pytest.raises(SecretLeakError, match="LMREG_MODEL_API_KEY") as info:
        write_record(clean, None, tmp_path, "onboarding", secrets, "onboarding.ipynb")
    assert "\n" not in str(info.value) and key not in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing was written


@pytest.mark.parametrize(
    ("page", "leaks"),
    [
        ("<style>.x{padding:0;overflow:auto;display:none}</style><p>fine</p>", False),
        ('<p class="padding-x" style="overflow:auto">fine</p>', False),
        ("<style>.x{padding:0}</style><p>key sk-padding-0a</p>", True),  # a piece in text
        ('<a title="sk-padding-0a1b">x</a>', True),  # an attribute a person reads
        ("<p>sk-padd<b>ing-0a1b</b></p>", True),  # split by markup, read as one
        ("<style>/* sk-padding-0a1b2c3d4e5f */</style>", True),  # the whole key, anywhere
        ("<p>key sk-padding-0a1b2c3d4e5f</p>", True),
    ],
)
def test_the_page_gate_reads_what_a_person_reads(page: str, leaks: bool) -> None:
    secrets = {"LMREG_MODEL_API_KEY": "sk-padding-0a1b2c3d4e5f"}
    if leaks:
        with pytest.raises(SecretLeakError):
            assert_page_clean(page, secrets, what="the page")
    else:
        assert_page_clean(page, secrets, what="the page")


@pytest.mark.parametrize("key", STRUCTURAL_KEYS[:3])
def test_the_css_of_our_own_html_outputs_stays_whole(tmp_path: Path, key: str) -> None:
    from lmreg_nb.display import Outcome
    from lmreg_nb.records.html import render_summary_html

    secrets = {"LMREG_MODEL_API_KEY": key}
    card = render_summary_html(demo_summary("en"))
    outcome = Outcome("chat", [("reply", f"the server said {key}")])._repr_html_()
    nb = _notebook(key)
    nb.cells[1].outputs[1].data["text/html"] = card + outcome
    clean = scrub_notebook(nb, secrets)
    shown = clean.cells[1].outputs[1].data["text/html"]
    assert shown == card + outcome.replace(key, f"…{key[-4:]}")  # only the echo changed
    write_record(clean, None, tmp_path, "onboarding", secrets, "onboarding.ipynb")
