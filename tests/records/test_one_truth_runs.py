"""Issue 40 as a user meets it: whole headless onboardings (real kernels, a real sandbox process).

- ``lmreg-nb demo``: one capacity number (``capacity.concurrency``) in the CLI's lines,
  the record's JSON, the HTML record and the principal's page, with enough or not for
  the class beside it; the summary card once in the HTML record;
- ``lmreg-nb onboard`` with a registryUrl that stops at ``/v1``: the address to register
  is the finding in the CLI, the record's blockers and the principal's page, and no check
  blames the key or the model name;
- ``lmreg-nb onboard`` against a model that is down: one cause, and no advice the run's
  own parameters contradict (``check_requests`` and ``class_size`` were set);
- ``lmreg-nb demo`` in the pseudo-locale (its capacity step included): what a person reads
  (the command's lines, the notebook's outputs, the short HTML record) comes from the
  catalog; the record's own values (school, models, check names, ids, URLs) are taken out
  before looking. The kernel is another process, so the pseudo catalog travels by
  LMREG_LOCALE_DIR.

The module's seven runs (three kinds in two languages, and the pseudo-locale demo; each
demo with its own sandbox, the onboards with the session's) are separate processes that
mostly wait on their models, so they start together, the first time a test asks for one
(:func:`runs`), and each test reads its own.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import nbformat
import pytest
from fakes.loopback_platform import finish_cli, start_cli
from fakes.pseudo import (
    html_text,
    notebook_texts,
    record_values,
    unmarked,
    without_chat,
    write_pseudo_catalog,
)

from lmreg_nb import read_records

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

pytestmark = [pytest.mark.notebooks, pytest.mark.timeout(400)]

SERVES = {
    "en": re.compile(r"serves (?:at least )?(\d+) (?:chats?|students?)"),
    "zh-CN": re.compile(r"同时服务 (\d+) (?:路对话|名学生)"),
}
ENOUGH = {"en": "nough for a class of 4", "zh-CN": "4 人的班级"}


#: Each run's limit: a whole demo takes some 25 s alone, and seven runs share two cores.
RUN_TIMEOUT_S = 360
LANGS = ("en", "zh-CN")


def _start(args: list[str], root: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """``python -m lmreg_nb ARGS`` in ``root``, its own HOME."""
    root.mkdir(parents=True, exist_ok=True)
    full = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")}
    return start_cli(args, {**full, **env, "HOME": str(root / "home")}, root)


def _page_text(path: Path) -> str:
    return html_text(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("lang", LANGS)
def test_one_capacity_number_in_the_cli_the_record_and_the_principals_page(
    runs: Runs, lang: str
) -> None:
    said, out, _ = runs[("demo", lang)]
    summary: dict[str, Any] = read_records(out / "onboarding.ipynb")["summary"]
    # The demo ran the whole onboarding against its own sandbox (one demo run per language
    # in the suite: this one).
    assert summary["status"] == "ok" and summary["performance"]["requests"] > 0, said
    assert summary["school"] == "Demo Middle School"
    assert lang != "en" or "status: OK" in said, said
    found = summary["capacity"]["capacity"]["concurrency"]
    assert isinstance(found, int) and found >= 4, said
    pattern = SERVES[lang]
    views = {
        "cli": said,
        "record verdict": summary["capacity"]["verdict"],
        "html record": _page_text(out / "onboarding.html"),
        "principal": _page_text(out / "onboarding-short.html"),
    }
    for view, text in views.items():
        numbers = {int(n) for n in pattern.findall(text)}
        assert numbers == {found}, (view, numbers, found)
        assert ENOUGH[lang] in text, view
    page = (out / "onboarding.html").read_text(encoding="utf-8")
    assert page.count('class="lmreg-summary"') == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _onboard(
    sandbox_process: SandboxInfo, root: Path, url: str, name: str, lang: str
) -> subprocess.Popen[str]:
    app = sandbox_process.add_app(name)
    env = {**sandbox_process.env(), "LMREG_APP_ID": app["app_id"],
           "LMREG_APP_SECRET": app["app_secret"], "LMREG_TIMEOUT": "5"}  # fmt: skip
    return _start([
        "--lang", lang, "onboard", "--out", str(root / "out"), "-p", "school", "One Truth School",
        "-p", "contact_name", "Li Hua", "-p", "contact_mobile", "13812345678",
        "-p", "contact_email", "ops@school.edu.cn", "-p", "model_name", name,
        "-p", "registry_url", url, "-p", "class_size", "4", "-p", "check_requests", "8",
        "-p", "check_concurrency", "2",
    ], root, env)  # fmt: skip


class Run(NamedTuple):
    """A finished run: what the command printed, its output folder, its exit code."""

    said: str
    out: Path
    code: int | None


#: (kind, language) -> its run.
Runs = dict[tuple[str, str], Run]


@pytest.fixture(scope="module")
def runs(sandbox_process: SandboxInfo, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Every run of the module, started at once: ``demo`` in each language; ``onboard`` with
    a registryUrl that stops at ``/v1`` ("v1") and with a model that is down ("down");
    ``demo`` in the pseudo-locale (("pseudo", "zh-CN"))."""
    base = sandbox_process.model_url.removesuffix("/chat/completions")  # .../v1
    down = f"http://127.0.0.1:{_free_port()}/v1/chat/completions"
    started: dict[tuple[str, str], tuple[subprocess.Popen[str], Path]] = {}
    try:
        for lang in LANGS:
            root = tmp_path_factory.mktemp(f"demo-{lang}")
            started["demo", lang] = (
                _start(["--lang", lang, "demo", "--out", str(root / "out")], root, {}),
                root,
            )
        for kind, url in (("v1", base), ("down", down)):
            for lang in LANGS:
                root = tmp_path_factory.mktemp(f"{kind}-{lang}")
                started[kind, lang] = (
                    _onboard(sandbox_process, root, url, f"{kind}-{lang}", lang),
                    root,
                )
        root = tmp_path_factory.mktemp("pseudo-zh-CN")
        pseudo = {
            "LMREG_LANG": "zh-CN",
            "LMREG_LOCALE_DIR": str(write_pseudo_catalog(root / "locale")),
        }
        started["pseudo", "zh-CN"] = (
            _start(["demo", "--out", str(root / "out")], root, pseudo),
            root,
        )
        return {
            key: Run("".join(finish_cli(proc, RUN_TIMEOUT_S)), root / "out", proc.returncode)
            for key, (proc, root) in started.items()
        }
    finally:
        for proc, _root in started.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.parametrize("lang", LANGS)
def test_a_url_that_stops_at_v1_is_named_as_the_fix_everywhere(
    sandbox_process: SandboxInfo, runs: Runs, lang: str
) -> None:
    fixed = sandbox_process.model_url  # the registryUrl stopped at .../v1, before this
    said, out, _ = runs[("v1", lang)]
    summary = read_records(out / "onboarding.ipynb")["summary"]
    assert fixed in said, said
    assert fixed in summary["go_live"]["blockers"][0]
    assert fixed in _page_text(out / "onboarding-short.html")
    checks = {c["name"]: c for c in summary["checks"]}
    assert checks["url-path"]["passed"] is False and fixed in checks["url-path"]["detail"]
    for name in ("key-accepted", "model-name-served", "errors-are-json"):
        assert checks[name]["passed"] is None, checks[name]
    record = _page_text(out / "onboarding.html")
    for blame in ("the key was accepted", "--served-model-name", "密钥被接受"):
        assert blame not in record and blame not in said


@pytest.mark.parametrize("lang", LANGS)
def test_no_advice_the_parameters_contradict_after_a_failed_chat_check(
    runs: Runs, lang: str
) -> None:
    said, out, _ = runs[("down", lang)]
    shown = said + _page_text(out / "onboarding.html") + _page_text(out / "onboarding-short.html")
    for contradicted in (
        "check_requests above 0", "class_size above 0", "Step not done yet", "Steps not done yet",
        "check_requests 大于 0", "class_size 大于 0", "以下步骤还没有完成",
    ):  # fmt: skip
        assert contradicted not in shown, contradicted
    summary = read_records(out / "onboarding.ipynb")["summary"]
    capacity = next(s for s in summary["steps"] if s["name"] == "capacity")
    assert capacity["skipped_after"] == "chat endpoint checks"
    skipped = "skip" if lang == "en" else "跳过"
    assert skipped in said


def _pseudo_run(runs: Runs) -> tuple[str, Path, set[str]]:
    """The pseudo-locale demo (it succeeded): its lines, its folder, its record's values."""
    said, out, code = runs[("pseudo", "zh-CN")]
    assert code == 0, said
    summary = read_records(out / "onboarding.ipynb")["summary"]
    assert summary["lang"] == "zh-CN"
    return said, out, record_values(summary)


def test_pseudo_locale_demo_lines_come_from_the_catalog(runs: Runs) -> None:
    said, out, values = _pseudo_run(runs)
    found = unmarked(said, values | {str(out)})
    assert not found, f"{found}\n{said}"


def test_pseudo_locale_notebook_outputs_come_from_the_catalog(runs: Runs) -> None:
    _, out, values = _pseudo_run(runs)
    nb = nbformat.read(out / "onboarding.ipynb", as_version=4)
    problems = {}
    for text in notebook_texts(nb):
        found = unmarked(without_chat(text), values)
        if found:
            problems[text[:300]] = found
    assert not problems, json.dumps(problems, ensure_ascii=False, indent=1)


def test_pseudo_locale_short_record_comes_from_the_catalog(runs: Runs) -> None:
    _, out, values = _pseudo_run(runs)
    short = out / "onboarding-short.html"
    if not short.exists():
        pytest.skip("no short record written")
    text = _page_text(short)
    found = unmarked(text, values)
    assert not found, f"{found}\n{text[:3000]}"
