"""The sandbox platform over real loopback HTTP: every operation, every error code, both styles."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator

import pytest
from sbx_helpers import Platform, model

from lmreg_nb.models import now_ms
from lmreg_nb.sandbox.platform.store import Store

THREE_DAYS_MS = 3 * 24 * 3600 * 1000
OPS = ("registry-model", "modify-model", "query-models")


def _unique(prefix: str = "m") -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


# -- the token operation ------------------------------------------------------


def test_token_exchange(platform: Platform) -> None:
    before = now_ms()
    r = platform.post(
        "token", {"appId": platform.info.app_id, "appSecret": platform.info.app_secret}
    )
    assert r.status_code == 200
    body = r.json()
    assert body["code"] == 0 and body["message"] == "OK"
    data = body["data"]
    assert set(data) == {"token", "env", "expireTime"}
    assert len(str(data["expireTime"])) == 13
    # Three days by default, counted from the exchange.
    assert before + THREE_DAYS_MS <= data["expireTime"] <= now_ms() + THREE_DAYS_MS
    assert r.headers["x-request-id"]


def test_tokens_are_reusable_and_a_new_one_does_not_revoke_older(platform: Platform) -> None:
    first = platform.headers()
    second = platform.headers()
    assert first["Authorization"] != second["Authorization"]
    assert first["X-ENV"] == second["X-ENV"], "one account, one env"
    for headers in (first, second, first):
        r = platform.post("query-models", {}, headers=headers)
        assert r.status_code == 200 and r.json()["code"] == 0


@pytest.mark.parametrize(
    "body",
    [
        {"appId": "app_nonexistent", "appSecret": "whatever"},
        {"appId": None, "appSecret": "wrong"},  # appId replaced below
    ],
    ids=["unknown-app", "wrong-secret"],
)
def test_token_wrong_credentials_40102(platform: Platform, body: dict[str, str]) -> None:
    if body["appId"] is None:
        body = {"appId": platform.info.app_id, "appSecret": platform.info.app_secret + "x"}
    r = platform.post("token", body)
    msg = platform.expect_error(r, 401, 40102)["message"]
    assert platform.info.app_secret not in msg


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (b"not json", "body"),
        (b"[1, 2]", "body"),
        (b'{"appId": 1, "appSecret": "x"}', "appId"),
        (b'{"appId": "a"}', "appSecret"),
        (b"", "body"),
    ],
)
def test_token_bad_body_40000(platform: Platform, content: bytes, field: str) -> None:
    r = platform.post("token", content=content, headers={"Content-Type": "application/json"})
    msg = platform.expect_error(r, 400, 40000)["message"]
    assert msg.startswith(field + ":"), msg


# -- register / modify / query -----------------------------------------------------


def test_register_returns_the_model_and_ignores_service_fields(platform: Platform) -> None:
    headers = platform.headers()
    name = _unique()
    before = now_ms()
    body = model(
        f"  {name}  ",
        modelId="mine",
        createTime=1,
        updateTime=2,
        reqParams=["model", "messages"],
        reqExample="curl ...",
        resExample="{}",
    )
    r = platform.post("registry-model", body, headers=headers)
    assert r.status_code == 200, r.text
    env = r.json()
    assert env["code"] == 0 and env["message"] == "OK"
    data = env["data"]
    assert set(data) == {
        "modelName",
        "modelId",
        "registryUrl",
        "apiKey",
        "createTime",
        "updateTime",
    }
    assert data["modelName"] == name, "modelName is trimmed"
    assert data["registryUrl"] == body["registryUrl"]
    assert data["apiKey"] == body["apiKey"]
    assert data["modelId"] != "mine" and data["modelId"]
    assert before <= data["createTime"] == data["updateTime"] <= now_ms()
    assert len(str(data["createTime"])) == 13
    # The reserved fields were stored (though never returned).
    store = Store(platform.info.db)
    try:
        assert store.reserved(data["modelId"]) == {
            "reqParams": ["model", "messages"],
            "reqExample": "curl ...",
            "resExample": "{}",
        }
    finally:
        store.close()


def test_model_ids_are_random_not_a_counter(platform: Platform) -> None:
    headers = platform.headers()
    ids = [
        platform.post("registry-model", model(_unique()), headers=headers).json()["data"]["modelId"]
        for _ in range(3)
    ]
    assert len(set(ids)) == 3
    assert all(len(i) >= 16 for i in ids)
    assert not any(i.isdigit() for i in ids)


def test_modify_overwrites_and_keeps_create_time(platform: Platform) -> None:
    headers = platform.headers()
    created = platform.post("registry-model", model(_unique()), headers=headers).json()["data"]
    new = model(_unique("renamed"), modelId=created["modelId"], createTime=5, resExample="r")
    new["registryUrl"] = "https://other.school.example/v1/chat/completions"
    r = platform.post("modify-model", new, headers=headers)
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert data["modelId"] == created["modelId"]
    assert data["modelName"] == new["modelName"]
    assert data["registryUrl"] == new["registryUrl"]
    assert data["apiKey"] == new["apiKey"]
    assert data["createTime"] == created["createTime"]
    assert data["updateTime"] > created["updateTime"]
    assert "resExample" not in data
    # Modify again with the same name: allowed (it is this model's own name).
    again = platform.post("modify-model", new, headers=headers).json()
    assert again["code"] == 0 and again["data"]["updateTime"] > data["updateTime"]
    listed = platform.post("query-models", {}, headers=headers).json()["data"]["models"]
    assert [m for m in listed if m["modelId"] == created["modelId"]] == [again["data"]]


def test_query_lists_the_accounts_models_in_creation_order(platform: Platform) -> None:
    headers = platform.account()
    assert platform.post("query-models", {}, headers=headers).json()["data"] == {"models": []}
    names = [_unique(p) for p in ("zeta", "alpha", "mid")]
    made = [
        platform.post("registry-model", model(n), headers=headers).json()["data"] for n in names
    ]
    # Renaming the first does not move it.
    platform.post(
        "modify-model", {**model("aaa-first"), "modelId": made[0]["modelId"]}, headers=headers
    )
    for kwargs in ({"json": {}}, {"content": b""}, {}):
        r = platform.client.post(platform.url("query-models"), headers=headers, **kwargs)
        assert r.status_code == 200, r.text
        models = r.json()["data"]["models"]
        assert [m["modelId"] for m in models] == [m["modelId"] for m in made]
        assert [m["modelName"] for m in models] == ["aaa-first", *names[1:]]
        assert all(set(m) == set(made[0]) for m in models), "reserved fields never returned"


# -- error codes of the registration operations ------------------------------------


@pytest.mark.parametrize("op", OPS)
def test_missing_or_bad_authorization_40100(platform: Platform, op: str) -> None:
    env = platform.headers()["X-ENV"]
    for headers in (
        {"X-ENV": env},
        {"Authorization": "Basic abc", "X-ENV": env},
        {"Authorization": "Bearer", "X-ENV": env},
        {"Authorization": "Bearer not-a-token", "X-ENV": env},
    ):
        r = platform.post(op, model(_unique(), modelId="x"), headers=headers)
        msg = platform.expect_error(r, 401, 40100)["message"]
        assert msg.startswith("Authorization:"), msg


@pytest.mark.parametrize("op", OPS)
def test_missing_or_wrong_env_40300(platform: Platform, op: str) -> None:
    auth = platform.headers()["Authorization"]
    for headers in ({"Authorization": auth}, {"Authorization": auth, "X-ENV": "env_other"}):
        r = platform.post(op, model(_unique(), modelId="x"), headers=headers)
        msg = platform.expect_error(r, 403, 40300)["message"]
        assert msg.startswith("X-ENV:"), msg


BAD_BODIES = [
    (b"{not json", "body"),
    (b"[]", "body"),
    (b'"text"', "body"),
    (b'{"modelName": NaN}', "body"),
    (b"", "body"),
    (
        json.dumps({"registryUrl": "https://a.b/v1/chat/completions", "apiKey": "k"}).encode(),
        "modelName",
    ),
    (json.dumps(model("   ")).encode(), "modelName"),
    (json.dumps(model("x" * 65)).encode(), "modelName"),
    (json.dumps(model("tab\tname")).encode(), "modelName"),
    (json.dumps(model(7)).encode(), "modelName"),
    (json.dumps({**model("n"), "registryUrl": "ftp://a.b/x"}).encode(), "registryUrl"),
    (json.dumps({**model("n"), "registryUrl": "https://u:p@a.b/x"}).encode(), "registryUrl"),
    (json.dumps({**model("n"), "registryUrl": "/v1/chat/completions"}).encode(), "registryUrl"),
    (
        json.dumps({**model("n"), "registryUrl": "https://a.b/" + "x" * 2048}).encode(),
        "registryUrl",
    ),
    (json.dumps({**model("n"), "apiKey": "has space"}).encode(), "apiKey"),
    (json.dumps({**model("n"), "apiKey": ""}).encode(), "apiKey"),
    (json.dumps({**model("n"), "apiKey": "k" * 513}).encode(), "apiKey"),
    (json.dumps({**model("n"), "reqParams": "model"}).encode(), "reqParams"),
    (json.dumps({**model("n"), "reqParams": [1]}).encode(), "reqParams"),
    (json.dumps({**model("n"), "reqExample": "x" * (64 * 1024 + 1)}).encode(), "reqExample"),
    (json.dumps({**model("n"), "resExample": 3}).encode(), "resExample"),
    (b'{"modelName": "a\\ud800b", "registryUrl": "https://a.b", "apiKey": "k"}', "modelName"),
]


# Ids by position: the bodies hold random keys, and pytest-xdist's workers must collect alike.
@pytest.mark.parametrize(
    ("content", "field"),
    BAD_BODIES,
    ids=[f"{i}-{field}" for i, (_, field) in enumerate(BAD_BODIES)],
)
def test_register_bad_body_40000(platform: Platform, content: bytes, field: str) -> None:
    headers = {**platform.headers(), "Content-Type": "application/json"}
    r = platform.post("registry-model", content=content, headers=headers)
    msg = platform.expect_error(r, 400, 40000)["message"]
    assert msg.startswith(field + ":"), msg
    assert "must" in msg or "is " in msg or "send" in msg, "the message says what to fix"


def test_modify_bad_body_and_query_bad_body_40000(platform: Platform) -> None:
    headers = platform.headers()
    r = platform.post("modify-model", model(_unique()), headers=headers)  # no modelId
    assert platform.expect_error(r, 400, 40000)["message"].startswith("modelId:")
    r = platform.post("modify-model", {**model(_unique()), "modelId": 5}, headers=headers)
    assert platform.expect_error(r, 400, 40000)["message"].startswith("modelId:")
    r = platform.post("query-models", content=b"[1]", headers=headers)
    assert platform.expect_error(r, 400, 40000)["message"].startswith("body:")


def test_modify_unknown_model_40400(platform: Platform) -> None:
    headers = platform.headers()
    r = platform.post("modify-model", {**model(_unique()), "modelId": "mdl_nope"}, headers=headers)
    assert platform.expect_error(r, 404, 40400)["message"].startswith("modelId:")


def test_duplicate_name_40900_on_register_and_on_rename(platform: Platform) -> None:
    headers = platform.headers()
    a, b = _unique("a"), _unique("b")
    first = platform.post("registry-model", model(a), headers=headers).json()["data"]
    second = platform.post("registry-model", model(b), headers=headers).json()["data"]
    # Exact match after trimming.
    r = platform.post("registry-model", model(f" {a}\t"), headers=headers)
    assert a in platform.expect_error(r, 409, 40900)["message"]
    r = platform.post("modify-model", {**model(a), "modelId": second["modelId"]}, headers=headers)
    platform.expect_error(r, 409, 40900)
    # Nothing changed.
    models = platform.post("query-models", {}, headers=headers).json()["data"]["models"]
    by_id = {m["modelId"]: m for m in models}
    assert by_id[first["modelId"]] == first and by_id[second["modelId"]] == second


@pytest.fixture(scope="module")
def big_body() -> bytes:
    body = json.dumps({**model("big"), "reqExample": "x" * (1024 * 1024)}).encode()
    assert len(body) > 1024 * 1024
    return body


@pytest.mark.parametrize("op", ["token", *OPS])
def test_body_over_1_mib_41300_by_content_length(
    platform: Platform, op: str, big_body: bytes
) -> None:
    headers = {**platform.headers(), "Content-Type": "application/json"}
    r = platform.post(op, content=big_body, headers=headers)
    assert platform.expect_error(r, 413, 41300)["message"].startswith("body:")


def test_body_over_1_mib_41300_by_bytes_read(platform: Platform, big_body: bytes) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer
        for i in range(0, len(big_body), 64 * 1024):
            yield big_body[i : i + 64 * 1024]

    headers = {**platform.headers(), "Content-Type": "application/json"}
    r = platform.post("registry-model", content=chunks(), headers=headers)
    platform.expect_error(r, 413, 41300)
    # Just under the limit is read (and then judged on its fields).
    small = json.dumps({**model(_unique()), "reqExample": "x" * 1000}).encode()
    r = platform.post("registry-model", content=iter([small]), headers=headers)
    assert r.status_code == 200 and r.json()["code"] == 0


def test_unknown_route_has_envelope_and_request_id(platform: Platform) -> None:
    r = platform.client.post(platform.info.base_url + "/openapi/v1/nope", json={})
    assert r.status_code == 404
    assert r.json()["code"] == 40400 and r.json()["data"] == {}
    assert r.headers["x-request-id"]


def test_request_ids_differ(platform: Platform) -> None:
    ids = {platform.post("token", {}).headers["x-request-id"] for _ in range(3)}
    assert len(ids) == 3


# -- injected faults, rate limit, latency ------------------------------------------


def test_injected_fault_50300_and_rate_limit_42900(faulty: tuple[Platform, Platform]) -> None:
    plain, bad = faulty
    headers = plain.headers()  # tokens live in the shared database
    started = time.monotonic()
    r = bad.post("query-models", {}, headers=headers)
    assert time.monotonic() - started >= 0.045, "--latency-ms 50 delays every answer"
    assert "injected" in bad.expect_error(r, 503, 50300)["message"]
    r = bad.post("token", {"appId": plain.info.app_id, "appSecret": plain.info.app_secret})
    bad.expect_error(r, 503, 50300)
    # --rate-limit 2: a burst of 2, then 42900 with Retry-After (before the fault).
    codes = []
    for _ in range(6):
        r = bad.post("query-models", {}, headers=headers)
        codes.append(r.json()["code"])
        if r.json()["code"] == 42900:
            bad.expect_error(r, 429, 42900)
            assert int(r.headers["retry-after"]) >= 1
    assert 42900 in codes and set(codes) <= {42900, 50300}
    # The rate limit is per account: another account is not throttled.
    other = plain.account()
    r = bad.post("query-models", {}, headers=other)
    bad.expect_error(r, 503, 50300)


# -- field rules shared with the client (issue 13) -----------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("apiKey", "ключ中文"),
        ("apiKey", "sk-café-0001"),
        ("registryUrl", "https://<script>.com/v1/chat/completions"),
        ("registryUrl", "https://a..b/v1/chat/completions"),
        ("registryUrl", "https://xn--/v1/chat/completions"),
        ("registryUrl", "https://" + "a" * 300 + ".example/v1/chat/completions"),
        ("registryUrl", "https://llm.school.example:0/v1/chat/completions"),
        ("modelName", "\u3164"),
        ("modelName", "\u2800\u2800"),
        ("modelName", "\u200b"),
    ],
)
def test_values_the_platform_could_not_use_are_40000_naming_the_field(
    platform: Platform, field: str, value: str
) -> None:
    headers = platform.account()
    body = model(_unique(), **{field: value})
    r = platform.post("registry-model", body, headers=headers)
    envelope = platform.expect_error(r, 400, 40000)
    assert envelope["message"].startswith(field), envelope
    assert platform.post("query-models", {}, headers=headers).json()["data"]["models"] == []


def test_model_names_are_unique_after_nfc(platform: Platform) -> None:
    headers = platform.account()
    nfc = "caf\u00e9-" + secrets.token_hex(2)
    nfd = nfc.replace("\u00e9", "e\u0301")
    assert platform.post("registry-model", model(nfc), headers=headers).json()["code"] == 0
    r = platform.post("registry-model", model(nfd), headers=headers)
    platform.expect_error(r, 409, 40900)
    models = platform.post("query-models", {}, headers=headers).json()["data"]["models"]
    assert [m["modelName"] for m in models] == [nfc]


@pytest.mark.parametrize("mark", ["\u034f", "\ufe00", "\u200b"])
def test_invisible_marks_inside_a_model_name_are_refused(platform: Platform, mark: str) -> None:
    # Issue 20: "qwen\u034f-72b" looks exactly like "qwen-72b"; the shared rule refuses it.
    headers = platform.account()
    r = platform.post(
        "registry-model", model(f"qwen{mark}-" + secrets.token_hex(2)), headers=headers
    )
    message = platform.expect_error(r, 400, 40000)["message"]
    assert message.startswith("modelName:") and f"U+{ord(mark):04X}" in message
    assert platform.post("query-models", {}, headers=headers).json()["data"]["models"] == []
