"""The catalogs: complete, compiled, in step with the sources; the language choice; local times."""

from __future__ import annotations

import gettext
import importlib.machinery
import importlib.util
import string
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lmreg_nb import i18n

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("babel", reason="the test extra installs Babel")


def load_script() -> ModuleType:
    """scripts/i18n as a module: the tests extract and compile exactly as the script does."""
    path = ROOT / "scripts" / "i18n"
    loader = importlib.machinery.SourceFileLoader("lmreg_i18n_script", str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script()


@pytest.fixture(scope="module")
def zh_catalog(script: ModuleType) -> Any:
    return script.read(script.LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "lmreg_nb.po")


@pytest.fixture(autouse=True)
def _restore_language() -> Iterator[None]:
    yield
    i18n.set_language("en")


def placeholders(text: str) -> set[str]:
    """The named fields of a str.format template; '{}' (positional) shows as ''."""
    try:
        return {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}
    except ValueError:  # not a format string at all (a lone brace): compare the braces
        return {c for c in text if c in "{}"}


def messages(catalog: Any) -> list[Any]:
    return [m for m in catalog if m.id]


# -- the catalog files ------------------------------------------------------------------


def test_po_has_every_text_of_the_sources(script: ModuleType, zh_catalog: Any) -> None:
    wanted = {script.key(m) for m in messages(script.extract())}
    have = {script.key(m) for m in messages(zh_catalog)}
    missing = sorted(wanted - have)
    assert not missing, f"run scripts/i18n update and translate: {missing[:10]}"
    assert len(wanted) > 20  # the extraction found the package's texts at all


def test_committed_mo_is_the_compiled_po(script: ModuleType) -> None:
    pos = script.po_files()
    assert [p.parents[1].name for p in pos] == ["zh_CN"]
    for po in pos:
        mo = po.with_suffix(".mo")
        assert mo.exists(), "run scripts/i18n compile"
        assert script.mo_is_current(mo, script.read(po)), "run scripts/i18n compile"


def test_a_stale_mo_is_seen_whatever_babel_wrote_it(
    script: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalog check compares messages, not bytes: the .mo's header names the Babel
    release that compiled it (a new release once turned CI red with nothing changed)."""
    import babel.messages.catalog

    catalog = script.read(script.po_files()[0])
    monkeypatch.setattr(babel.messages.catalog, "VERSION", "0.0.1")  # another Babel release
    mo = tmp_path / "lmreg_nb.mo"
    mo.write_bytes(script.mo_bytes(catalog))
    assert b"Generated-By: Babel 0.0.1" in mo.read_bytes()
    assert script.mo_is_current(mo, catalog)  # another Babel, the same messages: current
    first = next(m for m in catalog if m.id and isinstance(m.string, str) and m.string)
    first.string += "!"
    assert not script.mo_is_current(mo, catalog)  # a changed translation: stale
    assert not script.mo_is_current(tmp_path / "missing.mo", catalog)


def test_zh_catalog_has_one_plural_form(zh_catalog: Any) -> None:
    assert zh_catalog.num_plurals == 1
    assert zh_catalog.plural_expr == "0"


def test_every_message_has_a_translation_with_the_same_placeholders(zh_catalog: Any) -> None:
    bad = []
    for m in messages(zh_catalog):
        ids = (m.id,) if isinstance(m.id, str) else tuple(m.id)
        strings = (m.string,) if isinstance(m.string, str) else tuple(m.string)
        if m.fuzzy or not all(strings):
            bad.append(f"not translated: {ids[0]!r}")
            continue
        # The plural source form names every field the Chinese single form must carry.
        expected = placeholders(ids[-1])
        if "" in placeholders(ids[0]) | expected:
            bad.append(f"positional {{}} (use a named placeholder): {ids[0]!r}")
        bad += [
            f"placeholders {sorted(placeholders(s))} != {sorted(expected)}: {ids[0]!r}"
            for s in strings
            if placeholders(s) != expected
        ]
    assert not bad, "\n".join(bad)


def test_every_message_renders_in_zh_cn(zh_catalog: Any) -> None:
    i18n.set_language("zh-CN")
    for m in messages(zh_catalog):
        if isinstance(m.id, str):
            shown = i18n.pgettext(m.context, m.id) if m.context else i18n._(m.id)
            assert shown == m.string, m.id
            template = m.id
        else:
            shown = i18n.ngettext(m.id[0], m.id[1], 5)
            assert shown == m.string[0], m.id
            template = m.id[1]
        fields = {name: "X" for name in placeholders(template) if name.isidentifier()}
        if fields:
            assert "X" in shown.format(**fields)


def test_context_tells_two_meanings_apart() -> None:
    i18n.set_language("en")
    assert i18n.pgettext("column", "updated") == "updated"
    i18n.set_language("zh-CN")
    assert i18n.pgettext("nonexistent context", "updated") == "updated"


def test_n_marks_without_translating() -> None:
    i18n.set_language("zh-CN")
    assert i18n.N_("capacity") == "capacity"


# -- choosing the language --------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("zh-CN", "zh-CN"),
        ("zh_CN.UTF-8", "zh-CN"),
        ("zh-Hans", "zh-CN"),
        ("ZH", "zh-CN"),
        ("en_US.UTF-8", "en"),
        ("C", "en"),
        ("fr_FR", None),
        ("", None),
        (None, None),
    ],
)
def test_normalize_language(value: str | None, expected: str | None) -> None:
    assert i18n.normalize_language(value) == expected


def test_lmreg_lang_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMREG_LANG", "zh-CN")
    assert i18n.set_language() == "zh-CN"
    assert i18n.current_language() == "zh-CN"
    assert i18n._("capacity") != "capacity"


def test_locale_chooses_without_lmreg_lang(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert i18n.set_language() == "zh-CN"
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    monkeypatch.setattr(i18n.locale, "getlocale", lambda: ("de_DE", "UTF-8"))
    assert i18n.set_language() == "en"


def test_explicit_language_overrides_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMREG_LANG", "zh-CN")
    assert i18n.set_language("en") == "en"
    assert i18n._("capacity") == "capacity"
    monkeypatch.setenv("LMREG_LANG", "en")
    assert i18n.set_language("zh_CN") == "zh-CN"


def test_plural_forms_in_both_languages() -> None:
    i18n.set_language("en")
    assert i18n.ngettext("{n} request", "{n} requests", 1).format(n=1) == "1 request"
    assert i18n.ngettext("{n} request", "{n} requests", 2).format(n=2) == "2 requests"


def test_missing_catalog_falls_back_to_english(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(i18n, "LOCALE_DIR", Path("/nonexistent"))
    assert i18n.set_language("zh-CN") == "zh-CN"
    assert isinstance(i18n._translations, gettext.NullTranslations)
    assert i18n._("capacity") == "capacity"


# -- local time -------------------------------------------------------------------------

NOON_UTC = datetime(2026, 9, 1, 4, 5, tzinfo=UTC)


def test_local_time_in_china_is_shanghai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TZ", raising=False)
    assert i18n.format_local_time(NOON_UTC, "zh-CN") == "2026-09-01 12:05 Asia/Shanghai (UTC+08:00)"


def test_local_time_follows_the_current_language(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TZ", raising=False)
    i18n.set_language("zh-CN")
    assert "Asia/Shanghai" in i18n.format_local_time(NOON_UTC)


def test_local_time_in_english_uses_the_system_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    assert i18n.format_local_time(NOON_UTC, "en") == "2026-09-01 06:05 Europe/Berlin (UTC+02:00)"
    monkeypatch.setenv("TZ", "UTC")
    assert i18n.format_local_time(NOON_UTC, "en") == "2026-09-01 04:05 UTC"


def test_naive_time_is_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TZ", raising=False)
    naive = NOON_UTC.replace(tzinfo=None)
    assert i18n.format_local_time(naive, "zh-CN") == i18n.format_local_time(NOON_UTC, "zh-CN")


def test_china_without_tzdata_is_utc_plus_8(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TZ", raising=False)
    monkeypatch.setattr(i18n, "_zone_named", lambda name: None)
    assert i18n.format_local_time(NOON_UTC, "zh-CN").startswith("2026-09-01 12:05 ")


# -- the command line -------------------------------------------------------------------


def _cli(*args: str) -> Any:
    from click.testing import CliRunner

    from lmreg_nb.cli import main

    return CliRunner().invoke(main, list(args), prog_name="lmreg-nb")


def _has_cjk(text: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def test_cli_help_follows_lang_and_back() -> None:
    chinese = _cli("--lang", "zh-CN", "check", "--help")
    assert chinese.exit_code == 0
    assert "用法" in chinese.output and "选项" in chinese.output
    assert "LMREG_MODEL_URL" in chinese.output  # identifiers stay
    english = _cli("--lang", "en", "check", "--help")
    assert "Usage:" in english.output and not _has_cjk(english.output)


def test_cli_help_in_the_command_list_is_not_cut() -> None:
    listing = _cli("--lang", "zh-CN", "--help").output
    assert "--lang [zh-CN|en]" in listing  # as the README spells it, not click's "zh-cn"
    i18n.set_language("zh-CN")
    from lmreg_nb.cli import main

    check = main.commands["check"]
    first = check.__dict__["_lmreg_en"]["help"].split("\n\n")[0].replace("\n", " ")
    assert i18n._(first).split("，")[0] in listing


def test_click_usage_errors_in_chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMREG_LANG", "zh-CN")
    result = _cli("check", "--bogus")
    assert result.exit_code == 2
    assert "没有选项 '--bogus'" in result.output


def test_models_without_base_url_is_one_chinese_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 15: `LMREG_LANG=zh-CN lmreg-nb models` without LMREG_BASE_URL.
    monkeypatch.setenv("LMREG_LANG", "zh-CN")
    result = _cli("models")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "LMREG_BASE_URL" in lines[0]
    assert _has_cjk(lines[0].replace("错误：", "")), lines[0]
