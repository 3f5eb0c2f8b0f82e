"""Pseudo-locale over a whole headless onboarding: `lmreg-nb demo` in a kernel of its own.

The kernel is another process, so the pseudo catalog travels by LMREG_LOCALE_DIR.
What a person reads (the command's lines, the notebook's outputs, the short HTML
record) must come from the catalog; the record's own values (school, models,
check names, ids, URLs) are taken out before looking.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from fakes.pseudo import unmarked, write_pseudo_catalog

pytestmark = pytest.mark.notebooks
pytest.importorskip("babel", reason="the test extra installs Babel")


def _values(summary: dict[str, Any]) -> set[str]:
    """The record's data: shown as they are, never translated."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and value:
            found.add(value)

    for key in ("school", "contact", "base_url", "env", "models"):
        walk(summary.get(key))
    for check in summary.get("checks", []):
        # Names and severities are the contract's identifiers (the notebooks cite `error`).
        found.update((str(check.get("name")), str(check.get("severity"))))
    found.add("sandbox-model")  # the model name the sandbox's mock serves
    return {v for v in found if len(v) > 1}


def _outputs(nb: nbformat.NotebookNode) -> list[str]:
    texts = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                texts.append(out.get("text", ""))
            data = out.get("data", {})
            if "text/html" in data:
                texts.append(_html_text(str(data["text/html"])))
            elif "text/plain" in data and not any(k.endswith("+json") for k in data):
                texts.append(str(data["text/plain"]))
    return texts


def _without_chat(text: str) -> str:
    # The prompt is the caller's and the reply the model's: data, not the toolkit's texts.
    prompt, reply = "【prompt】", "【reply】"
    if reply in text:
        head, _, _ = text.partition(reply)
        if prompt in head:
            head = head.partition(prompt)[0]
        return head
    return text


def _html_text(page: str) -> str:
    page = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    root = tmp_path_factory.mktemp("pseudo-run")
    env = {
        **os.environ,
        "LMREG_LANG": "zh-CN",
        "LMREG_LOCALE_DIR": str(write_pseudo_catalog(root / "locale")),
        "HOME": str(root / "home"),
    }
    env = {k: v for k, v in env.items() if not k.startswith("LMREG_") or k in env}
    out = root / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "lmreg_nb", "demo", "--out", str(out)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr, out


def _summary(out: Path) -> dict[str, Any]:
    from lmreg_nb import read_records

    summary = read_records(out / "onboarding.ipynb")["summary"]
    assert summary["lang"] == "zh-CN"
    return dict(summary)


def test_demo_lines_come_from_the_catalog(demo: tuple[str, Path]) -> None:
    printed, out = demo
    values = _values(_summary(out)) | {str(out)}
    found = unmarked(printed, values)
    assert not found, f"{found}\n{printed}"


def test_notebook_outputs_come_from_the_catalog(demo: tuple[str, Path]) -> None:
    _, out = demo
    nb = nbformat.read(out / "onboarding.ipynb", as_version=4)
    values = _values(_summary(out))
    problems = {}
    for text in _outputs(nb):
        found = unmarked(_without_chat(text), values)
        if found:
            problems[text[:300]] = found
    assert not problems, json.dumps(problems, ensure_ascii=False, indent=1)


def test_short_record_comes_from_the_catalog(demo: tuple[str, Path]) -> None:
    _, out = demo
    short = out / "onboarding-short.html"
    if not short.exists():
        pytest.skip("no short record written")
    text = _html_text(short.read_text(encoding="utf-8"))
    found = unmarked(text, _values(_summary(out)))
    assert not found, f"{found}\n{text[:3000]}"
