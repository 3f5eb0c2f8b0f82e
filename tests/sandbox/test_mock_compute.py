"""The mock school model spends compute like a GPU server: prefill queue, prefix cache, KV room.

Timings are sleeps of the mock, so they are never shorter than asked: lower
bounds are exact, upper bounds compare with a reference measured in the same
test (or keep wide margins) because the machine is shared.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import httpx
import pytest

from lmreg_nb.sandbox.school_model import MockModelConfig, app_from_env, create_app, reply_tokens
from lmreg_nb.sandbox.school_model.compute import (
    BLOCK,
    KvRoom,
    Prefill,
    PrefixCache,
    prompt_tokens,
    tokenize,
)
from lmreg_nb.sandbox.school_model.serve import config_env

KEY = "sk-mock-compute-0123456789"
LESSON = "图书馆每天早上八点开门，同学们可以在这里安静地读书。" * 40  # 1,040 CJK tokens


def _body(text: str, max_tokens: int = 1) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "max_tokens": max_tokens}


async def _timed(client: httpx.AsyncClient, body: dict[str, Any], t0: float) -> tuple[float, dict]:
    """When (seconds after ``t0``) a non-streamed reply was done, and the reply."""
    resp = await client.post("/v1/chat/completions", json=body)
    assert resp.status_code == 200, resp.text
    return time.monotonic() - t0, resp.json()


def _run(config: MockModelConfig, bodies: list[dict[str, Any]], *, together: bool) -> list[float]:
    """Send ``bodies`` to an in-process mock (all at once or one after another): done times."""

    async def main() -> list[float]:
        transport = httpx.ASGITransport(app=create_app(config))
        headers = {"Authorization": f"Bearer {KEY}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://mock", headers=headers, timeout=60
        ) as client:
            t0 = time.monotonic()
            if together:
                done = await asyncio.gather(*(_timed(client, b, t0) for b in bodies))
                return [d[0] for d in done]
            out = []
            for body in bodies:
                start = time.monotonic()
                out.append((await _timed(client, body, start))[0])
            return out

    return asyncio.run(main())


def _config(**knobs: Any) -> MockModelConfig:
    return MockModelConfig(api_key=KEY, ttft_ms=0, itl_ms=0, tokens=1, **knobs)


# -- tokens ------------------------------------------------------------------------------


def test_tokens_are_one_per_cjk_character_and_one_per_four_other_characters() -> None:
    assert len(tokenize("你好，世界。")) == 6
    assert tokenize("the school") == ["the", "scho", "ol"]
    assert len(tokenize("a b c")) == 3
    assert len(tokenize("学校school")) == 4


def test_usage_prompt_tokens_counts_chinese_as_one_per_character() -> None:
    async def main() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=create_app(_config()))
        async with httpx.AsyncClient(transport=transport, base_url="http://mock") as client:
            resp = await client.post(
                "/v1/chat/completions",
                json={
                    "model": "m",
                    "messages": [
                        {"role": "system", "content": "你是老师。"},
                        {"role": "user", "content": [{"type": "text", "text": "what is AI"}]},
                    ],
                },
                headers={"Authorization": f"Bearer {KEY}"},
            )
            body: dict[str, Any] = resp.json()
            return body

    assert asyncio.run(main())["usage"]["prompt_tokens"] == 5 + 3


# -- the prefill queue and the prefix cache, on their own clock ----------------------------


def test_the_prefill_queue_is_first_come_first_served_at_its_rate() -> None:
    prefill = Prefill(rate=1000, prefix_cache=False)
    assert prefill.schedule(["x"] * 500, now=10.0) == pytest.approx(10.5)
    assert prefill.schedule(["y"] * 1000, now=10.1) == pytest.approx(11.5)  # after the first
    assert prefill.schedule(["z"] * 100, now=20.0) == pytest.approx(20.1)  # the queue is empty


def test_the_prefix_cache_charges_only_the_new_blocks_and_stays_bounded() -> None:
    lesson = tokenize(LESSON)
    prefill = Prefill(rate=1000, prefix_cache=True)
    first = prefill.schedule([*lesson, "问"], now=0.0)
    second = prefill.schedule([*lesson, "答", "题"], now=first)
    assert first == pytest.approx((len(lesson) + 1) / 1000)
    cached = len(lesson) - len(lesson) % BLOCK
    assert second - first == pytest.approx((len(lesson) + 2 - cached) / 1000)
    cache = PrefixCache(capacity=4)
    cache.take([str(k) for k in range(10 * BLOCK)])
    assert len(cache) == 4
    assert cache.take([str(k) for k in range(BLOCK)]) == 0  # its first block left first


def test_a_next_turn_pays_only_for_its_new_question() -> None:
    lesson, answer = tokenize(LESSON), "".join(reply_tokens(64))
    prefill = Prefill(rate=1000, prefix_cache=True)
    first = prefill.schedule([*lesson, "问"], now=0.0, reply=answer)
    turn_two = prompt_tokens([LESSON, "问", answer, "再问一个问题，谢谢老师。"])
    cost = prefill.schedule(turn_two, now=first) - first
    assert cost <= (BLOCK + 12) / 1000  # at most the last partial block and the new question


def test_kv_room_admits_in_arrival_order() -> None:
    async def main() -> list[str]:
        room, order = KvRoom(100), []

        async def user(name: str, need: int, hold: float) -> None:
            await room.acquire(need)
            order.append(name)
            await asyncio.sleep(hold)
            room.release(need)

        first = asyncio.create_task(user("a", 80, 0.05))
        await asyncio.sleep(0)
        waiting = [asyncio.create_task(user(n, need, 0)) for n, need in (("b", 50), ("c", 10))]
        await asyncio.sleep(0.01)
        assert order == ["a"]  # c would fit, but b came first
        await asyncio.gather(first, *waiting)
        return order

    assert asyncio.run(main()) == ["a", "b", "c"]


# -- the mock in-process: TTFT grows with the prompt and the queue ---------------------------


def test_ttft_grows_with_prompt_tokens_and_with_the_prompts_before() -> None:
    config = _config(prefill_tokens_per_s=3000)
    one = len(tokenize(LESSON)) / 3000  # 0.35 s of prefill
    short, long_ = _run(config, [_body("你好"), _body(LESSON)], together=False)
    assert long_ >= one  # a sleep is never shorter than asked
    assert long_ > short + one / 2
    done = sorted(_run(config, [_body(LESSON)] * 3, together=True))
    assert done[2] >= 3 * one * 0.99  # the third waited for two prefills
    assert done[2] - done[0] >= 1.5 * one  # first come, first served (2 * one without noise)


def test_the_prefix_cache_makes_a_second_prompt_on_the_same_lesson_start_much_faster() -> None:
    config = _config(prefill_tokens_per_s=3000, prefix_cache=True)
    asks = [_body(LESSON + "什么是光合作用？"), _body(LESSON + "为什么天是蓝的？")]
    first, second = _run(config, asks, together=False)
    lesson_price = len(tokenize(LESSON)) / 3000  # 0.35 s
    assert first >= lesson_price
    # The cache saves at least half the lesson's price: a saving, not a ratio, so a
    # scheduler's stall on a busy machine (150 ms once, at load 15) cannot fail it.
    assert first - second >= lesson_price / 2
    no_cache = _config(prefill_tokens_per_s=3000)
    (again,) = _run(no_cache, [_body(LESSON + "为什么？")], together=False)
    assert again >= len(tokenize(LESSON)) / 3000  # without the cache: full price


def test_kv_tokens_make_a_request_wait_for_room() -> None:
    body = _body("word " * 60, max_tokens=10)  # 60 prompt + 1 reply token
    ttft = 0.25
    slow = MockModelConfig(api_key=KEY, ttft_ms=int(ttft * 1000), itl_ms=0, tokens=1)
    free = sorted(_run(slow, [body, body], together=True))
    bounded = sorted(_run(replace(slow, kv_tokens=100), [body, body], together=True))
    assert bounded[1] >= 2 * ttft  # the second began when the first gave its room back
    # Sleeps are lower bounds, whatever the load: within the budget the second reply
    # ends at least one TTFT after the first (less the 50 ms between the first's room
    # given back and its reply seen); without it the two end together.
    assert bounded[1] - bounded[0] >= ttft - 0.05
    assert free[1] - free[0] < bounded[1] - bounded[0]


def test_the_new_knobs_go_through_the_environment_and_are_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = _config(prefill_tokens_per_s=1234.5, prefix_cache=True, kv_tokens=4096)
    for name, value in config_env(config).items():
        monkeypatch.setenv(name, value)
    assert app_from_env() is not None
    env = config_env(config)
    assert env["LMREG_MOCK_PREFILL_TOKENS_PER_S"] == "1234.5"
    assert env["LMREG_MOCK_PREFIX_CACHE"] == "1" and env["LMREG_MOCK_KV_TOKENS"] == "4096"
    with pytest.raises(ValueError, match="prefill_tokens_per_s"):
        _config(prefill_tokens_per_s=-1)
    with pytest.raises(ValueError, match="kv_tokens"):
        _config(kv_tokens=-1)
