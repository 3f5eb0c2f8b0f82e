"""RegistryClient through httpx.MockTransport: every path, both error styles, no sockets."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fakes.registry_fakes import (
    API_KEY,
    APP_SECRET,
    BASE_URL,
    TOKEN_PATH,
    FakePlatform,
    fail,
    respond,
)

from lmreg_nb.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    ConnectError,
    CredentialsError,
    LmregError,
    MalformedResponseError,
    NotFoundError,
    OutcomeUnknownError,
    PermissionDeniedError,
    RateLimitError,
    RequestTimeout,
    ServerError,
    TokenExpiredError,
    TransportError,
    ValidationError,
)
from lmreg_nb.models import ModelDraft, now_ms
from lmreg_nb.registry import client as client_module
from lmreg_nb.registry.client import (
    MODIFY_PATH,
    QUERY_PATH,
    REGISTER_PATH,
    RETRY_AFTER_CAP_S,
    RegistryClient,
    backoff_delay,
)
from lmreg_nb.registry.envelope import parse_envelope, parse_retry_after
from lmreg_nb.secret import Secret, mask

URL = "https://llm.school.example/v1/chat/completions"


@pytest.fixture(autouse=True)
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff sleeps are recorded, not slept."""
    slept: list[float] = []
    monkeypatch.setattr(client_module, "_sleep", slept.append)
    return slept


@pytest.fixture(params=["http", "envelope"])
def platform(request: pytest.FixtureRequest) -> FakePlatform:
    return FakePlatform(error_style=request.param)


@pytest.fixture
def client(platform: FakePlatform) -> Iterator[RegistryClient]:
    with RegistryClient(platform.settings(), transport=platform.transport()) as c:
        yield c


def draft(name: str = "school-llm", url: str = URL, key: str = API_KEY, **kw: Any) -> ModelDraft:
    return ModelDraft(model_name=name, registry_url=url, api_key=Secret(key), **kw)


def html(status: int, title: str = "502 Bad Gateway") -> Any:
    page = f"<!DOCTYPE html><html><head><title>{title}</title></head><body>nginx</body></html>"
    return respond(status, text=page, headers={"content-type": "text/html"})


def envelope_error(status: int, code: int, message: str = "x", **headers: str) -> Any:
    body = {"code": code, "message": message, "data": {}}
    return respond(status, json=body, headers=headers)


# -- the happy paths ---------------------------------------------------------------------


def test_register_query_modify_round_trip(client: RegistryClient, platform: FakePlatform) -> None:
    model = client.register_model(draft())
    assert model.model_id == "m1" and model.model_name == "school-llm"
    assert model.api_key.reveal() == API_KEY and model.create_time is not None
    assert model.create_time.tzinfo is not None

    listed = client.query_models()
    assert [m.model_id for m in listed] == ["m1"]

    changed = client.modify_model(draft("renamed", model_id="m1"))
    assert changed.model_name == "renamed" and platform.models[0]["modelName"] == "renamed"
    assert client.find_model("renamed") is not None and client.find_model("school-llm") is None
    assert platform.exchanges == 1  # one token for every call


def test_every_call_carries_bearer_and_env(client: RegistryClient, platform: FakePlatform) -> None:
    client.query_models()
    client.register_model(draft())
    for request in platform.requests:
        if request.url.path == TOKEN_PATH:
            assert "authorization" not in request.headers
            assert json.loads(request.content) == {
                "appId": "app-canary-id",
                "appSecret": APP_SECRET,
            }
            continue
        assert request.headers["authorization"] == "Bearer TOKEN-canary-1-0a1b2c3d4e"
        assert request.headers["x-env"] == "env-test"
        assert request.method == "POST"
    assert json.loads(platform.requests[1].content) == {}


def test_register_or_update(client: RegistryClient, platform: FakePlatform) -> None:
    first, how = client.register_or_update(draft())
    assert how == "registered"
    second, how = client.register_or_update(draft(url="https://other.example/v1/chat/completions"))
    assert how == "updated" and second.model_id == first.model_id
    assert len(platform.models) == 1
    assert platform.models[0]["registryUrl"] == "https://other.example/v1/chat/completions"


def test_timeouts_are_split_connect_and_read(platform: FakePlatform) -> None:
    with RegistryClient(platform.settings(timeout=30), transport=platform.transport()) as c:
        timeout = c._http.timeout
        assert timeout.connect == 5 and timeout.read == 30
    with RegistryClient(platform.settings(timeout=2), transport=platform.transport()) as c:
        assert c._http.timeout.connect == 2


def test_missing_base_url_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="LMREG_BASE_URL") as info:
        RegistryClient()
    assert info.value.variable == "LMREG_BASE_URL"


def test_query_tolerates_null_models_and_rejects_a_broken_list(platform: FakePlatform) -> None:
    platform.fail_next(
        QUERY_PATH, respond(200, json={"code": 0, "message": "OK", "data": {"models": None}})
    )
    platform.fail_next(
        QUERY_PATH, respond(200, json={"code": 0, "message": "OK", "data": {"items": []}})
    )
    with RegistryClient(platform.settings(), transport=platform.transport()) as c:
        assert c.query_models() == []
        with pytest.raises(MalformedResponseError, match="keys: items"):
            c.query_models()


# -- validation before sending ---------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (draft(url="ftp://x.example/v1/chat/completions"), "registryUrl"),
        (draft(url="https://user:pw@x.example/v1/chat/completions"), "registryUrl"),
        (draft(name="  "), "modelName"),
        (draft(name="x" * 65), "modelName"),
        (draft(key="has space"), "apiKey"),
    ],
)
def test_bad_drafts_are_refused_before_sending(
    client: RegistryClient, platform: FakePlatform, bad: ModelDraft, field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        client.register_model(bad)
    assert info.value.field == field
    assert platform.requests == []


def test_modify_needs_a_model_id(client: RegistryClient, platform: FakePlatform) -> None:
    with pytest.raises(ValidationError, match="modelId"):
        client.modify_model(draft())
    assert platform.requests == []


def test_url_warnings_are_kept_and_logged(
    client: RegistryClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="lmreg_nb"):
        client.register_model(draft(url="http://127.0.0.1:8000/chat"))
    assert len(client.last_warnings) == 3
    codes = [w.code for w in client.last_warnings]
    assert codes == ["plain-http", "chat-path", "unreachable-host"]
    # Logged at INFO: callers show last_warnings, a WARNING would print them twice.
    logged = [r for r in caplog.records if "loopback" in r.getMessage()]
    assert logged and all(r.levelno == logging.INFO for r in logged)
    client.register_model(draft(name="good"))
    assert client.last_warnings == []


# -- errors: both styles -----------------------------------------------------------------


def test_conflict_carries_status_code_message_and_request_id(
    client: RegistryClient, platform: FakePlatform
) -> None:
    client.register_model(draft())
    with pytest.raises(ConflictError) as info:
        client.register_model(draft())
    err = info.value
    assert err.code == 40900
    assert err.status == (409 if platform.error_style == "http" else 200)
    assert err.request_id and err.request_id.startswith("req-")
    assert "already used" in err.server_message
    assert err.request_id in str(err) and "\n" not in str(err)
    assert "choose another modelName" in str(err)
    assert platform.count(REGISTER_PATH) == 2  # a 409 is never retried


def test_unknown_model_id_is_not_found(client: RegistryClient, platform: FakePlatform) -> None:
    with pytest.raises(NotFoundError) as info:
        client.modify_model(draft(model_id="nope"))
    assert info.value.code == 40400
    assert platform.count(MODIFY_PATH) == 1


def test_wrong_credentials(platform: FakePlatform) -> None:
    settings = platform.settings(app_secret="WRONG-secret-zzzz")
    with (
        RegistryClient(settings, transport=platform.transport()) as c,
        pytest.raises(CredentialsError, match="LMREG_APP_SECRET") as info,
    ):
        c.query_models()
    assert info.value.code == 40102
    assert platform.count(TOKEN_PATH) == 1  # not retried
    assert platform.count(QUERY_PATH) == 0


def test_wrong_env_is_permission_denied(platform: FakePlatform) -> None:
    settings = platform.settings(token="TOKEN-external-00000000", env="other-env")
    platform.tokens["TOKEN-external-00000000"] = now_ms() + 10**8
    with (
        RegistryClient(settings, transport=platform.transport()) as c,
        pytest.raises(PermissionDeniedError, match="LMREG_ENV"),
    ):
        c.query_models()


@pytest.mark.parametrize("status", [200, 400, 502])
def test_html_page_is_malformed_not_json_error(
    client: RegistryClient, platform: FakePlatform, status: int
) -> None:
    platform.fail_next(QUERY_PATH, *[html(status)] * 4)
    with pytest.raises(MalformedResponseError) as info:
        client.query_models()
    assert info.value.status == status
    assert "HTML page" in str(info.value) and "Bad Gateway" in str(info.value)
    assert "LMREG_BASE_URL" in str(info.value)
    # A proxy's 5xx page is transient: retried; a 200/400 page is not.
    assert platform.count(QUERY_PATH) == (4 if status >= 500 else 1)


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (respond(200, content=b""), "empty body"),
        (
            respond(200, content=b"\xff\xfe garbage", headers={"content-type": "text/plain"}),
            "not JSON",
        ),
        (respond(200, json=[1, 2]), "JSON list"),
        (respond(200, json={"status": "ok"}), "keys: status"),
        (respond(200, json={"code": "zero", "message": "OK", "data": {}}), "not an integer"),
        (respond(200, json={"code": True, "message": "OK", "data": {}}), "not an integer"),
        (respond(200, json={"code": 0, "message": "OK", "data": []}), "data is not an object"),
        (respond(200, json={"code": 0, "message": "OK"}), "data is not an object"),
        (
            respond(302, headers={"location": "https://sso.example/login"}),
            "redirected to sso.example/login",
        ),
    ],
)
def test_malformed_envelopes(
    client: RegistryClient, platform: FakePlatform, fault: Any, expected: str
) -> None:
    platform.fail_next(QUERY_PATH, fault)
    with pytest.raises(MalformedResponseError, match=expected):
        client.query_models()


def test_register_answer_without_model_id_is_malformed(
    client: RegistryClient, platform: FakePlatform
) -> None:
    platform.fail_next(
        REGISTER_PATH, respond(200, json={"code": 0, "message": "OK", "data": {"x": 1}})
    )
    with pytest.raises(MalformedResponseError, match="no modelId"):
        client.register_model(draft())


def test_string_code_zero_is_accepted() -> None:
    request = httpx.Request("POST", BASE_URL + QUERY_PATH)
    response = httpx.Response(
        200, json={"code": "0", "message": "OK", "data": {"a": 1}}, request=request
    )
    assert parse_envelope(response, "query-models") == {"a": 1}


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (400, 40000, BadRequestError),
        (200, 40000, BadRequestError),
        (401, 40101, TokenExpiredError),
        (200, 50300, ServerError),
        (500, 50000, ServerError),
        (200, 50001, ServerError),
        (200, 40001, BadRequestError),
        (418, 41800, APIError),
    ],
)
def test_parse_envelope_maps_codes(status: int, code: int, cls: type[APIError]) -> None:
    response = httpx.Response(status, json={"code": code, "message": "why", "data": {}})
    with pytest.raises(cls) as info:
        parse_envelope(response, "query-models")
    assert (
        type(info.value) is cls and info.value.code == code and info.value.server_message == "why"
    )


def test_server_message_is_scrubbed_and_bounded() -> None:
    message = f"bad apiKey {API_KEY}\n" + "x" * 1000
    response = httpx.Response(400, json={"code": 40000, "message": message, "data": {}})
    with pytest.raises(BadRequestError) as info:
        parse_envelope(response, "register", secrets=[API_KEY])
    text = str(info.value)
    assert API_KEY not in text and mask(API_KEY) in text and "\n" not in text
    assert len(text) < 600


def test_encoded_and_partial_secrets_in_server_messages_are_masked() -> None:
    import base64
    from urllib.parse import quote

    from lmreg_nb.secret import find_leaks

    encoded = base64.b64encode(f"Bearer {API_KEY}".encode()).decode()
    message = f"{json.dumps(API_KEY)} {quote(API_KEY, safe='')} {encoded} head={API_KEY[:10]}"
    response = httpx.Response(500, text=f"<html><title>{message}</title></html>")
    for resp in (response, httpx.Response(400, json={"code": 40000, "message": message})):
        with pytest.raises(APIError) as info:
            parse_envelope(resp, "register", secrets=[API_KEY])
        assert find_leaks(str(info.value), [API_KEY]) == [], str(info.value)


# -- retries -------------------------------------------------------------------------------


def test_5xx_then_success_for_query_and_modify(
    client: RegistryClient, platform: FakePlatform, sleeps: list[float]
) -> None:
    client.register_model(draft())
    platform.fail_next(QUERY_PATH, envelope_error(503, 50300), envelope_error(500, 50000))
    assert len(client.query_models()) == 1
    assert platform.count(QUERY_PATH) == 3
    platform.fail_next(MODIFY_PATH, envelope_error(502, 50000))
    assert client.modify_model(draft("new", model_id="m1")).model_name == "new"
    assert len(sleeps) == 3 and all(0 < s <= 8 for s in sleeps)


def test_envelope_style_server_error_is_retried(
    client: RegistryClient, platform: FakePlatform
) -> None:
    platform.fail_next(QUERY_PATH, envelope_error(200, 50300))
    assert client.query_models() == []
    assert platform.count(QUERY_PATH) == 2


def test_retries_are_bounded(platform: FakePlatform, sleeps: list[float]) -> None:
    platform.fail_next(QUERY_PATH, *[envelope_error(503, 50300)] * 10)
    with (
        RegistryClient(platform.settings(), transport=platform.transport(), max_retries=2) as c,
        pytest.raises(ServerError) as info,
    ):
        c.query_models()
    assert info.value.status == 503
    assert platform.count(QUERY_PATH) == 3 and len(sleeps) == 2


def test_429_honours_retry_after(
    client: RegistryClient, platform: FakePlatform, sleeps: list[float]
) -> None:
    platform.fail_next(
        QUERY_PATH,
        envelope_error(429, 42900, "slow down", **{"Retry-After": "2"}),
        envelope_error(429, 42900, "slow down", **{"Retry-After": "5"}),
    )
    assert client.query_models() == []
    assert sleeps == [2.0, 5.0]  # honoured up to RETRY_AFTER_CAP_S


def test_429_asking_a_longer_pause_than_the_cap_is_raised_at_once(
    client: RegistryClient, platform: FakePlatform, sleeps: list[float]
) -> None:
    """Retry-After: 3600 used to be slept 30 s per retry (91 s for `models`)."""
    platform.fail_next(
        QUERY_PATH, envelope_error(429, 42900, "slow down", **{"Retry-After": "3600"})
    )
    with pytest.raises(RateLimitError) as info:
        client.query_models()
    assert info.value.retry_after == 3600.0
    assert sleeps == [] and platform.count(QUERY_PATH) == 1


def test_429_on_register_is_raised_not_retried(
    client: RegistryClient, platform: FakePlatform, sleeps: list[float]
) -> None:
    platform.fail_next(
        REGISTER_PATH, envelope_error(429, 42900, "slow down", **{"Retry-After": "7"})
    )
    with pytest.raises(RateLimitError) as info:
        client.register_model(draft())
    assert info.value.retry_after == 7.0
    assert platform.count(REGISTER_PATH) == 1 and platform.models == []


def test_timeout_then_success_for_query(client: RegistryClient, platform: FakePlatform) -> None:
    platform.fail_next(QUERY_PATH, fail(httpx.ReadTimeout), fail(httpx.RemoteProtocolError))
    assert client.query_models() == []
    assert platform.count(QUERY_PATH) == 3


def test_timeouts_exhausted_raise_request_timeout_from_httpx(
    client: RegistryClient, platform: FakePlatform
) -> None:
    platform.fail_next(QUERY_PATH, *[fail(httpx.ReadTimeout)] * 4)
    with pytest.raises(RequestTimeout, match="LMREG_TIMEOUT") as info:
        client.query_models()
    assert isinstance(info.value.__cause__, httpx.ReadTimeout)


def test_connect_failures_are_retried_even_for_register(
    client: RegistryClient, platform: FakePlatform
) -> None:
    platform.fail_next(REGISTER_PATH, fail(httpx.ConnectError), fail(httpx.ConnectTimeout))
    model = client.register_model(draft())
    assert model.model_id == "m1" and len(platform.models) == 1
    assert platform.count(QUERY_PATH) == 0  # never sent: no lookup needed


def test_connect_failure_exhausted(client: RegistryClient, platform: FakePlatform) -> None:
    platform.fail_next(QUERY_PATH, *[fail(httpx.ConnectError, "[Errno 111] refused")] * 4)
    with pytest.raises(ConnectError, match="refused") as info:
        client.query_models()
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert isinstance(info.value, TransportError)


def test_unsupported_protocol_is_not_retried(platform: FakePlatform) -> None:
    platform.fail_next(QUERY_PATH, fail(httpx.UnsupportedProtocol))
    with (
        RegistryClient(platform.settings(), transport=platform.transport()) as c,
        pytest.raises(ConnectError),
    ):
        c.query_models()
    assert platform.count(QUERY_PATH) == 1


def test_backoff_is_capped_with_jitter() -> None:
    delays = [backoff_delay(a) for a in range(12)]
    assert all(0 < d <= 8 for d in delays)
    assert 0.25 <= delays[0] <= 0.5 and delays[-1] >= 4
    assert backoff_delay(0, retry_after=1000) == RETRY_AFTER_CAP_S == 5


@pytest.mark.parametrize(
    ("value", "expected"),
    [("5", 5.0), ("0", 0.0), ("-3", 0.0), ("soon", None), (None, None), ("nan", None)],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value) == expected


def test_parse_retry_after_http_date() -> None:
    import email.utils
    import time

    seconds = parse_retry_after(email.utils.formatdate(time.time() + 120, usegmt=True))
    assert seconds is not None and 100 < seconds <= 121


# -- register whose outcome is unknown -----------------------------------------------------


@pytest.mark.parametrize(
    "lost",
    [
        httpx.ReadTimeout("lost"),
        httpx.RemoteProtocolError("peer closed"),
        httpx.Response(503, json={"code": 50300, "message": "fault", "data": {}}),
        httpx.Response(502, text="<html><title>Bad Gateway</title></html>"),
    ],
    ids=["read-timeout", "dropped", "503-after-store", "proxy-502-after-store"],
)
def test_register_stored_but_answer_lost_gives_one_model(
    client: RegistryClient, platform: FakePlatform, lost: Any
) -> None:
    platform.lose_answer(REGISTER_PATH, lost)
    model = client.register_model(draft())
    assert model.model_id == "m1" and model.registry_url == URL
    assert len(platform.models) == 1
    assert platform.count(REGISTER_PATH) == 1  # never resent blindly
    assert platform.count(QUERY_PATH) == 1


def test_register_not_stored_is_sent_again_after_lookup(
    client: RegistryClient, platform: FakePlatform
) -> None:
    platform.fail_next(REGISTER_PATH, envelope_error(503, 50300), fail(httpx.ReadTimeout))
    model = client.register_model(draft())
    assert model.model_id == "m1" and len(platform.models) == 1
    assert platform.count(REGISTER_PATH) == 3 and platform.count(QUERY_PATH) == 2


def test_register_first_copy_landing_late_is_settled(
    client: RegistryClient, platform: FakePlatform
) -> None:
    # The first send times out and is not visible to the lookup; the resend meets it (409).
    def late_first_copy(request: httpx.Request) -> httpx.Response:
        platform._register(json.loads(request.content))
        return platform.envelope(409, 40900, "modelName already used")

    platform.fail_next(REGISTER_PATH, fail(httpx.ReadTimeout), late_first_copy)
    model = client.register_model(draft())
    assert model.model_name == "school-llm" and len(platform.models) == 1


def test_register_unknown_and_lookup_failing_raises_outcome_unknown(
    client: RegistryClient, platform: FakePlatform
) -> None:
    platform.fail_next(REGISTER_PATH, fail(httpx.ReadTimeout))
    platform.fail_next(QUERY_PATH, *[fail(httpx.ConnectError)] * 4)
    with pytest.raises(OutcomeUnknownError, match="lmreg-nb models") as info:
        client.register_model(draft())
    assert "school-llm" in str(info.value) and "no answer" in str(info.value)
    assert isinstance(info.value.__cause__, ConnectError)  # the failed lookup
    assert platform.count(REGISTER_PATH) == 1


def test_register_unknown_name_taken_by_another_model(
    client: RegistryClient, platform: FakePlatform
) -> None:
    client.register_model(draft())
    platform.fail_next(REGISTER_PATH, fail(httpx.ReadTimeout))
    with pytest.raises(ConflictError, match="another registryUrl"):
        client.register_model(draft(url="https://elsewhere.example/v1/chat/completions"))
    assert len(platform.models) == 1


def test_register_never_settles(platform: FakePlatform) -> None:
    platform.fail_next(REGISTER_PATH, *[envelope_error(503, 50300)] * 5)
    with (
        RegistryClient(platform.settings(), transport=platform.transport(), max_retries=1) as c,
        pytest.raises(OutcomeUnknownError, match="not stored"),
    ):
        c.register_model(draft())
    assert platform.count(REGISTER_PATH) == 2 and platform.models == []


def test_plain_conflict_without_uncertainty_is_raised(
    client: RegistryClient, platform: FakePlatform
) -> None:
    client.register_model(draft())
    with pytest.raises(ConflictError):
        client.register_model(draft())
    assert platform.count(QUERY_PATH) == 0


# -- tokens: refresh on 40100/40101 --------------------------------------------------------


def test_expired_token_is_exchanged_once_and_resent(
    client: RegistryClient, platform: FakePlatform
) -> None:
    client.query_models()
    platform.refused_tokens.add("TOKEN-canary-1-0a1b2c3d4e")
    assert client.query_models() == []
    assert platform.exchanges == 2
    assert platform.requests[-1].headers["authorization"] == "Bearer TOKEN-canary-2-0a1b2c3d4e"


def test_unknown_token_is_exchanged_once(client: RegistryClient, platform: FakePlatform) -> None:
    client.query_models()
    platform.tokens.pop("TOKEN-canary-1-0a1b2c3d4e")  # the platform forgot it: 40100
    client.register_model(draft())
    assert platform.exchanges == 2 and len(platform.models) == 1


def test_second_refusal_is_raised(client: RegistryClient, platform: FakePlatform) -> None:
    platform.refuse_all_tokens = True
    with pytest.raises(TokenExpiredError) as info:
        client.query_models()
    assert info.value.code == 40101
    assert platform.exchanges == 2 and platform.count(QUERY_PATH) == 2


def test_lmreg_token_is_used_without_exchange(platform: FakePlatform) -> None:
    platform.tokens["TOKEN-external-12345678"] = now_ms() + 10**8
    settings = platform.settings(
        token="TOKEN-external-12345678", env="env-test", app_id=None, app_secret=None
    )
    with RegistryClient(settings, transport=platform.transport()) as c:
        assert c.query_models() == []
        assert c.token().source == "environment"
        platform.refused_tokens.add("TOKEN-external-12345678")
        # No appId/appSecret: nothing to exchange; the refusal is raised as it is.
        with pytest.raises(AuthenticationError, match="new token"):
            c.query_models()
    assert platform.exchanges == 0


def test_lmreg_token_refused_falls_back_to_exchange(platform: FakePlatform) -> None:
    platform.tokens["TOKEN-external-12345678"] = now_ms() + 10**8
    platform.refused_tokens.add("TOKEN-external-12345678")
    settings = platform.settings(token="TOKEN-external-12345678", env="env-test")
    with RegistryClient(settings, transport=platform.transport()) as c:
        assert c.query_models() == []
    assert platform.exchanges == 1


def test_lmreg_token_without_env_names_lmreg_env(platform: FakePlatform) -> None:
    settings = platform.settings(token="TOKEN-external-12345678")
    with (
        RegistryClient(settings, transport=platform.transport()) as c,
        pytest.raises(ConfigurationError, match="LMREG_ENV"),
    ):
        c.query_models()


@pytest.mark.parametrize("field", ["token", "accessToken", "access_token"])
def test_exchange_accepts_token_field_names(field: str) -> None:
    platform = FakePlatform(token_field=field)
    with RegistryClient(platform.settings(), transport=platform.transport()) as c:
        token = c.token()
    assert token.token.reveal().startswith("TOKEN-canary-1") and token.env == "env-test"


def test_exchange_answer_without_token_names_keys_not_values() -> None:
    platform = FakePlatform()
    body = {"code": 0, "message": "OK", "data": {"jwt": "SECRETVALUE-xyz", "env": "e"}}
    platform.fail_next(TOKEN_PATH, respond(200, json=body))
    with (
        RegistryClient(platform.settings(), transport=platform.transport()) as c,
        pytest.raises(MalformedResponseError) as info,
    ):
        c.token()
    assert "env, jwt" in str(info.value) and "SECRETVALUE" not in str(info.value)


def test_exchange_is_retried_on_5xx(platform: FakePlatform) -> None:
    platform.fail_next(TOKEN_PATH, envelope_error(503, 50300), fail(httpx.ReadTimeout))
    with RegistryClient(platform.settings(), transport=platform.transport()) as c:
        assert c.token().env == "env-test"


# -- logging -------------------------------------------------------------------------------


def test_log_lines_name_method_path_status_and_request_id(
    client: RegistryClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="lmreg_nb"):
        client.query_models()
    lines = [r.getMessage() for r in caplog.records if r.name == "lmreg_nb"]
    assert any(line.startswith(f"POST {QUERY_PATH} -> 200 in") and "req-" in line for line in lines)


def test_repr_shows_no_secret(client: RegistryClient) -> None:
    text = repr(client) + repr(client.settings) + repr(client.token())
    assert APP_SECRET not in text and "TOKEN-canary" not in text


def test_no_canary_in_errors_reprs_or_logs(
    platform: FakePlatform, caplog: pytest.LogCaptureFixture
) -> None:
    """Every failure path, with a server that echoes secrets in its messages."""
    caplog.set_level(logging.DEBUG)  # every logger: lmreg_nb, httpx, httpcore
    token = "TOKEN-canary-1-0a1b2c3d4e"
    canaries = (APP_SECRET, API_KEY, token)
    echo = envelope_error(400, 40000, f"bad apiKey {API_KEY} with token {token} for {APP_SECRET}")
    platform.fail_next(REGISTER_PATH, echo)
    platform.fail_next(QUERY_PATH, html(200, title=f"login {APP_SECRET}"))
    platform.fail_next(MODIFY_PATH, *[fail(httpx.ReadTimeout)] * 4)
    # httpx never puts headers in its messages; even if it did, ours are scrubbed.
    platform.fail_next(QUERY_PATH, *[fail(httpx.ConnectError, f"refused {token}")] * 4)
    seen: list[str] = []
    with RegistryClient(platform.settings(), transport=platform.transport()) as c:
        calls: list[Any] = [
            lambda: c.register_model(draft()),
            c.query_models,
            lambda: c.modify_model(draft(model_id="m1")),
            lambda: c.register_model(draft(key=f"bad key {API_KEY}")),
            lambda: c.modify_model(draft(model_id="missing")),
            c.query_models,
        ]
        for call in calls:
            with pytest.raises(Exception) as info:
                call()
            exc: BaseException | None = info.value
            while isinstance(exc, LmregError):  # ours, and what they wrap of ours
                seen += [str(exc), repr(exc)]
                exc = exc.__cause__ or exc.__context__
        model = c.register_model(draft())
        seen += [repr(model), str(model), repr(c.token()), repr(c.settings), repr(c)]
    seen += [r.getMessage() for r in caplog.records] + [caplog.text]
    assert len(caplog.records) > 5
    assert any("could not connect" in line and mask(token) in line for line in seen)
    text = "\n".join(seen)
    for canary in canaries:
        assert canary not in text


def test_outcome_unknown_keeps_the_transport_cause(platform: FakePlatform) -> None:
    platform.fail_next(REGISTER_PATH, *[fail(httpx.ReadTimeout)] * 2)
    with (
        RegistryClient(platform.settings(), transport=platform.transport(), max_retries=1) as c,
        pytest.raises(OutcomeUnknownError, match="not stored") as info,
    ):
        c.register_model(draft())
    cause = info.value.__cause__
    assert isinstance(cause, RequestTimeout) and isinstance(cause.__cause__, httpx.ReadTimeout)


def test_keys_named_after_a_secret_are_masked_in_malformed_answers(
    platform: FakePlatform,
) -> None:
    from lmreg_nb.secret import find_leaks

    echo = {"code": 0, "message": "OK", "data": {APP_SECRET: 1, f"x{API_KEY}": 2}}
    platform.fail_next(TOKEN_PATH, respond(200, json=echo))
    with RegistryClient(platform.settings(), transport=platform.transport()) as c:
        with pytest.raises(MalformedResponseError) as info:
            c.token()
        assert find_leaks(str(info.value), [APP_SECRET]) == [], str(info.value)
        platform.fail_next(REGISTER_PATH, respond(200, json=echo))
        with pytest.raises(MalformedResponseError) as info:
            c.register_model(draft())
        assert find_leaks(str(info.value), [APP_SECRET, API_KEY]) == [], str(info.value)


def test_find_model_by_name_or_id_with_one_trimming_rule(client: RegistryClient) -> None:
    stored = client.register_model(draft("caf\u00e9"))
    assert client.find_model(name="  cafe\u0301 ") == stored  # trimmed, NFC
    assert client.find_model(model_id=f" {stored.model_id} ") == stored
    assert client.find_model(name="other") is None and client.find_model(model_id="nope") is None
    with pytest.raises(TypeError):
        client.find_model()
    with pytest.raises(TypeError):
        client.find_model(name="x", model_id="y")


def test_update_model_keeps_what_is_not_given(
    client: RegistryClient, platform: FakePlatform
) -> None:
    stored = client.register_model(draft("keep-me"))
    changed = client.update_model(name="keep-me", new_name="kept")
    assert (changed.model_id, changed.model_name, changed.registry_url) == (
        stored.model_id,
        "kept",
        URL,
    )
    assert platform.models[0]["apiKey"] == API_KEY  # the stored key was sent again
    new_url = "https://llm2.school.example/v1/chat/completions"
    assert client.update_model(model_id=stored.model_id, registry_url=new_url).registry_url == (
        new_url
    )
    with pytest.raises(NotFoundError, match="no model with modelName 'ghost'"):
        client.update_model(name="ghost", new_name="x")


# -- a secret typed as the model's name (red-team pass, issue 44) ------------------------


@pytest.mark.parametrize("name", [API_KEY, APP_SECRET, f"my-{API_KEY}"])
def test_a_secret_typed_as_the_model_name_is_refused_before_sending(
    client: RegistryClient, platform: FakePlatform, name: str
) -> None:
    # An apiKey pasted into the modelName field was registered as the name, which the
    # platform shows to anyone who lists the account's models.
    with pytest.raises(ValidationError) as info:
        client.register_model(draft(name=name))
    assert info.value.field == "modelName" and "Type the model's name" in str(info.value)
    assert name not in str(info.value) and API_KEY not in str(info.value)
    assert platform.requests == []
    with pytest.raises(ValidationError):
        client.register_or_update(draft(name=name))
    assert platform.count(REGISTER_PATH) == 0 and platform.models == []


def test_a_word_a_key_shares_with_the_name_is_no_reason(
    client: RegistryClient, platform: FakePlatform
) -> None:
    model = client.register_model(draft(name="qwen2.5-7b", key="sk-qwen2.5-7b-school-Zx81Lm3"))
    assert model.model_name == "qwen2.5-7b"


def test_shown_masks_a_secret_a_model_name_already_holds(
    client: RegistryClient, platform: FakePlatform
) -> None:
    client.register_model(draft())
    platform.models[0]["modelName"] = APP_SECRET  # registered so before, or by other tools
    (listed,) = client.query_models()
    assert listed.model_name == APP_SECRET  # what the platform has, for the code that asks
    (shown,) = client.shown([listed])
    assert APP_SECRET not in shown.model_name and shown.model_name == mask(APP_SECRET)
    assert shown.model_id == listed.model_id
