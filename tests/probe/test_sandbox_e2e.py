"""The probe against the real `lmreg-nb sandbox` process: its mock model passes every check."""

from __future__ import annotations

from typing import TYPE_CHECKING

from click.testing import CliRunner

from lmreg_nb.cli import main
from lmreg_nb.probe import Target, check_endpoint, stream_chat

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo


def test_the_sandbox_model_passes(sandbox: SandboxInfo) -> None:
    report = check_endpoint(
        Target(sandbox.model_url, sandbox.model_api_key, "sandbox-model"), requests=4, concurrency=4
    )
    assert report.ok, report.failed
    failed = {c.name for c in report.checks if not c.passed}
    assert failed <= {"url-https", "url-public-host"}  # loopback, plain http: warnings only
    assert report.performance.requests == 4 and report.performance.errors == 0
    assert "".join(stream_chat(Target(sandbox.model_url, sandbox.model_api_key, "m"), "hi"))


def test_cli_check_with_the_sandbox_environment(sandbox: SandboxInfo) -> None:
    result = CliRunner().invoke(main, ["check", "--json"], env=sandbox.env())
    assert result.exit_code == 0, result.output
    assert sandbox.model_api_key not in result.output
