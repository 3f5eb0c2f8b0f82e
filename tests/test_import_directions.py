"""Imports that run against the shape of the code, checked on grimp's graph (issue 40).

Results carry no words: ``probe/text`` is the one room below the views that turns
results into words, so nothing that measures or judges (the load, the checks, the
wire) imports it. The wire knows no platform (the registry). A view renders typed
values and never reaches into the probe's internals for a number (the principal's
page once parsed one back out of a translated check sentence). The watch shows
its results with the display objects both it and the onboarding use, not the
onboarding's. Every import counts, also a lazy one or one under TYPE_CHECKING.
"""

from __future__ import annotations

import grimp
import pytest
from test_import_graph import graph_of  # tests/ is on the path (its conftest)

#: (importer package, imported package): no module of the first imports one of the second.
FORBIDDEN: tuple[tuple[str, str], ...] = (
    ("lmreg_nb.probe.load", "lmreg_nb.probe.text"),
    ("lmreg_nb.probe.checks", "lmreg_nb.probe.text"),
    ("lmreg_nb.probe.wire", "lmreg_nb.probe.text"),
    ("lmreg_nb.summary", "lmreg_nb.probe"),
    ("lmreg_nb.probe.wire", "lmreg_nb.registry"),
    ("lmreg_nb.records", "lmreg_nb.probe.checks"),
    ("lmreg_nb.records", "lmreg_nb.probe.load"),
    ("lmreg_nb.watch", "lmreg_nb.onboarding"),
)
#: Forbidden imports not gone yet, each (importer module, imported module) exactly: the
#: capacity search's words, which the capacity work moves out of probe/load. An entry
#: whose import is gone fails the test: remove it then.
PENDING: frozenset[tuple[str, str]] = frozenset()


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def forbidden_imports(graph: grimp.ImportGraph) -> set[tuple[str, str]]:
    """Every direct import (importer, imported) that :data:`FORBIDDEN` rules out."""
    found: set[tuple[str, str]] = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            for source, target in FORBIDDEN:
                if _inside(importer, source) and _inside(imported, target):
                    found.add((importer, imported))
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return graph_of("lmreg_nb")


def test_no_import_runs_against_the_shape(graph: grimp.ImportGraph) -> None:
    new = sorted(forbidden_imports(graph) - PENDING)
    assert not new, "\n".join(
        f"{importer} imports {imported} (line "
        + ", ".join(
            str(d["line_number"])
            for d in graph.get_import_details(importer=importer, imported=imported)
        )
        + ")"
        for importer, imported in new
    )


def test_pending_entries_are_still_there(graph: grimp.ImportGraph) -> None:
    gone = sorted(PENDING - forbidden_imports(graph))
    assert not gone, f"these imports are gone: remove them from PENDING: {gone}"


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("lmreg_nb.probe.wire.exchange", "lmreg_nb.registry.envelope"),
        ("lmreg_nb.probe.wire.reasons", "lmreg_nb.registry.envelope"),
        ("lmreg_nb.probe.wire.stream_client", "lmreg_nb.registry.envelope"),
        ("lmreg_nb.records.principal", "lmreg_nb.probe.checks.context_window"),
        ("lmreg_nb.records.text", "lmreg_nb.probe.load.metrics"),
        ("lmreg_nb.watch.monitor", "lmreg_nb.onboarding.display"),
        ("lmreg_nb.probe.load.capacity", "lmreg_nb.probe.text.capacity_text"),
        ("lmreg_nb.probe.load.search", "lmreg_nb.probe.text.capacity_text"),
    ],
)
def test_each_import_of_the_issue_is_ruled_out(importer: str, imported: str) -> None:
    """The five imports the issue names (the two load ones per module) are each caught."""
    assert any(
        _inside(importer, source) and _inside(imported, target) for source, target in FORBIDDEN
    )
