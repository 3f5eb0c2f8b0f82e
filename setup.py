"""Build hook: the wheel carries the notebooks (metadata lives in pyproject.toml).

The top-level ``notebooks/`` folder stays the one source of the notebooks; at
build time its ``*.ipynb`` files (and language folders such as ``zh-CN/``) are
copied into the built package as ``lmreg_nb/notebooks/``, where
``lmreg_nb.runner.shipped`` finds them after ``pip install``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SOURCE = Path(__file__).resolve().parent / "notebooks"
#: Documents every LMREG_* variable; `lmreg-nb notebooks DIR` copies it beside the notebooks.
ENV_EXAMPLE = SOURCE.parent / ".env.example"
#: The same in Chinese (comments only), copied by `lmreg-nb --lang zh-CN notebooks DIR`.
ENV_EXAMPLE_ZH = SOURCE / "zh-CN" / ".env.example"


class build_py_with_notebooks(build_py):
    """build_py, then the notebooks copied into the built package."""

    def run(self) -> None:
        super().run()
        # An editable install reads the checkout's notebooks/ itself.
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "lmreg_nb" / "notebooks"
        for notebook in sorted(SOURCE.rglob("*.ipynb")):
            relative = notebook.relative_to(SOURCE)
            if any(part.startswith(".") for part in relative.parts):
                continue  # .ipynb_checkpoints and other hidden copies
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(notebook, target / relative)
        if ENV_EXAMPLE.is_file():
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ENV_EXAMPLE, target / ENV_EXAMPLE.name)
        if ENV_EXAMPLE_ZH.is_file():
            (target / "zh-CN").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ENV_EXAMPLE_ZH, target / "zh-CN" / ENV_EXAMPLE_ZH.name)


setup(cmdclass={"build_py": build_py_with_notebooks})
