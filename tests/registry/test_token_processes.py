"""The token cache across processes: one exchange for all, and no fcntl needed.

Processes are the point here: the cache's file lock is held by separate interpreters
(three at once), and a fresh interpreter imports the package as Windows would, with
no fcntl. The token logic itself is tested in-process in test_tokens.py.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test starts Python interpreters


_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from lmreg_nb.models import Token, now_ms
    from lmreg_nb.secret import Secret
    from lmreg_nb.settings import Settings
    from lmreg_nb.registry.tokens import TokenProvider

    cache, counter = Path(sys.argv[1]), Path(sys.argv[2])
    settings = Settings.load(environ={}, base_url="https://platform.test", app_id="app",
                             app_secret="s3cr3t-value", token_cache=cache)

    def exchange():
        with counter.open("a") as fh:
            fh.write("x")
        time.sleep(0.3)  # a slow exchange: the other processes queue on the lock
        at = now_ms()
        return Token(Secret("TOKEN-proc-" + str(at)), "env", at + 3_600_000, at)

    print(TokenProvider(settings, exchange).get().token.reveal())
    """
)


def test_processes_sharing_the_cache_exchange_once(tmp_path: Path) -> None:
    cache, counter = tmp_path / "c" / "t.json", tmp_path / "count"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(cache), str(counter)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    tokens = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert counter.read_text() == "x"  # one exchange in all
    assert len(tokens) == 1 and next(iter(tokens)).startswith("TOKEN-proc-")


_NO_FCNTL = textwrap.dedent(
    """
    import sys
    sys.modules["fcntl"] = None  # as on Windows: importing it raises ImportError
    import lmreg_nb, lmreg_nb.registry.tokens, lmreg_nb.registry.client
    from pathlib import Path
    from lmreg_nb.models import Token, now_ms
    from lmreg_nb.secret import Secret
    from lmreg_nb.settings import Settings
    from lmreg_nb.registry.tokens import TokenProvider

    cache = Path(sys.argv[1])
    settings = Settings.load(environ={}, base_url="https://platform.test", app_id="app",
                             app_secret="s3cr3t-value", token_cache=cache)
    calls = []

    def exchange():
        calls.append(1)
        at = now_ms()
        return Token(Secret("TOKEN-nofcntl-" + str(at)), "env", at + 3_600_000, at)

    first = TokenProvider(settings, exchange).get()
    second = TokenProvider(settings, exchange).get()  # from the cache file, under its lock
    assert first.token == second.token and len(calls) == 1, calls
    print("ok", second.source)
    """
)


def test_the_package_and_its_token_cache_work_without_fcntl(tmp_path: Path) -> None:
    # Before filelock, `import lmreg_nb.registry.tokens` itself failed here (tokens imported fcntl).
    out = subprocess.run(
        [sys.executable, "-c", _NO_FCNTL, str(tmp_path / "c" / "t.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok cache"
    if os.name == "posix":
        assert stat.S_IMODE((tmp_path / "c" / "t.json").stat().st_mode) == 0o600
