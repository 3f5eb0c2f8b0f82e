"""Property-based tests of the platform against its own OpenAPI schema (schemathesis, in-process).

Positive and negative cases for every operation, with a valid token and X-ENV:
no server error, every answer matches the documented statuses, headers and
bodies, and no invalid input is accepted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationConfig, experimental
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.types import NotSet

from lmreg_nb.errors import ValidationError
from lmreg_nb.sandbox.platform import schema as schema_mod
from lmreg_nb.sandbox.platform.app import PlatformConfig, create_app
from lmreg_nb.sandbox.platform.store import Store
from lmreg_nb.validate import check_api_key, check_model_id, check_model_name, check_registry_url

experimental.OPEN_API_3_1.enable()  # FastAPI writes OpenAPI 3.1
experimental.COVERAGE_PHASE.enable()  # boundary cases: each field just outside its rules

CHECKS = (
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,  # last: left out where nothing was negated
)


@pytest.fixture(scope="module")
def platform_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, dict[str, str]]]:
    store = Store(tmp_path_factory.mktemp("schemathesis") / "platform.sqlite3")
    demo = store.demo()
    issued = store.issue_token(demo.app_id, demo.app_secret, 3600)
    assert issued is not None
    headers = {"Authorization": f"Bearer {issued.token}", "X-ENV": issued.env}
    yield create_app(store, PlatformConfig()), headers
    store.close()


@pytest.fixture(scope="module")
def api_schema(platform_app: tuple[Any, dict[str, str]]) -> Any:
    return schemathesis.from_asgi(
        "/openapi.json",
        platform_app[0],
        data_generation_methods=[
            schemathesis.DataGenerationMethod.positive,
            schemathesis.DataGenerationMethod.negative,
        ],
        # The valid token and env are sent with every case; generating (and negating)
        # the security headers as well would turn "negative" cases into valid ones.
        # Missing or wrong credentials have their own tests (test_platform.py).
        generation_config=GenerationConfig(with_security_parameters=False),
    )


schema = schemathesis.from_pytest_fixture("api_schema")


# Slow lane: a property-based sweep of every operation (half a minute of one core), not
# the inner loop's; it starts nothing.
@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,  # the same cases on every run: a failure here is reproducible
    suppress_health_check=list(HealthCheck),
)
def test_platform_conforms_to_its_schema(
    case: Any, platform_app: tuple[Any, dict[str, str]]
) -> None:
    headers = platform_app[1]
    if case.data_generation_method.is_negative and case.operation.body:
        if isinstance(case.body, NotSet):
            # query-models' body is optional: schemathesis may leave it out of a
            # "negative" case, negating nothing. That request is valid; judge it so.
            case.call_and_validate(headers=headers, checks=CHECKS[:-1])
            return
        if case.body is None:
            # A negative body of JSON null would be sent as "no body" (None means
            # nothing to schemathesis): send the null it meant.
            response = case.call(
                headers={**headers, "Content-Type": "application/json"}, data=b"null"
            )
            assert response.status_code == 400
            case.validate_response(response, checks=CHECKS)
            return
    case.call_and_validate(headers=headers, checks=CHECKS)


def test_schema_describes_security_and_errors(platform_app: tuple[Any, dict[str, str]]) -> None:
    doc = platform_app[0].openapi()
    assert set(doc["components"]["securitySchemes"]) == {"bearerAuth", "envHeader"}
    register = doc["paths"]["/openapi/v1/registry-model"]["post"]
    assert register["security"] == [{"bearerAuth": [], "envHeader": []}]
    assert {"200", "400", "401", "403", "409", "413", "429", "503"} <= set(register["responses"])
    assert "Retry-After" in register["responses"]["429"]["headers"]
    body = register["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["modelName", "registryUrl", "apiKey"]
    token = doc["paths"]["/openapi/v1/token"]["post"]
    assert "security" not in token
    assert "404" in doc["paths"]["/openapi/v1/modify-model"]["post"]["responses"]


# -- the schema's patterns against the platform's own field rules --------------------
# Schemathesis rarely negates a pattern, so the patterns get a direct check: whatever
# the platform accepts must match its documented pattern (else a schema-driven client
# would refuse a value the platform takes), and what the pattern generates is accepted.

_WS = st.sampled_from(" \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000")
_ODD = st.sampled_from("\x00\x1f\x7f\u200b\u00ad\ufeff\ud800")
_EDGY = st.text(st.one_of(_WS, _ODD, st.characters(codec="utf-8")), max_size=80)
_URLISH = st.builds(
    lambda pre, scheme, rest, post: pre + scheme + rest + post,
    st.text(_WS, max_size=2),
    st.sampled_from(["http://", "HTTPS://", "https://", "ftp://", "https:/", ""]),
    st.text(st.one_of(st.sampled_from("@:/?#[]"), _WS, _ODD, st.characters()), max_size=30),
    st.text(_WS, max_size=2),
)

FIELD_RULES = [
    ("modelName", schema_mod.MODEL_NAME_PATTERN, check_model_name, _EDGY),
    ("modelId", schema_mod.MODEL_ID_PATTERN, check_model_id, _EDGY),
    ("apiKey", schema_mod.API_KEY_PATTERN, check_api_key, _EDGY),
    ("registryUrl", schema_mod.REGISTRY_URL_PATTERN, check_registry_url, _URLISH),
]


def _accepts(check: Any, value: str) -> bool:
    try:
        check(value)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize(("field", "pattern", "check", "values"), FIELD_RULES, ids=lambda x: "")
def test_every_accepted_value_matches_the_documented_pattern(
    field: str, pattern: str, check: Any, values: Any
) -> None:
    compiled = re.compile(pattern)

    @given(values)
    @settings(max_examples=300, deadline=None, derandomize=True)
    def accepted_implies_match(value: str) -> None:
        if _accepts(check, value):
            assert compiled.search(value), f"{field} {value!r} is accepted but breaks the schema"

    accepted_implies_match()


@pytest.mark.parametrize(("field", "pattern", "check", "values"), FIELD_RULES[:3], ids=lambda x: "")
def test_values_made_from_the_pattern_are_accepted(  # (a URL pattern cannot check host:port)
    field: str, pattern: str, check: Any, values: Any
) -> None:
    # fullmatch: "$" in JSON Schema (ECMA) is the very end. BMP only: the patterns leave
    # rare astral controls to the platform (a superset is what negative tests need).
    @given(st.from_regex(pattern, fullmatch=True, alphabet=st.characters(max_codepoint=0xFFFF)))
    @settings(max_examples=100, deadline=None, derandomize=True)
    def match_implies_accepted(value: str) -> None:
        assert _accepts(check, value), f"{field} {value!r} fits the schema but is refused"

    match_implies_accepted()


def test_envelope_style_documents_errors_inside_200(tmp_path: Any) -> None:
    store = Store(tmp_path / "envelope.sqlite3")
    try:
        doc = create_app(store, PlatformConfig(error_style="envelope")).openapi()
    finally:
        store.close()
    responses = doc["paths"]["/openapi/v1/registry-model"]["post"]["responses"]
    assert set(responses) == {"200"}
    assert "40900" in responses["200"]["description"]
    refs = json.dumps(responses["200"]["content"]["application/json"]["schema"])
    assert "ErrorEnvelope" in refs and "ModelEnvelope" in refs
