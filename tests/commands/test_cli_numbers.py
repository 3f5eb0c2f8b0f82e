"""Every float option refuses NaN and infinity: one usage error, exit 2 (issue 20, item 6).

`--level-seconds nan`, `--duration nan` and `--timeout nan` used to be taken
(NaN passes every range comparison); `inf` too. The test walks the whole
command tree, so an option added later is covered as well.
"""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from lmreg_nb.cli import main

pytestmark = pytest.mark.timeout(60)


Path = tuple[str, ...]


def _commands(group: click.Group, path: Path = ()) -> Iterator[tuple[Path, click.Command]]:
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


def _float_options() -> list[tuple[tuple[str, ...], str, list[str]]]:
    """(command path, option, placeholder arguments) for every option taking a float."""
    found = []
    for path, command in _commands(main):
        arguments = ["x" for p in command.params if isinstance(p, click.Argument) and p.required]
        for param in command.params:
            takes_float = isinstance(param.type, click.types.FloatParamType)
            if isinstance(param, click.Option) and takes_float:
                found.append((path, max(param.opts, key=len), arguments))
    return found


FLOAT_OPTIONS = _float_options()


def test_the_walk_finds_the_options_the_issue_names() -> None:
    names = {(" ".join(path), option) for path, option, _ in FLOAT_OPTIONS}
    for expected in [
        ("capacity", "--level-seconds"),
        ("check", "--duration"),
        ("demo", "--timeout"),
        ("onboard", "--timeout"),
        ("batch", "--timeout"),
    ]:
        assert expected in names, sorted(names)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "1e999"])
@pytest.mark.parametrize(
    ("path", "option", "arguments"),
    FLOAT_OPTIONS,
    ids=[f"{' '.join(p)} {o}" for p, o, _ in FLOAT_OPTIONS],
)
def test_a_float_option_refuses_nan_and_infinity(
    path: tuple[str, ...], option: str, arguments: list[str], value: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    ran: list[object] = []
    # Nothing runs (a sandbox, a demo) if the value were taken: the test only parses.
    monkeypatch.setattr(command, "callback", lambda **kw: ran.append(kw))
    result = CliRunner().invoke(main, [*path, option, value, *arguments], catch_exceptions=False)
    assert ran == [] and result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and option in errors[0], result.stderr
    assert "Traceback" not in result.output
