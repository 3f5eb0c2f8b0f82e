"""Issue 32 item 7: the masker never garbles the toolkit's own words.

An apiKey built from words the toolkit uses (``sk-unreachable-0000000000``)
shares 7-character pieces with check names and catalog messages; those pieces
are ours, not the key's. The key itself, whole or in pieces of its own, is
still masked everywhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

from lmreg_nb.own_words import CHECK_NAMES, own_text
from lmreg_nb.records import RECORD_MIME
from lmreg_nb.runner.scrub import scrub_notebook
from lmreg_nb.secret import Masker, find_leaks

PACKAGE = Path(__file__).resolve().parents[2] / "lmreg_nb"

#: Keys a school might choose, made of the toolkit's own words.
WORDY_KEYS = [
    "sk-unreachable-0000000000",
    "system-role-context-window-7f3a",
    "sk-stream-no-error-object-reachable",
    "model-name-served-tls-certificate",
]


def _names_built_in_code() -> set[str]:
    """The first argument of every ``Declared("...")`` (and ``CheckResult("...")``) in the
    package: the names checks are declared with."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            first = node.args[0]
            constant = isinstance(first, ast.Constant) and isinstance(first.value, str)
            if called in ("Declared", "CheckResult", "Check", "_row") and constant:
                names.add(first.value)  # type: ignore[attr-defined]
    return names


def test_every_check_name_the_code_builds_is_known() -> None:
    built = _names_built_in_code()
    assert "reachable" in built and "load-test" in built  # the scan sees the code
    assert built <= set(CHECK_NAMES), sorted(built - set(CHECK_NAMES))


def test_the_masker_knows_every_declared_check_and_no_other() -> None:
    from lmreg_nb.probe.checks.catalog import CHECKS, MEASURED

    assert {c.name for c in (*CHECKS, *MEASURED)} == set(CHECK_NAMES)


@pytest.mark.parametrize("key", WORDY_KEYS)
def test_our_own_text_stays_whole_beside_a_wordy_key(key: str) -> None:
    ours = own_text()
    masker = Masker({"LMREG_MODEL_API_KEY": key})
    assert masker(ours) == ours  # not one check name or catalog message garbled
    for name in CHECK_NAMES:
        assert masker(f"[{name}] failed") == f"[{name}] failed"


@pytest.mark.parametrize("key", WORDY_KEYS)
def test_the_wordy_key_itself_is_still_masked_whole_and_in_pieces(key: str) -> None:
    secrets = {"LMREG_MODEL_API_KEY": key}
    masker = Masker(secrets)
    echoed = f"server said: bad key {key!r}; head {key[:12]}; tail {key[-9:]}; reachable"
    shown = masker(echoed)
    assert key not in shown
    ours = own_text()
    pieces = [key[i : i + 7] for i in range(len(key) - 6)]
    own_pieces = [p for p in pieces if p not in ours]
    assert own_pieces  # each key has pieces of its own ("0000000", "k-strea")
    assert not [p for p in own_pieces if p in shown]  # still masked as pieces of a secret
    assert shown.endswith("; reachable")  # and our word is whole
    assert find_leaks(shown, secrets) == []
    assert find_leaks(echoed, secrets) == ["LMREG_MODEL_API_KEY"]


def test_a_scrubbed_record_keeps_every_check_name_whole() -> None:
    """The record, summary.csv and index are built from the scrubbed notebook."""
    key = "sk-unreachable-0000000000"
    checks = [
        {"name": n, "passed": n != "reachable", "severity": "error", "detail": "HTTP 200"}
        for n in CHECK_NAMES
    ]
    checks[3]["detail"] = f"the server echoed {key} and {key[:15]}"
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("record('summary', s)")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                RECORD_MIME: {"name": "summary", "value": {"checks": checks}},
                "text/plain": "\n".join(f"{c['name']}: {c['detail']}" for c in checks),
            },
        )
    ]
    nb.cells.append(cell)
    clean = scrub_notebook(nb, {"LMREG_MODEL_API_KEY": key})
    data = clean.cells[0].outputs[0]["data"]
    names = [c["name"] for c in data["application/vnd.lmreg.record+json"]["value"]["checks"]]
    assert names == list(CHECK_NAMES)
    text = data["text/plain"]
    assert all(f"{n}: " in text for n in CHECK_NAMES)
    assert find_leaks(nbformat.writes(clean), {"LMREG_MODEL_API_KEY": key}) == []
    assert "0000000" not in nbformat.writes(clean)
