"""The shipped JSON Schemas (lmreg_nb/schemas/), as the tests hold the outputs to them.

:func:`problems` validates an instance against one schema (draft 2020-12, formats
asserted); :func:`csv_rows` reads a batch's summary.csv, in either language, as rows
keyed by the column identifiers the schema names; :func:`written_problems` finds every
record and summary.csv under a folder (a test session's temporary folder) and what in
them breaks the schemas.
"""

from __future__ import annotations

import csv
import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

import lmreg_nb

SCHEMAS = Path(lmreg_nb.__file__).resolve().parent / "schemas"
#: The outputs with a schema: file stem -> what prints or writes it.
NAMES = ("check", "capacity", "token", "models", "model", "summary", "summary-csv-row")


@cache
def schema(name: str) -> dict[str, Any]:
    """The shipped schema ``name`` (``check``, ``summary-csv-row``...)."""
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text("utf-8"))
    return loaded


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(name), format_checker=FormatChecker())


def problems(name: str, instance: Any) -> list[str]:
    """Every way ``instance`` breaks schema ``name``, one line each (empty: it follows it)."""
    found = sorted(_validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in found]


def assert_valid(name: str, instance: Any) -> None:
    """Fail with every problem when ``instance`` breaks schema ``name``."""
    found = problems(name, instance)
    assert not found, f"{name}.schema.json:\n" + "\n".join(found)


def _header_words() -> dict[str, str]:
    """summary.csv's header, in every language, -> the column identifier."""
    from lmreg_nb import i18n
    from lmreg_nb.batch.report import SUMMARY_COLUMNS, _csv_headers

    words: dict[str, str] = {}
    for lang in ("en", "zh-CN"):
        with i18n.speaking(lang):
            words.update(zip(_csv_headers(), SUMMARY_COLUMNS, strict=True))
    return words


def csv_rows(path: Path) -> list[dict[str, str]]:
    """summary.csv's rows keyed by the column identifiers (a Chinese header mapped back)."""
    words = _header_words()
    with path.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    header = [words.get(h, h) for h in rows[0]]
    return [dict(zip(header, row, strict=True)) for row in rows[1:]]


def written_problems(folder: Path) -> list[str]:
    """What breaks the schemas in the records of the notebooks papermill ran and in the
    summary.csv files under ``folder``."""
    from lmreg_nb.errors import LmregError
    from lmreg_nb.records import read_records

    found: list[str] = []
    for notebook in sorted(folder.rglob("*.ipynb")):
        if not notebook.is_file():
            continue  # a FIFO or a folder a test planted: reading it would wait forever
        try:
            if "papermill" not in json.loads(notebook.read_text("utf-8")).get("metadata", {}):
                continue  # made by a test, not run: its records are the test's own doubles
            summary = read_records(notebook).get("summary")
        except (LmregError, OSError, ValueError, AttributeError):
            continue  # not a notebook (a test's broken file): no record to hold
        if summary is not None:
            found += [f"{notebook}: summary: {p}" for p in problems("summary", summary)]
    for table in sorted(folder.rglob("summary.csv")):
        if not table.is_file():
            continue
        for n, row in enumerate(csv_rows(table), start=2):
            found += [f"{table} line {n}: {p}" for p in problems("summary-csv-row", row)]
    return found


def sample_capacity() -> Any:
    """A capacity search's result as the search makes it: levels at 4 and 6 chats, a class
    of 4 served, the lesson workload and its prefix cache (for tests without sockets)."""
    from lmreg_nb.probe.load.capacity import CapacityResult
    from lmreg_nb.probe.load.levels import SLO, Level
    from lmreg_nb.summary import PrefixCache, Workload

    def level(c: int, p90: float, meets: bool) -> Level:
        pct = {"p50": p90 / 2, "p90": p90, "p99": p90 * 1.2}
        return Level(
            c, requests=4 * c, errors=0, ttft_ms=pct, itl_ms={"p50": 9.0, "p90": 11.0,
            "p99": 14.0}, latency_ms=pct, requests_per_s=c / 2, output_tokens_per_s=c * 16.0,
            meets_slo=meets,
        )  # fmt: skip

    return CapacityResult(
        SLO(ttft_ms=2000.0, itl_ms=150.0),
        [level(4, 400.0, True), level(6, 2600.0, False)],
        need=4,
        workload=Workload("lesson", 1756, 1693, 3, 300),
        prefix_cache=PrefixCache(True, 305.8, 58.0, noise_ms=20.0),
    )
