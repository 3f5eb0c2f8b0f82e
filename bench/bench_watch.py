"""One round of `lmreg-nb watch` over 1,000 registered models, against the sandbox's mock.

The models are written straight into a fresh sandbox database (the demo
account), each pointing at the sandbox's mock school model with its default
latency (50 ms to the first token, 10 ms between tokens; the probe asks for
16 tokens, so ~200 ms a call). `lmreg-nb sandbox` runs as its own process;
this process runs the watch's rounds in-process (the library, no targets: all
models are up, nothing is sent) and prints one JSON line per round: models,
concurrency, seconds, models up. A second scenario adds models that hang
(the mock's ``slow`` quirk): they cost the round about one LMREG_TIMEOUT, not
one each.

    python bench/bench_watch.py [--models 1000] [--concurrency 32] [--rounds 2] [--hanging 20]
    python bench/bench_watch.py --schools 1000 [--rounds 3] [--hanging 20]
    python bench/bench_watch.py --outage 500

``--outage N`` (issue 41) is a mass outage: N schools of one model each, watched
from one plan with a real SMTP server on loopback (aiosmtpd, in this process)
as every contact's mail server; after a baseline round every model goes down
at once (``--fail-after 1``), and one JSON line says how long the round took,
when the first and the last contact's mail arrived (seconds after the round
began) and the spread between them. The goal: the last contact's mail within
one 60 s interval; the hidden acceptance test: within 15 s of the first.

The goal (issue 23): each of 1,000 models probed once within a 60 s round on a
2-core machine. ``--schools N`` (issue 31) is the provider's fleet: N accounts
(each with its own appId/appSecret and env_file, in one plan), two models
each, the first ``--hanging`` of them hanging; one JSON line per round with the
token exchanges made in it (the first round exchanges one token per school,
then the cache serves them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path

from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.sandbox.platform.store import Store
from lmreg_nb.sandbox.process import SandboxInfo, running_sandbox
from lmreg_nb.settings import Settings
from lmreg_nb.watch.notify import Notifier
from lmreg_nb.watch.state import StateStore
from lmreg_nb.watch.watcher import WatchConfig, Watcher


def register(db: Path, info: SandboxInfo, models: int, hanging: int) -> None:
    """``models`` models of the demo account at the mock; the first ``hanging`` of them hang."""
    store = Store(db)
    try:
        account = store._conn.execute(  # the demo account made by the sandbox's first start
            "SELECT id FROM accounts WHERE app_id = ?", (info.app_id,)
        ).fetchone()[0]
        slow = info.model_url.replace("/v1/chat/completions", "/quirks/slow/v1/chat/completions")
        for i in range(models):
            store.register(
                account,
                {
                    "modelName": f"bench-{i:04d}",
                    "registryUrl": slow if i < hanging else info.model_url,
                    "apiKey": info.model_api_key,
                },
            )
    finally:
        store.close()


def run_rounds(
    info: SandboxInfo, state: Path, rounds: int, concurrency: int, timeout: float
) -> list[dict[str, object]]:
    """Rounds of the watch in this process; one figure each."""
    env = {**info.env(), "LMREG_TIMEOUT": str(timeout), "LMREG_TOKEN_CACHE": str(state) + ".tok"}
    settings = Settings.load(environ=env)
    config = WatchConfig(
        state_path=state, concurrency=concurrency, school="Bench School", allow_private=True
    )
    store = StateStore(state)
    store.acquire()
    figures: list[dict[str, object]] = []

    async def go() -> None:
        with RegistryClient(settings) as registry:
            watcher = Watcher(settings, registry, store, [], Notifier([]), config)
            async with watcher:
                for _ in range(rounds):
                    began = time.perf_counter()
                    report = await watcher.round()
                    figures.append(
                        {
                            "round": report.number,
                            "models": len(report.states),
                            "up": sum(1 for s in report.states if s.status == "up"),
                            "concurrency": concurrency,
                            "seconds": round(time.perf_counter() - began, 2),
                        }
                    )

    try:
        asyncio.run(go())
    finally:
        store.close()
    return figures


def scenario(models: int, hanging: int, rounds: int, concurrency: int, timeout: float) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        db = Path(tmp) / "platform.sqlite3"
        with running_sandbox(db=db) as info:
            t0 = time.perf_counter()
            register(db, info, models, hanging)
            setup = time.perf_counter() - t0
            for figure in run_rounds(
                info, Path(tmp) / "watch.sqlite3", rounds, concurrency, timeout
            ):
                figure.update(hanging=hanging, timeout_s=timeout, register_s=round(setup, 1))
                print(json.dumps(figure), flush=True)


def fleet_scenario(
    schools: int,
    hanging: int,
    rounds: int,
    concurrency: int,
    timeout: float,
    shared_cache: bool = True,
) -> None:
    """The provider's fleet: ``schools`` accounts of two models each, watched from one plan.

    ``shared_cache``: every school's env_file names one LMREG_TOKEN_CACHE file for all,
    else none does and the fleet gives each school its own (the default).
    """
    from lmreg_nb.watch.fleet import read_fleet

    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        base = Path(tmp)
        db = base / "platform.sqlite3"
        with running_sandbox(db=db) as info:
            t0 = time.perf_counter()
            slow = info.model_url.replace(
                "/v1/chat/completions", "/quirks/slow/v1/chat/completions"
            )
            store = Store(db)
            lines = ["run_id,env_file,school,contact_email"]

            os.environ["XDG_CACHE_HOME"] = str(base / "cache")  # the default caches: here
            cache = f"LMREG_TOKEN_CACHE={base / 'tokens.json'}\n" if shared_cache else ""

            try:
                for i in range(schools):
                    account = store.add_account(f"bench-school-{i:04d}")
                    for j in range(2):
                        n = 2 * i + j
                        store.register(
                            account.id,
                            {
                                "modelName": f"bench-{i:04d}-{j}",
                                "registryUrl": slow if n < hanging else info.model_url,
                                "apiKey": info.model_api_key,
                            },
                        )
                    env = base / f"s{i:04d}.env"
                    env.write_text(
                        f"LMREG_BASE_URL={info.base_url}\nLMREG_TOKEN_PATH={info.token_path}\n"
                        f"LMREG_APP_ID={account.app_id}\nLMREG_APP_SECRET={account.app_secret}\n"
                        f"{cache}LMREG_TIMEOUT={timeout}\n",
                        encoding="utf-8",
                    )
                    lines.append(f"s{i:04d},{env.name},School {i:04d},ai{i}@school.example")
            finally:
                store.close()
            plan = base / "plan.csv"
            plan.write_text("\n".join(lines) + "\n", encoding="utf-8")
            setup = time.perf_counter() - t0
            fleet = read_fleet(plan)
            settings = Settings.load(environ={"LMREG_TIMEOUT": str(timeout)}, env_file=os.devnull)
            state = base / "watch.sqlite3"
            config = WatchConfig(state_path=state, concurrency=concurrency, allow_private=True)
            store_ = StateStore(state)
            store_.acquire()

            async def go() -> None:
                watcher = Watcher(settings, None, store_, [], Notifier([]), config, schools=fleet)
                try:
                    async with watcher:
                        for _ in range(rounds):
                            before = sum(u.registry.exchanges for u in watcher.units if u.registry)
                            began = time.perf_counter()
                            report = await watcher.round()
                            after = sum(u.registry.exchanges for u in watcher.units if u.registry)
                            print(
                                json.dumps(
                                    {
                                        "round": report.number,
                                        "schools": schools,
                                        "models": len(report.states),
                                        "up": sum(1 for s in report.states if s.status == "up"),
                                        "hanging": hanging,
                                        "blind_schools": len(report.blind),
                                        "token_exchanges": after - before,
                                        "concurrency": concurrency,
                                        "timeout_s": timeout,
                                        "token_cache": "shared" if shared_cache else "per-school",
                                        "seconds": round(time.perf_counter() - began, 2),
                                        "setup_s": round(setup, 1),
                                    }
                                ),
                                flush=True,
                            )
                finally:
                    watcher.close()

            try:
                asyncio.run(go())
            finally:
                store_.close()


def outage_scenario(schools: int, concurrency: int, timeout: float) -> None:
    """``schools`` schools go down at once; when does the last contact's mail leave?"""
    import socket
    import threading

    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword

    from lmreg_nb.watch.fleet import parse_mail, read_fleet

    arrived: list[float] = []
    lock = threading.Lock()

    class Handler:
        async def handle_DATA(self, server: object, session: object, envelope: object) -> str:
            with lock:
                arrived.append(time.perf_counter())
            return "250 OK"

    def login(*args: object) -> AuthResult:
        data = args[-1]
        return AuthResult(success=isinstance(data, LoginPassword) and data.password == b"bench-pw")

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    smtp = Controller(
        Handler(), hostname="127.0.0.1", port=port, authenticator=login, auth_require_tls=False
    )
    smtp.start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-outage-") as tmp:
            base = Path(tmp)
            db = base / "platform.sqlite3"
            with running_sandbox(db=db) as info:
                store = Store(db)
                lines = ["run_id,env_file,school,contact_email"]
                os.environ["XDG_CACHE_HOME"] = str(base / "cache")
                try:
                    for i in range(schools):
                        account = store.add_account(f"outage-{i:04d}")
                        store.register(
                            account.id,
                            {"modelName": f"llm-{i:04d}", "registryUrl": info.model_url,
                             "apiKey": info.model_api_key},
                        )  # fmt: skip
                        env = base / f"s{i:04d}.env"
                        env.write_text(
                            f"LMREG_BASE_URL={info.base_url}\nLMREG_TOKEN_PATH={info.token_path}\n"
                            f"LMREG_APP_ID={account.app_id}\nLMREG_APP_SECRET={account.app_secret}\n"
                            f"LMREG_TIMEOUT={timeout}\n",
                            encoding="utf-8",
                        )
                        lines.append(f"s{i:04d},{env.name},School {i:04d},ai{i}@school{i}.example")
                finally:
                    store.close()
                plan = base / "plan.csv"
                plan.write_text("\n".join(lines) + "\n", encoding="utf-8")
                fleet = read_fleet(plan)
                sender = parse_mail(
                    f"mailto://bench:bench-pw@127.0.0.1:{port}?from=watch@provider.example"
                )
                settings = Settings.load(
                    environ={"LMREG_TIMEOUT": str(timeout)}, env_file=os.devnull
                )
                state = base / "watch.sqlite3"
                config = WatchConfig(
                    state_path=state, concurrency=concurrency, fail_after=1, allow_private=True
                )
                watch_store = StateStore(state)
                watch_store.acquire()
                down = info.model_url.replace(
                    "/v1/chat/completions", "/quirks/status-500/v1/chat/completions"
                )

                async def go() -> dict[str, object]:
                    notifier = Notifier([])
                    watcher = Watcher(
                        settings, None, watch_store, [], notifier, config,
                        schools=fleet, mail=sender,
                    )  # fmt: skip
                    try:
                        async with watcher:
                            baseline = await watcher.round()
                            with sqlite3.connect(db) as platform:
                                platform.execute("UPDATE models SET registry_url = ?", (down,))
                            began = time.perf_counter()
                            report = await watcher.round()
                            took = time.perf_counter() - began
                    finally:
                        watcher.close()
                        notifier.close()
                    first = min(arrived, default=began) - began
                    last = max(arrived, default=began) - began
                    return {
                        "scenario": "mass outage",
                        "schools": schools,
                        "baseline_up": sum(1 for s in baseline.states if s.status == "up"),
                        "down": len(report.down),
                        "alerts": sum(1 for e in report.events if e.type == "alert"),
                        "mails": len(arrived),
                        "round_s": round(took, 2),
                        "first_mail_s": round(first, 2),
                        "last_mail_s": round(last, 2),
                        "spread_s": round(last - first, 2),
                        "concurrency": concurrency,
                        "timeout_s": timeout,
                    }

                try:
                    print(json.dumps(asyncio.run(go())), flush=True)
                finally:
                    watch_store.close()
    finally:
        smtp.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--hanging", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--schools", type=int, default=0, help="the fleet: this many accounts")
    parser.add_argument(
        "--shared-cache", action="store_true", help="every school's token in one cache file"
    )
    parser.add_argument("--outage", type=int, default=0, help="a mass outage of this many schools")
    args = parser.parse_args()
    if args.outage:
        outage_scenario(args.outage, args.concurrency, args.timeout)
        return
    if args.schools:
        fleet_scenario(
            args.schools,
            args.hanging,
            args.rounds,
            args.concurrency,
            args.timeout,
            shared_cache=args.shared_cache,
        )
        return
    scenario(args.models, 0, args.rounds, args.concurrency, args.timeout)
    if args.hanging:
        scenario(args.models, args.hanging, 1, args.concurrency, args.timeout)


if __name__ == "__main__":
    main()
