"""A batch plan: a CSV file, one notebook run per row, checked whole before anything runs.

Columns: ``run_id``, optional ``notebook`` (default ``onboarding``; a name such as
``01_get_token`` or a path) and ``env_file`` (that school's LMREG_* variables,
secrets included); every other column is a notebook parameter, typed as the
notebook's parameters cell declares. A bad plan is a ConfigurationError of one
line naming the line and the column.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, ValidationError
from ..i18n import N_, _, listing, normalize_language
from ..runner import clean_environment
from ..runner.parameters import convert, declared_types
from ..runner.scrub import looks_secret, secret_values
from ..secret import WINDOW
from ..validate import check_email, check_mobile

__all__ = ["DEFAULT_NOTEBOOK", "PlannedRun", "fingerprint", "load_env_file", "read_plan",
           "resolve_notebook"]  # fmt: skip

DEFAULT_NOTEBOOK = "onboarding"
_RESERVED = ("run_id", "notebook", "env_file")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class PlannedRun:
    """One checked row of a plan (parameters typed, no secret among them)."""

    run_id: str
    notebook: Path
    parameters: dict[str, Any]
    env_file: Path | None
    line: int
    #: The run's language (the row's ``lang``, else the batch's); None: the locale's.
    lang: str | None = None


def resolve_notebook(name: str, base: Path | None = None, lang: str | None = None) -> Path:
    """A notebook by name (``onboarding``, ``01_get_token``: the shipped notebooks) or path."""
    name = name.strip() or DEFAULT_NOTEBOOK
    if name.endswith(".ipynb") or "/" in name or "\\" in name:
        path = Path(name).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise ConfigurationError(_("notebook {path} does not exist").format(path=path))
        return path
    from ..runner.shipped import notebook_path

    return notebook_path(name, lang)


def load_env_file(path: Path, where: str) -> dict[str, str]:
    """The variables of an env file; ConfigurationError naming ``where`` when unreadable."""
    from dotenv import dotenv_values

    if not path.is_file():
        raise ConfigurationError(
            _("{where}: env file {path} does not exist").format(where=where, path=path)
        )
    try:
        values = dotenv_values(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(
            _("{where}: env file {path} is unreadable ({reason})").format(
                where=where, path=path, reason=exc
            )
        ) from exc
    return {k: v for k, v in values.items() if v is not None}


def _rows(plan: Path) -> list[tuple[int, list[str]]]:
    """(line number, cells) of every CSV row; one-line errors for an unreadable file."""
    if not plan.is_file():
        raise ConfigurationError(
            _("plan {path} does not exist: give a CSV file with a run_id column").format(path=plan)
        )
    try:
        text = plan.read_text(encoding="utf-8-sig")  # utf-8-sig: Excel's byte order mark
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(
            _("plan {path} is unreadable ({reason}); save it as UTF-8 CSV").format(
                path=plan, reason=exc
            )
        ) from exc
    reader = csv.reader(io.StringIO(text))
    rows: list[tuple[int, list[str]]] = []
    try:
        for row in reader:
            rows.append((reader.line_num, row))
    except csv.Error as exc:  # a cell over the csv module's 128 KiB limit, a stray NUL
        raise ConfigurationError(
            _("{plan} line {line}: not a readable CSV row ({reason}); a cell holds at most "
              "128 KiB").format(plan=plan.name, line=reader.line_num, reason=exc)
        ) from None  # fmt: skip
    if not rows:
        raise ConfigurationError(
            _("plan {path} is empty: it needs a header with run_id").format(path=plan)
        )
    return rows


def _header(plan: Path, cells: list[str]) -> list[str]:
    header = [h.strip() for h in cells]
    where = _("{plan} line {line}").format(plan=plan.name, line=1)
    if "run_id" not in header:
        raise ConfigurationError(
            _("{where}: no run_id column (columns: {columns})").format(
                where=where, columns=listing(header)
            )
        )
    for i, name in enumerate(header):
        if not name:
            raise ConfigurationError(
                _("{where}: column {n} has no name").format(where=where, n=i + 1)
            )
        if header.count(name) > 1:
            raise ConfigurationError(
                _("{where}: column {name} appears twice").format(where=where, name=name)
            )
        if looks_secret(name):
            raise ConfigurationError(
                _("{where}: column {name} looks like a secret; secrets belong in the row's "
                  "env_file, never in the plan").format(where=where, name=name)
            )  # fmt: skip
    return header


def _run_id(plan: Path, line: int, cells: dict[str, str], seen: set[str]) -> str:
    run_id = cells.get("run_id", "")
    where = _("{plan} line {line}").format(plan=plan.name, line=line)
    if not _RUN_ID.match(run_id):
        raise ConfigurationError(
            _("{where}, column run_id: {value} must be 1-100 letters, digits, '.', '_' or '-' "
              "(it names the run's folder)").format(where=where, value=repr(run_id))
        )  # fmt: skip
    if run_id in seen:
        raise ConfigurationError(
            _("{where}, column run_id: {value} is used twice").format(where=where, value=run_id)
        )
    seen.add(run_id)
    return run_id


#: Columns checked by the registration's own contact rules (spec section 1, phase 2).
_CONTACT_RULES = {"contact_mobile": check_mobile, "contact_email": check_email}


def _parameters(
    where: str, cells: dict[str, str], notebook: Path, types: dict[str, str],
    secrets: dict[str, str], *, check_contacts: bool = False,
) -> dict[str, Any]:  # fmt: skip
    parameters: dict[str, Any] = {}
    for name, raw in cells.items():
        if name in _RESERVED or raw == "":
            continue  # an empty cell keeps the notebook's default
        column = _("{where}, column {name}").format(where=where, name=name)
        rule = _CONTACT_RULES.get(name) if check_contacts else None
        if rule is not None:
            try:
                rule(raw, name)
            except ValidationError as exc:
                raise ConfigurationError(
                    _("{column}: {value} {reason}").format(
                        column=column, value=repr(raw), reason=exc.reason
                    )
                ) from None
        if name not in types:
            raise ConfigurationError(
                _("{column}: not a parameter of {notebook} (its parameters: {names})").format(
                    column=column, notebook=notebook.name, names=listing(types) or "-"
                )
            )
        try:
            parameters[name] = convert(raw, types[name])
        except ValueError:
            raise ConfigurationError(
                _("{column}: {value} is not a {kind}").format(
                    column=column, value=repr(raw), kind=_kind_words(types[name])
                )
            ) from None
        if any(s == raw or (len(s) >= WINDOW and s in raw) for s in secrets.values()):
            raise ConfigurationError(
                _("{column}: holds a secret of the run's environment; secrets belong in the "
                  "env_file, never in the plan").format(column=column)
            )  # fmt: skip
    return parameters


def _kind_words(kind: str) -> str:
    """A parameter's type as a person says it ("int" is no word in Chinese)."""
    words = {"int": N_("whole number"), "float": N_("number"), "bool": N_("true/false value")}
    return _(words[kind]) if kind in words else kind


def _types(where: str, notebook: Path, cache: dict[Path, dict[str, str]]) -> dict[str, str]:
    if notebook not in cache:
        try:
            cache[notebook] = declared_types(notebook)
        except Exception as exc:  # papermill raises several types for a bad notebook
            raise ConfigurationError(
                _("{where}, column notebook: {path} has no readable parameters ({kind})").format(
                    where=where, path=notebook, kind=type(exc).__name__
                )
            ) from None
    return cache[notebook]


def read_plan(
    path: str | Path,
    *,
    env_file: Path | None = None,
    lang: str | None = None,
    check_contacts: bool = False,
    env_required: bool = True,
) -> list[PlannedRun]:
    """Read and check a whole plan; ConfigurationError (one line: which line, which column).

    ``lang`` (``--lang`` or LMREG_LANG) is every row's language unless the row has a
    ``lang`` of its own: the notebook of that language, and its ``lang`` parameter
    when it declares one. ``check_contacts``: contact_mobile and contact_email must
    pass the registration's rules. ``env_required`` False (the fleet watch): a row
    whose env_file is missing or unreadable is kept, for its user to report it.
    """
    plan = Path(path)
    rows = _rows(plan)
    header = _header(plan, rows[0][1])
    common = load_env_file(env_file, "--env-file") if env_file else {}
    types_of: dict[Path, dict[str, str]] = {}
    runs: list[PlannedRun] = []
    seen: set[str] = set()
    for line, values in rows[1:]:
        if not any(v.strip() for v in values):
            continue
        if len(values) > len(header):
            raise ConfigurationError(
                _("{plan} line {line}: more values than columns").format(plan=plan.name, line=line)
            )
        cells = dict(zip(header, (v.strip() for v in values), strict=False))
        run_id = _run_id(plan, line, cells, seen)
        where = _("{plan} line {line} (run_id {run_id})").format(
            plan=plan.name, line=line, run_id=run_id
        )
        row_lang = cells.get("lang") or lang
        try:
            notebook = resolve_notebook(cells.get("notebook", ""), plan.parent, row_lang)
        except ConfigurationError as exc:
            raise ConfigurationError(
                _("{where}, column notebook: {reason}").format(where=where, reason=exc)
            ) from None
        row_env_file = None
        env = dict(common)
        if cells.get("env_file"):
            row_env_file = Path(cells["env_file"]).expanduser()
            if not row_env_file.is_absolute():
                row_env_file = plan.parent / row_env_file
            column = _("{where}, column {name}").format(where=where, name="env_file")
            try:
                env.update(load_env_file(row_env_file, column))
            except ConfigurationError:
                if env_required:
                    raise
        types = _types(where, notebook, types_of)
        secrets = secret_values(clean_environment(env))
        parameters = _parameters(
            where, cells, notebook, types, secrets, check_contacts=check_contacts
        )
        if normalize_language(lang) not in (None, "en") and "lang" in types:
            # The batch's language reaches the notebook (English is its default already,
            # so the runs of a plan made before languages keep their fingerprint).
            parameters.setdefault("lang", lang)
        runs.append(
            PlannedRun(
                run_id, notebook, parameters, row_env_file, line, normalize_language(row_lang)
            )
        )
    if not runs:
        raise ConfigurationError(
            _("plan {path} has no runs: add a row under the header").format(path=plan)
        )
    return runs


def fingerprint(run: PlannedRun) -> str:
    """Changes when the row changes: its notebook's path, its parameters, its env_file path.

    Not the notebook's content: a new toolkit version must not redo every school's
    onboarding unasked (``force`` does that).
    """
    digest = hashlib.sha256()
    payload = {
        "notebook": str(run.notebook.resolve()),
        "parameters": run.parameters,
        "env_file": str(run.env_file.resolve()) if run.env_file else None,
        # Not for English, so the runs of a plan made before languages are not redone.
        **({"lang": run.lang} if run.lang not in (None, "en") else {}),
    }
    digest.update(json.dumps(payload, sort_keys=True, default=str).encode())
    return digest.hexdigest()
