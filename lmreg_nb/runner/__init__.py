"""Run one notebook headless and keep a scrubbed record of it: ``run_notebook``.

papermill runs in a child process whose environment is a clean base plus the
run's own variables, so one school's secrets never reach another's run, and
the operator's shell (its tokens, its .env) never reaches any. papermill writes
into a private temporary folder (0700) that is deleted afterwards; only the
scrubbed notebook and its HTML copy reach ``out_dir``, each written atomically.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigurationError, ValidationError
from .records import records_of, render_summary_html, to_jsonable
from .scrub import (
    WINDOW,
    assert_clean,
    looks_secret,
    mask_text,
    scrub_notebook,
    secret_values,
)

if TYPE_CHECKING:
    import nbformat

__all__ = [
    "BASE_VARIABLES",
    "RunResult",
    "check_parameters",
    "clean_environment",
    "render_html",
    "run_notebook",
    "stop_all_runs",
    "write_atomic",
]

log = logging.getLogger("lmreg_nb")

#: Variables a child inherits from this process; everything else comes from the run's env.
BASE_VARIABLES = (
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
    "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "MPLCONFIGDIR",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NO_PROXY", "no_proxy",
    "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy",
    "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "APPDATA", "LOCALAPPDATA",
    "USERPROFILE",
)  # fmt: skip
#: Prefixes of inherited variables (locale, XDG folders, Jupyter's own paths).
BASE_PREFIXES = ("LC_", "XDG_", "JUPYTER_")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_KILL_GRACE_S = 3.0
#: papermill processes running now, so a cancelled batch can stop them all.
_RUNNING: set[subprocess.Popen[bytes]] = set()
_RUNNING_LOCK = threading.Lock()


@dataclass(frozen=True)
class RunResult:
    """What one notebook run produced."""

    status: str  # "ok" | "failed"
    notebook: Path | None
    html: Path | None
    records: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # one line
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the run succeeded."""
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON data (paths as strings)."""
        return {
            "status": self.status,
            "notebook": str(self.notebook) if self.notebook else None,
            "html": str(self.html) if self.html else None,
            "records": self.records,
            "error": self.error,
            "duration_s": round(self.duration_s, 3),
        }


def clean_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A child's environment: the base variables of this process, then ``env`` on top."""
    base = {
        name: value
        for name, value in os.environ.items()
        if (name in BASE_VARIABLES or name.startswith(BASE_PREFIXES)) and not looks_secret(name)
    }
    # Jupyter deps use frozen modules; without this the kernel warns on stderr.
    base.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    base.update({str(k): str(v) for k, v in env.items()})
    return base


def _run_secrets(run_env: Mapping[str, str]) -> dict[str, str]:
    secrets = secret_values(run_env)
    env_file = run_env.get("LMREG_ENV_FILE")
    if env_file and Path(env_file).is_file():
        # Settings read this file inside the kernel: its secrets are the run's too.
        from dotenv import dotenv_values

        extra = {k: v for k, v in dotenv_values(env_file).items() if v}
        for name, value in secret_values(extra).items():
            secrets.setdefault(name, value)
    return secrets


def check_parameters(parameters: Mapping[str, Any], secrets: Mapping[str, str]) -> None:
    """Refuse a parameter that looks like a secret or carries a secret's value."""
    for name, value in parameters.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValidationError(str(name), "a parameter name must be a Python identifier")
        if looks_secret(name):
            raise ValidationError(
                name,
                "looks like a secret: secrets come from the environment "
                "(LMREG_* variables or an env file), never from parameters",
            )
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        for label, secret in secrets.items():
            if secret and (secret == text or (len(secret) >= WINDOW and secret in text)):
                raise ValidationError(
                    name,
                    f"holds the value of {label}: secrets come from the environment, "
                    "never from parameters",
                )


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """Stop papermill and every process under it (the kernel runs in its own session)."""
    import psutil

    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        children = []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.terminate()
    _gone, alive = psutil.wait_procs(children, timeout=_KILL_GRACE_S)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    try:
        proc.wait(timeout=_KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def stop_all_runs() -> None:
    """Stop every papermill run of this process (and its kernel): a batch was cancelled."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for proc in running:
        if proc.poll() is None:
            _kill_tree(proc)


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(_ANSI.sub("", text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _error_of(nb: nbformat.NotebookNode) -> str | None:
    for cell in nb.cells:
        for output in cell.get("outputs", []) or []:
            if output.get("output_type") == "error":
                ename, evalue = output.get("ename", "Error"), output.get("evalue", "")
                return _one_line(f"{ename}: {evalue}" if evalue else ename)
    return None


def _summary_error(summary: Mapping[str, Any]) -> str:
    for key, flag in (("steps", "passed"), ("checks", "passed")):
        for item in summary.get(key) or []:
            if isinstance(item, Mapping) and not item.get(flag):
                if key == "checks" and item.get("severity") not in (None, "error"):
                    continue
                detail = item.get("detail")
                name = item.get("name", "?")
                return _one_line(
                    f"summary status failed: {name}" + (f": {detail}" if detail else "")
                )
    return "summary status failed"


def _note_cell(text: str) -> Any:
    import nbformat

    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["tags"] = ["lmreg-run-note"]
    return cell


def _load_output(out: Path, source: Path) -> tuple[Any, bool]:
    """The executed notebook, or the input one (marked not executed) when there is none."""
    import nbformat

    if out.is_file():
        try:
            return nbformat.read(out, as_version=4), True
        except Exception as exc:  # a kill during a save leaves half a file
            log.warning("papermill's output was unreadable (%s); keeping the input", exc)
    return nbformat.read(source, as_version=4), False


def _umask() -> int:
    # os.umask() can only be read by setting it, which races with other threads.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temp file, fsync, rename)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# One exporter per process, used by one thread at a time (batch runs share it).
_EXPORT_LOCK = threading.Lock()


@functools.cache
def _html_exporter() -> Any:
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab")


def _warm_html_exporter() -> None:
    """Import nbconvert and compile its template while papermill runs.

    A cold first export takes ~0.6 s more than a warm one; the parent process is
    idle while it waits for papermill, so the work costs no wall time there.
    """
    import nbformat

    try:
        with _EXPORT_LOCK:
            _html_exporter().from_notebook_node(nbformat.v4.new_notebook())
    except Exception as exc:  # the real export reports any problem itself
        log.debug("HTML exporter warm-up failed: %s", exc)


def render_html(nb: nbformat.NotebookNode, summary: Any = None, *, title: str | None = None) -> str:
    """The notebook as one HTML page (code visible: it is a record), the summary on top."""
    school = summary.get("school") if isinstance(summary, Mapping) else None
    name = title or (f"Onboarding record: {school}" if school else "Notebook record")
    with _EXPORT_LOCK:
        body, _resources = _html_exporter().from_notebook_node(
            nb, resources={"metadata": {"name": name}}
        )
    if not isinstance(summary, Mapping):
        return body
    top = render_summary_html(summary)
    match = re.search(r"<main[^>]*>", body) or re.search(r"<body[^>]*>", body)
    if match is None:
        return top + body
    return body[: match.end()] + top + body[match.end() :]


def _check_readable(notebook: Path) -> None:
    import nbformat

    try:
        nbformat.read(notebook, as_version=4)
    except Exception as exc:  # nbformat raises several unrelated types for a bad file
        raise ConfigurationError(
            f"{notebook} is not a readable notebook ({type(exc).__name__}): give an .ipynb file"
        ) from None


def _papermill_command(notebook: Path, out: Path, params: Path, kernel_cwd: Path) -> list[str]:
    return [
        sys.executable, "-m", "papermill", str(notebook), str(out),
        "-f", str(params), "--cwd", str(kernel_cwd),
        "--no-progress-bar", "--log-level", "WARNING",
    ]  # fmt: skip


def run_notebook(
    notebook: Path,
    out_dir: Path,
    *,
    parameters: Mapping[str, Any],
    env: Mapping[str, str],
    timeout: float | None = None,
    cwd: Path | None = None,
    stem: str | None = None,
) -> RunResult:
    """Run ``notebook`` headless with papermill and write its scrubbed record to ``out_dir``.

    ``env`` (the run's LMREG_* variables, secrets included) goes on top of a clean
    base environment; ``parameters`` must hold no secret. ``cwd`` is the kernel's
    working folder (default: an empty private one, so no stray ./.env is read).
    The token cache is private to the run unless ``env`` names LMREG_TOKEN_CACHE.
    Writes ``out_dir/<stem>.ipynb`` and ``.html`` (stem: the notebook's). Raises
    SecretLeakError (writing nothing) if a secret survives scrubbing.
    """
    import yaml

    started = time.monotonic()
    notebook = Path(notebook)
    if not notebook.is_file():
        raise ConfigurationError(f"no notebook at {notebook}: give an existing .ipynb")
    _check_readable(notebook)
    if timeout is not None and timeout <= 0:
        raise ConfigurationError("the timeout must be a positive number of seconds")
    run_env = clean_environment(env)
    secrets = _run_secrets(run_env)
    check_parameters(parameters, secrets)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = stem or notebook.stem

    # mkdtemp creates the folder 0700: papermill's unscrubbed output lives only here.
    with tempfile.TemporaryDirectory(prefix="lmreg-run-") as work_name:
        work = Path(work_name)
        os.chmod(work, 0o700)
        out = work / "executed.ipynb"
        params = work / "parameters.yaml"
        params.write_text(
            yaml.safe_dump(to_jsonable(dict(parameters)), allow_unicode=True), encoding="utf-8"
        )
        # Each run exchanges its own token (in a cache that dies with the run): the
        # record then proves these credentials work, and a wrong appSecret cannot
        # pass on a token another run cached for the same appId.
        run_env.setdefault("LMREG_TOKEN_CACHE", str(work / "tokens.json"))
        # The kernel's connection file (its HMAC key) and any temp file the notebook
        # makes go here too, so a killed run leaves nothing behind.
        (work / "tmp").mkdir()
        for name in ("TMPDIR", "TEMP", "TMP"):
            run_env[name] = str(work / "tmp")
        kernel_cwd = Path(cwd) if cwd else work / "cwd"
        kernel_cwd.mkdir(exist_ok=True)
        stderr_path = work / "stderr.txt"
        timed_out = False
        if _html_exporter.cache_info().currsize == 0:
            threading.Thread(target=_warm_html_exporter, name="lmreg-html", daemon=True).start()
        with open(stderr_path, "wb") as stderr:
            proc = subprocess.Popen(
                _papermill_command(notebook.resolve(), out, params, kernel_cwd),
                env=run_env,
                cwd=work,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,  # its own process group, so a timeout kills all of it
            )
            with _RUNNING_LOCK:
                _RUNNING.add(proc)
            try:
                returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_tree(proc)
                returncode = proc.returncode
            except BaseException:  # Ctrl-C or a cancelled batch: leave no kernel behind
                _kill_tree(proc)
                raise
            finally:
                with _RUNNING_LOCK:
                    _RUNNING.discard(proc)
        raw_nb, executed = _load_output(out, notebook)
        clean = scrub_notebook(raw_nb, secrets)
        error = None if returncode == 0 and not timed_out else _error_of(clean)
        if timed_out:
            error = f"timed out after {timeout:g} s"
            clean.cells.insert(0, _note_cell(f"**This run was stopped after {timeout:g} s** "
                                             "(the per-run timeout); the cells below show "
                                             "what had run by then."))  # fmt: skip
        elif returncode != 0 and error is None:
            tail = [ln for ln in stderr_path.read_text(errors="replace").splitlines() if ln.strip()]
            last = mask_text(tail[-1], secrets) if tail else "no message"
            error = _one_line(f"papermill exited with code {returncode}: {last}")
        if not executed:
            clean.cells.insert(0, _note_cell("**This notebook did not run**: " + (error or "")))
        records = records_of(clean)
        summary = records.get("summary")
        if error is None and isinstance(summary, Mapping) and summary.get("status") != "ok":
            error = _summary_error(summary)

        import nbformat

        nb_text = nbformat.writes(clean)
        html_text = render_html(clean, summary)
        assert_clean(nb_text, secrets, what=f"the record of {notebook.name}")
        assert_clean(html_text, secrets, what=f"the HTML copy of {notebook.name}")
        nb_path, html_path = out_dir / f"{stem}.ipynb", out_dir / f"{stem}.html"
        write_atomic(nb_path, nb_text)
        write_atomic(html_path, html_text)

    result = RunResult(
        status="ok" if error is None else "failed",
        notebook=nb_path,
        html=html_path,
        records=records,
        error=error,
        duration_s=time.monotonic() - started,
    )
    log.info("ran %s: %s in %.1f s", notebook.name, result.status, result.duration_s)
    return result
