"""Issue 43 item 3: the Chinese README carries every section of the English one.

README.zh-CN was half of README.md (no Commands table, no `capacity` section, no
sandbox section...). The two are held to the same outline: the same headings at the
same levels in the same order (a heading's code, such as `lmreg-nb batch`, the same),
the same code blocks in the same order, and in the shell blocks the same commands:
each line's program, subcommand and options, in order. Values (a school's name, a
folder), comments and the language a command is run in (`LMREG_LANG=zh-CN`,
`--lang zh-CN`) may differ.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(\s*)```(.*)$")
SHELL = ("", "bash", "sh", "shell", "console")


def _parts(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The headings outside code, and each code block (its language, its lines)."""
    headings: list[str] = []
    blocks: list[tuple[str, list[str]]] = []
    current: tuple[str, list[str]] | None = None
    for line in text.splitlines():
        fence = FENCE.match(line)
        if fence and current is None:
            current = (fence.group(2).strip(), [])
        elif fence:
            blocks.append(current)  # type: ignore[arg-type]
            current = None
        elif current is not None:
            current[1].append(line.strip())
        elif line.startswith("#"):
            headings.append(line)
    assert current is None, "a code block is not closed"
    return headings, blocks


def _outline(headings: list[str]) -> list[tuple[int, list[str]]]:
    """Each heading's level and the code it names."""
    return [(len(h) - len(h.lstrip("#")), re.findall(r"`([^`]+)`", h)) for h in headings]


def _commands(lines: list[str]) -> list[list[str]]:
    """Each command of a shell block as program, subcommand and options, in order."""
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    found: list[list[str]] = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        for command in _split(words):
            while command and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", command[0]):
                command = command[1:]  # VAR=value before a command: a setting, not a command
            if not command:
                continue
            if command[0] == "export":
                found.append(["export", command[1].split("=", 1)[0]])
                continue
            shown = [command[0]]
            rest = command[1:]
            if "--lang" in rest:  # the language a command is run in
                at = rest.index("--lang")
                rest = rest[:at] + rest[at + 2 :]
            free = [w for w in rest if not w.startswith("-")]
            if free:
                shown.append(free[0])
            shown += [w for w in rest if w.startswith("-")]
            found.append(shown)
    return found


def _split(words: list[str]) -> list[list[str]]:
    commands: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", "||", "|", ";"):
            commands.append([])
        else:
            commands[-1].append(word)
    return [c for c in commands if c]


def _readme(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def test_the_same_sections_in_the_same_order() -> None:
    english, _ = _parts(_readme("README.md"))
    chinese, _ = _parts(_readme("README.zh-CN.md"))
    en, zh = _outline(english), _outline(chinese)
    assert [level for level, _c in zh] == [level for level, _c in en], (
        "\n".join(english) + "\n---\n" + "\n".join(chinese)
    )
    for n, ((_l, code_en), (_m, code_zh)) in enumerate(zip(en, zh, strict=True)):
        assert code_zh == code_en, (english[n], chinese[n])
    for level in (1, 2, 3):
        assert sum(1 for lv, _c in zh if lv == level) == sum(1 for lv, _c in en if lv == level)


def test_the_same_code_blocks_and_commands_in_the_same_order() -> None:
    _, english = _parts(_readme("README.md"))
    _, chinese = _parts(_readme("README.zh-CN.md"))
    assert [lang for lang, _l in chinese] == [lang for lang, _l in english]
    for (lang, en_lines), (_lang, zh_lines) in zip(english, chinese, strict=True):
        if lang in SHELL:
            assert _commands(zh_lines) == _commands(en_lines), (en_lines, zh_lines)
    commands = [c for lang, lines in english if lang in SHELL for c in _commands(lines)]
    assert ["lmreg-nb", "demo"] in commands and ["lmreg-nb", "batch", "--out", "--jobs",
                                                 "--timeout"] in commands  # fmt: skip


def test_the_same_pictures() -> None:
    pictures = [re.findall(r"!\[[^\]]*\]\((docs/[^)]+)\)", _readme(r)) for r in
                ("README.md", "README.zh-CN.md")]  # fmt: skip
    english, chinese = pictures
    assert len(chinese) == len(english)
    for picture in chinese:
        assert (ROOT / picture).is_file(), picture


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("LMREG_LANG=zh-CN lmreg-nb demo", [["lmreg-nb", "demo"]]),
        ("lmreg-nb --lang zh-CN batch 计划.csv --out runs --jobs 4",
         [["lmreg-nb", "batch", "--out", "--jobs"]]),
        ("export X='a b'   # 注释", [["export", "X"]]),
        ("a sub -x 1 && b c \\\n    -y", [["a", "sub", "-x"], ["b", "c", "-y"]]),
    ],
)  # fmt: skip
def test_commands_are_compared_by_program_subcommand_and_options(
    text: str, expected: list[list[str]]
) -> None:
    assert _commands(text.splitlines()) == expected
