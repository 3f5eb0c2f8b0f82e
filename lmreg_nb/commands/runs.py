"""`lmreg-nb demo` and `lmreg-nb onboard`: the onboarding notebook, headless."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

__all__ = ["COMMANDS", "DEMO_PARAMETERS", "ONBOARDING_PARAMETERS", "parse_parameters"]

#: The onboarding notebook's parameters and their types (DESIGN.md, onboarding contract).
ONBOARDING_PARAMETERS: dict[str, type] = {
    "school": str,
    "contact_name": str,
    "contact_mobile": str,
    "contact_email": str,
    "model_name": str,
    "registry_url": str,
    "check_requests": int,
    "check_concurrency": int,
    "chat_prompt": str,
}
_REQUIRED = ("school", "contact_name", "contact_mobile", "contact_email", "model_name")

#: What `lmreg-nb demo` fills in (a made-up school; the sandbox is the platform).
DEMO_PARAMETERS: dict[str, Any] = {
    "school": "Demo Middle School",
    "contact_name": "Li Hua",
    "contact_mobile": "+86 138 0013 8000",
    "contact_email": "ai-ops@demo-school.example",
    "model_name": "demo-model",
    "registry_url": "",
    "check_requests": 20,
    "check_concurrency": 4,
}


def parse_parameters(pairs: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """``-p NAME VALUE`` pairs as typed onboarding parameters; refuses secrets and unknown names."""
    from ..errors import ValidationError
    from ..scrub import looks_secret

    out: dict[str, Any] = {}
    for name, raw in pairs:
        if looks_secret(name):
            raise ValidationError(
                name,
                "looks like a secret: set it in the environment or .env (LMREG_*), never with -p",
            )
        kind = ONBOARDING_PARAMETERS.get(name)
        if kind is None:
            raise ValidationError(
                name,
                "is not a parameter of onboarding; use one of " + ", ".join(ONBOARDING_PARAMETERS),
            )
        if kind is int:
            try:
                out[name] = int(raw)
            except ValueError:
                raise ValidationError(name, f"must be a whole number, got {raw!r}") from None
            if out[name] < 0:
                raise ValidationError(name, "must be 0 or more")
        else:
            out[name] = raw
    return out


def _settings_env(parameters: dict[str, Any]) -> dict[str, str]:
    """The configured settings (environment and .env) as LMREG_* variables for the child.

    What the onboarding needs is checked here, so a missing variable stops the
    command at once with one line, before a kernel starts.
    """
    from ..secret import Secret
    from ..settings import VARIABLES, Settings

    settings = Settings.load()
    needed = ["base_url", "model_api_key", "model_name"]
    needed += [] if settings.token else ["app_id", "app_secret"]
    needed += [] if str(parameters.get("registry_url", "")).strip() else ["model_url"]
    for name in needed:
        settings.require(name)
    env: dict[str, str] = {}
    for name, var in VARIABLES.items():
        value = getattr(settings, name)
        if value is None or value == "":
            continue
        env[var] = value.reveal() if isinstance(value, Secret) else str(value)
    return env


def _report(result: Any) -> None:
    """A short summary of a run on stdout (no secret: the summary record holds none)."""
    summary = result.records.get("summary") if result.records else None
    click.echo(f"status: {result.status} ({result.duration_s:.1f} s)")
    if isinstance(summary, dict):
        for step in summary.get("steps", []):
            mark = "ok  " if step.get("passed") else "FAIL"
            click.echo(f"  {mark} {step.get('name')}: {step.get('detail')}")
        failed = [c for c in summary.get("checks", []) if not c.get("passed")]
        for check in failed:
            click.echo(f"  {check.get('severity')}: {check.get('name')}: {check.get('detail')}")
    if result.error:
        click.echo(f"error: {result.error}", err=True)
    click.echo(f"notebook: {result.notebook}")
    click.echo(f"html: {result.html}")


def _run(out: Path, parameters: dict[str, Any], env: dict[str, str], timeout: float) -> None:
    from ..batch import run_notebook
    from ..shipped import notebook_path

    result = run_notebook(
        notebook_path("onboarding"), out, parameters=parameters, env=env, timeout=timeout
    )
    _report(result)
    if not result.ok:
        raise SystemExit(1)


@click.command("demo")
@click.option(
    "--out", type=click.Path(path_type=Path, file_okay=False), default=Path("runs/demo"),
    show_default=True, help="Folder for onboarding.ipynb and onboarding.html.",
)  # fmt: skip
@click.option(
    "--timeout", type=float, default=300.0, show_default=True, help="Seconds for the run."
)
def demo(out: Path, timeout: float) -> None:
    """Run the whole onboarding headless against a sandbox started for it."""
    from ..sandbox.process import running_sandbox

    click.echo("starting a sandbox platform on loopback…")
    with running_sandbox() as sandbox:
        click.echo(f"sandbox at {sandbox.base_url}; running onboarding.ipynb…")
        _run(out, dict(DEMO_PARAMETERS), sandbox.env(), timeout)


@click.command("onboard")
@click.option(
    "--out", type=click.Path(path_type=Path, file_okay=False), default=Path("runs/onboard"),
    show_default=True, help="Folder for onboarding.ipynb and onboarding.html.",
)  # fmt: skip
@click.option(
    "-p", "--parameter", "pairs", type=(str, str), multiple=True, metavar="NAME VALUE",
    help="An onboarding parameter, e.g. -p school 'Example School' (never a secret).",
)  # fmt: skip
@click.option(
    "--timeout", type=float, default=600.0, show_default=True, help="Seconds for the run."
)
def onboard(out: Path, pairs: tuple[tuple[str, str], ...], timeout: float) -> None:
    """Run the onboarding notebook headless against the configured platform.

    Secrets come from the environment or .env (LMREG_APP_SECRET, LMREG_MODEL_API_KEY).
    """
    from ..errors import ValidationError

    parameters = parse_parameters(pairs)
    missing = [name for name in _REQUIRED if not str(parameters.get(name, "")).strip()]
    if missing:
        raise ValidationError(
            missing[0], "is required: add " + " ".join(f"-p {m} ..." for m in missing)
        )
    env = _settings_env(parameters)
    _run(out, parameters, env, timeout)


COMMANDS: list[click.Command] = [demo, onboard]
