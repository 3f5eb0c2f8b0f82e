"""Shared fixtures: a clean environment for every test, the sandbox in this process (and a
real sandbox process where a process is the point); the lanes (a fast test that starts a
process or a server fails: tests/lanes.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from ci_rules import deselect_peers, fail_skip_in_ci
from lanes import LaneGuard
from rewrite_cache import rewrite_before_workers

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

# The suite keeps its bytecode (in __pycache__, which git ignores) where the machine says
# not to (CI's sets PYTHONDONTWRITEBYTECODE=1): each worker rewrote every test module's
# asserts again, and each process the tests start compiled the package again. A worker's
# collection on the second run in a tree: 5.4 s, not 10.7 s (a clean clone gains nothing).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


#: Markers of tests that start real processes (papermill, kernels, JupyterLab, Chromium).
_SLOW_MARKERS = ("browser", "notebooks")
#: Files of 20 s or more in one test (or a module fixture), or of 35 s in all, weighed in
#: seconds (a -n 2 run's per-test times, issue 44): scheduled first, as if they held that
#: many slow tests, so none of them starts last and ends the run alone.
_LONG_FILES = {
    "tests/browser/test_forms_in_lab.py": 90,
    "tests/notebooks/test_notebooks.py": 40,
    "tests/records/test_one_truth_runs.py": 40,
    "tests/batch/test_batch.py": 30,
    "tests/test_wheel.py": 25,
    "tests/browser/test_walkthrough_in_lab.py": 22,
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--guard-all-lanes",
        action="store_true",
        help="guard the files of lanes.UNGUARDED too: every fast test that starts a "
        "process or a server fails",
    )
    parser.addoption(
        "--lanes-report",
        metavar="FILE",
        default=None,
        help="append the test files that started a process or bound a socket (any lane) "
        "to FILE as JSON lines (scripts/count_process_tests --measured FILE counts them)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """The test modules rewritten once for xdist's workers (tests/rewrite_cache.py); the
    lane guard (tests/lanes.py): a plugin of its own, so it sees every fixture."""
    rewrite_before_workers(config)
    report = config.getoption("--lanes-report")
    guard = LaneGuard(
        guard_all=config.getoption("--guard-all-lanes"),
        report=os.path.abspath(report) if report else None,
    )
    guard.install()
    config.pluginmanager.register(guard, "lane-guard")
    config.add_cleanup(guard.uninstall)
    # The in-process servers' helper loop (synchronous clients) ends with the session.
    from fakes import hosts

    config.add_cleanup(hosts.close)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Two lanes: `pytest -m "not slow"` for the inner loop, `pytest` for everything;
    and a third, `pytest -m peer`, for the tests against real servers.

    Browser and papermill tests, and nbval's cells, are slow by nature; others say so
    with @pytest.mark.slow. Tests marked ``peer`` need a real vLLM or llama-server whose
    address the environment gives (minutes to install or build): they run only when the
    marker expression names ``peer``, never in `.ci/run`'s default selection.
    """
    deselect_peers(config, items)
    weight: dict[str, int] = {}
    for item in items:
        nbval_cell = type(item).__module__.startswith("nbval")
        if nbval_cell or any(item.get_closest_marker(m) for m in _SLOW_MARKERS):
            item.add_marker(pytest.mark.slow)
        heavy = not nbval_cell and item.get_closest_marker("slow") is not None
        path = item.nodeid.split("::")[0]
        weight[path] = weight.get(path, _LONG_FILES.get(path, 0)) + heavy
    # The files with the most slow tests first: the workers (one file each, --dist loadfile,
    # --no-loadscope-reorder keeps this order) take files in this order, so the long ones
    # start early instead of ending the run alone.
    items.sort(key=lambda item: -weight[item.nodeid.split("::")[0]])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under CI=1 a skipped test fails (see ``fail_skip_in_ci``)."""
    outcome = yield
    fail_skip_in_ci(outcome.get_result(), peer=item.get_closest_marker("peer") is not None)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """A whole file skipped at collection (``pytest.importorskip``) counts too."""
    outcome = yield
    fail_skip_in_ci(outcome.get_result(), peer=False)


@pytest.fixture(autouse=True)
def _clean_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No test depends on the developer's shell, home folder or ./.env."""
    for name in list(os.environ):
        if name.startswith("LMREG_"):
            monkeypatch.delenv(name)
    # English unless a test chooses otherwise (the shell's locale may be zh_CN).
    from lmreg_nb import i18n

    i18n.set_language("en")
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    # Settings read ./.env: run from a folder that has none.
    monkeypatch.chdir(home)


@pytest.fixture(scope="session", autouse=True)
def _written_records_follow_their_schemas(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """Every record and summary.csv the tests wrote follows its shipped schema (issue 43)."""
    yield
    from contract_schemas import written_problems

    found = written_problems(tmp_path_factory.getbasetemp())
    assert not found, "outputs that break lmreg_nb/schemas/:\n" + "\n".join(found[:40])


@pytest.fixture(params=["en", "zh-CN"])
def lang(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each language in turn (a test asking for ``lang`` runs in both); English after."""
    from lmreg_nb import i18n

    i18n.set_language(request.param)
    yield request.param
    i18n.set_language("en")


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    """The sandbox (its platform and its mock school model) served in this process for
    the session (tests/fakes/sandbox.py): no port, no process.

    Tests that change what it stores use their own model names (or their own
    account via `sandbox.add_app()`), so they do not see each other.
    """
    from fakes.sandbox import local_sandbox

    with local_sandbox(tmp_path_factory.mktemp("sandbox") / "platform.sqlite3") as info:
        yield info


@pytest.fixture(scope="session")
def sandbox_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    """One real `lmreg-nb sandbox` process on free loopback ports for the session, for
    tests whose point is a process (papermill, the browser, the CLI run as a person runs
    it): a child process reaches it, as it cannot reach the in-process ``sandbox``.
    """
    from lmreg_nb.sandbox.process import running_sandbox

    db = tmp_path_factory.mktemp("sandbox") / "platform.sqlite3"
    with running_sandbox(db=db) as info:
        yield info


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """Settings for `lmreg-nb onboard`, and run_notebook replaced by a recorder of its
    arguments (test_cli_runs, test_onboarding_parameters)."""
    from lmreg_nb.runner import RunResult

    calls: list[dict[str, Any]] = []
    for name, value in {
        "LMREG_BASE_URL": "http://127.0.0.1:9", "LMREG_APP_ID": "app",
        "LMREG_APP_SECRET": "app-secret-value-1", "LMREG_MODEL_URL": "http://127.0.0.1:9/v1",
        "LMREG_MODEL_API_KEY": "model-key-value-1", "LMREG_MODEL_NAME": "m",
        "LMREG_TOKEN_CACHE": str(tmp_path / "users-cache.json"),
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)

    def fake(notebook: Path, out: Path, **kwargs: Any) -> RunResult:
        calls.append({"notebook": notebook, **kwargs})
        return RunResult("ok", out / "onboarding.ipynb", out / "onboarding.html")

    monkeypatch.setattr("lmreg_nb.runner.run_notebook", fake)
    return calls


@pytest.fixture
def trusted(ca: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The test module's ``ca`` (a trustme CA) is the only trusted one (SSL_CERT_FILE)."""
    from lmreg_nb._tls import tls_context

    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    tls_context.cache_clear()
    yield
    tls_context.cache_clear()
