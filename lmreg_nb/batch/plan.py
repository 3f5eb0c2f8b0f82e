"""A batch plan: a CSV file, one notebook run per row, checked whole before anything runs.

Columns: ``run_id``, optional ``notebook`` (default ``onboarding``; a name such as
``01_get_token`` or a path) and ``env_file`` (that school's LMREG_* variables,
secrets included); every other column is a notebook parameter, typed as the
notebook's parameters cell declares. The rows are read by :mod:`lmreg_nb.plan`
(the room the watch reads them with too); here each row gains its notebook and
typed parameters. A bad plan is one :class:`~lmreg_nb.plan.PlanError` naming
every mistake of every row, one line each (line and column).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ..i18n import N_, _, listing, normalize_language
from ..plan import RESERVED, PlanRow, Problems, load_env_file, read_rows, refuse_shared
from ..runner import clean_environment
from ..runner.parameters import convert, declared_types
from ..runner.scrub import looks_secret, secret_values
from ..secret import WINDOW

__all__ = ["DEFAULT_NOTEBOOK", "PlannedRun", "fingerprint", "load_env_file", "read_plan",
           "resolve_notebook"]  # fmt: skip

DEFAULT_NOTEBOOK = "onboarding"


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
    """A notebook by name (``onboarding``, ``01_get_token``: the shipped notebooks) or path
    (one no other user can change: it runs with the school's secrets)."""
    name = name.strip() or DEFAULT_NOTEBOOK
    if name.endswith(".ipynb") or "/" in name or "\\" in name:
        path = Path(name).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise ConfigurationError(_("notebook {path} does not exist").format(path=path))
        refuse_shared(path, _("notebook"))
        return path
    from ..runner.shipped import notebook_path

    return notebook_path(name, lang)


def _kind_words(kind: str) -> str:
    """A parameter's type as a person says it ("int" is no word in Chinese)."""
    words = {"int": N_("whole number"), "float": N_("number"), "bool": N_("true/false value")}
    return _(words[kind]) if kind in words else kind


def _types(
    where: str, notebook: Path, cache: dict[Path, dict[str, str] | None], problems: Problems
) -> dict[str, str] | None:
    """The notebook's parameter types; None (and one mistake, said once) when unreadable."""
    if notebook not in cache:
        try:
            cache[notebook] = declared_types(notebook)
        except Exception as exc:  # papermill raises several types for a bad notebook
            cache[notebook] = None
            problems.add(
                _("{where}, column notebook: {path} has no readable parameters ({kind})").format(
                    where=where, path=notebook, kind=type(exc).__name__
                )
            )
    return cache[notebook]


def _secret_column(name: str, where: str, problems: Problems) -> None:
    if looks_secret(name):
        problems.add(
            _("{where}: column {name} looks like a secret; secrets belong in the row's "
              "env_file, never in the plan").format(where=where, name=name)
        )  # fmt: skip


def _parameters(
    row: PlanRow, notebook: Path, types: dict[str, str], problems: Problems
) -> dict[str, Any]:
    """The row's cells as the notebook's typed parameters; every bad cell is a mistake."""
    secrets = secret_values(clean_environment(row.env))
    parameters: dict[str, Any] = {}
    for name, raw in row.cells.items():
        if name in RESERVED or raw == "":
            continue  # an empty cell keeps the notebook's default
        column = _("{where}, column {name}").format(where=row.where, name=name)
        if any(s == raw or (len(s) >= WINDOW and s in raw) for s in secrets.values()):
            problems.add(
                _("{column}: holds a secret of the run's environment; secrets belong in the "
                  "env_file, never in the plan").format(column=column)
            )  # fmt: skip
            continue
        if name not in types:
            problems.add(
                _("{column}: not a parameter of {notebook} (its parameters: {names})").format(
                    column=column, notebook=notebook.name, names=listing(types) or "-"
                )
            )
            continue
        try:
            parameters[name] = convert(raw, types[name])
        except ValueError:
            problems.add(
                _("{column}: {value} is not a {kind}").format(
                    column=column, value=repr(raw), kind=_kind_words(types[name])
                )
            )
            continue
        # The rules `onboard -p` applies: refused here, not one at a time by each run.
        from ..onboarding.parameters import parameter_problem

        bad = parameter_problem(name, parameters[name])
        if bad is not None:
            problems.add(_("{column}: {reason}").format(column=column, reason=bad.reason))
    return parameters


def _unexpanded(row: PlanRow, problems: Problems) -> None:
    """A mistake when the row's LMREG_* variables hold ``${VAR}``: env files are read as
    written, so the run would send the text itself (an appSecret "${SECRET}" is then
    refused as wrong, and the provider is asked about it). Names the variables only."""
    names = sorted(k for k, v in row.env.items() if k.startswith("LMREG_") and "${" in v)
    if names:
        column = _("{where}, column {name}").format(where=row.where, name="env_file")
        problems.add(
            _("{column}: {names} holds {example}, which is never expanded here (it could carry "
              "this machine's secrets to a platform): write the value itself").format(
                column=column, names=listing(names), example="${VAR}"
            )
        )  # fmt: skip


def read_plan(
    path: str | Path,
    *,
    env_file: Path | None = None,
    lang: str | None = None,
    check_contacts: bool = False,
) -> list[PlannedRun]:
    """Read and check a whole plan; one PlanError naming every mistake (line and column).

    ``lang`` (``--lang`` or LMREG_LANG) is every row's language unless the row has a
    ``lang`` of its own: the notebook of that language, and its ``lang`` parameter
    when it declares one. ``check_contacts``: contact_mobile and contact_email must
    pass the registration's rules. ``env_file``: variables under every row's own.
    """
    plan = Path(path)
    common = load_env_file(env_file, "--env-file") if env_file else {}
    types_of: dict[Path, dict[str, str] | None] = {}
    runs: list[PlannedRun] = []

    def each(row: PlanRow, problems: Problems) -> None:
        try:
            notebook = resolve_notebook(row.cells.get("notebook", ""), plan.parent, row.lang)
        except ConfigurationError as exc:
            problems.add(
                _("{where}, column notebook: {reason}").format(where=row.where, reason=exc)
            )
            return
        _unexpanded(row, problems)
        types = _types(row.where, notebook, types_of, problems)
        if types is None:
            return
        parameters = _parameters(row, notebook, types, problems)
        if normalize_language(lang) not in (None, "en") and "lang" in types:
            # The batch's language reaches the notebook (English is its default already,
            # so the runs of a plan made before languages keep their fingerprint).
            parameters.setdefault("lang", lang)
        runs.append(PlannedRun(row.run_id, notebook, parameters, row.env_file, row.line, row.lang))

    read_rows(
        plan,
        lang=lang,
        check_contacts=check_contacts,
        common_env=common,
        columns=_secret_column,
        each=each,
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
