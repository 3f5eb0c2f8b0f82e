"""Accounts: isolation, concurrency on one modelName, token expiry, restart, secrets at rest."""

from __future__ import annotations

import asyncio
import secrets
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
from sbx_helpers import STYLES, Platform, local_platform, model

from lmreg_nb.sandbox.platform.app import PlatformConfig


def test_isolation_between_two_accounts(platform: Platform) -> None:
    a = platform.account()
    b = platform.account()
    assert a["X-ENV"] != b["X-ENV"]
    name = "shared-name-" + secrets.token_hex(3)
    mine = platform.post("registry-model", model(name), headers=a).json()["data"]
    # The same name in another account is fine: uniqueness is per account.
    theirs = platform.post("registry-model", model(name), headers=b)
    assert theirs.status_code == 200 and theirs.json()["code"] == 0
    # B cannot read A's model.
    listed = platform.post("query-models", {}, headers=b).json()["data"]["models"]
    assert mine["modelId"] not in {m["modelId"] for m in listed}
    assert [m["modelName"] for m in listed] == [name]
    # B cannot modify it, nor learn that it exists: the same answer as a made-up id.
    stolen = platform.post(
        "modify-model", {**model("stolen"), "modelId": mine["modelId"]}, headers=b
    )
    missing = platform.post(
        "modify-model", {**model("stolen"), "modelId": "mdl_" + "0" * 24}, headers=b
    )
    e1 = platform.expect_error(stolen, 404, 40400)
    e2 = platform.expect_error(missing, 404, 40400)
    assert e1 == e2
    # A token used with the other account's env is refused.
    crossed = {"Authorization": a["Authorization"], "X-ENV": b["X-ENV"]}
    for op in ("query-models", "registry-model"):
        r = platform.post(op, model("x-" + secrets.token_hex(3)), headers=crossed)
        platform.expect_error(r, 403, 40300)
    # A's model is unchanged.
    still = platform.post("query-models", {}, headers=a).json()["data"]["models"]
    assert still == [mine]


def test_fifty_concurrent_registrations_of_one_name(platform: Platform) -> None:
    headers = platform.account()
    body = model("contested-" + secrets.token_hex(3))

    async def burst() -> list[httpx.Response]:
        # All 50 at once into the app, in this process (its routes run concurrently).
        transport = httpx.ASGITransport(app=platform.client.app)
        async with httpx.AsyncClient(timeout=30.0, transport=transport) as client:
            return await asyncio.gather(
                *(
                    client.post(platform.url("registry-model"), json=body, headers=headers)
                    for _ in range(50)
                )
            )

    responses = asyncio.run(burst())
    codes = sorted(r.json()["code"] for r in responses)
    assert codes == [0] + [40900] * 49
    for r in responses:
        if r.json()["code"]:
            platform.expect_error(r, 409, 40900)
    models = platform.post("query-models", {}, headers=headers).json()["data"]["models"]
    assert [m["modelName"] for m in models] == [body["modelName"]]


#: The sandbox's token lifetime here: long enough for the first query to pass on a busy
#: machine, short enough not to wait long for its end.
TTL_S = 1.0


def test_token_expires_40101_in_both_styles(tmp_path: Path) -> None:
    with ExitStack() as stack:
        sandboxes = {
            style: local_platform(
                stack,
                tmp_path / f"ttl-{style}.sqlite3",
                PlatformConfig(token_ttl_s=TTL_S, error_style=style),
            )
            for style in STYLES
        }
        checks = []
        for style, plat in sandboxes.items():
            info, client = plat.info, plat.client
            data = client.post(
                info.base_url + info.token_path,
                json={"appId": info.app_id, "appSecret": info.app_secret},
            ).json()["data"]
            # Issued with a 1 s lifetime (read after the answer, so a bit less is left).
            assert 0 < data["expireTime"] - int(time.time() * 1000) <= TTL_S * 1000
            headers = {"Authorization": f"Bearer {data['token']}", "X-ENV": data["env"]}
            query = info.base_url + "/openapi/v1/query-models"
            assert client.post(query, json={}, headers=headers).json()["code"] == 0
            checks.append((style, client, query, headers, data["expireTime"]))
        for style, client, query, headers, expire_ms in checks:
            deadline = time.monotonic() + 10
            while True:  # poll: the token stops working at its expireTime
                r = client.post(query, json={}, headers=headers)
                if r.json()["code"] != 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert r.status_code == (401 if style == "http" else 200)
            assert r.json()["code"] == 40101
            assert r.json()["data"] == {}
            assert "expired" in r.json()["message"]
            assert time.time() * 1000 >= expire_ms, "not before its expireTime"


def test_database_holds_no_usable_secret_of_added_accounts(platform: Platform) -> None:
    app = platform.add_app("leak-check")
    tok = platform.token(app["app_id"], app["app_secret"])["token"]
    blob = b"".join(
        p.read_bytes() for p in (platform.info.db, Path(f"{platform.info.db}-wal")) if p.exists()
    )
    assert app["app_id"].encode() in blob, "sanity: the account is in these files"
    assert app["app_secret"].encode() not in blob
    assert tok.encode() not in blob
