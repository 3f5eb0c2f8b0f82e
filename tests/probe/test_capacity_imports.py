"""No import circle in the probe: results never import their presentation (issue 29).

Every import counts, also one inside a function or under TYPE_CHECKING (as in
tests/test_layers.py): a lazy import is still a dependency.
"""

from __future__ import annotations

from pathlib import Path

from test_layers import PACKAGE, imported_modules

PRESENTATION = {"probe.capacity_text", "probe.capacity_table", "probe.plots"}
#: The result types (the search, a driver, may name its words lazily: Progress.text()).
RESULTS = {"probe.capacity_result", "probe.levels", "probe.settle", "probe.workload"}


def _graph(folder: str) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / folder).glob("*.py")):
        package = path.stem == "__init__"
        module = folder if package else f"{folder}.{path.stem}"
        found = imported_modules(Path(path).read_text(encoding="utf-8"), module, is_package=package)
        graph[module] = {m for _line, m in found if m.startswith(folder + ".")}
    return graph


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += graph.get(module, ())
    return seen


def test_the_probe_has_no_import_circle() -> None:
    graph = _graph("probe")
    circles = sorted(m for m in graph if m in _reaches(graph, m))
    assert circles == []


def test_results_never_import_their_presentation() -> None:
    graph = _graph("probe")
    for module in RESULTS:
        assert not (_reaches(graph, module) & PRESENTATION), module


def test_the_capacity_search_returns_results_and_imports_no_words() -> None:
    # The search and its driver return typed results and progress events; the CLI and the
    # onboarding render them through probe/text (issue 40): no chain, lazy imports included.
    import grimp

    graph = grimp.build_graph("lmreg_nb", exclude_type_checking_imports=False, cache_dir=None)
    for module in ("lmreg_nb.probe.load.capacity", "lmreg_nb.probe.load.search"):
        chain = graph.find_shortest_chain(importer=module, imported="lmreg_nb.probe.text")
        assert not graph.chain_exists(module, "lmreg_nb.probe.text", as_packages=True), chain
