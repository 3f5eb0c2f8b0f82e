"""The CLI's output paths (--out, --plot): checked before the work starts, one line each.

A folder that cannot be made (under a file, on /proc) or a figure whose folder
is missing is a usage error found at once, not after a run or a measurement of
minutes; a figure that cannot be written (a full disk, /dev/full) is one line
after the results were printed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["check_figure_path", "output_folder", "save_figure", "show_chart"]


def output_folder(path: Path, option: str = "--out") -> Path:
    """Create the folder ``path`` now; a ValidationError (exit 2) naming ``option`` if not."""
    from ..errors import ValidationError
    from ..i18n import _

    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValidationError(
            option,
            _("cannot create the folder {path}: {reason}").format(
                path=path, reason=exc.strerror or exc
            ),
        ) from None
    return path


def check_figure_path(path: str, option: str = "--plot") -> None:
    """A ValidationError (exit 2) naming ``option`` when the figure's folder is not a folder."""
    from ..errors import ValidationError
    from ..i18n import _

    folder = Path(path).parent
    if not folder.is_dir():
        raise ValidationError(
            option,
            _("the folder {folder} does not exist: create it or choose another path").format(
                folder=folder
            ),
        )


def save_figure(figure: Figure, path: str) -> None:
    """Save ``figure`` as a PNG at ``path``; an LmregError (exit 1, one line) if it cannot be."""
    from ..errors import LmregError
    from ..i18n import _

    # A name without a suffix is still a PNG at exactly that name (matplotlib would
    # otherwise append ".png": /dev/full became /dev/full.png).
    kind = None if Path(path).suffix else "png"
    try:
        figure.savefig(path, dpi=100, format=kind)
    except OSError as exc:
        raise LmregError(
            _("could not save the figure to {path}: {reason}").format(
                path=path, reason=exc.strerror or exc
            )
        ) from None


def show_chart(figure: Callable[[], Figure | None], path: str, *, as_json: bool) -> None:
    """Save the chart ``figure()`` makes (None: nothing was measured to draw) at ``path``
    and say where; on stderr beside ``--json``, whose stdout is one JSON object."""
    import click

    from ..i18n import _

    drawn = figure()
    if drawn is None:
        return
    save_figure(drawn, path)
    click.echo(_("figure: {path}").format(path=path), err=as_json)
