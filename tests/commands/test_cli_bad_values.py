"""Bad values are one line and exit 2, never a traceback (issue 33, item 8).

Each case runs ``lmreg-nb`` as a real process: the bytes that are not UTF-8 come
through the environment or argv as a shell would pass them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmreg_nb.errors import ConfigurationError
from lmreg_nb.settings import Settings

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
