"""`lmreg-nb demo` and `lmreg-nb onboard`: the onboarding notebook, headless."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._types import FiniteRange

__all__ = [
    "COMMANDS",
    "DEMO_CLASS_SIZE",
    "DEMO_PARAMETERS",
    "DEMO_SANDBOX_ARGS",
    "parse_parameters",
    "report_lines",
]

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
#: The demo's capacity step: a class of 4 against a mock model serving 2 replies at once
#: (the rest queue), which serves the class within the SLO: the record shows the search
#: stop once the class is served, in some 10 s.
DEMO_CLASS_SIZE = 4
# A small GPU in class: 2 replies at once, prefill at 6,000 tokens a second, and the shared
# lesson cached (vLLM's prefix caching), so the record shows what a lesson costs and saves.
DEMO_SANDBOX_ARGS = ("--slots", "2", "--prefill-tokens-per-s", "6000", "--prefix-cache")


def parse_parameters(
    pairs: tuple[tuple[str, str], ...], notebook: Path | None = None
) -> dict[str, Any]:
    """``-p NAME VALUE`` pairs typed as the notebook declares them (default: the onboarding
    notebook); refuses secrets and names the notebook does not declare."""
    from ..errors import ValidationError
    from ..i18n import _, listing, normalize_language
    from ..runner.parameters import convert
    from ..runner.scrub import looks_secret

    types = _parameter_types(notebook) if pairs else {}
    out: dict[str, Any] = {}
    for name, raw in pairs:
        if looks_secret(name):
            raise ValidationError(
                name,
                _(
                    "looks like a secret: set it in the environment or .env (LMREG_*), "
                    "never with -p"
                ),
            )
        kind = types.get(name)
        if kind is None:
            raise ValidationError(
                name,
                _("is not a parameter of onboarding; use one of {names}").format(
                    names=listing(types)
                ),
            )
        if kind == "int":
            try:
                out[name] = int(raw)
            except ValueError:
                raise ValidationError(
                    name, _("must be a whole number, got {value}").format(value=repr(raw))
                ) from None
            _check_value(name, out[name])  # before the run, not after the whole onboarding
        elif name == "lang":
            _check_value(name, raw)
            out[name] = normalize_language(raw)
        else:
            try:
                out[name] = convert(raw, kind)
            except ValueError:
                raise ValidationError(
                    name,
                    _("must be of type {kind}, got {value}").format(kind=kind, value=repr(raw)),
                ) from None
    return out


def _check_value(name: str, value: object) -> None:
    """The rules a batch plan's cells follow too (``parameter_problem``): raise the first."""
    from ..onboarding.parameters import parameter_problem

    bad = parameter_problem(name, value)
    if bad is not None:
        raise bad


def _parameter_types(notebook: Path | None) -> dict[str, str]:
    """The parameters ``notebook`` declares (default: the onboarding notebook), by type."""
    from ..errors import ConfigurationError
    from ..i18n import _
    from ..runner.parameters import declared_types
    from ..runner.shipped import notebook_path

    path = notebook or notebook_path("onboarding")
    try:
        return declared_types(path)
    except Exception as exc:  # papermill raises several unrelated types for a bad notebook
        raise ConfigurationError(
            _("{path} is not a readable notebook ({kind}): give an .ipynb file").format(
                path=path, kind=type(exc).__name__
            )
        ) from None


def _settings_env(parameters: dict[str, Any]) -> dict[str, str]:
    """The configured settings (environment and .env) as LMREG_* variables for the child.

    What the onboarding needs is checked here, so a missing variable stops the
    command at once with one line, before a kernel starts. The token cache is
    left out: the run exchanges its token in a private cache of its own, so the
    record proves the credentials work and the user's cache is not touched.
    """
    from ..secret import Secret
    from ..settings import ENV_FROM, VARIABLES, Settings

    settings = Settings.load()
    needed = ["base_url", "model_api_key", "model_name"]
    needed += [] if settings.token else ["app_id", "app_secret"]
    needed += [] if str(parameters.get("registry_url", "")).strip() else ["model_url"]
    for name in needed:
        settings.require(name)
    env: dict[str, str] = {}
    for name, var in VARIABLES.items():
        value = getattr(settings, name)  # every key of VARIABLES is a Settings field
        if name in ("token_cache", "notebooks", "env_file") or value is None or value == "":
            continue
        env[var] = value.reveal() if isinstance(value, Secret) else str(value)
    if settings.env_file is not None:  # where they came from, for the record's configuration
        env[ENV_FROM] = str(settings.env_file)
    return env


#: Warnings the go-live list already names in plain words (an address, plain http).
_IN_BLOCKERS = frozenset({"url-https", "url-public-host"})


def report_lines(result: Any) -> tuple[list[str], list[str]]:
    """The run's summary for the terminal (stdout lines, stderr lines): each problem once.

    Steps that passed say what they did; a failed step is only marked, because the
    go-live list names its cause in plain words, once. Then the warnings the list
    does not name, then the verdict. No secret: the summary record holds none.
    """
    from ..i18n import _
    from ..records.text import status_label
    from ..summary import step_label

    summary = result.summary
    out = [
        _("status: {status} ({seconds} s)").format(
            status=status_label(result.status), seconds=f"{result.duration_s:.1f}"
        )
    ]
    err: list[str] = []
    if summary is not None:
        named = bool(summary.go_live.blockers)
        for step in summary.steps:
            label = step_label(step.name)
            said = _("{step}: {detail}").format(step=label, detail=step.detail)
            if step.skipped:  # not a failure: why it did not run, in its own words
                out.append(f"  skip {said}")
            else:
                out.append(
                    f"  ok   {said}" if step.passed else f"  FAIL {label if named else said}"
                )
        for check in summary.warnings:
            if check.name not in _IN_BLOCKERS:
                out.append(
                    "  "
                    + _("recommended: {name}: {detail}").format(
                        name=check.name, detail=check.detail
                    )
                )
        if summary.go_live.ready:
            out.append(_("go-live: ready"))
        else:
            out.append(_("go-live: not ready"))
            out += [f"  - {blocker}" for blocker in summary.go_live.blockers]
    if result.kernel_retried:
        out.append(_("note: the kernel did not start at first; the run was retried once"))
    if result.error and not (getattr(result, "status_only", False) and _explained(summary)):
        err.append(_("error: {message}").format(message=result.error))
    out.append(_("notebook: {path}").format(path=result.notebook))
    out.append(_("html: {path}").format(path=result.html))
    out.append(_("short html (for a principal): {path}").format(path=result.short_html))
    return out, err


def _explained(summary: Any) -> bool:
    """Whether the go-live list above says why the summary is not ok."""
    return summary is not None and bool(summary.go_live.blockers)


def _report(result: Any) -> None:
    """Print :func:`report_lines`."""
    out, err = report_lines(result)
    for line in out:
        click.echo(line)
    for line in err:
        click.echo(line, err=True)


def _declared(notebook: Path, parameters: dict[str, Any]) -> dict[str, Any]:
    """Only the parameters the notebook declares (an older notebook lacks lang, class_size)."""
    names = set(_parameter_types(notebook))
    return {k: v for k, v in parameters.items() if k in names}


def _run(out: Path, parameters: dict[str, Any], env: dict[str, str], timeout: float) -> None:
    from ..i18n import current_language
    from ..runner import run_notebook
    from ..runner.shipped import notebook_path

    lang = str(parameters.get("lang") or current_language())
    notebook = notebook_path("onboarding", lang)
    parameters = _declared(notebook, {"lang": lang, **parameters})
    env = {**env, "LMREG_LANG": lang}
    result = run_notebook(notebook, out, parameters=parameters, env=env, timeout=timeout)
    _report(result)
    if not result.ok:
        raise SystemExit(1)


@click.command("demo")
@click.option(
    "--out", type=click.Path(path_type=Path, file_okay=False), default=Path("runs/demo"),
    show_default=True,
    help="Folder for onboarding.ipynb (its summary record's schema: "
    "lmreg_nb/schemas/summary.schema.json), onboarding.html and onboarding-short.html.",
)  # fmt: skip
@click.option(
    "--timeout",
    type=FiniteRange(min=0, min_open=True),
    default=300.0,
    show_default=True,
    help="Seconds for the run.",
)
@click.option(
    "--class-size", type=click.IntRange(min=0), default=DEMO_CLASS_SIZE, show_default=True,
    callback=lambda _ctx, _param, value: _class_size(value),
    help="Students chatting at once for the capacity step (0 skips it; at most 1024).",
)  # fmt: skip
def demo(out: Path, timeout: float, class_size: int) -> None:
    """Run the whole onboarding headless against a sandbox started for it."""
    from ..i18n import _
    from ..runner.runs import note_child, run_folder
    from ..sandbox.process import running_sandbox
    from ._paths import output_folder

    output_folder(out)  # before a sandbox starts
    click.echo(_("starting a sandbox platform on loopback…"))
    # The sandbox's database and pid live in a private run folder: if this process is
    # SIGKILLed, the next start of any command stops the sandbox and removes both.
    with (
        run_folder() as state,
        running_sandbox(args=DEMO_SANDBOX_ARGS, db=state / "sandbox.sqlite3") as sandbox,
    ):
        if sandbox.pid is not None:
            note_child(state, sandbox.pid)
        click.echo(_("sandbox at {url}; running onboarding.ipynb…").format(url=sandbox.base_url))
        parameters = {**DEMO_PARAMETERS, "class_size": class_size}
        _run(out, parameters, sandbox.env(), timeout)


def _class_size(value: int) -> int:
    """--class-size within what the capacity test measures: a usage error before anything
    runs (a sandbox, a notebook), not a failed record after the whole onboarding."""
    from ..errors import ValidationError
    from ..onboarding.parameters import check_class_size

    try:
        return check_class_size(value)
    except ValidationError as exc:
        raise click.BadParameter(exc.reason) from None


@click.command("onboard")
@click.option(
    "--out", type=click.Path(path_type=Path, file_okay=False), default=Path("runs/onboard"),
    show_default=True,
    help="Folder for onboarding.ipynb (its summary record's schema: "
    "lmreg_nb/schemas/summary.schema.json), onboarding.html and onboarding-short.html.",
)  # fmt: skip
@click.option(
    "-p", "--parameter", "pairs", type=(str, str), multiple=True, metavar="NAME VALUE",
    help="An onboarding parameter, e.g. -p school 'Example School' (never a secret).",
)  # fmt: skip
@click.option(
    "--timeout",
    type=FiniteRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds for the run.",
)
def onboard(out: Path, pairs: tuple[tuple[str, str], ...], timeout: float) -> None:
    """Run the onboarding notebook headless against the configured platform.

    Secrets come from the environment or .env (LMREG_APP_SECRET, LMREG_MODEL_API_KEY).
    """
    from ..errors import ValidationError
    from ..i18n import _

    parameters = parse_parameters(pairs)
    missing = [name for name in _REQUIRED if not str(parameters.get(name, "")).strip()]
    if missing:
        raise ValidationError(
            missing[0],
            _("is required: add {options}").format(
                options=" ".join(f"-p {m} ..." for m in missing)
            ),
        )
    env = _settings_env(parameters)
    from ._paths import output_folder

    output_folder(out)  # before a kernel starts
    _run(out, parameters, env, timeout)


COMMANDS: list[click.Command] = [demo, onboard]
