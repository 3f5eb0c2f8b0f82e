"""The scrubber: a secret planted everywhere a notebook can hold one is gone afterwards."""

from __future__ import annotations

import base64
import html
import json
from typing import Any

import nbformat
import pytest

from lmreg_nb.errors import SecretLeakError, ValidationError
from lmreg_nb.runner import check_parameters, clean_environment
from lmreg_nb.runner.scrub import looks_secret, scrub_notebook, secret_values
from lmreg_nb.secret import WINDOW, assert_clean, find_leaks, mask_text

# Quotes, a backslash, markup and an ampersand: every escaping scheme changes it.
SECRET = 'CanarY"s3cr<et>&\\Zq7Wx9Vb2Ln4'
KEY = "sk-canarykey-0123456789abcdef"


def _leak_forms(secret: str) -> list[str]:
    """What a reader could recognise: the raw, JSON- and HTML-escaped forms, and every piece."""
    forms = [secret, json.dumps(secret)[1:-1], html.escape(secret)]
    pieces = [f[i : i + WINDOW] for f in forms for i in range(len(f) - WINDOW + 1)]
    return forms + pieces


def _planted() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {
            "state": {"m1": {"model_name": "PasswordModel", "state": {"value": SECRET}}},
            "version_major": 2,
            "version_minor": 0,
        }
    }
    nb.metadata["papermill"] = {
        "parameters": {"school": "X", "app_secret": SECRET},
        "environment_variables": {"LMREG_APP_SECRET": SECRET},
        "input_path": "in.ipynb",
        "output_path": "/tmp/private/out.ipynb",
    }
    params = nbformat.v4.new_code_cell(f'school = "X"\napp_secret = "{KEY}"\ncount = 3')
    params.metadata["tags"] = ["injected-parameters"]
    source = nbformat.v4.new_code_cell(
        f"secret = {SECRET!r}  # typed in by mistake\nprint('hello')"
    )
    blob = b"\x00prefix-bytes" + f"appid:{SECRET}".encode() + b"\x01suffix"
    outputs = nbformat.v4.new_code_cell("show()")
    outputs.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=f"raw {SECRET} and key {KEY}\n"),
        nbformat.v4.new_output("stream", name="stdout", text=json.dumps({"s": SECRET}) + "\n"),
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/html": f"<b>{html.escape(SECRET)}</b>",
                "text/plain": f"head only: {SECRET[:12]}... tail {KEY[-10:]}",
                "application/vnd.jupyter.widget-view+json": {"model_id": "m1", "version_major": 2},
            },
        ),
        nbformat.v4.new_output(
            "display_data",
            data={"application/vnd.jupyter.widget-state+json": {"state": {"value": SECRET}}},
        ),
        nbformat.v4.new_output(
            "stream",
            name="stdout",
            text="b64 " + " ".join(base64.b64encode(b"x" * n + blob).decode() for n in range(3)),
        ),
        nbformat.v4.new_output(
            "execute_result", data={"text/plain": repr({SECRET: "as a key"})}, execution_count=1
        ),
        nbformat.v4.new_output(
            "error", ename="CredentialsError", evalue=f"refused {SECRET}", traceback=[SECRET]
        ),
    ]
    markdown = nbformat.v4.new_markdown_cell("see attachment")
    markdown["attachments"] = {"a.txt": {"text/plain": base64.b64encode(SECRET.encode()).decode()}}
    nb.cells = [params, source, outputs, markdown]
    return nb


@pytest.fixture
def scrubbed() -> tuple[nbformat.NotebookNode, str]:
    nb = _planted()
    clean = scrub_notebook(nb, {"LMREG_APP_SECRET": SECRET, "LMREG_MODEL_API_KEY": KEY})
    return clean, nbformat.writes(clean)


def test_every_planted_secret_is_gone(scrubbed: tuple[nbformat.NotebookNode, str]) -> None:
    _clean, text = scrubbed
    for secret in (SECRET, KEY):
        for form in _leak_forms(secret):
            assert form not in text, f"{len(form)}-char form of a secret survived"
        assert base64.b64encode(secret.encode()).decode() not in text
    # What was around the secrets is still there: scrubbing is not deletion.
    assert "hello" in text and "raw …" in text and "CredentialsError" in text


def test_secret_inside_larger_base64_data_is_gone(
    scrubbed: tuple[nbformat.NotebookNode, str],
) -> None:
    _clean, text = scrubbed
    blob = b"\x00prefix-bytes" + f"appid:{SECRET}".encode() + b"\x01suffix"
    decoy = blob.replace(SECRET.encode(), b"\xff" * len(SECRET.encode()))
    for n in range(3):
        real = base64.b64encode(b"x" * n + blob).decode()
        other = base64.b64encode(b"x" * n + decoy).decode()
        differs = [i for i, (a, b) in enumerate(zip(real, other, strict=True)) if a != b]
        span = real[differs[0] + 2 : differs[-1] - 1]  # characters made of the secret only
        assert len(span) > 2 * WINDOW
        for i in range(len(span) - WINDOW + 1):
            assert span[i : i + WINDOW] not in text


def test_an_unscrubbed_notebook_would_fail_these_checks() -> None:
    # The checks above can fail: without the secrets, the scrubber leaves them all in.
    text = nbformat.writes(scrub_notebook(_planted(), []))
    assert SECRET[-12:] in text and json.dumps(SECRET)[1:-1] in text
    assert find_leaks(text, [SECRET, KEY]) == ["secret #1", "secret #2"]


def test_widget_state_and_papermill_parameters_are_removed(
    scrubbed: tuple[nbformat.NotebookNode, str],
) -> None:
    clean, text = scrubbed
    assert "widgets" not in clean.metadata
    assert "widget-state" not in text and "widget-view" not in text
    assert "parameters" not in clean.metadata.papermill
    assert "environment_variables" not in clean.metadata.papermill
    assert "output_path" not in clean.metadata.papermill
    assert clean.metadata.papermill["input_path"] == "in.ipynb"
    injected = clean.cells[0].source
    assert "app_secret = '…'  # removed: secret" in injected
    assert 'school = "X"' in injected and "count = 3" in injected
    # The output left with nothing but widget state is dropped; its text sibling stays.
    kinds = [o.output_type for o in clean.cells[2].outputs]
    assert kinds == ["stream", "stream", "display_data", "stream", "execute_result", "error"]
    assert "text/plain" in clean.cells[2].outputs[2].data


def test_the_input_notebook_is_not_changed() -> None:
    nb = _planted()
    before = nbformat.writes(nb)
    scrub_notebook(nb, [SECRET, KEY])
    assert nbformat.writes(nb) == before


def test_masked_values_keep_only_the_last_four_characters() -> None:
    assert mask_text(f"key={KEY}.", [KEY]) == f"key=…{KEY[-4:]}."
    # A piece of 8 characters is masked too (a truncated repr, a pandas cell).
    assert KEY[:WINDOW] not in mask_text(f"[{KEY[:12]}...]", [KEY])


def test_assert_clean_names_the_variable_never_the_value() -> None:
    with pytest.raises(SecretLeakError) as info:
        assert_clean(f"x {KEY[3:15]} y", {"LMREG_MODEL_API_KEY": KEY}, what="the record")
    message = str(info.value)
    assert "LMREG_MODEL_API_KEY" in message and "nothing was written" in message
    assert not any(form in message for form in _leak_forms(KEY))
    assert find_leaks("nothing here", [KEY]) == []


def test_secret_values_reads_known_and_secret_looking_variables() -> None:
    env = {
        "LMREG_APP_SECRET": "s-1234567890",
        "LMREG_TOKEN": "t",  # a known secret is kept however short
        "LMREG_TOKEN_PATH": "/openapi/v1/token",  # a setting, not a secret
        "LMREG_TOKEN_CACHE": "/home/x/tokens.json",
        "MY_DB_PASSWORD": "hunter2-hunter2",
        "FEATURE_KEY": "on",  # too short to be a secret worth masking everywhere
        "HTTPS_PROXY": "http://user:pr0xy-pass@proxy:3128",
        "LMREG_BASE_URL": "https://ai.example",
    }
    assert secret_values(env) == {
        "LMREG_APP_SECRET": "s-1234567890",
        "LMREG_TOKEN": "t",
        "MY_DB_PASSWORD": "hunter2-hunter2",
        "HTTPS_PROXY password": "pr0xy-pass",
    }


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"app_secret": "x"}, "app_secret: looks like a secret"),
        ({"api_key": "x"}, "api_key: looks like a secret"),
        ({"school": KEY}, "school: holds the value of LMREG_MODEL_API_KEY"),
        ({"notes": ["a", f"see {KEY}"]}, "notes: holds the value"),
    ],
)
def test_parameters_never_carry_a_secret(parameters: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        check_parameters(parameters, {"LMREG_MODEL_API_KEY": KEY})
    check_parameters({"school": "X", "check_requests": 0}, {"LMREG_MODEL_API_KEY": KEY})


def test_clean_environment_keeps_the_base_and_drops_the_operators_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LMREG_APP_SECRET", "operator-secret-123")
    monkeypatch.setenv("JUPYTER_TOKEN", "operator-jupyter-token")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "operator-aws")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    env = clean_environment({"LMREG_APP_ID": "school-app"})
    assert env["LMREG_APP_ID"] == "school-app"
    assert env["PATH"] and env["LC_ALL"] == "C.UTF-8"
    assert "LMREG_APP_SECRET" not in env
    assert "JUPYTER_TOKEN" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert looks_secret("JUPYTER_TOKEN") and not looks_secret("LMREG_TOKEN_PATH")


def test_papermill_writes_chinese_parameters_as_people_read_them() -> None:
    from papermill.translators import translate_parameters

    from lmreg_nb.runner.kernels import readable_parameters

    readable_parameters()
    cell = translate_parameters(
        "python3", "python", {"contact_name": "王芳", "odd": "a\u2028b"}, "# Parameters"
    )
    assert "contact_name = '王芳'" in cell and "\\u738b" not in cell
    assert "\u2028" not in cell and "odd = 'a\\u2028b'" in cell  # not printable: escaped
