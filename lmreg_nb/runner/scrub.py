"""Make an executed notebook safe to share: no widget state, no secret.

papermill writes its parameters into the notebook's metadata (papermill issue
#706) and nbclient saves every widget's state, a Password's value included.
:func:`scrub_notebook` drops both from the metadata and the outputs, blanks the
value of any secret-looking assignment in the injected-parameters cell (the
other parameters stay readable there), then masks every known secret wherever
a value holds it (sources, outputs, metadata, attachments) with the one masker of
:mod:`lmreg_nb.secret`; keys and the format's own fields (``display_name``,
``output_type``) are structure and stay as they are. :mod:`lmreg_nb.runner.gates`
is the last gate before a file is written. :func:`secret_values` finds the
secrets an environment holds.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ..secret import Masker, Secrets, split_urls, url_secrets
from ..settings import SECRET_VARIABLES, VARIABLES

if TYPE_CHECKING:
    import nbformat

__all__ = [
    "Kind",
    "html_parts",
    "looks_secret",
    "map_strings",
    "scrub_notebook",
    "secret_values",
]

log = logging.getLogger("lmreg_nb")

#: Variables whose names look secret but whose values are not (settings we define).
_NOT_SECRET = frozenset(VARIABLES.values()) - frozenset(SECRET_VARIABLES)
#: "TOKENS" at a word's end (lesson_tokens, max_tokens, maxTokens) counts tokens: a setting,
#: not a secret; "TOKEN" anywhere else (access_token, GITHUB_TOKEN) is one.
_SECRET_NAME = re.compile(r"SECRET|TOKEN(?!S(?![A-Z]))|KEY|PASSWORD|PASSWD", re.IGNORECASE)
#: A value this short, under a merely secret-looking name, is a flag, not a secret
#: (masking "true" everywhere would wreck the record for nothing).
_MIN_GUESSED = 6
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
_WIDGET_MIMES = (
    "application/vnd.jupyter.widget-state+json",
    "application/vnd.jupyter.widget-view+json",
)
#: Output data that is binary in base64: scanned for whole encoded secrets only,
#: because an 8-character piece of random base64 would be noise.
_BINARY_PREFIXES = ("image/", "application/pdf", "audio/", "video/")


def looks_secret(name: str) -> bool:
    """Whether a variable or parameter name looks like it holds a secret."""
    return name not in _NOT_SECRET and bool(_SECRET_NAME.search(name))


def secret_values(env: Mapping[str, str]) -> dict[str, str]:
    """The secrets an environment holds, by variable name (plain values, for scrubbing)."""
    found: dict[str, str] = {}
    for name, value in env.items():
        if not value:
            continue
        if name == "LMREG_NOTIFY":  # the URLs' secret parts, not their hosts and addresses
            parts = [s for url in split_urls(value) for s in url_secrets(url)]
            found.update({f"{name} #{i}": part for i, part in enumerate(parts, 1)})
        elif name in SECRET_VARIABLES:
            found[name] = value
        elif looks_secret(name):
            if len(value) >= _MIN_GUESSED:
                found[name] = value
            else:
                log.debug("%s looks secret but its value is too short to mask", name)
        elif name.upper() in _PROXY_VARS:
            password = urlsplit(value).password
            if password:
                found[f"{name} password"] = password
    return found


#: Where nbformat's schema puts structure, not text: these values (and every key of
#: every mapping) are never masked. "*" stands for a list index. An apiKey holding
#: "display" rewrote ``display_name`` and the notebook no longer validated.
_STRUCTURE: tuple[tuple[str, ...], ...] = (
    ("nbformat",),
    ("nbformat_minor",),
    ("metadata", "kernelspec"),
    ("metadata", "language_info"),
    ("cells", "*", "cell_type"),
    ("cells", "*", "id"),
    ("cells", "*", "metadata", "tags"),
    ("cells", "*", "outputs", "*", "output_type"),
    ("cells", "*", "outputs", "*", "name"),
)

#: What a string of the notebook is: text a person or a server wrote, an HTML output
#: (text between markup and CSS), binary data in base64, or the format's own structure.
Kind = Literal["text", "html", "binary", "structure"]
#: The markup of an HTML output: a style block, a tag. Only a whole secret is masked in
#: it (an apiKey holding "padding" garbled our own cards' CSS); the text between is text.
_MARKUP = re.compile(r"(<style\b[^>]*>.*?</style\s*>|<[^>]*>)", re.IGNORECASE | re.DOTALL)


def html_parts(html: str) -> list[tuple[str, bool]]:
    """``html`` split into (part, is_markup): style blocks and tags, and the text between."""
    return [(part, i % 2 == 1) for i, part in enumerate(_MARKUP.split(html)) if part]


def _is_structure(path: tuple[str, ...]) -> bool:
    return any(
        len(path) >= len(rule) and all(r in ("*", p) for r, p in zip(rule, path, strict=False))
        for rule in _STRUCTURE
    )


def map_strings(value: Any, change: Callable[[str, Kind], str], path: tuple[str, ...] = ()) -> Any:
    """``value`` (a notebook, or part of one) with ``change(string, kind)`` applied to every
    string, keys included (as structure); mappings keep their type."""
    if isinstance(value, str):
        if _is_structure(path):
            return change(value, "structure")
        if any(step.startswith(_BINARY_PREFIXES) for step in path):
            return change(value, "binary")
        return change(value, "html" if "text/html" in path else "text")
    if isinstance(value, list):
        return [map_strings(v, change, (*path, "*")) for v in value]
    if isinstance(value, dict):
        out = type(value)() if type(value) is not dict else {}
        for k, v in value.items():
            key = change(k, "structure") if isinstance(k, str) else k
            out[key] = map_strings(v, change, (*path, str(k)))
        return out
    return value


def _masking(masker: Masker) -> Callable[[str, Kind], str]:
    def change(text: str, kind: Kind) -> str:
        if kind == "structure":
            return text
        if kind == "html":
            # A whole secret anywhere first (one may straddle a "<" of its own), then the
            # pieces in the text between the markup.
            whole = masker(text, binary=True)
            return "".join(part if markup else masker(part) for part, markup in html_parts(whole))
        return masker(text, binary=kind == "binary")

    return change


_ASSIGNMENT = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*).*$")


def _drop_widgets(nb: Any) -> None:
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            data = output.get("data")
            if isinstance(data, dict):
                for mime in _WIDGET_MIMES:
                    data.pop(mime, None)
                if not data and output.get("output_type") in ("display_data", "execute_result"):
                    continue  # nothing left to show
            kept.append(output)
        cell["outputs"] = kept


def _drop_parameters(nb: Any) -> None:
    meta = nb.metadata.get("papermill")
    if isinstance(meta, dict):
        for key in ("parameters", "environment_variables", "output_path"):
            meta.pop(key, None)
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if "injected-parameters" not in tags or cell.get("cell_type") != "code":
            continue
        # Secrets are never parameters (run_notebook refuses them); this is the
        # second lock on that door, for notebooks run by other means.
        lines = []
        for line in str(cell.source).splitlines():
            match = _ASSIGNMENT.match(line)
            if match and looks_secret(match.group(2)):
                line = f"{match.group(1)}{match.group(2)}{match.group(3)}'…'  # removed: secret"
            lines.append(line)
        cell.source = "\n".join(lines)


def scrub_notebook(nb: nbformat.NotebookNode, secrets: Secrets) -> nbformat.NotebookNode:
    """A scrubbed copy of ``nb``: widget state and papermill parameters gone, secrets masked.

    ``secrets`` are plain values, or a mapping variable name -> value (the name
    then appears in errors instead of a number).
    """
    clean = copy.deepcopy(nb)
    _drop_widgets(clean)
    _drop_parameters(clean)
    masker = Masker(secrets)
    if not masker:
        return clean
    scrubbed: nbformat.NotebookNode = map_strings(clean, _masking(masker))
    return scrubbed
