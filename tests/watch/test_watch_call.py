"""One call of a registered model, one round of calls: the verdicts, the bound, the certificate.

The mock school model is served in this process (tests/fakes/hosts.py), over TLS too: the
watch's own connection pool and certificate reader meet a real handshake on a socketpair.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import ssl
import time

import httpx
import pytest
import trustme
from fakes import hosts
from watch_helpers import MODEL_KEY, SchoolModel

from lmreg_nb._tls import tls_context
from lmreg_nb.models import RegisteredModel
from lmreg_nb.sandbox.school_model import MockModelConfig, create_app
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings
from lmreg_nb.watch import rounds
from lmreg_nb.watch.alerts import ModelState, step
from lmreg_nb.watch.call import MAX_TOKENS, PROMPT, ProbeResult, probe_model
from lmreg_nb.watch.rounds import Observation, make_client, probe_all

SETTINGS = Settings(timeout=2.0)
#: For the models that hang: each costs one timeout, so a short one keeps the tests quick.
HANG = Settings(timeout=0.8)


def _model(url: str, key: str = MODEL_KEY, name: str = "m") -> RegisteredModel:
    return RegisteredModel(f"id-{name}", name, url, Secret(key))


def _probe(model: RegisteredModel, settings: Settings = SETTINGS) -> ProbeResult:
    async def go() -> ProbeResult:
        async with make_client(4, settings.timeout) as client:
            return await probe_model(model, settings, client)

    return asyncio.run(go())


def _round(
    models: list[RegisteredModel], concurrency: int = 8, settings: Settings = SETTINGS
) -> tuple[list[Observation], float]:
    async def go() -> list[Observation]:
        async with make_client(concurrency, settings.timeout) as client:
            return await probe_all(models, settings, client, concurrency=concurrency)

    began = time.perf_counter()
    found = asyncio.run(go())
    return found, time.perf_counter() - began


@pytest.mark.parametrize(
    ("quirk", "key", "kind", "status"),
    [
        ("", MODEL_KEY, None, 200),
        ("status-500", MODEL_KEY, "http-5xx", 500),
        ("", "sk-wrong-key-000000000", "refused-key", 401),
        ("replacement-char", MODEL_KEY, "replacement-char", 200),
        ("non-json-chunk", MODEL_KEY, "bad-reply", 200),
        ("status-429", MODEL_KEY, "http-error", 429),
    ],
)
def test_each_failure_has_its_kind(
    school_model: SchoolModel, quirk: str, key: str, kind: str | None, status: int
) -> None:
    result = _probe(_model(school_model.url(quirk), key))
    assert (result.ok, result.kind, result.status) == (kind is None, kind, status), result
    assert MODEL_KEY not in result.detail and "sk-wrong-key-000000000" not in result.detail
    if result.ok:
        assert result.latency_s is not None and 0 < result.latency_s < SETTINGS.timeout


def test_a_server_that_cannot_be_reached() -> None:
    closed = _probe(_model("http://127.0.0.1:9/v1/chat/completions"))
    assert closed.kind == "unreachable" and "127.0.0.1:9" in closed.detail


def test_a_model_that_hangs_costs_at_most_its_timeout(school_model: SchoolModel) -> None:
    began = time.perf_counter()
    result = _probe(_model(school_model.url("slow")), HANG)
    assert result.kind == "timeout" and time.perf_counter() - began < HANG.timeout + 1.5


def test_an_incomplete_registration_is_said_so() -> None:
    result = _probe(_model("http://127.0.0.1:9/v1/chat/completions", key=""))
    assert result.kind == "registration" and "apiKey" in result.detail


def _transport(events: list[dict]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert body["max_tokens"] == MAX_TOKENS and body["stream"] is True
        assert body["messages"] == [{"role": "user", "content": PROMPT}]
        assert request.headers["authorization"] == f"Bearer {MODEL_KEY}"
        data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        return httpx.Response(200, text=data, headers={"content-type": "text/event-stream"})

    return httpx.MockTransport(handler)


def _chunk(delta: dict, finish: str | None = None) -> dict:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


@pytest.mark.parametrize(
    ("events", "ok", "kind"),
    [
        # A reasoning model spends the few tokens thinking: it answers, so it passes.
        (
            [_chunk({"role": "assistant"}), _chunk({"reasoning_content": "嗯"}, "length")],
            True,
            None,
        ),
        ([_chunk({"role": "assistant"}), _chunk({}, "stop")], False, "no-content"),
        ([_chunk({"content": "你好"}, "stop")], True, None),
    ],
)
def test_the_reply_is_judged(events: list[dict], ok: bool, kind: str | None) -> None:
    async def go() -> ProbeResult:
        async with httpx.AsyncClient(transport=_transport(events)) as client:
            model = _model("https://llm.school.example/v1/chat/completions")
            return await probe_model(model, SETTINGS, client)

    result = asyncio.run(go())
    assert (result.ok, result.kind) == (ok, kind)


def test_the_body_model_is_the_registered_name_unless_lmreg_model_name(
    school_model: SchoolModel,
) -> None:
    from lmreg_nb.watch.call import body_model

    model = _model(school_model.url(), name=" campus-llm ")
    assert body_model(model, Settings()) == "campus-llm"
    assert body_model(model, Settings(model_name="qwen2.5")) == "qwen2.5"


def test_models_that_hang_never_hold_the_round(
    school_model: SchoolModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A call begins while the round has MIN_CALL_S left: scaled to the short timeout as
    # the default (0.5 s) is to LMREG_TIMEOUT's (10 s), so a slow answer on a busy machine
    # does not end the round before the good models had their turn.
    monkeypatch.setattr(rounds, "MIN_CALL_S", 0.1)
    good = [_model(school_model.url(), name=f"ok-{i}") for i in range(24)]
    hanging = [_model(school_model.url("slow"), name=f"hangs-{i}") for i in range(6)]
    _warm, _ = _round(good, settings=HANG)
    # The reference: the good models through the 2 slots the hanging ones leave them.
    _found, reference = _round(good, concurrency=2, settings=HANG)
    found, took = _round([*hanging, *good], concurrency=8, settings=HANG)
    kinds = {o.model.model_name: o.result.kind for o in found}
    assert [kinds.pop(m.model_name) for m in hanging] == ["timeout"] * 6
    assert set(kinds.values()) == {None}
    # Each hanging model holds one slot for its timeout, side by side: the round costs one
    # timeout more, not six (one after the other: 6 x 0.8 s, over this bound).
    assert took < reference + HANG.timeout + 1.5, (took, reference)


# -- certificates -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA(organization_name="Watch Test CA")


def _https_round(ca: trustme.CA, **dates: dt.datetime) -> Observation:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", **dates).configure_cert(context)
    config = MockModelConfig(api_key=MODEL_KEY, ttft_ms=5, itl_ms=2, tokens=8)
    with hosts.served(create_app(config), ssl=context) as base:
        (seen,), _took = _round([_model(base + "/v1/chat/completions")])
    return seen


@pytest.mark.usefixtures("trusted")
def test_a_certificate_expiring_within_14_days_warns_once_a_day(ca: trustme.CA) -> None:
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(days=10)
    seen = _https_round(ca, not_after=soon)
    assert seen.result.ok and seen.tls is not None and seen.tls.days_left in (9, 10)
    assert seen.tls.issuer == "Watch Test CA"
    model = ModelState("id-m", "m", host="127.0.0.1")
    state, events = step(None, model, seen.result, now_ms=0, fail_after=3, tls=seen.tls)
    assert [e.type for e in events] == ["tls-warning"] and state.tls_days == seen.tls.days_left


def test_a_certificate_that_does_not_verify_is_a_tls_failure(ca: trustme.CA) -> None:
    tls_context.cache_clear()  # the test CA is not trusted here: a self-signed certificate
    seen = _https_round(ca)
    assert seen.result.kind == "tls" and "does not verify" in seen.result.detail
    assert seen.tls is not None and seen.tls.verified is False
