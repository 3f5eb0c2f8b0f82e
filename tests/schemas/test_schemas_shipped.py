"""Issue 43 item 1: the contracts live in the project, and are the ones the code keeps.

The schemas are valid draft 2020-12, shipped as package data and published in docs/
(the same bytes), their shared definitions one and the same in every file, their
enumerations the code's own; `--help` names each schema; the reference page, in both
languages, describes every field, every LMREG_* variable and the exit codes, and links
every schema; no file outside the repository is cited anywhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from click.testing import CliRunner
from contract_schemas import NAMES, SCHEMAS, schema, written_problems
from jsonschema import Draft202012Validator

from lmreg_nb.cli import main

ROOT = Path(__file__).resolve().parents[2]
REFERENCES = (ROOT / "docs" / "reference.md", ROOT / "docs" / "reference.zh-CN.md")


def test_the_schemas_are_the_outputs_named() -> None:
    assert sorted(p.name for p in SCHEMAS.glob("*.schema.json")) == sorted(
        f"{n}.schema.json" for n in NAMES
    )


@pytest.mark.parametrize("name", NAMES)
def test_each_is_a_valid_draft_2020_12_schema(name: str) -> None:
    found = schema(name)
    assert found["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(found)
    assert found["title"] and found["description"]


def test_docs_publish_the_package_s_copy() -> None:
    published = ROOT / "docs" / "schemas"
    for name in NAMES:
        copy = published / f"{name}.schema.json"
        assert copy.read_bytes() == (SCHEMAS / f"{name}.schema.json").read_bytes(), (
            f"docs/schemas/{name}.schema.json differs: run python scripts/schemas"
        )
    assert sorted(p.name for p in published.iterdir()) == sorted(f"{n}.schema.json" for n in NAMES)


def test_the_package_ships_them() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    assert "schemas/*.schema.json" in project["tool"]["setuptools"]["package-data"]["lmreg_nb"]
    manifest = (ROOT / "MANIFEST.in").read_text("utf-8").splitlines()
    assert "include lmreg_nb/schemas/*.schema.json" in manifest
    test_extra = " ".join(project["project"]["optional-dependencies"]["test"])
    assert "jsonschema" in test_extra


def test_a_definition_shared_by_several_schemas_is_one() -> None:
    seen: dict[str, tuple[str, Any]] = {}
    for name in NAMES:
        for key, definition in schema(name).get("$defs", {}).items():
            if key in seen:
                assert definition == seen[key][1], f"$defs/{key}: {name} vs {seen[key][0]}"
            else:
                seen[key] = (name, definition)


def _enum(name: str, *path: str) -> list[Any]:
    node: Any = schema(name)
    for key in path:
        node = node[key]
    return list(node["enum"])


def test_the_enumerations_are_the_code_s() -> None:
    from lmreg_nb.batch.report import SUMMARY_COLUMNS
    from lmreg_nb.own_words import CHECK_NAMES
    from lmreg_nb.probe.text.capacity_table import _LIMITS
    from lmreg_nb.summary import SEVERITIES, STATUSES, StepName

    assert _enum("check", "$defs", "check", "properties", "name") == list(CHECK_NAMES)
    assert _enum("summary", "$defs", "recorded_check", "properties", "name") == list(CHECK_NAMES)
    assert _enum("check", "$defs", "check", "properties", "severity") == list(SEVERITIES)
    limited = _enum("capacity", "$defs", "capacity", "properties", "limited_by")
    assert set(limited) == {*_LIMITS, None}
    assert _enum("summary", "properties", "status") == list(STATUSES)
    assert _enum("summary", "$defs", "step", "properties", "name") == [s.value for s in StepName]
    assert list(schema("summary-csv-row")["properties"]) == list(SUMMARY_COLUMNS)


#: `--help` of each command that prints or writes an output, and the schema it names.
HELP = {
    ("check",): "check",
    ("capacity",): "capacity",
    ("token",): "token",
    ("models",): "models",
    ("register",): "model",
    ("modify",): "model",
    ("onboard",): "summary",
    ("demo",): "summary",
    ("batch",): "summary-csv-row",
}


@pytest.mark.parametrize("command", list(HELP))
def test_help_names_the_schema(command: tuple[str, ...], lang: str) -> None:
    result = CliRunner().invoke(main, ["--lang", lang, *command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"lmreg_nb/schemas/{HELP[command]}.schema.json" in text, text
    if command in (("check",), ("capacity",), ("token",)):
        said = (
            "one JSON object, schema:" if lang == "en" else "输出一个 JSON 对象，其 JSON Schema 为"
        )
        assert said in text, text


def _field_names(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                yield from value
            yield from _field_names(value)
    elif isinstance(node, list):
        for value in node:
            yield from _field_names(value)


def _variables() -> set[str]:
    """Every LMREG_* variable the package reads or sets (LMREG_MOCK_ is a prefix)."""
    found: set[str] = set()
    for source in (ROOT / "lmreg_nb").rglob("*.py"):
        found |= set(re.findall(r"LMREG_[A-Z_]*[A-Z]", source.read_text("utf-8")))
    return found - {"LMREG_MOCK"}


@pytest.mark.parametrize("page", REFERENCES, ids=lambda p: p.name)
def test_the_reference_describes_every_field_variable_and_exit_code(page: Path) -> None:
    text = page.read_text("utf-8")
    for name in NAMES:
        assert f"](schemas/{name}.schema.json)" in text, name
        missing = {f for f in _field_names(schema(name)) if f"`{f}`" not in text}
        assert not missing, f"{page.name} does not describe {name}'s {sorted(missing)}"
    variables = _variables()
    assert {"LMREG_BASE_URL", "LMREG_MOCK_API_KEY", "LMREG_ENV_FROM"} <= variables
    assert not {v for v in variables if f"`{v}`" not in text}, page.name
    for code in ("0", "1", "2", "130", "143"):
        assert f"\n| {code} |" in text, code


def test_the_readmes_point_to_the_reference_and_the_schemas() -> None:
    for readme, reference in (("README.md", "docs/reference.md"),
                              ("README.zh-CN.md", "docs/reference.zh-CN.md")):  # fmt: skip
        text = (ROOT / readme).read_text("utf-8")
        assert f"]({reference})" in text, readme
        assert "lmreg_nb/schemas/" in text and "docs/schemas/" in text, readme


#: The design notes the project was built from: a file outside the repository (named in
#: pieces, so that this test does not cite it either).
OUTSIDE = "DESIGN" + ".md"


#: Folders of the checkout that are not the repository's (tools, caches, run output).
NOT_OURS = {".git", ".venv", ".venv-latest", "__pycache__", ".mypy_cache", ".ruff_cache",
            ".pytest_cache", ".hypothesis", "runs", "build", "dist", "node_modules",
            ".ipynb_checkpoints", ".guidellm-venv", "_shots"}  # fmt: skip


def _repository_texts() -> Iterator[Path]:
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in NOT_OURS and not d.endswith(".egg-info")]
        for name in files:
            if not name.endswith((".png", ".mo", ".pyc", ".sqlite3", ".whl", ".gz")):
                yield Path(folder) / name


def test_no_file_outside_the_repository_is_cited() -> None:
    """Only the changelog's history may name the design notes; the package, the tests,
    the READMEs and --help cite the reference, a schema or the module holding the rule."""
    citing = [
        str(path.relative_to(ROOT))
        for path in _repository_texts()
        if path.name != "CHANGELOG.md" and OUTSIDE in path.read_text("utf-8", errors="replace")
    ]
    assert citing == []
    walked = {str(p.relative_to(ROOT)) for p in _repository_texts()}
    assert {"README.md", "lmreg_nb/cli.py", "tests/test_layers.py"} <= walked


def test_the_session_check_finds_a_run_record_that_breaks_its_schema(tmp_path: Path) -> None:
    """The check every session ends with (tests/conftest.py): a notebook papermill ran
    with a record that breaks the schema is named; a test's own double is not."""
    output = nbformat.v4.new_output(
        "display_data",
        data={"application/vnd.lmreg.record+json": {"name": "summary",
                                                     "value": {"school": "S"}}},
    )  # fmt: skip
    cell = nbformat.v4.new_code_cell("record()", outputs=[output])
    run = nbformat.v4.new_notebook(cells=[cell], metadata={"papermill": {"duration": 1.0}})
    nbformat.write(run, tmp_path / "run.ipynb")
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), tmp_path / "double.ipynb")
    (tmp_path / "summary.csv").write_text("run_id,status\nbad id,ok\n", encoding="utf-8")
    found = written_problems(tmp_path)
    for made in tmp_path.iterdir():
        made.unlink()  # broken on purpose: not for the session's own check to find
    assert any("run.ipynb: summary: (top): 'status' is a required property" in p for p in found)
    assert not any("double.ipynb" in p for p in found)
    assert any("summary.csv line 2: run_id" in p for p in found), found
    assert json.dumps(found)  # plain lines


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_the_sessions_check_skips_what_is_not_a_file(tmp_path: Path) -> None:
    """A FIFO a test planted under a record's name (tests/test_cli_paths.py makes one) is
    not read: opening it waits for a writer forever, and the whole session with it."""
    import threading

    os.mkfifo(tmp_path / "01_get_token.ipynb")
    (tmp_path / "run").mkdir()
    os.mkfifo(tmp_path / "run" / "summary.csv")
    found: list[list[str]] = []
    reader = threading.Thread(target=lambda: found.append(written_problems(tmp_path)), daemon=True)
    reader.start()
    reader.join(timeout=30)
    stuck = reader.is_alive()
    for fifo in (tmp_path / "01_get_token.ipynb", tmp_path / "run" / "summary.csv"):
        if stuck:  # a writer that opens and closes lets the stuck reader go
            with contextlib.suppress(OSError):  # ENXIO: nobody reads this one
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        fifo.unlink()
    assert not stuck, "written_problems waited on a FIFO"
    assert found == [[]]
