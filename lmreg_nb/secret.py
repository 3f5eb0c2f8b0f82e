"""Secrets and the one masker: appSecret, token and apiKey never show themselves.

:class:`Secret` holds a value whose ``repr``, ``str`` and HTML show only its
last 4 characters (:func:`mask`). :func:`mask_text` is the one place that
hides known secrets inside a text that may come from a server, a notebook or a
log: their raw, JSON-escaped, HTML-escaped, URL-encoded, unicode-escaped and
base64 forms, and any 7-character piece of them (a truncated repr or a pandas
cell shows a secret's head; a hostile server may echo a key in pieces). Text
is also read as a person reads it (:func:`fold`): invisible marks between the
characters, fullwidth letters and added accents do not hide a secret, nor do
look-alike letters (Cyrillic "ѕ" for "s": the TR39 skeleton of
:mod:`.confusables`). A run of base64 (either alphabet), base32 or hex is read
as the bytes it spells, from each place the encoding may have started: a key
sent as base64 in two halves shows its pieces there. So is a character written
as an escape a reader decodes (``\\u0073``, ``&#115;``, ``%73``).
:func:`find_leaks` and :func:`assert_clean` are the checks built on the same
rules. :func:`url_secrets` names the parts of a notification URL (LMREG_NOTIFY)
that are secrets, so they are masked and not the host or the address. Nothing
here reads the configuration.
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import json
import re
import string
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

from .errors import SecretLeakError
from .i18n import _, listing, ngettext
from .own_words import is_own_piece, own_text
from .validate import is_ignorable

__all__ = [
    "WINDOW",
    "Secret",
    "Secrets",
    "assert_clean",
    "find_leaks",
    "fold",
    "mask",
    "mask_text",
    "raise_leaks",
    "split_urls",
    "strip_escapes",
    "url_secrets",
]

#: A piece of a secret this long, found anywhere, counts as a leak. 7, not 8: a
#: hostile server echoed keys in 7-character pieces. Not less: a piece of a random
#: key (62 symbols) is one of 62**7 = 3.5e12 strings, so a megabyte of record text
#: holds one by chance with odds of about 1e-6 per piece (hex keys: 1e-3 at worst);
#: at 6 a short human-chosen key's pieces ("passwo") start to be common words.
WINDOW = 7


def _fold_char(ch: str) -> str:
    """What a person reads of one character: "" for an invisible mark or an accent,
    the compatibility form otherwise (fullwidth "Ａ" is "A", "é" is "e")."""
    if is_ignorable(ch) or unicodedata.category(ch) in ("Cf", "Mn", "Me"):
        return ""
    return "".join(
        c
        for c in unicodedata.normalize("NFKD", ch)
        if unicodedata.category(c) not in ("Cf", "Mn", "Me") and not is_ignorable(c)
    )


def _read_char(ch: str) -> str:
    """:func:`_fold_char`, then each character as its look-alike class's prototype."""
    from .confusables import prototype

    return "".join(prototype(c) for c in _fold_char(ch))


class _CharTable(dict[int, str]):
    """A ``str.translate`` table of one character's reading, filled as characters are met."""

    def __init__(self, reading: Callable[[str], str]) -> None:
        super().__init__()
        self._reading = reading

    def __missing__(self, code: int) -> str:
        read = self._reading(chr(code))
        if len(self) < 1 << 16:  # bounded: a text of every code point cannot grow it forever
            self[code] = read
        return read


_FOLD = _CharTable(_fold_char)
_READ = _CharTable(_read_char)


def _read(text: str) -> str:
    """``text`` with look-alikes as one ("ѕ" and "s", "0" and "O"): the space a text that
    is not ASCII and the secrets are compared in. ASCII is mapped too ("1" is "l"), so a
    secret's pieces and the text meet there whatever letters either uses."""
    return text.translate(_READ)


def fold(text: str) -> str:
    """``text`` as a person reads it: invisible marks out, fullwidth and accented letters plain.

    ASCII text is returned as it is (the fast and common case).
    """
    return text if text.isascii() else text.translate(_FOLD)


#: One character written as an escape a reader can decode: JSON's and Python's ``\\u0073``
#: and ``\\x73``, HTML's ``&#115;`` and ``&#x73;``, a URL's ``%73``.
_ESCAPED = re.compile(
    r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|&#(\d{1,7});|&#[xX]([0-9a-fA-F]{1,6});"
    r"|%([0-9a-fA-F]{2})"
)


def _unescaped(match: re.Match[str]) -> str:
    number = next(g for g in match.groups() if g is not None)
    code = int(number, 10 if match.group(3) else 16)
    return chr(code) if code < 0x110000 else match.group()


def _plain_read(text: str) -> str:
    """What a reader makes of ``text``: escapes decoded, then :func:`_read`; ASCII text
    without an escape as it is (the common case, and fast)."""
    if _ESCAPED.search(text):
        text = _ESCAPED.sub(_unescaped, text)
    elif text.isascii():
        return text
    return _read(text)


def _read_view(text: str) -> tuple[str, list[tuple[int, int]]]:
    """:func:`_plain_read` of ``text`` and, for each character of it, the span of
    ``text`` it was read from (an escape's whole span)."""
    chars: list[str] = []
    origin: list[tuple[int, int]] = []
    at = 0
    for match in [*_ESCAPED.finditer(text), None]:
        end = match.start() if match else len(text)
        for i in range(at, end):
            for c in _READ[ord(text[i])]:
                chars.append(c)
                origin.append((i, i + 1))
        if match is not None:
            for c in _READ[ord(_unescaped(match))]:
                chars.append(c)
                origin.append(match.span())
            at = match.end()
    return "".join(chars), origin


def _occurrences(needle: str, haystack: str) -> Iterable[int]:
    start = haystack.find(needle)
    while start >= 0:
        yield start
        start = haystack.find(needle, start + 1)


def mask(value: str | None) -> str:
    """Show only the last 4 characters (``…a1b2``); a short value shows only its length."""
    if not value:
        return _("(not set)")
    if len(value) > 8:
        return "…" + value[-4:]
    # A value of 8 characters or fewer would be half revealed by its tail; its length
    # still tells a person it is set, and which of two keys it is.
    return ngettext("…({n} character)", "…({n} characters)", len(value)).format(n=len(value))


class Secret:
    """Holds a secret; ``repr``, ``str`` and HTML show only its last 4 characters.

    Call :meth:`reveal` at the one place that must send it (a header, a body).
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            raise TypeError("Secret takes a str")
        self._value = value

    def reveal(self) -> str:
        """The plain value, for the request that needs it."""
        return self._value

    @property
    def masked(self) -> str:
        """The masked form, e.g. ``…a1b2``."""
        return mask(self._value)

    def __repr__(self) -> str:
        return f"Secret('{self.masked}')"

    def __str__(self) -> str:
        return self.masked

    def _repr_html_(self) -> str:
        return f"<code>{self.masked}</code>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Secret):
            return self._value == other._value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __copy__(self) -> Secret:
        # Immutable: a copy is the same object (and copy.copy must not go through pickling).
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Secret:
        # dataclasses.asdict and copy.deepcopy reach here; sharing is safe, pickling is not.
        return self

    def __reduce__(self) -> tuple[object, ...]:
        # Pickling would copy the plain value into whatever stores it.
        raise TypeError("a Secret cannot be pickled")


#: Plain values or Secrets, or a mapping label (a variable name) -> value.
Secrets = Iterable[str | Secret] | Mapping[str, str | Secret]


def _plain(value: object) -> str:
    if isinstance(value, Secret):
        return value.reveal()
    return value if isinstance(value, str) else ""


def _labelled(secrets: Secrets) -> list[tuple[str, str]]:
    items = secrets.items() if isinstance(secrets, Mapping) else enumerate(secrets, 1)
    labelled = []
    for label, value in items:
        plain = _plain(value)
        if plain:
            labelled.append((label if isinstance(label, str) else f"secret #{label}", plain))
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
    """The encodings a secret can take in a reply, a notebook or its HTML copy, longest first."""
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


def _readable(value: str) -> list[str]:
    return [value, json.dumps(value)[1:-1], html.escape(value, quote=True)]


def _windows(form: str) -> list[str]:
    """The 7-character pieces of ``form``, except those of the toolkit's own text."""
    if len(form) <= WINDOW:
        return []
    seen: dict[str, None] = {}
    for i in range(len(form) - WINDOW + 1):
        seen.setdefault(form[i : i + WINDOW])
    # A piece our own words share ("reachab" of a key "sk-unreachable-…" and of the
    # check name "reachable") tells nobody the key: masking it garbled our text.
    return [w for w in seen if not is_own_piece(w) and not _is_own_folded(w)]


def _read_pieces(value: str) -> list[str]:
    """The 7-character pieces of ``value``'s readable forms, each as :func:`_read` reads
    it (a piece is 7 characters of the secret, not of its reading: "m" reads "rn")."""
    read = (_read(w) for f in _readable(value) for w in _windows(f))
    return [r for r in dict.fromkeys(read) if not _is_own_folded(r)]


@functools.cache
def _own_folded() -> str:
    return fold(own_text()) + "\n" + _read(own_text())


@functools.cache
def _is_own_folded(piece: str) -> bool:
    return piece in _own_folded()


class Masker:
    """Masks a fixed set of secrets in strings; build it once, call it on many texts."""

    def __init__(self, secrets: Secrets) -> None:
        self.items = [(label, value, _forms(value)) for label, value in _labelled(secrets)]
        # Pieces only of the forms a person reads (raw and escaped), not base64.
        self.pieces = [
            (label, list(dict.fromkeys(w for f in _readable(value) for w in _windows(f))))
            for label, value, _forms in self.items
        ]
        # The same, as a person reads them: matched against _read(text).
        self._folded = [
            (
                mask(value),
                [f for f in dict.fromkeys(_read(form) for form in forms) if f],
                _read_pieces(value),
            )
            for (_label, value, forms) in self.items
        ]
        # Pieces of the secret as bytes spell them, for runs of base64, base32 or hex. Not
        # of a secret shorter than a piece: random bytes hold a 4-character one by chance.
        self._spelled = [
            (label, value, frozenset(_windows(value)))
            for label, value, _forms in self.items
            if len(value) >= WINDOW
        ]
        self._runs_read: dict[str, list[str]] = {}
        written = "".join(f for _l, _v, forms in self.items for f in forms)
        self.alphabet = (
            frozenset(written + _read(written) + _SPELLING) if self.items else frozenset()
        )

    def __bool__(self) -> bool:
        return bool(self.items)

    def holds(self, ch: str) -> bool:
        """Whether ``ch`` may be part of a secret as written or as read (an invisible
        mark, a fullwidth letter): a stream holds such characters back."""
        return ch in self.alphabet or all(c in self.alphabet for c in _read(ch))

    def __call__(self, text: str, *, binary: bool = False, whole: bool = False) -> str:
        """``text`` with every secret masked; ``binary`` (base64 data) and ``whole`` (a name
        people choose, which may share a word with a key) mask whole secrets only."""
        binary = binary or whole
        if not binary and _has_escapes(text) and self._leaks(strip_escapes(text)):
            # Escape sequences between its characters hid a secret: Jupyter and the HTML
            # copy render them away, so the text is masked without them (colours lost).
            text = strip_escapes(text)
        for _label, value, forms in self.items:
            masked = mask(value)
            for form in forms:
                if form in text:
                    text = text.replace(form, masked)
        if binary:
            return text
        if len(text) >= WINDOW:
            for _label, pieces in self.pieces:
                for piece in pieces:
                    if piece in text:
                        text = text.replace(piece, "…")
            text = _RUN.sub(lambda m: "…" if self._spelled_in(m.group()) else m.group(), text)
        # Folding may lengthen a text (a ligature "ﬃ" reads "ffi"): no length shortcut here.
        read = _plain_read(text)
        if read is not text and self._hidden(read):
            text = self._mask_folded(text)
        return text

    def _spelled_in(self, run: str) -> list[str]:
        """The labels of the secrets whose pieces the bytes ``run`` encodes spell."""
        if len(run) > _MAX_RUN:
            return []
        known = self._runs_read.get(run)
        if known is None:
            known = self._spell(run)
            if len(self._runs_read) < 1 << 14:  # a record repeats its words: read each once
                self._runs_read[run] = known
        return known

    def _spell(self, run: str) -> list[str]:
        found: list[str] = []
        for decoded in _decodings(run):
            for label, value, pieces in self._spelled:
                if label in found:
                    continue
                last = len(decoded) - WINDOW + 1
                if value in decoded or any(decoded[i : i + WINDOW] in pieces for i in range(last)):
                    found.append(label)
        return found

    def _hidden(self, folded: str) -> bool:
        """Whether a secret or a piece shows in the folded text (it hid behind marks)."""
        return any(
            any(f in folded for f in forms) or any(p in folded for p in pieces)
            for _masked, forms, pieces in self._folded
        )

    def _mask_folded(self, text: str) -> str:
        """Mask what only the folded text shows: each match covers the original
        characters it was read from, invisible marks between them included."""
        view, origin = _read_view(text)
        spans: list[tuple[int, int, str]] = []
        for masked, forms, pieces in self._folded:
            for needle, shown in [(f, masked) for f in forms] + [(p, "…") for p in pieces]:
                for at in _occurrences(needle, view):
                    spans.append((origin[at][0], origin[at + len(needle) - 1][1], shown))
        merged: list[tuple[int, int, str]] = []
        for start, end, shown in sorted(spans, key=lambda s: (s[0], -s[1])):
            if merged and start < merged[-1][1]:
                if end > merged[-1][1]:  # overlaps the one before: one piece-mark for both
                    merged[-1] = (merged[-1][0], end, "…")
                continue  # inside the one before (a piece of a whole form)
            merged.append((start, end, shown))
        out: list[str] = []
        last = 0
        for start, end, shown in merged:
            out += [text[last:start], shown]
            last = end
        return "".join([*out, text[last:]])

    def leaks(self, text: str, *, whole: bool = False) -> list[str]:
        """The labels of the secrets (or pieces of them) still present in ``text``, also as
        read once its terminal escape sequences are rendered away.

        ``whole``: only a whole secret of at least :data:`WINDOW` characters, in any of
        its encodings, counts: for text that is structure (a notebook's keys, a page's
        CSS) or binary data, where a piece or a short secret is a coincidence.
        """
        if whole:
            return [
                label
                for label, _value, forms in self.items
                if any(len(form) >= WINDOW and form in text for form in forms)
            ]
        found = self._leaks(text)
        if _has_escapes(text):
            found += [label for label in self._leaks(strip_escapes(text)) if label not in found]
        return found

    def _leaks(self, text: str) -> list[str]:
        found = []
        folded = _plain_read(text)
        spelled = {label for m in _RUN.finditer(text) for label in self._spelled_in(m.group())}
        for (label, _value, forms), (_l, pieces), (_m, folded_forms, folded_pieces) in zip(
            self.items, self.pieces, self._folded, strict=True
        ):
            seen = label in spelled
            seen = seen or any(form in text for form in forms) or any(p in text for p in pieces)
            if not seen and folded is not text:  # behind marks, fullwidth or look-alikes
                seen = any(f in folded for f in folded_forms) or any(
                    p in folded for p in folded_pieces
                )
            if seen:
                found.append(label)
        return found


#: What base64, base32 and hex spell with, and the characters of an escape (``\\u0073``,
#: ``&#115;``, ``%73``): a stream holds them back, as a secret may be spelled with them.
_SPELLING = string.ascii_letters + string.digits + "+/_-=\\&#;%"
#: A run of characters base64 (either alphabet), base32 or hex spell bytes with, long
#: enough for WINDOW bytes: 10 base64 characters hold 7 bytes (12 base32, 14 hex).
_RUN = re.compile(r"[A-Za-z0-9+/_-]{10,}")
_BASE32 = re.compile(r"[A-Z2-7]{12,}|[a-z2-7]{12,}")
_HEX = re.compile(r"(?:[0-9a-f]{14,}|[0-9A-F]{14,})")
#: A longer run is data (an image, a font): only a whole secret's base64 counts there.
_MAX_RUN = 1 << 14


def _decodings(run: str) -> Iterator[str]:
    """The text the bytes ``run`` spells (base64 in either alphabet, base32, hex) may
    hold, read from every place in the run where the encoding may have started."""
    spelled: list[bytes] = []
    if _HEX.fullmatch(run):
        spelled += [bytes.fromhex(run[k : k + (len(run) - k) // 2 * 2]) for k in (0, 1)]
    if _BASE32.fullmatch(run):
        upper = run.upper()
        spelled += [base64.b32decode(upper[k : k + (len(run) - k) // 8 * 8]) for k in range(8)]
    alphabets = [a for a, other in (("+/", "-_"), ("-_", "+/")) if not set(other) & set(run)]
    for k in range(4):
        part = run[k:]
        part = part[: len(part) - 1] if len(part) % 4 == 1 else part
        for alphabet in alphabets:
            try:
                spelled.append(base64.b64decode(part + "=" * (-len(part) % 4), alphabet))
            except (binascii.Error, ValueError):
                continue
    for raw in spelled:
        yield raw.decode("utf-8", "replace")


#: Terminal escape sequences (CSI, OSC, two-character ESC forms): what Jupyter's and
#: nbconvert's ANSI rendering removes from a stream's text.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]"
)


def _has_escapes(text: str) -> bool:
    return "\x1b" in text or "\x9b" in text


def strip_escapes(text: str) -> str:
    """``text`` without terminal escape sequences, as a notebook or its HTML copy shows it."""
    return _ESCAPES.sub("", text)


def mask_text(text: str, secrets: Secrets) -> str:
    """``text`` with every secret (in any encoding, and every 7-character piece) masked."""
    return Masker(secrets)(text)


def find_leaks(text: str, secrets: Secrets) -> list[str]:
    """The labels (variable names, or ``secret #N``) of the secrets still present in ``text``."""
    return Masker(secrets).leaks(text)


def assert_clean(text: str, secrets: Secrets, *, what: str) -> None:
    """Raise SecretLeakError if ``text`` holds a secret; the message names only the variable."""
    raise_leaks(find_leaks(text, secrets), what=what)


def raise_leaks(leaks: list[str], *, what: str) -> None:
    """Raise SecretLeakError, in one line naming only the variables, when ``leaks`` is not empty."""
    if leaks:
        raise SecretLeakError(
            _(
                "{what} would still show {names}: an answer sent it back in a form that "
                "cannot be masked (a chat endpoint echoing its apiKey, disguised); nothing "
                "was written"
            ).format(what=what, names=listing(leaks))
        )


#: Query parameters of a notification URL that address or tune the message, not secrets.
_PLAIN_QUERY = frozenset(
    {"to", "from", "cc", "bcc", "name", "format", "method", "mode", "smtp", "port", "user",
     "overflow", "retry", "wait", "optional", "cto", "reply", "subject", "lang", "tz"}
)  # fmt: skip
#: Query parameters whose value is a secret however short.
_SECRET_QUERY = re.compile(r"token|key|secret|pass|sig|auth|code", re.IGNORECASE)
#: A URL starts after a comma: LMREG_NOTIFY is comma-separated, but `to=a@x,b@y` is one URL.
_NEXT_URL = re.compile(r"\s*,\s*(?=[A-Za-z][A-Za-z0-9+.-]*://)")


def split_urls(value: str) -> list[str]:
    """Comma-separated URLs (LMREG_NOTIFY) as a list; a comma inside a query stays."""
    parts = _NEXT_URL.split(value.strip())
    return [p.strip().strip(",").strip() for p in parts if p.strip().strip(",").strip()]


def url_secrets(url: str) -> list[str]:
    """The parts of a notification URL that may be secrets: password, tokens, keys.

    A password always; a host without a dot (``dingtalk://TOKEN``: the token
    sits where a host would); path segments and query values of 8 characters
    or more; any value of a query parameter named like a token, key or
    signature. Host names, ports and addresses (``to=``) are not secrets.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return [url] if url else []
    found: list[str] = []
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if at and ":" in userinfo:
        found.append(unquote(userinfo.split(":", 1)[1]))
    elif at and "." not in userinfo and len(userinfo) >= WINDOW:
        found.append(unquote(userinfo))  # dingtalk://SECRET@TOKEN: no password, a secret
    host = hostport.rsplit(":", 1)[0] if hostport.count(":") == 1 else hostport
    if host and "." not in host and host.lower() != "localhost" and not host.startswith("["):
        found.append(unquote(host))
    found += [unquote(s) for s in parts.path.split("/") if len(unquote(s)) >= WINDOW]
    for key, value in parse_qsl(parts.query):
        if key.lower() in _PLAIN_QUERY or not value:
            continue
        if _SECRET_QUERY.search(key) or len(value) >= WINDOW:
            found.append(value)
    return list(dict.fromkeys(s for s in found if s))
