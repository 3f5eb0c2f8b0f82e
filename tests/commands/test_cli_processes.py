"""The CLI as a person runs it: real ``lmreg-nb`` processes, where the process is the point.

Bad values are one line and exit 2, never a traceback (issue 33, item 8): the bytes that
are not UTF-8 come through the environment or argv as a shell would pass them. Output on
/dev/full is one line. The registry commands against the sandbox process leak no secret.
Ctrl-C in a capacity search prints what was measured so far. A real terminal gets no
escape sequence a server quotes. Onboard and batch against endpoints that echo the apiKey
leave no secret in what they print or write.
(Everything else of the CLI is tested in this process, through CliRunner.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from fakes.hostile import Base, escapes_check_env, hostile_tcp_server
from fakes.loopback_platform import finish_cli, start_cli
from leaks import CANARY_KEY, leaks_in

from lmreg_nb.errors import ConfigurationError
from lmreg_nb.settings import Settings

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

ROOT = Path(__file__).resolve().parents[2]
SECRET = b"APPSECRET-bad-values-7f3e"
NOT_UTF8 = b"\xff\xfe"


def _run(args: list[bytes], env: dict[bytes, bytes], cwd: Path) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environb.items()
        if not k.startswith((b"LMREG_", b"PYTHONIO", b"LANG", b"LC_"))
    }
    base.update(
        {
            b"PYTHONPATH": os.fsencode(ROOT),
            b"HOME": os.fsencode(cwd),
            b"LMREG_LANG": b"en",
            b"LMREG_ENV_FILE": b"/dev/null",
            b"LMREG_BASE_URL": b"http://127.0.0.1:9",
            b"LMREG_APP_ID": b"app-bad-values",
            b"LMREG_APP_SECRET": SECRET,
            b"LMREG_TOKEN_CACHE": os.fsencode(cwd / "tokens.json"),
            b"LMREG_TIMEOUT": b"2",
        }
    )
    base.update(env)
    return subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"lmreg_nb", *args],
        env=base,
        cwd=cwd,
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


CASES = {
    "base-url-not-utf8": ([b"token"], {b"LMREG_BASE_URL": b"http://127.0.0.1:9/" + NOT_UTF8}),
    "base-url-broken-ipv6": ([b"token"], {b"LMREG_BASE_URL": b"http://[::1"}),
    "base-url-bad-port": ([b"models"], {b"LMREG_BASE_URL": b"http://127.0.0.1:99999"}),
    "app-secret-not-utf8": ([b"token"], {b"LMREG_APP_SECRET": b"APPSECRET" + NOT_UTF8 + b"x"}),
    "token-cache-root": ([b"token"], {b"LMREG_TOKEN_CACHE": b"/"}),
    "watch-notify-not-utf8": (
        [b"watch", b"--rounds", b"1", b"--notify", b"json://user:pw" + NOT_UTF8 + b"@127.0.0.1:9/"],
        {},
    ),
    "watch-school-not-utf8": (
        [b"watch", b"--rounds", b"1", b"--notify", b"json://127.0.0.1:9/", b"--school", NOT_UTF8],
        {},
    ),
}

NAMED = {
    "base-url-not-utf8": b"LMREG_BASE_URL",
    "base-url-broken-ipv6": b"LMREG_BASE_URL",
    "base-url-bad-port": b"LMREG_BASE_URL",
    "app-secret-not-utf8": b"LMREG_APP_SECRET",
    "token-cache-root": b"LMREG_TOKEN_CACHE",
    "watch-notify-not-utf8": b"--notify",
    "watch-school-not-utf8": b"--school",
}


@pytest.mark.slow  # a real lmreg-nb process: values no str holds (bytes in the environment)
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_bad_value_is_one_line_naming_it_and_exit_2(tmp_path: Path, case: str) -> None:
    args, env = CASES[case]
    done = _run(args, env, tmp_path)
    err = done.stderr.strip()
    assert done.returncode == 2, (case, done.stderr[-600:])
    assert b"Traceback" not in done.stderr and len(err.splitlines()) == 1, err
    assert err.startswith(b"error: ") and NAMED[case] in err
    assert SECRET not in done.stdout + done.stderr and b"pw" not in err


@pytest.mark.slow  # a real lmreg-nb process: values no str holds (bytes in the environment)
def test_the_line_follows_the_language(tmp_path: Path) -> None:
    done = _run([b"--lang", b"zh-CN", b"check", b"--registered", NOT_UTF8], {}, tmp_path)
    assert done.returncode == 2
    assert "不是 UTF-8".encode() in done.stderr and b"--registered" in done.stderr


def test_settings_refuse_the_values_in_process() -> None:
    bad = "http://127.0.0.1:9/" + NOT_UTF8.decode("utf-8", "surrogateescape")
    with pytest.raises(ConfigurationError) as exc:
        Settings.load(environ={"LMREG_BASE_URL": bad})
    assert exc.value.variable == "LMREG_BASE_URL"
    with pytest.raises(ConfigurationError) as exc:
        Settings.load(environ={"LMREG_TOKEN_CACHE": str(Path.home())})
    assert exc.value.variable == "LMREG_TOKEN_CACHE"
    with pytest.raises(ConfigurationError):
        Settings.load(environ={"LMREG_BASE_URL": "http://[::1"}).require("base_url")


# -- output on /dev/full ------------------------------------------------------------


@pytest.mark.slow  # a real process's stdout on /dev/full is the point
@pytest.mark.parametrize("args", [["--help"], ["notebooks", "nb"]], ids=["help", "notebooks"])
def test_output_on_dev_full_is_one_line(tmp_path: Path, args: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LMREG_LANG": "en", "HOME": str(tmp_path)}
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "lmreg_nb", *args],
            stdout=full, stderr=subprocess.PIPE, env=env, cwd=tmp_path, timeout=60,
        )  # fmt: skip
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "Traceback" not in err and "Exception ignored" not in err, err
    assert err.splitlines() == ["error: No space left on device"]


# -- the registry commands against the sandbox process -------------------------------


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lmreg_nb", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.slow  # the sandbox and the CLI as processes, as a person runs them
def test_cli_against_the_sandbox_leaks_no_secret(
    sandbox_process: SandboxInfo, tmp_path: Path
) -> None:
    app = sandbox_process.add_app("cli-school")
    canary_key = "CANARY-cli-apikey-4b8d2f6a"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / ".cache"),
        **sandbox_process.env(),
        "LMREG_APP_ID": app["app_id"],
        "LMREG_APP_SECRET": app["app_secret"],
        "LMREG_MODEL_API_KEY": canary_key,
    }
    runs = [
        (cli(env, "token"), 0),
        (cli(env, "register", "--name", "cli-model"), 0),
        (cli(env, "register", "--name", "cli-model"), 1),
        (cli(env, "models", "--json"), 0),
        (cli(env, "modify", "--name", "cli-model", "--new-name", "cli-model-2"), 0),
        (cli(env, "models"), 0),
        (
            cli(
                {
                    **env,
                    "LMREG_APP_SECRET": app["app_secret"] + "-wrong",
                    "XDG_CACHE_HOME": str(tmp_path / "c2"),
                },
                "token",
            ),
            1,
        ),
        (cli({**env, "LMREG_BASE_URL": ""}, "models"), 2),
    ]
    cache = json.loads((tmp_path / ".cache" / "lmreg_nb" / "tokens.json").read_text())
    token = cache["tokens"][0]["token"]
    for done, code in runs:
        assert done.returncode == code, done.stderr
        assert "Traceback" not in done.stderr
        for canary in (canary_key, app["app_secret"], token):
            assert canary not in done.stdout + done.stderr
    assert f"env:     {app['env']}" in runs[0][0].stdout and token[-4:] in runs[0][0].stdout
    assert "registered cli-model" in runs[1][0].stdout
    assert "warning: registryUrl" in runs[1][0].stderr
    # Each warning once (the client no longer logs them at WARNING as well).
    assert runs[1][0].stderr.count("plain http") == 1, runs[1][0].stderr
    assert "code 40900" in runs[2][0].stderr
    rows = json.loads(runs[3][0].stdout)
    assert [r["modelName"] for r in rows] == ["cli-model"] and rows[0][
        "apiKey"
    ] == "…" + canary_key[-4:]
    assert "cli-model-2" in runs[5][0].stdout
    assert "LMREG_APP_ID and LMREG_APP_SECRET" in runs[6][0].stderr
    # The advice is given once: the hint is dropped when the server's message says it.
    assert runs[6][0].stderr.count("LMREG_APP_SECRET") == 1, runs[6][0].stderr
    assert "LMREG_BASE_URL" in runs[7][0].stderr


# -- Ctrl-C in a capacity search -------------------------------------------------------


@pytest.mark.slow  # a signal to a real process is the point
def test_ctrl_c_in_capacity_prints_what_was_measured_so_far(
    sandbox_process: SandboxInfo, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "LMREG_MODEL_URL": sandbox_process.model_url,
        "LMREG_MODEL_API_KEY": sandbox_process.model_api_key,
        "LMREG_MODEL_NAME": "m",
        "LMREG_LANG": "en",
    }
    # SIGINT's default action in the child, as a terminal's command has it: pytest started
    # in the background of a non-interactive shell passes SIGINT on ignored, and Python
    # then installs no KeyboardInterrupt (the search ran to its end, exit 0).
    proc = subprocess.Popen(
        [sys.executable, "-m", "lmreg_nb", "capacity", "--level-seconds", "1",
         "--figure", str(tmp_path / "cap.png")],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert proc.stderr is not None
    warming = proc.stderr.readline()  # the warm-up, then the first level's progress
    first = proc.stderr.readline()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert warming.startswith("Warming up")
    assert first.startswith("concurrency 1: ")
    assert proc.returncode == 1
    assert "chats at once  requests  errors" in out, out
    assert "The search was interrupted: this is what was measured so far." in out
    assert "Traceback" not in err
    assert sandbox_process.model_api_key not in out + err


# -- what a real terminal gets ----------------------------------------------------------

#: Raw bytes that must never reach a terminal (ESC, BEL, BS, DEL, U+009B, U+202E, U+2066).
FORBIDDEN = (b"\x1b", b"\x07", b"\x08", b"\x7f", b"\xc2\x9b", b"\xe2\x80\xae", b"\xe2\x81\xa6")


@pytest.mark.slow  # a real process on a pseudo-terminal (its progress lines too) is the point
def test_check_on_a_terminal_shows_no_escape_a_server_quotes(tmp_path: Path) -> None:
    """What tests/commands/test_cli_terminal.py reads in this process, once on a real
    terminal: stdout and stderr a pseudo-terminal, where the check's progress is drawn."""
    from fakes.loopback_platform import run_cli_on_tty

    with hostile_tcp_server() as base:
        ran = run_cli_on_tty(["check"], escapes_check_env(base, tmp_path), tmp_path)
    assert ran.returncode == 1, ran.stdout
    shown = ran.stdout.replace(b"\r\n", b"\n")  # a pseudo-terminal turns \n into \r\n
    for bad in FORBIDDEN:
        assert bad not in shown, f"{bad!r} reached the terminal: {shown[:400]!r}"
    assert b"\r" not in shown, f"a carriage return reached the terminal: {shown[:400]!r}"
    assert b"Traceback" not in shown
    assert b"System role not supported" in shown


# -- onboard and batch against endpoints that echo the apiKey ---------------------------


@pytest.fixture(scope="module")
def echo_tcp() -> Iterator[Base]:
    """tests/fakes/hostile.py's server on a loopback port, for processes and their kernels:
    its /canary/ paths echo the Authorization header everywhere they can."""
    with hostile_tcp_server() as base:
        yield base


def _canary_cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """A started `lmreg-nb` process (no LMREG_* of this one's); :func:`finish_cli` waits."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")} | env
    return start_cli(args, full, cwd)


def _files_text(folder: Path) -> dict[Path, str]:
    return {p: p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*") if p.is_file()}


def _echo_env(sandbox_process: SandboxInfo, echo_url: str) -> dict[str, str]:
    env = sandbox_process.env()
    env.update(
        {
            "LMREG_MODEL_URL": echo_url,
            "LMREG_MODEL_API_KEY": CANARY_KEY,
            "LMREG_MODEL_NAME": "echo-llm",
        }
    )
    return env


@pytest.mark.notebooks
def test_onboard_and_batch_leave_no_secret(
    echo_tcp: Base, sandbox_process: SandboxInfo, tmp_path: Path
) -> None:
    """tests/commands/test_canary_leaks.py's echoing endpoint, met by `onboard` and `batch`
    as real processes (their notebook runs are processes anyway): every byte they print
    or write is searched with the leak detector of tests/leaks.py."""
    echo_base = f"{echo_tcp}/canary"
    asked = len(echo_tcp.requests)
    secrets = {"apiKey": CANARY_KEY, "appSecret": sandbox_process.app_secret}
    env = _echo_env(sandbox_process, f"{echo_base}/ereply/v1/chat/completions")
    params = [
        "-p", "school", "Canary School", "-p", "contact_name", "Li Hua",
        "-p", "contact_mobile", "13800138000", "-p", "contact_email", "ops@canary.example",
        "-p", "model_name", "canary-model",
    ]  # fmt: skip
    school_env = _echo_env(sandbox_process, f"{echo_base}/e500/v1/chat/completions")
    (tmp_path / "school.env").write_text(
        "".join(f"{k}={v}\n" for k, v in school_env.items()), encoding="utf-8"
    )
    (tmp_path / "plan.csv").write_text(
        "run_id,env_file,school,contact_name,contact_mobile,contact_email,model_name,check_requests\n"
        "canary-b,school.env,Canary B,Wang Fang,13900001111,ops@b.example,canary-b,0\n",
        encoding="utf-8",
    )
    # The two commands run at the same time: each only waits on its own notebook run.
    onboard = _canary_cli(["onboard", "--out", str(tmp_path / "one"), *params], env, tmp_path)
    try:
        batch = _canary_cli(
            ["batch", "plan.csv", "--out", str(tmp_path / "batch"), "--jobs", "1"], {}, tmp_path
        )
        batch_out, batch_err = finish_cli(batch)
    finally:
        onboard_out, onboard_err = finish_cli(onboard)
    assert "Traceback" not in onboard_err, onboard_err[-2000:]
    assert (tmp_path / "one").is_dir(), onboard_out + onboard_err
    assert "Traceback" not in batch_err, batch_err[-2000:]
    assert (tmp_path / "batch").is_dir(), batch_out + batch_err

    assert len(echo_tcp.requests) > asked  # the runs met the echoes (no leak unseen)
    printed = onboard_out + onboard_err + batch_out + batch_err
    assert leaks_in(printed, secrets) == [], printed[-3000:]
    written = _files_text(tmp_path / "one") | _files_text(tmp_path / "batch")
    assert written, "no file was written"
    leaked = {str(p): leaks_in(text, secrets) for p, text in written.items()}
    assert {p: labels for p, labels in leaked.items() if labels} == {}
