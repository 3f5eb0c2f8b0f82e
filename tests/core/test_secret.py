"""Secret: repr, str and HTML show only the last 4 characters; it never pickles."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from lmreg_nb.models import RegisteredModel
from lmreg_nb.secret import Secret, mask

VALUE = "sk-live-0123456789abcdef"


def test_every_view_is_masked() -> None:
    s = Secret(VALUE)
    assert str(s) == "…cdef" == s.masked == mask(VALUE)
    assert repr(s) == "Secret('…cdef')"
    assert s._repr_html_() == "<code>…cdef</code>"
    assert f"{s}" == "…cdef" and "{}".format(s) == "…cdef"  # noqa: UP032
    assert VALUE not in repr([s, {"k": s}, (s,)])


def test_reveal_gives_the_value_once_asked() -> None:
    assert Secret(VALUE).reveal() == VALUE
    assert Secret(Secret(VALUE)).reveal() == VALUE


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("", "(not set)"),
        ("a", "…(1 character)"),
        ("abc", "…(3 characters)"),
        ("12345678", "…(8 characters)"),
        ("123456789", "…6789"),
    ],
)
def test_short_values_show_their_length_and_nothing_of_themselves(value: str, shown: str) -> None:
    assert mask(value) == shown
    assert mask(None) == "(not set)"


def test_an_eight_character_key_is_masked_sensibly_in_chinese() -> None:
    from lmreg_nb import i18n

    with i18n.speaking("zh-CN"):
        shown = mask("sk-12345")
    assert shown == "…（8 个字符）" and not any(c in shown for c in "sk-12345")


def test_equality_hash_and_truth() -> None:
    assert Secret("a-long-value-1") == Secret("a-long-value-1") != Secret("a-long-value-2")
    assert len({Secret("a-long-value-1"), Secret("a-long-value-1")}) == 1
    assert not Secret("") and Secret("x")
    assert Secret("x") != "x"  # never equal to the plain string (no accidental comparisons)


def test_only_strings() -> None:
    with pytest.raises(TypeError):
        Secret(123)  # type: ignore[arg-type]


def test_pickling_is_refused_but_copies_work() -> None:
    s = Secret(VALUE)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(s)
    assert copy.copy(s) is s and copy.deepcopy(s) is s
    model = RegisteredModel("m1", "n", "https://x.example", s)
    assert dataclasses.asdict(model)["api_key"] is s  # deep-copies its fields
    assert VALUE not in repr(model)


def test_the_masker_takes_secrets_and_plain_values_and_every_encoding() -> None:
    import base64
    import json
    from urllib.parse import quote

    from lmreg_nb.secret import find_leaks, mask_text

    key = 'sk-"live"/0123456789+abcdef'
    text = " | ".join(
        [key, json.dumps(key), quote(key, safe=""), base64.b64encode(key.encode()).decode()]
    )
    for secrets in ([Secret(key)], [key], {"apiKey": Secret(key)}):
        clean = mask_text(text, secrets)  # type: ignore[arg-type]
        assert find_leaks(clean, [key]) == [], clean
        assert "…cdef" in clean
    assert find_leaks(text, {"apiKey": Secret(key)}) == ["apiKey"]
    assert find_leaks(f"head {key[:8]} tail", [Secret(key)]) == ["secret #1"]


def test_secret_does_not_read_the_configuration() -> None:
    import ast
    from pathlib import Path

    import lmreg_nb.secret as module

    tree = ast.parse(Path(module.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "settings" not in imported and "scrub" not in imported
