"""An extra argument is never printed back: it is often a key (found by the user pass of
the fifth release).

`lmreg-nb check URL KEY` is what a person who has used curl or `vllm bench` types when
told the address is an argument; click answered "Got unexpected extra argument
(sk-...)", printing the apiKey whole on the terminal (and into any log of it). Now an
extra argument shows only its last 4 characters, and `check` / `capacity` say where the
key goes instead.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from lmreg_nb.cli import main

KEY = "sk-typed-as-an-argument-0123456789WXYZ"
URL = "http://127.0.0.1:9/v1/chat/completions"


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env={"LMREG_MODEL_API_KEY": ""})
    return result.exit_code, result.output


@pytest.mark.parametrize("command", ["check", "capacity"])
def test_a_key_given_as_an_argument_is_not_printed(command: str, lang: str) -> None:
    code, out = _run("--lang", lang, command, URL, KEY)
    assert code == 2, out
    assert KEY not in out and "0123456789" not in out, out
    assert "…WXYZ" in out  # which argument was extra, still told
    assert "LMREG_MODEL_API_KEY" in out  # where the key goes
    assert len([line for line in out.splitlines() if line.strip()]) <= 3, out


def test_other_commands_mask_an_extra_argument_too(lang: str) -> None:
    code, out = _run("--lang", lang, "notebooks", "some-folder", KEY)
    assert code == 2, out
    assert KEY not in out and "…WXYZ" in out, out
