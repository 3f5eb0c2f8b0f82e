"""A key echoed between terminal escape sequences (issue 33, partial).

``s\\x1b[0mk\\x1b[0m-…``: the text holds no piece of the key, but Jupyter and the
HTML copy render the escapes away and show it whole. Before: the live reply
showed it, and the record was refused ("the scrubber missed an encoding"),
so no record at all. Now the reply and the record are masked, and the record
is written.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
import pytest
from fakes.hostile import RENDERED_DISGUISES
from nbconvert.filters.ansi import ansi2html

from lmreg_nb.errors import SecretLeakError
from lmreg_nb.probe import Target, stream_chat
from lmreg_nb.runner.record import write_record
from lmreg_nb.runner.scrub import scrub_notebook
from lmreg_nb.secret import assert_clean, find_leaks, strip_escapes

KEY = "sk-escapes-Zx8Cv6Bn4Mq2Wr7T"
SECRETS = {"LMREG_MODEL_API_KEY": KEY}
CHAT = "/v1/chat/completions"


def shown(text: str) -> str:
    """What a person sees once the escapes (and, in a page, the tags) are rendered."""
    return html.unescape(re.sub(r"<[^>]*>", "", strip_escapes(text)))


@pytest.mark.parametrize("name", list(RENDERED_DISGUISES))
def test_the_live_reply_is_masked(echo_server: str, name: str) -> None:
    target = Target(f"{echo_server}/disguise/{name}{CHAT}", KEY, "m", timeout=5)
    reply = "".join(stream_chat(target, "hi"))
    assert reply.startswith("echo: ") and reply.endswith(" done")
    assert KEY[:7] not in shown(reply) and KEY not in ansi2html(reply), reply


@pytest.mark.parametrize("name", list(RENDERED_DISGUISES))
def test_the_record_is_written_with_the_echo_masked(tmp_path: Path, name: str) -> None:
    raw = "echo: " + RENDERED_DISGUISES[name](KEY) + " done"
    assert KEY in shown(raw) and find_leaks(raw, SECRETS)  # the disguise works on a reader
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("chat()")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=raw)]
    nb.cells = [cell, nbformat.v4.new_code_cell("print('kept')")]
    nb.cells[1].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="\x1b[31mred\x1b[0m")
    ]
    clean = scrub_notebook(nb, SECRETS)
    paths = write_record(clean, None, tmp_path, "onboarding", SECRETS, "onboarding")
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert KEY[:7] not in shown(text) and KEY[-7:] not in shown(text), path.name
        assert_clean(text, SECRETS, what=path.name)
    # Colours of outputs that hide nothing are kept.
    assert "\\u001b[31mred" in paths[0].read_text(encoding="utf-8")


def test_a_leak_message_says_what_the_server_did_not_the_scrubber() -> None:
    with pytest.raises(SecretLeakError) as exc:
        assert_clean("the key " + KEY, SECRETS, what="the record")
    message = str(exc.value)
    assert "scrubber" not in message and "sent it back" in message and KEY not in message
