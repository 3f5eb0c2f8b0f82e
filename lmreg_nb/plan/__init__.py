"""A plan: the CSV file of schools that `lmreg-nb batch` runs and `lmreg-nb watch --plan` watches.

The room below both: it reads the file (a regular UTF-8 CSV file, bounded), checks
the header, each row's ``run_id``, contact card and ``env_file`` (read as it is:
no ``${VAR}`` is ever expanded), and collects every mistake of every row into one
:class:`PlanError`, one line each. What a row means to a notebook (its
parameters, typed by the notebook) is the batch's job (:mod:`lmreg_nb.batch.plan`);
what it means to the watch (a school, its account, its contact) is the watch's
(:mod:`lmreg_nb.watch.fleet`).
"""

from __future__ import annotations

from .env_files import load_env_file
from .files import read_text_file, refuse_shared
from .problems import PlanError, Problems
from .rows import CONTACT_COLUMNS, RESERVED, PlanRow, read_rows

__all__ = [
    "CONTACT_COLUMNS",
    "RESERVED",
    "PlanError",
    "PlanRow",
    "Problems",
    "load_env_file",
    "read_rows",
    "read_text_file",
    "refuse_shared",
]
