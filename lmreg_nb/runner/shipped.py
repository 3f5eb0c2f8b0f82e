"""The shipped notebooks: find them, and copy them for ``jupyter lab DIR``.

The top-level ``notebooks/`` folder of the checkout is their source; a wheel
carries the same files as package data (``lmreg_nb/notebooks/``, copied there by
``setup.py`` at build time). Lookup order, first folder holding the notebook wins:

1. ``LMREG_NOTEBOOKS`` (``Settings.notebooks``): an operator's own copies;
2. the installed package data;
3. the checkout's ``notebooks/`` (an editable install, or a run from the repo).

Within a folder, a language folder (``zh-CN/onboarding.ipynb``) is taken before
the plain file when a language is asked for and such a variant exists.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigurationError
from ..i18n import _, normalize_language

__all__ = [
    "NOTEBOOKS",
    "CopyResult",
    "copy_notebooks",
    "env_example_path",
    "notebook_folders",
    "notebook_path",
    "shipped_notebooks",
]

#: The notebooks every install carries, in the order a school engineer opens them.
NOTEBOOKS = (
    "01_get_token",
    "02_register_model",
    "03_modify_model",
    "04_list_models",
    "05_test_chat_endpoint",
    "06_monitor",
    "onboarding",
)
_HERE = Path(__file__).resolve().parents[1]  # the package folder
#: Documents every LMREG_* variable: the wheel carries it beside its notebooks.
ENV_EXAMPLE = ".env.example"


def _configured() -> Path | None:
    """LMREG_NOTEBOOKS (through Settings, which reads it and .env in one place)."""
    from ..settings import Settings

    folder = Settings.load().notebooks
    return Path(folder).expanduser() if folder else None


def notebook_folders() -> list[Path]:
    """The folders searched for notebooks, in order (existing ones only)."""
    candidates = [_configured(), _HERE / "notebooks", _HERE.parent / "notebooks"]
    return [folder for folder in candidates if folder is not None and folder.is_dir()]


def _in_folder(folder: Path, stem: str, lang: str | None) -> Path | None:
    names = [f"{lang}/{stem}.ipynb"] if lang and lang != "en" else []
    for name in [*names, f"{stem}.ipynb"]:
        path = folder / name
        if path.is_file():
            return path
    return None


def notebook_path(stem: str, lang: str | None = None) -> Path:
    """The notebook ``<stem>.ipynb`` in language ``lang`` (default: the source notebook).

    Raises ConfigurationError (one line, naming LMREG_NOTEBOOKS) when no folder has it.
    """
    code = normalize_language(lang)
    for folder in notebook_folders():
        found = _in_folder(folder, stem, code)
        if found is not None:
            return found
    raise ConfigurationError(
        _(
            "notebook {name} not found; set LMREG_NOTEBOOKS to the folder holding the "
            "notebooks, or reinstall lmreg_nb"
        ).format(name=f"{stem}.ipynb"),
        variable="LMREG_NOTEBOOKS",
    )


def env_example_path(lang: str | None = None) -> Path | None:
    """The shipped ``.env.example`` (package data, else the checkout's), or None; in
    Chinese its comments are Chinese (``zh-CN/.env.example``), the variables the same."""
    folders = [_HERE / "notebooks", _HERE.parent]
    if normalize_language(lang) == "zh-CN":
        folders = [_HERE / "notebooks" / "zh-CN", _HERE.parent / "notebooks" / "zh-CN", *folders]
    for folder in folders:
        if (folder / ENV_EXAMPLE).is_file():
            return folder / ENV_EXAMPLE
    return None


def shipped_notebooks(lang: str | None = None) -> dict[str, Path]:
    """The notebooks (name -> path), each from the first folder that has it."""
    return {stem: notebook_path(stem, lang) for stem in NOTEBOOKS}


@dataclass
class CopyResult:
    """What :func:`copy_notebooks` did, file names per outcome."""

    folder: Path
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # changed by the user, not overwritten
    #: A symbolic link, a FIFO, a folder... in a notebook's place: never written through.
    refused: list[str] = field(default_factory=list)
    #: What happened to .env.example: "written", "unchanged", "kept", "refused" or ""
    #: (none shipped).
    env_example: str = ""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _target_digest(path: Path) -> str | None:
    """The digest of the regular file at ``path``; "" when nothing is there; None for
    anything else (a symbolic link, even a dangling one, a FIFO, a folder).

    Opened without following a link and without blocking, and judged on the
    open file, so nothing can be swapped in between.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return "" if not os.path.lexists(path) else None
    except OSError:  # ELOOP: a symbolic link
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _replace_with_copy(source: Path, target: Path) -> None:
    """Copy ``source`` to a new file beside ``target``, then rename it over ``target``.

    The rename replaces whatever name is there and never writes through it: a
    link planted meanwhile is replaced, not followed; a hard link keeps its data.
    """
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh, source.open("rb") as src:
            shutil.copyfileobj(src, fh)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the notebook from a shared server
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def copy_notebooks(dest: Path, *, lang: str | None = None, force: bool = False) -> CopyResult:
    """Copy the notebooks into ``dest``; a changed file is kept unless ``force``.

    A notebook's name that holds anything but a regular file (a symbolic link,
    a FIFO, a folder) is refused (:attr:`CopyResult.refused`), never followed.
    """
    dest = Path(dest).expanduser()
    if dest.exists() and not dest.is_dir():
        raise ConfigurationError(
            _("{path} is a file: give a folder for the notebooks").format(path=dest)
        )
    sources = shipped_notebooks(lang)  # all found before anything is written
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(
            _("cannot create the folder {path}: {reason}").format(
                path=dest, reason=exc.strerror or exc
            )
        ) from None
    result = CopyResult(folder=dest)
    for stem, source in sources.items():
        target = dest / f"{stem}.ipynb"
        outcome = _copy(source, target, force)
        getattr(result, outcome).append(target.name)
    example = env_example_path(lang)
    if example is not None:
        result.env_example = _copy(example, dest / ENV_EXAMPLE, force)
        if result.env_example == "refused":
            result.refused.append(ENV_EXAMPLE)
    return result


def _copy(source: Path, target: Path, force: bool) -> str:
    """Copy unless the target is the same ("unchanged"), changed by the user ("kept") or
    no regular file ("refused": a link is never written through)."""
    there = _target_digest(target)
    if there is None:
        return "refused"
    if there == _digest(source):
        return "unchanged"
    if there and not force:
        return "kept"
    try:
        _replace_with_copy(source, target)
    except IsADirectoryError:  # a folder appeared in its place meanwhile
        return "refused"
    return "written"
