"""The import directions of the layers (README, "How the code is laid out"), on every module.

core <- probe <- notebook layer <- ui; the run layer uses core and the
notebook layer's records, never ui or the probe; the sandbox uses core's field
rules only; the CLI sits on top. Every import counts, also one inside a
function or under TYPE_CHECKING: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lmreg_nb"

#: folder (package) -> layer. The layers are folders: a module at the package root is
#: core (configuration, errors, values, texts), except the CLI's.
LAYER_OF: dict[str, str] = {
    "summary": "core",  # the typed onboarding Summary: a value, like models
    "plan": "core",  # a plan's rows, below both batch (run) and watch (notebook)
    "registry": "core",  # the platform's client: tokens, envelope, retries, frames
    "probe": "probe",  # the school's chat endpoint
    "onboarding": "notebook",  # the facade, its steps and display objects
    "records": "notebook",  # record()/read_records() and the record's HTML and text
    "ui": "ui",  # widgets
    "runner": "run",  # one papermill run: environment, kernels, scrub, run folders
    "batch": "run",  # many runs
    "sandbox": "sandbox",  # the platform and the mock school model
    "watch": "notebook",  # monitoring after go-live: rounds, alerts, the status page
    "commands": "cli",
    "cli": "cli",
    "__main__": "cli",
}
#: A module at the root that is a folder's job: it belongs in that folder.
ROOT_LAYER = "core"


#: layer -> the layers it may import
ALLOWED: dict[str, set[str]] = {
    "core": {"core"},
    "probe": {"core", "probe"},
    "notebook": {"core", "probe", "notebook"},
    "ui": {"core", "probe", "notebook", "ui"},
    "run": {"core", "notebook", "run"},
    "sandbox": {"core", "sandbox"},
    "cli": {"core", "probe", "notebook", "run", "sandbox", "cli"},
}


def layer_of(module: str) -> str | None:
    """The layer of ``module`` (dotted, relative to lmreg_nb), by its longest known prefix."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        layer = LAYER_OF.get(".".join(parts[:n]))
        if layer is not None:
            return layer
    return ROOT_LAYER if len(parts) == 1 and (PACKAGE / f"{module}.py").is_file() else None


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imported_modules(source: str, module: str, *, is_package: bool) -> list[tuple[int, str]]:
    """(line, module relative to lmreg_nb) for each lmreg_nb import in ``source``."""
    found: list[tuple[int, str]] = []
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "lmreg_nb" or alias.name.startswith("lmreg_nb."):
                    found.append((node.lineno, alias.name.removeprefix("lmreg_nb").lstrip(".")))
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module and (node.module + ".").startswith("lmreg_nb."):
                    base = node.module.removeprefix("lmreg_nb").lstrip(".")
                else:
                    continue
            else:
                anchor = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                base = ".".join([*anchor, *(node.module.split(".") if node.module else [])])
            if base:
                found.append((node.lineno, base))
            else:  # "from . import x" at the top: each name is a module of the package
                found += [(node.lineno, alias.name) for alias in node.names]
    return found


def violations(source: str, module: str, *, is_package: bool = False) -> list[str]:
    """Every import in ``source`` that goes against the layers, as readable lines."""
    mine = layer_of(module)
    if mine is None:
        return [f"{module}: in no layer's folder; put it in one (LAYER_OF)"]
    problems = []
    for line, target in imported_modules(source, module, is_package=is_package):
        theirs = layer_of(target)
        if theirs is None:
            problems.append(f"{module}:{line} imports {target}, which has no layer")
        elif theirs not in ALLOWED[mine]:
            problems.append(f"{module}:{line} ({mine}) imports {target} ({theirs})")
    return problems


def _modules() -> list[Path]:
    # The package root re-exports the public names lazily; it is the public face, not a layer.
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p != PACKAGE / "__init__.py"]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_layers(path: Path) -> None:
    problems = violations(
        path.read_text(encoding="utf-8"), _module_name(path), is_package=path.name == "__init__.py"
    )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("client", "from .ui import forms\n"),
        ("client", "def f():\n    from .probe import check_endpoint\n"),
        ("records", "from lmreg_nb.ui.register import RegisterForm\n"),
        ("records.html", "from ..ui import forms\n"),
        ("settings", "from .onboarding.display import Outcome\n"),
        ("runner.scrub", "from ..probe import check_endpoint\n"),
        ("batch", "from .ui._common import Form\n"),
        ("plan.rows", "from ..runner.scrub import looks_secret\n"),
        ("plan", "from ..watch.fleet import School\n"),
        ("sandbox.store", "from ..probe.checks import CheckResult\n"),
        ("probe.checks", "from ..onboarding import Onboarding\n"),
        ("runner", "from .probe import check_endpoint\n"),
        (
            "summary",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .records import x\n",
        ),
    ],
)
def test_a_wrong_import_is_caught(module: str, source: str) -> None:
    assert violations(source, module), f"{source!r} in {module} should break the layers"


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("probe.checks", "from ..validate import url_warnings\nfrom .sse import SSEDecoder\n"),
        ("ui.register", "from ..onboarding import Onboarding\n"),
        ("commands.check", "from ..probe import check_endpoint\n"),
        ("sandbox.app", "from ..validate import model_body\n"),
        ("watch.fleet", "from ..plan import read_rows\n"),
        ("batch.plan", "from ..plan import read_rows\n"),
    ],
)
def test_a_right_import_passes(module: str, source: str) -> None:
    assert violations(source, module) == []


def test_every_folder_has_a_layer_and_the_root_holds_core_and_the_cli() -> None:
    folders = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert folders <= set(LAYER_OF), f"folders without a layer: {folders - set(LAYER_OF)}"
    loose = sorted(
        p.stem for p in PACKAGE.glob("*.py")
        if p.stem != "__init__" and layer_of(p.stem) not in ("core", "cli")
    )  # fmt: skip
    assert loose == [], f"notebook- or run-layer modules loose at the root: {loose}"


def test_relative_imports_resolve_from_packages() -> None:
    # In probe/__init__.py, "from .checks import x" is probe.checks, not lmreg_nb.checks.
    assert imported_modules("from .checks import x\n", "probe", is_package=True) == [
        (1, "probe.checks")
    ]
    assert imported_modules("from .. import secret\n", "probe.sse", is_package=False) == [
        (1, "secret")
    ]
