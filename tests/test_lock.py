"""The checkout installs against a lock: a new release of anything changes CI only when
`bash scripts/lock` is run and its diff committed (a Babel release once turned CI red)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0]).lower()


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, version = line.split("==", 1)
            pins[_name(name)] = version.strip()
    return pins


def test_the_checkout_install_names_the_lock() -> None:
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert "-c constraints.txt" in lines
    assert "-e .[notebooks,test]" in lines


def test_every_dependency_of_the_checkout_is_pinned() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"])
    for extra in ("notebooks", "test"):
        wanted += project["optional-dependencies"][extra]
    pins = _pins()
    missing = sorted({_name(r) for r in wanted} - set(pins))
    assert not missing, f"not in constraints.txt (run bash scripts/lock): {missing}"
    assert all(re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", v) for v in pins.values())
    assert len(pins) > 100  # the whole tree, not only the direct dependencies


def test_the_lock_is_refreshed_by_one_documented_command() -> None:
    assert "bash scripts/lock" in (ROOT / "constraints.txt").read_text(encoding="utf-8")
    for readme in ("README.md", "README.zh-CN.md"):
        text = (ROOT / readme).read_text(encoding="utf-8")
        assert "bash scripts/lock" in text and "bash scripts/check-latest" in text, readme
