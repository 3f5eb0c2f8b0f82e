"""Look-alike names: the confusable skeleton of Unicode TR39 (UTS #39, section 4).

Two modelNames that look the same (Cyrillic ``сafé``, fullwidth ``ｃafé`` beside
``café``) are different strings to the platform, so both can be registered and
a teacher picks the wrong one. :func:`skeleton` maps each character to the
prototype of its look-alike class, as UTS #39 defines it: NFD, drop the default
ignorable code points (zero-width marks), map each character, NFD again; two
names are confusable when their skeletons are equal. Compatibility forms
(fullwidth letters, ligatures) are folded first (NFKC): stricter than UTS #39,
as a name must not even look alike.

The character data is Unicode's ``confusables.txt`` as shipped by the
``confusable-homoglyphs`` package, which keeps each pair in both directions;
the classes are rebuilt from those pairs, each named by its prototype (the
character the others point at: the one with the most look-alikes, a
multi-character prototype first).
"""

from __future__ import annotations

import json
import unicodedata
from collections import defaultdict
from functools import cache
from importlib.resources import files

from .errors import ValidationError
from .i18n import _

__all__ = ["confusable_with", "prototype", "refuse_look_alike", "skeleton"]

# Default_Ignorable_Code_Point beyond the format characters (category Cf).
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
)


def _ignorable(ch: str) -> bool:
    code = ord(ch)
    return unicodedata.category(ch) == "Cf" or any(a <= code <= b for a, b in _IGNORABLE_RANGES)


@cache
def _prototypes() -> dict[str, str]:
    """Each character of confusables.txt -> the prototype of its class."""
    raw = files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8")
    # The package's file keeps the left-to-right marks that wrap right-to-left characters
    # in confusables.txt's comments: they are not part of the characters.
    marks = str.maketrans("", "", "\u200e\u200f")
    pairs: dict[str, list[dict[str, str]]] = {}
    for key, glyphs in json.loads(raw).items():
        pairs.setdefault(key.translate(marks), []).extend(
            {"c": g["c"].translate(marks)} for g in glyphs
        )
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for char, glyphs in pairs.items():
        for glyph in glyphs:
            parent[root(char)] = root(glyph["c"])
    classes: dict[str, list[str]] = defaultdict(list)
    for node in list(parent):
        classes[root(node)].append(node)
    mapping: dict[str, str] = {}
    for members in classes.values():
        # The prototype: what the others point at (most pairs); a sequence such as
        # "rn" is always a prototype (sources are single characters).
        proto = max(members, key=lambda m: (len(m) > 1, len(pairs.get(m, ())), -ord(m[0])))
        for member in members:
            if len(member) == 1:
                mapping[member] = proto
    return mapping


#: Characters that show as a blank without being spaces: read as one (NFKC already folds
#: the other spaces, U+3000 and U+2000-200A, into U+0020).
_BLANK = {"\u2800": " "}


def prototype(ch: str) -> str:
    """The prototype of ``ch``'s look-alike class (``ch`` itself when it has none)."""
    return _prototypes().get(ch, ch)


def skeleton(text: str) -> str:
    """The TR39 skeleton of ``text``: equal skeletons look the same."""
    protos = _prototypes()
    # NFKC first folds what confusables.txt may miss: widths, ligatures, styled letters.
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))
    mapped = "".join(
        _BLANK.get(ch) or protos.get(ch, ch) for ch in decomposed if not _ignorable(ch)
    )
    return unicodedata.normalize("NFD", mapped)


def confusable_with(name: str, others: list[str]) -> str | None:
    """The first of ``others`` that differs from ``name`` but looks the same, or None."""
    wanted = skeleton(name.strip())
    same = unicodedata.normalize("NFC", name.strip())
    for other in others:
        if (
            unicodedata.normalize("NFC", other.strip()) != same
            and skeleton(other.strip()) == wanted
        ):
            return other
    return None


def refuse_look_alike(name: str, registered: list[str]) -> None:
    """ValidationError when ``name`` is new but looks like one of ``registered``."""
    other = confusable_with(name, registered)
    if other is not None:
        raise ValidationError(
            "modelName",
            _(
                "'{name}' looks the same as '{other}', already registered, but is spelled "
                "with other characters (another script, width or invisible marks): choose a "
                "name that differs visibly, or use '{other}' to update that model"
            ).format(name=name, other=other),
        )
