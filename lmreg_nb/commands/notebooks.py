"""`lmreg-nb notebooks DIR`: copy the shipped notebooks for ``jupyter lab DIR``."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["COMMANDS"]


@click.command("notebooks")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite notebooks you have changed.")
def notebooks(folder: Path, force: bool) -> None:
    """Copy the onboarding notebooks into FOLDER (in the chosen --lang).

    A notebook you have changed is kept unless --force is given. A symbolic link
    or anything but a regular file in a notebook's place is refused (exit 1).
    """
    from ..i18n import _, current_language, ngettext
    from ..runner.shipped import copy_notebooks

    result = copy_notebooks(folder, lang=current_language(), force=force)
    for name in result.written:
        click.echo(_("wrote     {name}").format(name=name))
    for name in result.unchanged:
        click.echo(_("unchanged {name}").format(name=name))
    for name in result.kept:
        click.echo(_("kept      {name} (changed by you; --force overwrites it)").format(name=name))
    for name in result.refused:
        click.echo(
            _(
                "error: refused {name}: it is a symbolic link or not a regular file; nothing "
                "was written through it (remove it and run again)"
            ).format(name=name),
            err=True,
        )
    if result.env_example == "written":
        click.echo(_("wrote     {name}").format(name=".env.example"))
    if result.env_example in ("written", "unchanged", "kept"):
        click.echo(
            _(
                "Fill in {file} (your LMREG_* values) and save it as .env in {folder}: the "
                "notebooks read it."
            ).format(file=".env.example", folder=result.folder)
        )
    count = len(result.written) + len(result.unchanged)
    click.echo(
        ngettext(
            "{n} notebook ready in {folder}: jupyter lab {folder}",
            "{n} notebooks ready in {folder}: jupyter lab {folder}",
            count,
        ).format(n=count, folder=result.folder)
    )
    if result.refused:
        raise SystemExit(1)


COMMANDS: list[click.Command] = [notebooks]
