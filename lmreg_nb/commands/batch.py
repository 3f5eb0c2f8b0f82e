"""`lmreg-nb batch PLAN.csv`: run a notebook for many schools, headless."""

from __future__ import annotations

from pathlib import Path

import click

from ._types import FiniteRange

__all__ = ["COMMANDS"]


@click.command("batch")
@click.argument("plan", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--out", "out_dir", type=click.Path(path_type=Path, file_okay=False),
    default=Path("runs/batch"), show_default=True,
    help="Folder for <run_id>/ records, summary.csv (a row's schema: "
    "lmreg_nb/schemas/summary-csv-row.schema.json) and index.html.",
)  # fmt: skip
@click.option(
    "--jobs", "-j", type=click.IntRange(1, 64), default=1, show_default=True,
    help="Runs at the same time.",
)  # fmt: skip
@click.option(
    "--timeout", type=FiniteRange(min=1), default=600.0, show_default=True,
    help="Seconds per run before it is stopped.",
)  # fmt: skip
@click.option("--force", is_flag=True, help="Run again the runs that already succeeded.")
@click.option(
    "--env-file", type=click.Path(path_type=Path, dir_okay=False),
    help="Variables common to every run (a row's env_file goes on top).",
)  # fmt: skip
def batch(
    plan: Path, out_dir: Path, jobs: int, timeout: float, force: bool, env_file: Path | None
) -> None:
    """Run one notebook per row of PLAN (CSV: run_id, notebook, env_file, parameters...).

    Each row is its own papermill process with its own environment (its
    env_file: that school's LMREG_* variables, secrets included; never put a
    secret in the plan). A failed run does not stop the others; running the
    same plan again skips the runs that succeeded. Exit 1 if any run failed,
    2 if the plan is wrong (nothing runs then).
    """
    from ..batch import read_plan, run_batch
    from ..batch.report import run_status_label
    from ..i18n import _, current_language, ngettext
    from ._paths import output_folder

    # --lang (or LMREG_LANG, or the locale) is every run's language unless its row says.
    lang = current_language()
    # Checked whole before any run, the contact card too (its rules are the registration's).
    runs = read_plan(plan, env_file=env_file, lang=lang, check_contacts=True)
    output_folder(out_dir)
    result = run_batch(
        runs, out_dir, jobs=jobs, timeout=timeout, force=force, env_file=env_file, lang=lang
    )
    width = max(len(run_status_label(r.get("status"))) for r in result.runs)
    for run in result.runs:
        note = _(" (earlier run)") if run["run_id"] in result.skipped else ""
        error = f"  {run.get('error')}" if run.get("error") else ""
        click.echo(f"{run_status_label(run.get('status')):{width}} {run['run_id']}{note}{error}")
    failed = len(result.failed)
    ready = sum(1 for run in result.runs if run.get("ready"))
    click.echo(
        _("{ok} ok, {failed} failed, {skipped} skipped (already ok); {ready} ready for go-live.")
        # The skipped runs are ok too, but counted once: the three numbers add up to the rows.
        .format(ok=len(result.runs) - failed - len(result.skipped), failed=failed,
                skipped=len(result.skipped), ready=ready)
    )  # fmt: skip
    if result.kernel_retries:
        click.echo(
            ngettext(
                "{n} run needed a second kernel start (see kernel_retried in summary.csv).",
                "{n} runs needed a second kernel start (see kernel_retried in summary.csv).",
                result.kernel_retries,
            ).format(n=result.kernel_retries)
        )
    click.echo(_("Records: {index}, {csv}").format(index=result.index_html, csv=result.summary_csv))
    if failed:
        raise SystemExit(1)


COMMANDS: list[click.Command] = [batch]
