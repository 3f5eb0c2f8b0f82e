"""Install anywhere: the built wheel alone, in a fresh virtual environment, runs the demo.

Builds the wheel (`pip wheel --no-deps`) and installs it (`pip install --no-deps`) into a
new venv without the system's or this venv's site-packages. Its dependencies are the
distributions this venv holds that the wheel's Requires-Dist needs, theirs included, and
nothing else, linked in as pip unpacked them here (the lock's versions; pip resolving
them from an index is what `.ci/run`'s own install does, and a second resolution took
25 s of CPU). Then, from an empty folder, `lmreg-nb demo` and, beside it,
`lmreg-nb notebooks DIR` (two commands at once, as in two terminals). The demo skips its
capacity step to keep this test lean. The wheel must declare exactly the dependencies
pyproject.toml names, and `pip check` then finds every requirement of the venv met, the
wheel's included: an import the wheel does not declare fails the demo.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from lmreg_nb.records import read_records
from lmreg_nb.runner.shipped import NOTEBOOKS

ROOT = Path(__file__).resolve().parents[1]


def _run(command: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, f"{command[:3]}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def _source_copy(dest: Path) -> Path:
    """The checkout's files (tracked and new, not ignored) copied to ``dest``.

    pip builds in the source tree; a build/ folder left there by an earlier build
    would add stale modules to the wheel, and the checkout is not ours to write.
    """
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def _requires(wheel: Path) -> set[Requirement]:
    """The wheel's dependencies (its METADATA's Requires-Dist), extras' ones left out."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(name).decode("utf-8")
    lines = [line.split(":", 1)[1].strip() for line in metadata.splitlines()
             if line.startswith("Requires-Dist:")]  # fmt: skip
    return {Requirement(line) for line in lines if "extra ==" not in line}


def _closure(requirements: Iterable[Requirement]) -> dict[str, metadata.Distribution]:
    """The distributions of this venv that ``requirements`` need, and theirs, by name.

    A requirement counts when its marker holds here, for the extras its parent was asked
    with; a distribution asked for again with other extras is walked again for them.
    """
    found: dict[str, metadata.Distribution] = {}
    walked: set[tuple[str, str]] = set()
    todo = [(requirement, "") for requirement in requirements]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        found[name] = dist = found.get(name) or metadata.distribution(requirement.name)
        for wanted in ("", *sorted(requirement.extras)):
            if (name, wanted) not in walked:
                walked.add((name, wanted))
                todo += [(Requirement(line), wanted) for line in dist.requires or ()]
    return found


def _link_into(venv: Path, dists: Iterable[metadata.Distribution]) -> None:
    """Each distribution's files (its RECORD) in ``venv`` where pip put them in this venv,
    hard-linked (copied across file systems); its scripts left out, as they name this
    venv's Python."""
    here = Path(sys.prefix).resolve()
    scripts = Path(sysconfig.get_path("scripts")).resolve()
    for dist in dists:
        for file in dist.files or ():
            source = Path(dist.locate_file(file)).resolve()
            if not source.is_file() or source.is_relative_to(scripts):
                continue
            assert source.is_relative_to(here), f"{dist.metadata['Name']}: {source}"
            target = venv / source.relative_to(here)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)


def _pip_cache() -> str:
    """The user's pip cache (the test's HOME is a fresh folder; its cache would be empty)."""
    if os.environ.get("PIP_CACHE_DIR"):
        return os.environ["PIP_CACHE_DIR"]
    try:
        import pwd

        home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError):  # Windows: the profile folder
        home = Path(os.environ.get("USERPROFILE") or Path.home())
    if os.name == "nt":
        return str(Path(os.environ.get("LOCALAPPDATA") or home) / "pip" / "Cache")
    return str(home / ".cache" / "pip")


@pytest.mark.notebooks
@pytest.mark.timeout(420)
def test_the_wheel_alone_runs_the_demo_from_an_empty_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LMREG_") and k not in ("VIRTUAL_ENV", "PYTHONPATH")}  # fmt: skip
    env["PIP_CACHE_DIR"] = _pip_cache()
    venv = tmp_path / "venv"
    # No pip inside the venv (ensurepip is slow): this pip installs into it (--python).
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path, env=env,
         timeout=120)  # fmt: skip
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    # --no-compile: byte-compiling is most of an install's time.
    pip = [sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "-q",
           "--no-compile"]  # fmt: skip
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    wheels = tmp_path / "wheels"
    source = _source_copy(tmp_path / "src")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
          str(source)], cwd=tmp_path, env=env, timeout=180)  # fmt: skip
    (wheel,) = wheels.glob("lmreg_nb-*.whl")
    assert _requires(wheel) == {Requirement(r) for r in declared}
    dependencies = _closure(_requires(wheel))
    assert "lmreg-nb" not in dependencies and {"pandas", "papermill"} <= dependencies.keys()
    _link_into(venv, dependencies.values())
    _run([*pip, "--no-deps", str(wheel)], cwd=tmp_path, env=env, timeout=300)
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"lmreg_nb/notebooks/{n}.ipynb" for n in NOTEBOOKS} <= names
    assert "lmreg_nb/notebooks/.env.example" in names
    assert "lmreg_nb/notebooks/zh-CN/.env.example" in names  # its comments in Chinese
    assert any(n.startswith("lmreg_nb/locale/") and n.endswith(".mo") for n in names)
    assert {f"lmreg_nb/schemas/{n}.schema.json" for n in ("check", "capacity", "summary")} <= names

    empty = tmp_path / "empty"
    empty.mkdir()
    run_env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}
    lmreg = str(bin_dir / "lmreg-nb")
    # The demo mostly waits on its sandbox's model: the checks that only read the venv run
    # beside it (each its own process; none writes where another reads).
    with ThreadPoolExecutor(max_workers=1) as pool:
        demo = pool.submit(_run, [lmreg, "demo", "--class-size", "0"], cwd=empty, env=run_env,
                           timeout=300)  # fmt: skip
        # Every requirement met: the wheel's (its Requires-Dist) and its dependencies' own.
        _run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "check"],
             cwd=tmp_path, env=env, timeout=120)  # fmt: skip
        out = _run([lmreg, "notebooks", "my-onboarding"], cwd=empty, env=run_env, timeout=60)
        demo.result()
    summary = read_records(empty / "runs" / "demo" / "onboarding.ipynb")["summary"]
    assert summary["status"] == "ok" and summary["school"] == "Demo Middle School"
    assert (empty / "runs" / "demo" / "onboarding-short.html").is_file()

    assert sorted(p.stem for p in (empty / "my-onboarding").glob("*.ipynb")) == sorted(NOTEBOOKS)
    assert "jupyter lab my-onboarding" in out
    assert "LMREG_APP_SECRET" in (empty / "my-onboarding" / ".env.example").read_text()
