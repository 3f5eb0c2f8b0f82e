"""The rows of a plan: header, run_id, contact card, env_file and language, every mistake kept.

A :class:`PlanRow` is what every user of a plan shares: where it is (file, line),
its ``run_id``, its cells, its env_file (path, variables, or why they cannot be
read) and its language. :func:`read_rows` checks the whole file and raises one
:class:`~lmreg_nb.plan.problems.PlanError` naming every mistake it found, one
line each (``extra`` lets the batch add the mistakes of its own columns first).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigurationError, ValidationError
from ..i18n import _, listing, normalize_language
from ..secret import WINDOW, Masker
from ..validate import check_email, check_mobile
from .env_files import load_env_file
from .files import read_text_file
from .problems import Problems

__all__ = ["CONTACT_COLUMNS", "MAX_PLAN", "RESERVED", "PlanRow", "read_rows"]

#: The columns every plan may have that are no notebook parameter.
RESERVED = ("run_id", "notebook", "env_file")
#: A plan larger than this is not one (10,000 schools take about 1 MiB).
MAX_PLAN = 32 << 20
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
#: Columns checked by the registration's own contact rules (spec section 1, phase 2).
CONTACT_COLUMNS: dict[str, Callable[[object, str], str]] = {
    "contact_mobile": check_mobile,
    "contact_email": check_email,
}


@dataclass(frozen=True)
class PlanRow:
    """One row of a plan, checked: its place, run_id, cells, env_file and language."""

    run_id: str
    line: int
    #: Column -> the cell, stripped, as written.
    cells: dict[str, str]
    #: "plan.csv line 3 (run_id a)": how a mistake of this row begins.
    where: str
    env_file: Path | None = None
    #: The env_file's variables (secrets among them): never shown.
    env: dict[str, str] = field(default_factory=dict, repr=False)
    #: Why the env_file cannot be read ("" when it can, or when there is none).
    env_problem: str = ""
    #: The row's ``lang``, else the plan's; None: the locale's.
    lang: str | None = None
    #: contact_mobile / contact_email as they will be used (checked rows only).
    contacts: dict[str, str] = field(default_factory=dict)


def _rows(plan: Path) -> list[tuple[int, list[str]]]:
    """(line number, cells) of every CSV row; one-line errors for an unusable file."""
    text = read_text_file(plan, limit=MAX_PLAN, what=_("plan"))
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


def _header(plan: Path, cells: list[str], problems: Problems) -> list[str]:
    header = [h.strip() for h in cells]
    where = _("{plan} line {line}").format(plan=plan.name, line=1)
    if "run_id" not in header:
        problems.add(
            _("{where}: no run_id column (columns: {columns})").format(
                where=where, columns=listing(header)
            )
        )
    for i, name in enumerate(header):
        if not name:
            problems.add(_("{where}: column {n} has no name").format(where=where, n=i + 1))
        elif header.index(name) != i:
            problems.add(_("{where}: column {name} appears twice").format(where=where, name=name))
    return header


def _run_id(where: str, cells: Mapping[str, str], seen: set[str], problems: Problems) -> str:
    run_id = cells.get("run_id", "")
    if not _RUN_ID.match(run_id):
        problems.add(
            _("{where}, column run_id: {value} must be 1-100 letters, digits, '.', '_' or '-' "
              "(it names the run's folder)").format(where=where, value=repr(run_id))
        )  # fmt: skip
    elif run_id in seen:
        problems.add(
            _("{where}, column run_id: {value} is used twice").format(where=where, value=run_id)
        )
    seen.add(run_id)
    return run_id


def _contacts(
    where: str, cells: Mapping[str, str], env: Mapping[str, str], problems: Problems
) -> dict[str, str]:
    """Every contact cell checked (all of a row's mistakes at once), normalised.

    A cell is quoted in the mistake, masked by the row's env_file values: a secret
    pasted into the wrong column is never printed.
    """
    mask = Masker([v for v in env.values() if len(v) >= WINDOW])
    found: dict[str, str] = {}
    for name, rule in CONTACT_COLUMNS.items():
        raw = cells.get(name, "")
        if not raw:
            continue
        try:
            found[name] = rule(raw, name)
        except ValidationError as exc:
            problems.add(
                _("{column}: {value} {reason}").format(
                    column=_("{where}, column {name}").format(where=where, name=name),
                    value=mask(repr(raw)),
                    reason=exc.reason,
                )
            )
    return found


def read_rows(
    path: str | Path,
    *,
    lang: str | None = None,
    check_contacts: bool = False,
    env_required: bool = True,
    common_env: Mapping[str, str] | None = None,
    problems: Problems | None = None,
    columns: Callable[[str, str, Problems], None] | None = None,
    each: Callable[[PlanRow, Problems], None] | None = None,
) -> list[PlanRow]:
    """Read and check a whole plan; one PlanError naming every mistake (one line each).

    ``lang``: every row's language unless the row has a ``lang``. ``check_contacts``:
    contact_mobile and contact_email must pass the registration's rules.
    ``env_required`` False (the watch): a row whose env_file cannot be read is kept,
    with :attr:`PlanRow.env_problem`, for its user to report. ``common_env``: the
    variables under every row's env_file (batch's ``--env-file``). ``columns`` (a
    column's name, where, the list) and ``each`` (a row) check what a user of the plan
    adds (the batch: no secret in a column's name, the notebook and its parameters),
    adding their mistakes to the same list.
    """
    plan = Path(path)
    problems = problems if problems is not None else Problems()
    rows = _rows(plan)
    header = _header(plan, rows[0][1], problems)
    if columns is not None:
        head = _("{plan} line {line}").format(plan=plan.name, line=1)
        for name in dict.fromkeys(h for h in header if h):
            columns(name, head, problems)
    if problems:
        problems.raise_any()  # without a usable header no row can be read
    found: list[PlanRow] = []
    seen: set[str] = set()
    for line, values in rows[1:]:
        if not any(v.strip() for v in values):
            continue
        if len(values) > len(header):
            problems.add(
                _("{plan} line {line}: more values than columns").format(plan=plan.name, line=line)
            )
            continue
        cells = dict(zip(header, (v.strip() for v in values), strict=False))
        run_id = _run_id(
            _("{plan} line {line}").format(plan=plan.name, line=line), cells, seen, problems
        )
        where = _("{plan} line {line} (run_id {run_id})").format(
            plan=plan.name, line=line, run_id=run_id
        )
        env_file, env, env_problem = _env(plan, where, cells, common_env)
        contacts = _contacts(where, cells, env, problems) if check_contacts else {}
        row_lang = normalize_language(cells.get("lang") or lang)
        if env_problem and env_required:
            problems.add(env_problem)
        row = PlanRow(run_id, line, cells, where, env_file, env, env_problem, row_lang, contacts)
        if each is not None:
            each(row, problems)
        found.append(row)
    if not found and not problems:
        problems.add(_("plan {path} has no runs: add a row under the header").format(path=plan))
    problems.raise_any()
    return found


def _env(
    plan: Path, where: str, cells: Mapping[str, str], common: Mapping[str, str] | None
) -> tuple[Path | None, dict[str, str], str]:
    """The row's env_file (relative to the plan), its variables over ``common``, or why not."""
    env = dict(common or {})
    if not cells.get("env_file"):
        return None, env, ""
    path = Path(cells["env_file"]).expanduser()
    if not path.is_absolute():
        path = plan.parent / path
    column = _("{where}, column {name}").format(where=where, name="env_file")
    try:
        env.update(load_env_file(path, column))
    except ConfigurationError as exc:
        return path, env, str(exc)
    return path, env, ""
