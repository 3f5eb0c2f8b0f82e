"""No import circles in lmreg_nb: checked on grimp's import graph of the whole package.

Every import counts, also one inside a function or under TYPE_CHECKING: a lazy
import is still a dependency, and a circle of them means neither module can be
understood (or moved) without the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest

#: Circles tolerated for now, each as the exact set of its modules: none. (The last two,
#: the capacity result importing its presentation and the mock's two halves sharing
#: private names, were broken in issue 29.) An entry would match only the same modules
#: exactly: a module joining it, or a new circle, fails the test.
ALLOWED: list[frozenset[str]] = []


def circles(imports: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The import circles of a graph (module -> the modules it imports): every strongly
    connected component of more than one module, or a module importing itself (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in imports.get(module, ()):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            part: set[str] = set()
            while True:
                other = stack.pop()
                on_stack.discard(other)
                part.add(other)
                if other == module:
                    break
            if len(part) > 1 or module in imports.get(module, ()):
                found.append(frozenset(part))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return found


def graph_of(package: str) -> grimp.ImportGraph:
    """grimp's graph of ``package``, lazy and TYPE_CHECKING imports included, no cache
    folder written."""
    return grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)


def imports_of(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def describe(graph: grimp.ImportGraph, circle: frozenset[str]) -> str:
    """One circle as a readable chain with the line of each import: a -> b (a:12) -> ... -> a."""
    first = min(circle)
    lines = []
    for importer in sorted(circle):
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & circle):
            where = graph.get_import_details(importer=importer, imported=imported)
            at = ", ".join(str(d["line_number"]) for d in where) or "?"
            lines.append(f"  {importer} imports {imported} (line {at})")
    step = min(graph.find_modules_directly_imported_by(first) & circle, default=first)
    back = graph.find_shortest_chain(importer=step, imported=first) if step != first else None
    chain = " -> ".join([first, *(back or [first])])
    return f"circle of {len(circle)} modules: {chain}\n" + "\n".join(lines)


def unexpected(found: list[frozenset[str]], allowed: list[frozenset[str]]) -> list[frozenset[str]]:
    """The circles of ``found`` that the allow-list does not name exactly."""
    return [c for c in found if c not in allowed]


def test_lmreg_nb_has_no_import_circle_but_the_allowed() -> None:
    graph = graph_of("lmreg_nb")
    found = circles(imports_of(graph))
    new = unexpected(found, ALLOWED)
    assert not new, "import circles (break each; a lazy import counts too):\n" + "\n".join(
        describe(graph, c) for c in new
    )
    gone = [sorted(c) for c in ALLOWED if c not in found]
    assert not gone, f"these allowed circles are gone: remove them from ALLOWED: {gone}"


def test_the_package_graph_is_whole() -> None:
    """The graph holds the package's modules and their imports (an empty one finds nothing)."""
    imports = imports_of(graph_of("lmreg_nb"))
    assert len(imports) > 100
    assert "lmreg_nb.onboarding.step" in imports["lmreg_nb.onboarding.facade"]


def _package(root: Path, files: dict[str, str]) -> None:
    (root / "circ_pkg").mkdir()
    (root / "circ_pkg" / "__init__.py").write_text("")
    for name, text in files.items():
        (root / "circ_pkg" / f"{name}.py").write_text(text)


@pytest.mark.parametrize(
    "b_source",
    [
        "from . import a\n",
        "def later():\n    from .a import x\n    return x\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circ_pkg.a import x\n",
    ],
    ids=["top", "lazy", "type-checking"],
)
def test_a_circle_is_found_however_it_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, b_source: str
) -> None:
    _package(tmp_path, {"a": "from .b import y\nx = 1\n", "b": "y = 2\n" + b_source, "c": ""})
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = graph_of("circ_pkg")
    found = circles(imports_of(graph))
    assert found == [frozenset({"circ_pkg.a", "circ_pkg.b"})]
    assert "circ_pkg.a imports circ_pkg.b" in describe(graph, found[0])


def test_no_circle_no_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _package(tmp_path, {"a": "from .b import y\n", "b": "def f():\n    from . import c\n", "c": ""})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert circles(imports_of(graph_of("circ_pkg"))) == []


@pytest.mark.parametrize(
    ("found", "new"),
    [
        # a module joining an allowed circle makes it another circle
        ([frozenset("xyz")], [frozenset("xyz")]),
        # a second circle next to an allowed one
        ([frozenset("xy"), frozenset("pq")], [frozenset("pq")]),
        # a part of an allowed circle is not the allowed circle
        ([frozenset("x") | {"w"}], [frozenset("xw")]),
        ([frozenset("xy")], []),
    ],
)
def test_the_allow_list_hides_no_new_circle(
    found: list[frozenset[str]], new: list[frozenset[str]]
) -> None:
    assert unexpected(found, [frozenset("xy")]) == new


def test_a_module_importing_itself_is_a_circle() -> None:
    assert circles({"a": {"a"}, "b": {"a"}}) == [frozenset({"a"})]
