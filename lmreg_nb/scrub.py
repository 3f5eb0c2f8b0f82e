"""Make an executed notebook safe to share: no widget state, no parameters, no secret.

papermill writes its parameters into the notebook's metadata (papermill issue
#706) and nbclient saves every widget's state, a Password's value included.
:func:`scrub_notebook` removes both, then masks every known secret wherever it
appears (sources, outputs, metadata, attachments) in its raw, JSON-escaped,
HTML-escaped, URL-encoded, unicode-escaped and base64 forms, and any 8-character
piece of it (a truncated repr or a pandas cell shows a secret's head).
:func:`assert_clean` is the last gate before a file is written: it raises
SecretLeakError, naming the variable, never the value.
"""

from __future__ import annotations

import base64
import copy
import html
import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus, urlsplit

from .errors import SecretLeakError
from .secret import mask
from .settings import SECRET_VARIABLES, VARIABLES

if TYPE_CHECKING:
    import nbformat

__all__ = [
    "WINDOW",
    "assert_clean",
    "find_leaks",
    "mask_text",
    "scrub_notebook",
    "secret_values",
]

log = logging.getLogger("lmreg_nb")

#: A piece of a secret this long, found anywhere, counts as a leak.
WINDOW = 8
#: Variables whose names look secret but whose values are not (settings we define).
_NOT_SECRET = frozenset(VARIABLES.values()) - frozenset(SECRET_VARIABLES)
_SECRET_NAME = re.compile(r"SECRET|TOKEN|KEY|PASSWORD|PASSWD", re.IGNORECASE)
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

Secrets = Iterable[str] | Mapping[str, str]


def looks_secret(name: str) -> bool:
    """Whether a variable or parameter name looks like it holds a secret."""
    return name not in _NOT_SECRET and bool(_SECRET_NAME.search(name))


def secret_values(env: Mapping[str, str]) -> dict[str, str]:
    """The secrets an environment holds, by variable name (plain values, for scrubbing)."""
    found: dict[str, str] = {}
    for name, value in env.items():
        if not value:
            continue
        if name in SECRET_VARIABLES:
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


def _labelled(secrets: Secrets) -> list[tuple[str, str]]:
    items = secrets.items() if isinstance(secrets, Mapping) else enumerate(secrets, 1)
    labelled = []
    for label, value in items:
        if value:
            labelled.append((label if isinstance(label, str) else f"secret #{label}", value))
    # Longest first, so a secret that contains another is masked whole.
    return sorted(labelled, key=lambda kv: -len(kv[1]))


def _base64_cores(value: str) -> set[str]:
    """The base64 text a secret produces wherever it sits inside larger encoded data."""
    raw = value.encode()
    cores = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for pad in range(3):
            text = encode(b"\0" * pad + raw).decode().rstrip("=")
            # Characters that mix the secret's bits with its neighbours' are unknown.
            head = (0, 2, 3)[pad]
            tail = 1 if (pad + len(raw)) % 3 else 0
            core = text[head : len(text) - tail]
            if len(core) >= WINDOW:
                cores.add(core)
    return cores


def _forms(value: str) -> list[str]:
    """The encodings a secret can take in a notebook or its HTML copy, longest first."""
    forms = {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        html.escape(value, quote=True),
        html.escape(value, quote=False),
        quote(value, safe=""),
        quote_plus(value),
        value.encode("unicode_escape").decode("ascii"),
        repr(value)[1:-1],
    }
    forms |= _base64_cores(value)
    return sorted((f for f in forms if f), key=len, reverse=True)


def _windows(form: str) -> list[str]:
    if len(form) <= WINDOW:
        return []
    seen: dict[str, None] = {}
    for i in range(len(form) - WINDOW + 1):
        seen.setdefault(form[i : i + WINDOW])
    return list(seen)


class _Masker:
    """Masks a fixed set of secrets in strings; built once per notebook."""

    def __init__(self, secrets: Secrets) -> None:
        self.items = [(label, value, _forms(value)) for label, value in _labelled(secrets)]
        # Pieces only of the forms a person reads (raw and escaped), not base64.
        self.pieces = [
            (label, list(dict.fromkeys(w for f in _readable(value) for w in _windows(f))))
            for label, value, _forms in self.items
        ]

    def __call__(self, text: str, *, binary: bool = False) -> str:
        for _label, value, forms in self.items:
            masked = mask(value)
            for form in forms:
                if form in text:
                    text = text.replace(form, masked)
        if binary or len(text) < WINDOW:
            return text
        for _label, pieces in self.pieces:
            for piece in pieces:
                if piece in text:
                    text = text.replace(piece, "…")
        return text

    def leaks(self, text: str) -> list[str]:
        found = []
        for (label, _value, forms), (_l, pieces) in zip(self.items, self.pieces, strict=True):
            if any(form in text for form in forms) or any(p in text for p in pieces):
                found.append(label)
        return found


def _readable(value: str) -> list[str]:
    return [value, json.dumps(value)[1:-1], html.escape(value, quote=True)]


def mask_text(text: str, secrets: Secrets) -> str:
    """``text`` with every secret (and every 8-character piece of one) masked."""
    return _Masker(secrets)(text)


def find_leaks(text: str, secrets: Secrets) -> list[str]:
    """The labels (variable names) of the secrets still present in ``text``."""
    return _Masker(secrets).leaks(text)


def assert_clean(text: str, secrets: Secrets, *, what: str) -> None:
    """Raise SecretLeakError if ``text`` holds a secret; the message names only the variable."""
    leaks = find_leaks(text, secrets)
    if leaks:
        raise SecretLeakError(
            f"{what} still holds the value of {', '.join(leaks)} after scrubbing; "
            "nothing was written (report this: the scrubber missed an encoding)"
        )


def _walk(value: Any, masker: _Masker, *, binary: bool = False) -> Any:
    if isinstance(value, str):
        return masker(value, binary=binary)
    if isinstance(value, list):
        return [_walk(v, masker, binary=binary) for v in value]
    if isinstance(value, dict):
        out = type(value)() if type(value) is not dict else {}
        for k, v in value.items():
            key = masker(k) if isinstance(k, str) else k
            is_binary = binary or (isinstance(k, str) and k.startswith(_BINARY_PREFIXES))
            out[key] = _walk(v, masker, binary=is_binary)
        return out
    return value


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
    masker = _Masker(secrets)
    if not masker.items:
        return clean
    scrubbed: nbformat.NotebookNode = _walk(clean, masker)
    return scrubbed
