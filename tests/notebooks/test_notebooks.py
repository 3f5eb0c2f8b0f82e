"""Every notebook, headless with papermill, against the real session sandbox.

Asserts that each step happened on the platform and that no canary secret
(raw, escaped, or any 8-character slice) is anywhere in the executed files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat
import pytest
from nb_helpers import ApartRun, start_apart

from lmreg_nb.records import read_records
from lmreg_nb.records.export import render_html
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.settings import Settings
from lmreg_nb.summary import Contact, Summary

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

pytestmark = pytest.mark.notebooks

CONTACT = {
    "school": "Canary Middle School",
    "contact_name": "Li Hua",
    "contact_mobile": "+86 139 0000 1111",
    "contact_email": "ai-ops@canary-school.example",
}


def _client(env: dict[str, str]) -> RegistryClient:
    return RegistryClient(Settings.load(environ=env))


@pytest.fixture
def assert_no_leak(
    leaks: Callable[..., list[str]], canaries: list[str], nb_env: dict[str, str]
) -> Callable[..., None]:
    """Fails when any form of a canary, or of the run's appSecret, is in the file; ``env``
    is the run's kernel environment (default the module's account), whose other values
    may show."""

    def check(path: Path, env: dict[str, str] | None = None) -> None:
        env = nb_env if env is None else env
        secrets = ("LMREG_APP_SECRET", "LMREG_MODEL_API_KEY")
        benign = [v for k, v in env.items() if k not in secrets]
        found = leaks(
            path.read_text(encoding="utf-8"), [*canaries, env["LMREG_APP_SECRET"]], benign
        )
        assert found == [], f"secret material in {path.name}: {len(found)} form(s)"

    return check


def _errors(path: Path) -> list[dict[str, Any]]:
    nb = nbformat.read(path, as_version=4)
    return [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]


def _shown(nb: Any, source: str) -> list[dict[str, Any]]:
    """What the cells whose code holds ``source`` displayed (their MIME bundles). Streams
    are left out: matplotlib's first import in a new home may warn on stderr that it builds
    its font cache (after 5 s, so only on a busy machine), before the figure."""
    return [
        o["data"] for c in nb.cells if source in c.source for o in c.outputs
        if o.output_type in ("display_data", "execute_result")
    ]  # fmt: skip


def test_step_notebooks_do_each_step(
    execute: Callable[..., Path], nb_env: dict[str, str], assert_no_leak: Callable[[Path], None],
    token_canary: str, tmp_path: Path,
) -> None:  # fmt: skip
    # 05 makes no platform call: it runs beside 01-04 (in a process of its own), with a
    # token canary where no platform call is made (it must not show either). 01 exchanges
    # a token that 02-04 do not need (each exchanges its own when none is cached; the
    # cache is locked): it runs beside them too.
    chat_env = {**os.environ, "LMREG_TOKEN": token_canary, "LMREG_ENV": "env-canary"}
    chat_run = start_apart(
        tmp_path, "05_test_chat_endpoint",
        {"check_requests": 4, "check_concurrency": 2, "prompt": "Hi"}, env=chat_env,
    )  # fmt: skip
    token_run = start_apart(tmp_path, "01_get_token", {"exchange": True})
    try:
        outputs = [execute("02_register_model", {"model_name": "nb-step-model"})]
        with _client(nb_env) as client:
            registered = client.find_model(name="nb-step-model")
        assert registered is not None and registered.registry_url == nb_env["LMREG_MODEL_URL"]

        outputs.append(
            execute(
                "03_modify_model",
                {
                    "model_name": "nb-step-model",
                    "new_model_name": "nb-step-model-2",
                    "new_registry_url": "https://llm.canary.example/v1/chat/completions",
                },
            )
        )
        with _client(nb_env) as client:
            changed = client.find_model(name="nb-step-model-2")
        assert changed is not None and changed.model_id == registered.model_id
        assert changed.registry_url == "https://llm.canary.example/v1/chat/completions"
        assert changed.api_key.reveal() == nb_env["LMREG_MODEL_API_KEY"]  # kept
        modified = nbformat.read(outputs[-1], as_version=4)
        assert "nb-step-model → nb-step-model-2" in str([c.get("outputs") for c in modified.cells])

        outputs.append(execute("04_list_models", {"name_contains": "nb-step"}))
        listed = nbformat.read(outputs[-1], as_version=4)
        # The list shows once, in one time format (not three times in three formats).
        assert [c.source for c in listed.cells if "nb-step-model-2" in str(c.get("outputs"))] == [
            "run = ob.Onboarding('')\nrun.list_models(name_contains)"
        ]
        outputs.append(token_run.result(timeout=300))
        outputs.append(chat_run.result(timeout=300))
    finally:
        token_run.close()
        chat_run.close()
    chat = nbformat.read(outputs[-1], as_version=4)
    streamed = [o for c in chat.cells if "stream_reply" in c.source for o in c.outputs]
    # One output updated in place as the reply streamed; plain text only, never HTML.
    assert [list(o.get("data", {})) for o in streamed] == [["text/plain"]]
    assert len(streamed[0]["data"]["text/plain"]) > 10
    assert "every required check passed" in str(chat.cells)

    for path in outputs:
        assert _errors(path) == [], path.name
        assert_no_leak(path)
        meta = nbformat.read(path, as_version=4).metadata
        assert "LMREG" not in str(meta.get("papermill", {}).get("parameters", {}))


def test_onboarding_with_no_parameters_records_incomplete(
    execute: Callable[..., Path], nb_env: dict[str, str]
) -> None:
    out = execute("onboarding", {})
    assert _errors(out) == []
    summary = Summary.from_json(read_records(out)["summary"])
    assert summary.status == "incomplete" and not summary.go_live.ready


def test_a_chat_endpoint_answering_500_leaves_a_failed_summary_with_the_reason(
    execute: Callable[..., Path], nb_env: dict[str, str], failing_endpoint: str
) -> None:
    out = execute(
        "onboarding",
        {**CONTACT, "model_name": "nb-broken-model", "registry_url": failing_endpoint,
         "check_requests": 0, "class_size": 2},
    )  # fmt: skip
    assert _errors(out) == []  # the failure is shown and recorded, the notebook goes on
    summary = Summary.from_json(read_records(out)["summary"])
    assert summary.status == "failed"
    assert summary.reason.startswith("chat endpoint checks:") and "500" in summary.reason
    # Skipped after the failure, and recorded so, with why (issue 40): not "not done yet".
    capacity = next(s for s in summary.steps if s.name == "capacity")
    assert capacity.skipped and capacity.skipped_after == "chat endpoint checks"
    assert not any("not done" in b for b in summary.go_live.blockers)


def test_invalid_contact_stops_before_anything_is_registered(
    execute: Callable[..., Path], nb_env: dict[str, str]
) -> None:
    out = execute("onboarding", {**CONTACT, "contact_mobile": "12345", "model_name": "nb-never"})
    assert _errors(out) == []
    summary = Summary.from_json(read_records(out)["summary"])
    assert summary.status == "failed" and summary.reason.startswith("contact card: contact_mobile")
    nb = nbformat.read(out, as_version=4)
    assert "skipped" in str([c.get("outputs") for c in nb.cells if "run.register(" in c.source])
    with _client(nb_env) as client:
        assert client.find_model(name="nb-never") is None


def test_onboard_command_twice_updates_and_writes_scrubbed_records(
    nb_env: dict[str, str], assert_no_leak: Callable[[Path], None], tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from lmreg_nb.cli import main

    args = ["onboard", "--out", str(tmp_path / "run")]
    parameters = {**CONTACT, "model_name": "nb-cli-model", "check_requests": "0", "class_size": "0"}
    for name, value in parameters.items():
        args += ["-p", name, value]
    runner = CliRunner()
    first = runner.invoke(main, args)
    assert first.exit_code == 0, first.output
    # Same endpoint, another address: the update is visible and the checks still pass.
    new_url = nb_env["LMREG_MODEL_URL"] + "?v=2"
    second = runner.invoke(main, [*args, "-p", "registry_url", new_url])
    assert second.exit_code == 0, second.output
    assert "updated nb-cli-model" in second.output
    with _client(nb_env) as client:
        models = [m for m in client.query_models() if m.model_name == "nb-cli-model"]
    assert len(models) == 1 and models[0].registry_url == new_url
    for path in (tmp_path / "run" / "onboarding.ipynb", tmp_path / "run" / "onboarding.html"):
        assert_no_leak(path)


def test_onboard_refuses_a_secret_parameter(nb_env: dict[str, str], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from lmreg_nb.cli import main

    result = CliRunner().invoke(main, ["onboard", "--out", str(tmp_path), "-p", "api_key", "x"])
    assert result.exit_code == 2
    assert "looks like a secret" in result.output and "Traceback" not in result.output


def test_stored_defaults_show_forms_and_change_nothing(
    execute: Callable[..., Path], nb_env: dict[str, str], assert_no_leak: Callable[[Path], None],
    tmp_path: Path,
) -> None:  # fmt: skip
    with _client(nb_env) as client:
        before = [(m.model_id, m.update_time_ms) for m in client.query_models()]
    onboarding = start_apart(tmp_path, "onboarding", {})  # beside 02, in a process of its own
    try:
        outputs = [execute("02_register_model", {}), onboarding.result(timeout=300)]
    finally:
        onboarding.close()
    with _client(nb_env) as client:
        after = [(m.model_id, m.update_time_ms) for m in client.query_models()]
    assert after == before
    for path in outputs:
        assert _errors(path) == []
        views = [
            o for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"
            for o in c.outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        ]  # fmt: skip
        assert views, f"{path.name} showed no form"
        assert_no_leak(path)


def test_onboard_without_configuration_stops_before_a_kernel_starts(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from lmreg_nb.cli import main

    args = ["onboard", "--out", str(tmp_path / "run")]
    for name, value in {**CONTACT, "model_name": "never"}.items():
        args += ["-p", name, value]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "LMREG_BASE_URL is not set" in result.output
    assert not (tmp_path / "run").exists()


def test_chat_in_05_calls_the_model_url_parameter_not_the_environment(
    execute: Callable[..., Path], nb_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # LMREG_MODEL_URL points nowhere: only the model_url parameter can answer.
    monkeypatch.setenv("LMREG_MODEL_URL", "http://127.0.0.1:9/v1/chat/completions")
    out = execute(
        "05_test_chat_endpoint", {"model_url": nb_env["LMREG_MODEL_URL"], "prompt": "Hello"}
    )
    assert _errors(out) == []
    nb = nbformat.read(out, as_version=4)
    streamed = [o for c in nb.cells if "stream_reply" in c.source for o in c.outputs]
    assert len(streamed[0]["data"]["text/plain"]) > 10
    assert "every required check passed" in str(nb.cells)


def test_05_checks_the_model_registered_in_02_by_its_name(
    execute: Callable[..., Path], nb_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32 item 3: no apiKey copied into .env; 05 picks the registered model by name."""
    execute("02_register_model", {"model_name": "nb-picked-model"})
    # 05 alone: no LMREG_MODEL_URL, no LMREG_MODEL_API_KEY (as after 02 with a typed key).
    monkeypatch.delenv("LMREG_MODEL_URL")
    monkeypatch.delenv("LMREG_MODEL_API_KEY")
    out = execute("05_test_chat_endpoint", {"registered": "nb-picked-model", "prompt": "Hello"})
    assert _errors(out) == []
    nb = nbformat.read(out, as_version=4)
    picked = [o for c in nb.cells if "use_registered" in c.source for o in c.outputs]
    assert "nb-picked-model" in str(picked)
    assert "every required check passed" in str(nb.cells)
    assert "LMREG_MODEL_URL" not in str([c.get("outputs") for c in nb.cells])


def test_a_wordy_api_key_leaves_every_check_name_whole_in_the_record(
    nb_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 32 item 7: an apiKey made of the toolkit's words, registered and called for real.

    Before, the masker cut "reachab" out of "reachable" everywhere ("…le"); the record
    and its HTML copy now keep every check name whole and hold no piece of the key.
    """
    from click.testing import CliRunner

    from lmreg_nb.cli import main
    from lmreg_nb.own_words import own_text
    from lmreg_nb.sandbox.school_model import MockModelConfig, serving
    from lmreg_nb.secret import find_leaks

    key = "sk-unreachable-0000000000"
    config = MockModelConfig(api_key=key, ttft_ms=5, itl_ms=2, tokens=8)
    with serving(config) as base:
        monkeypatch.setenv("LMREG_MODEL_URL", f"{base}/v1/chat/completions")
        monkeypatch.setenv("LMREG_MODEL_API_KEY", key)
        args = ["onboard", "--out", str(tmp_path / "run")]
        parameters = {**CONTACT, "model_name": "nb-wordy", "check_requests": "0", "class_size": "0"}
        for name, value in parameters.items():
            args += ["-p", name, value]
        done = CliRunner().invoke(main, args)
    notebook = tmp_path / "run" / "onboarding.ipynb"
    summary = read_records(notebook)["summary"]
    names = {c["name"] for c in summary["checks"]}
    assert {"reachable", "streams-not-cut", "context-window"} <= names, (done.output, names)
    assert all("…" not in n for n in names), names
    html = (tmp_path / "run" / "onboarding.html").read_text(encoding="utf-8")
    assert ">reachable<" in html or "reachable" in html.split("…le")[0]
    assert "…le<" not in html and "…le " not in html
    ours = own_text()
    own_pieces = [key[i : i + 7] for i in range(len(key) - 6) if key[i : i + 7] not in ours]
    for path in (notebook, tmp_path / "run" / "onboarding.html"):
        text = path.read_text(encoding="utf-8")
        assert find_leaks(text, {"LMREG_MODEL_API_KEY": key}) == [], path.name
        assert not [p for p in own_pieces if p in text], path.name


LOOPBACK_TEST = "test_onboarding_headless_is_ok_but_not_ready_for_go_live_on_a_loopback_host"


@pytest.fixture(scope="module", autouse=True)
def loopback_run(
    request: pytest.FixtureRequest, sandbox_process: SandboxInfo,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ApartRun, dict[str, str]] | None]:  # fmt: skip
    """The whole onboarding on loopback (load test and capacity: the longest run here),
    started in the background when the module starts, in its own account and kernel
    environment, so that the other tests of the module run while it waits on the model
    (its test is the module's last, so it reads the run after all of them).
    None when its test is not selected."""
    if not any(item.name == LOOPBACK_TEST for item in request.session.items):
        yield None
        return
    account = sandbox_process.add_app("notebooks-loopback")
    home = tmp_path_factory.mktemp("loopback-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")}
    env |= {
        "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"), **sandbox_process.env(),
        "LMREG_APP_ID": account["app_id"], "LMREG_APP_SECRET": account["app_secret"],
    }  # fmt: skip
    parameters = {
        **CONTACT, "model_name": "nb-onboard-model", "check_requests": 4,
        "check_concurrency": 2, "class_size": 2, "lang": "en",
        # Short replies and a short lesson: every step still runs, its requests finish
        # sooner (the capacity levels end after two requests per chat).
        "max_tokens": 24, "lesson_tokens": 200,
    }  # fmt: skip
    run = start_apart(tmp_path_factory.mktemp("loopback"), "onboarding", parameters, env=env)
    try:
        yield run, env
    finally:
        run.close()


def test_onboarding_headless_is_ok_but_not_ready_for_go_live_on_a_loopback_host(
    loopback_run: tuple[ApartRun, dict[str, str]] | None,
    assert_no_leak: Callable[..., None],
) -> None:  # fmt: skip
    assert loopback_run is not None
    run, env = loopback_run
    out = run.result(timeout=300)
    assert _errors(out) == []
    record = read_records(out)["summary"]
    summary = Summary.from_json(record)
    assert summary.status == "ok", summary.reason
    assert summary.lang == "en" and summary.class_size == 2
    assert summary.contact == Contact("Li Hua", "13900001111", CONTACT["contact_email"])
    assert [s.name for s in summary.steps] == [
        "contact card", "token", "register", "list models", "chat endpoint checks", "chat",
        "capacity",
    ]  # fmt: skip
    # A rehearsal on loopback: the steps passed, but the platform cannot reach the model.
    assert not summary.go_live.ready
    assert any("127.0.0.1" in b and "cannot reach" in b for b in summary.go_live.blockers)
    assert summary.performance is not None and summary.performance.requests == 4
    assert summary.capacity is not None and summary.capacity.class_size == 2
    assert summary.capacity.verdict and summary.capacity.levels
    nb = nbformat.read(out, as_version=4)
    assert "image/png" in _shown(nb, "run.figure")[0]  # the load test's plots, as an image
    assert "image/png" in _shown(nb, "run.capacity_figure()")[0]
    assert "reply" in _shown(nb, "run.reply()")[0]["text/plain"]
    assert any(m["modelName"] == "nb-onboard-model" for m in record["models"])
    assert "apiKey" not in str(record["models"])
    page = render_html(nb, summary)
    assert "Not ready for go-live" in page and "127.0.0.1" in page
    with _client(env) as client:
        assert client.find_model(name="nb-onboard-model") is not None
    assert_no_leak(out, env)
