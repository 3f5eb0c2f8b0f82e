"""Issue 43 item 1: `check --json` with a load test and `capacity --json`, measured for real.

The load test and the capacity search send over sockets (the lean streaming client), so
their output is made against the mock school model on loopback: the run is the point.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from contract_schemas import assert_valid
from fakes.hosts import mock_served

from lmreg_nb.cli import main
from lmreg_nb.sandbox.school_model import MockModelConfig

pytestmark = pytest.mark.slow

KEY = "sk-schemas-runs-0123456789"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with mock_served(MockModelConfig(api_key=KEY, ttft_ms=5, itl_ms=2, tokens=6)) as base:
        yield f"{base}/v1/chat/completions"


def _json(args: list[str], url: str) -> object:
    env = {"LMREG_MODEL_API_KEY": KEY, "LMREG_TIMEOUT": "5", "LMREG_LANG": "en"}
    result = CliRunner().invoke(main, [*args, url, "--model", "m", "--json"], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_check_json_with_a_load_test(url: str) -> None:
    out = _json(["check", "--requests", "4", "--concurrency", "2"], url)
    assert isinstance(out, dict) and out["workload"]["name"] == "lesson"
    assert out["summary"]["requests"] == 4 and out["summary"]["requests_per_s"]
    assert_valid("check", out)


def test_capacity_json(url: str) -> None:
    args = ["capacity", "--need", "2", "--max-concurrency", "3", "--level-seconds", "0.1"]
    out = _json(args, url)
    assert isinstance(out, dict) and out["levels"] and out["capacity"]["concurrency"] >= 2
    assert_valid("capacity", out)
