"""Issue 43 item 1: a field added to an output without its schema fails the tests.

Every object of ours is closed (``additionalProperties: false``); the one open map is a
finding's ``facts``, by design. A field the code adds to an output (here a made-up
``cache_hits`` in the workload) breaks the schema of every output that carries it, so
adding a field means adding it to the schema first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from contract_schemas import NAMES, problems, sample_capacity, schema

#: Objects whose keys are data, not fields (a finding's facts, by name).
OPEN_MAPS = ("facts",)


def _subschemas(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _subschemas(value, f"{path}/{key}")
    elif isinstance(node, list):
        for n, value in enumerate(node):
            yield from _subschemas(value, f"{path}/{n}")


@pytest.mark.parametrize("name", NAMES)
def test_every_object_of_ours_is_closed(name: str) -> None:
    objects = [
        (path, node)
        for path, node in _subschemas(schema(name), "")
        if node.get("type") == "object" or "properties" in node
    ]
    assert objects
    for path, node in objects:
        if path.rsplit("/", 1)[-1] in OPEN_MAPS:
            assert isinstance(node.get("additionalProperties"), dict), path
            continue
        assert node.get("additionalProperties") is False, f"{name}{path} is open"
        assert set(node.get("required", [])) <= set(node["properties"]), path


def _objects_of(value: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(value, dict):
        if path.rsplit("/", 1)[-1] not in OPEN_MAPS:
            yield path, value
        for key, item in value.items():
            yield from _objects_of(item, f"{path}/{key}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _objects_of(item, f"{path}/{n}")


def _summary() -> dict[str, Any]:
    from lmreg_nb.records import to_jsonable
    from lmreg_nb.summary import Check, Contact, Step, build_summary

    summary = build_summary(
        school="S", contact=Contact("Li Hua", "13812345678", "li@school.cn"),
        base_url="https://ai.school.example", env="env-1",
        steps=[Step("contact card", True, "ok"), Step("capacity", False, "x", "token")],
        models=[], class_size=4,
        checks=[Check("reachable", False, "error", "down", "server-down", "school",
                      {"host": "llm.school.edu.cn", "status": 503})],
        capacity=sample_capacity().record(4, "serves 4"),
    )  # fmt: skip
    data: dict[str, Any] = to_jsonable(summary)
    return data


def test_a_field_added_anywhere_in_an_output_fails() -> None:
    outputs = {"capacity": sample_capacity().to_json(), "summary": _summary()}
    for name, output in outputs.items():
        output = json.loads(json.dumps(output))
        assert problems(name, output) == [], name
        objects = list(_objects_of(output))
        assert len(objects) > 5
        for path, obj in objects:
            obj["added_field"] = 1
            assert any("added_field" in p for p in problems(name, output)), f"{name}{path}"
            del obj["added_field"]


def test_a_field_the_code_adds_without_the_schema_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmreg_nb.summary.workload import Workload

    plain = Workload.to_json
    monkeypatch.setattr(Workload, "to_json", lambda self: {**plain(self), "cache_hits": 3})
    for name, output in (("capacity", sample_capacity().to_json()), ("summary", _summary())):
        found = problems(name, json.loads(json.dumps(output)))
        assert any("cache_hits" in p for p in found), (name, found)


def test_every_cause_the_checks_declare_fits_the_records_schema() -> None:
    """A finding's ``cause`` in the record is one of the declared identifiers
    ('not-judged:wrong-path' and 'not-run:unreached' once broke the pattern), or one
    the masker cut because an apiKey shares its words ('…able')."""
    import re

    import lmreg_nb.probe.checks.suite  # noqa: F401  (declares every check)
    from lmreg_nb.probe.checks.declare import COMMON, DECLARED

    pattern = re.compile(
        schema("summary")["$defs"]["recorded_check"]["properties"]["cause"]["pattern"]
    )
    causes = set(COMMON) | {cause for d in DECLARED.values() for cause in d.says}
    assert len(causes) > 20
    assert [c for c in sorted(causes) if not pattern.match(c)] == []
    assert pattern.match("…able") and not pattern.match("Not a cause")
