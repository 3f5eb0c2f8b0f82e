"""Every text marked for translation is seen by the extractor.

Babel's Python extractor does not look inside f-strings (Python 3.11 reads one as a
single token), so ``f"<h1>{_('Onboarding batch')}</h1>"`` never reaches the catalog
and stays English in every language: the batch's index.html title did.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKERS = {"_", "ngettext", "pgettext", "N_", "Nn_", "t"}


def _sources() -> list[Path]:
    return [*sorted((ROOT / "lmreg_nb").rglob("*.py")), ROOT / "notebooks" / "texts.py"]


def test_no_marked_text_hides_inside_an_f_string() -> None:
    hidden = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.JoinedStr):
                continue
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Name)
                    and call.func.id in MARKERS
                    and any(isinstance(a, ast.Constant) for a in call.args)
                ):
                    hidden.append(f"{path.relative_to(ROOT)}:{call.lineno} {ast.unparse(call)}")
    assert hidden == []
