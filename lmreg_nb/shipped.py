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

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigurationError
from .i18n import _, normalize_language

__all__ = [
    "NOTEBOOKS",
    "CopyResult",
    "copy_notebooks",
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
_HERE = Path(__file__).resolve().parent


def _configured() -> Path | None:
    """LMREG_NOTEBOOKS (through Settings, which reads it and .env in one place)."""
    from .settings import Settings

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


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def copy_notebooks(dest: Path, *, lang: str | None = None, force: bool = False) -> CopyResult:
    """Copy the notebooks into ``dest``; a changed file is kept unless ``force``."""
    dest = Path(dest).expanduser()
    if dest.exists() and not dest.is_dir():
        raise ConfigurationError(
            _("{path} is a file: give a folder for the notebooks").format(path=dest)
        )
    sources = shipped_notebooks(lang)  # all found before anything is written
    dest.mkdir(parents=True, exist_ok=True)
    result = CopyResult(folder=dest)
    for stem, source in sources.items():
        target = dest / f"{stem}.ipynb"
        if target.is_file() and _digest(target) == _digest(source):
            result.unchanged.append(target.name)
            continue
        if target.exists() and not force:
            result.kept.append(target.name)
            continue
        shutil.copyfile(source, target)
        result.written.append(target.name)
    return result
