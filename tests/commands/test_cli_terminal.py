"""What a platform sends never steers the terminal (issue 20, items 4, 5 and 6).

`lmreg-nb` runs in this process (CliRunner) against a scripted platform and a hostile
chat endpoint served in this process (tests/fakes/hosts.py: the registry client and the
probe speak HTTP to them over a real socket, no port bound). Where a test reads what a
terminal shows, it invokes with ``color=True``: click then strips nothing, as on a
terminal, so the bytes read are what a person's terminal would get. (A real `lmreg-nb`
process on a pseudo-terminal: tests/commands/test_cli_processes.py.)
Model fields, an env and error bodies hold escape sequences (clear screen,
window title, OSC 52 clipboard writes), C1 controls and bidi overrides: the
terminal shows a visible placeholder instead, JSON carries them escaped (the
data unchanged), a key inside a registryUrl's query is masked, a GBK terminal
gets no traceback, and an absurd Retry-After is not slept.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.hostile import ESCAPES, escapes_check_env, hostile_server
from fakes.loopback_platform import (
    APP_SECRET,
    TOKEN,
    Ran,
    Script,
    cli_env,
    envelope_error,
    loopback_platform,
)

from lmreg_nb.cli import main


def invoke(
    args: list[str], env: Mapping[str, str], *, terminal: bool = False, charset: str = "utf-8"
) -> Ran:
    """``lmreg-nb ARGS`` through CliRunner; ``terminal``: what a terminal shows, stdout and
    stderr as one stream, escape sequences not stripped by click (as on a terminal)."""
    started = time.monotonic()
    done = CliRunner(charset=charset).invoke(main, args, env=dict(env), color=terminal)
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    seconds = time.monotonic() - started
    if terminal:
        return Ran(done.exit_code, done.output_bytes, b"", seconds)
    return Ran(done.exit_code, done.stdout_bytes, done.stderr_bytes, seconds)


def shown_on_terminal(args: list[str], env: Mapping[str, str]) -> Ran:
    """What a terminal would show of ``lmreg-nb ARGS`` (stdout and stderr as one)."""
    return invoke(args, env, terminal=True)


OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # writes the clipboard on some terminals
TITLE = "\x1b]0;pwned\x07"  # sets the window title
CLEAR = "\x1b[2J\x1b[H"  # clears the screen
C1 = "\x9b31m"  # an 8-bit CSI
BIDI = "\u202e"  # right-to-left override
#: Raw bytes that must never reach a terminal (U+009B, U+202E, U+2066 as UTF-8).
FORBIDDEN = (b"\x1b", b"\x07", b"\x08", b"\x7f", b"\xc2\x9b", b"\xe2\x80\xae", b"\xe2\x81\xa6")

HOSTILE_MODELS = [
    {
        "modelId": "m1" + CLEAR,
        "modelName": "good" + OSC52 + "model",
        "registryUrl": "https://llm.example/v1/chat/completions" + TITLE,
        "apiKey": "sk-hostile-0123456789",
        "createTime": 1_700_000_000_000,
        "updateTime": 1_700_000_000_000,
    },
    {
        "modelId": "m2",
        "modelName": "report" + BIDI + "fdp.exe" + C1 + "\u2066x\x7f\x08",
        "registryUrl": "https://llm.example/v1/chat/completions\rFAKE",
        "apiKey": "",
        "createTime": 1_700_000_000_000,
        "updateTime": 1_700_000_000_000,
    },
]


@pytest.fixture
def platform() -> Iterator[tuple[str, Script]]:
    with loopback_platform() as running:
        yield running


def _assert_safe(raw: bytes) -> None:
    shown = raw.replace(b"\r\n", b"\n")  # a pseudo-terminal turns \n into \r\n
    for bad in FORBIDDEN:
        assert bad not in shown, f"{bad!r} reached the terminal: {shown[:400]!r}"
    assert b"\r" not in shown, f"a carriage return reached the terminal: {shown[:400]!r}"
    assert b"Traceback" not in shown


def _no_secret(ran: Ran) -> None:
    for secret in (APP_SECRET, TOKEN):
        assert secret.encode() not in ran.stdout + ran.stderr


def test_models_table_on_a_terminal_shows_placeholders_not_escapes(
    platform: tuple[str, Script], tmp_path: Path
) -> None:
    base, script = platform
    script.models = HOSTILE_MODELS
    ran = shown_on_terminal(["models"], cli_env(base, tmp_path))
    assert ran.returncode == 0, ran.stdout
    _assert_safe(ran.stdout)
    text = ran.stdout.decode()
    assert "good\ufffd" in text and "model" in text and "report\ufffdfdp.exe" in text
    assert "\ufffdFAKE" in text  # the carriage return is shown, not obeyed


def test_models_json_escapes_controls_and_keeps_the_data(
    platform: tuple[str, Script], tmp_path: Path
) -> None:
    base, script = platform
    script.models = HOSTILE_MODELS
    ran = invoke(["models", "--json"], cli_env(base, tmp_path))
    assert ran.returncode == 0, ran.stderr
    _assert_safe(ran.stdout)
    rows = json.loads(ran.stdout)
    # Lossless: a program reading the JSON gets exactly what the platform sent.
    assert [r["modelName"] for r in rows] == [m["modelName"] for m in HOSTILE_MODELS]
    assert rows[1]["registryUrl"] == HOSTILE_MODELS[1]["registryUrl"]


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, envelope_error(40000, "bad field" + TITLE + CLEAR + BIDI + "\nFAKE: all good")),
        (400, b"<html><head><title>Gateway" + OSC52.encode() + b"\xe2\x80\xae</title></html>"),
        (403, envelope_error(40300, "env" + C1 + "\x7f refused")),
    ],
    ids=["envelope-message", "html-title", "c1-and-del"],
)
def test_an_error_body_reaches_the_terminal_as_one_safe_line(
    platform: tuple[str, Script], tmp_path: Path, status: int, body: bytes
) -> None:
    base, script = platform
    script.query_error = (status, body, {})
    ran = shown_on_terminal(["models"], cli_env(base, tmp_path))
    assert ran.returncode == 1, ran.stdout
    _assert_safe(ran.stdout)
    lines = [line for line in ran.stdout.decode().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: listing the models failed"), lines
    _no_secret(ran)


def test_token_env_with_escapes_is_refused_and_shown_escaped(
    platform: tuple[str, Script], tmp_path: Path
) -> None:
    # No HTTP header can carry such an env (issue 33, item 6): refused at exchange time,
    # named as escaped text, never steering the terminal.
    base, script = platform
    script.env = "env-a" + TITLE + BIDI
    ran = shown_on_terminal(["token"], cli_env(base, tmp_path))
    assert ran.returncode == 1, ran.stdout
    _assert_safe(ran.stdout)
    lines = [line for line in ran.stdout.decode().splitlines() if line.strip()]
    assert len(lines) == 1 and "env-a\\x1b]0;pwned" in lines[0], lines


QUERY_KEY = "sk-school-QUERYKEY-5e4d3c2b1a"


@pytest.mark.parametrize("returned", [True, False], ids=["key-returned", "key-from-env"])
@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_models_masks_a_key_in_the_registry_url_query(
    platform: tuple[str, Script], tmp_path: Path, returned: bool, as_json: bool
) -> None:
    """Records mask it (the scrubber knows the key); so does the CLI."""
    base, script = platform
    script.models = [
        {
            "modelId": "m1",
            "modelName": "school-llm",
            "registryUrl": f"https://llm.example/v1/chat/completions?api_key={QUERY_KEY}&x=1",
            "apiKey": QUERY_KEY if returned else "",
            "createTime": 1_700_000_000_000,
        }
    ]
    extra = {} if returned else {"LMREG_MODEL_API_KEY": QUERY_KEY}
    ran = invoke(["models", *(["--json"] if as_json else [])], cli_env(base, tmp_path, **extra))
    assert ran.returncode == 0, ran.stderr
    out = ran.stdout.decode()
    assert "api_key=…2b1a" in out, out
    for i in range(len(QUERY_KEY) - 8):
        assert QUERY_KEY[i : i + 8] not in out, f"a piece of the key is readable: {out}"


def test_a_gbk_terminal_gets_replacements_not_a_traceback(
    platform: tuple[str, Script], tmp_path: Path
) -> None:
    base, script = platform
    script.models = [{**HOSTILE_MODELS[0], "modelName": "模型-😀-ǅ"}]
    env = cli_env(base, tmp_path)
    for args in (["models"], ["models", "--json"]):
        ran = invoke(args, env, charset="gbk")  # stdout in GBK, strict: what it lacks raises
        assert ran.returncode == 0, ran.stderr.decode("gbk", "replace")
        text = ran.stdout.decode("gbk")  # every byte is valid GBK
        assert "模型-" in text
        assert b"Traceback" not in ran.stderr
    # The JSON stays valid and exact: what GBK lacks is \u-escaped.
    assert json.loads(text)[0]["modelName"] == "模型-😀-ǅ"
    # An error line outside GBK too (stderr): \u-escaped by the toolkit (CliRunner's own
    # stderr would write a backslashreplace \U0001f600 instead of failing).
    script.query_error = (400, envelope_error(40000, "名称 😀 不可用"), {})
    ran = invoke(["models"], env, charset="gbk")
    assert ran.returncode == 1 and b"Traceback" not in ran.stderr
    said = ran.stderr.decode("gbk")
    assert "名称" in said and "\\ud83d\\ude00" in said, said


def test_an_absurd_retry_after_is_not_slept(platform: tuple[str, Script], tmp_path: Path) -> None:
    """Retry-After: 1000000 made `models` sleep 91 s; now it gives up at once."""
    base, script = platform
    script.query_error = (429, envelope_error(42900, "slow down"), {"Retry-After": "1000000"})
    ran = invoke(["models"], cli_env(base, tmp_path))
    assert ran.returncode == 1 and b"Traceback" not in ran.stderr
    assert b"429" in ran.stderr
    assert ran.seconds < 15, f"took {ran.seconds:.1f} s"
    assert script.requests.count("/openapi/v1/query-models") == 1


def test_a_short_retry_after_is_honoured(platform: tuple[str, Script], tmp_path: Path) -> None:
    base, script = platform
    script.query_error = (429, envelope_error(42900, "slow down"), {"Retry-After": "1"})
    script.query_errors_left = 1
    ran = invoke(["models"], cli_env(base, tmp_path))
    assert ran.returncode == 0, ran.stderr
    assert script.requests.count("/openapi/v1/query-models") == 2
    assert ran.seconds >= 1.0


def test_check_details_quoting_the_server_are_safe(tmp_path: Path) -> None:
    # Every answer is an error quoting escape sequences: these.
    assert ESCAPES == TITLE + CLEAR + BIDI + C1
    with hostile_server() as base:
        ran = shown_on_terminal(["check"], escapes_check_env(base, tmp_path))
    assert ran.returncode == 1, ran.stdout
    _assert_safe(ran.stdout)
    assert b"System role not supported" in ran.stdout
