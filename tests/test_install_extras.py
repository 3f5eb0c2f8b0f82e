"""Issue 43 item 8: the school engineer's install brings no development tools.

`pip install -r requirements.txt`, the README's only install, brought mypy,
ruff, schemathesis, hypothesis, pytest and playwright to a school engineer who
only runs notebooks. The package with its `notebooks` extra (the wheel, or
``lmreg_nb[notebooks]``) is theirs; requirements.txt stays the checkout's test
install; both READMEs' Install sections say which is whose. The dependency
closure is read from the installed distributions' own metadata (markers and
extras evaluated as pip does).
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
#: Tools for developing and testing the toolkit, none of them needed to run it.
DEV_TOOLS = {"mypy", "ruff", "schemathesis", "hypothesis", "pytest", "playwright", "nbval",
             "pytest-xdist", "pytest-timeout", "grimp", "trustme", "aiosmtpd"}  # fmt: skip
SCHOOL_INSTALL = 'pip install "dist/lmreg_nb-{version}-py3-none-any.whl[notebooks]"'


def _closure(name: str, extras: set[str]) -> set[str]:
    """Every distribution ``name[extras]`` pulls in, by its installed metadata."""
    seen: dict[str, set[str]] = {}
    stack = [(name, extras)]
    while stack:
        current, wanted = stack.pop()
        key = canonicalize_name(current)
        if key in seen and wanted <= seen[key]:
            continue
        seen[key] = seen.get(key, set()) | wanted
        try:
            requires = metadata.distribution(current).requires or []
        except metadata.PackageNotFoundError:
            continue  # a marker for another platform named it; nothing installed
        for raw in requires:
            req = Requirement(raw)
            envs = [{"extra": e} for e in (wanted or {""})]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                stack.append((req.name, set(req.extras)))
    return set(seen)


def _project() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_school_install_pulls_in_no_development_tool() -> None:
    pulled = _closure("lmreg_nb", {"notebooks"})
    assert {"jupyterlab", "papermill", "httpx"} <= pulled  # the walk sees the tree
    assert pulled.isdisjoint(DEV_TOOLS), sorted(pulled & DEV_TOOLS)


def test_the_development_tools_are_the_test_extra_only() -> None:
    project = _project()
    extras = project["optional-dependencies"]
    assert isinstance(extras, dict)
    named = {
        canonicalize_name(Requirement(r).name)
        for group in ("notebooks",)
        for r in [*project["dependencies"], *extras[group]]  # type: ignore[misc]
    }
    assert named.isdisjoint(DEV_TOOLS)
    test = {canonicalize_name(Requirement(r).name) for r in extras["test"]}
    assert {"pytest", "playwright", "ruff", "mypy"} <= test
    # The checkout's install: the package editable with both extras, pinned by the lock.
    lines = [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines == ["-c constraints.txt", "-e .[notebooks,test]"]


def _section(readme: str, heading: str) -> str:
    text = (ROOT / readme).read_text(encoding="utf-8")
    found = re.search(rf"^## {heading}\n(.*?)(?=^## )", text, flags=re.S | re.M)
    assert found, f"{readme} has no section {heading!r}"
    return found.group(1)


@pytest.mark.parametrize(
    ("readme", "heading"), [("README.md", "Install"), ("README.zh-CN.md", "安装")]
)
def test_each_readme_says_which_install_is_whose(readme: str, heading: str) -> None:
    section = _section(readme, heading)
    assert SCHOOL_INSTALL.format(version=_project()["version"]) in section
    assert 'pip install "lmreg_nb[notebooks]"' in section
    assert "pip install -r requirements.txt" in section and "constraints.txt" in section
    for tool in ("pytest", "playwright", "ruff", "mypy"):
        assert tool in section  # named as what the school install leaves out
