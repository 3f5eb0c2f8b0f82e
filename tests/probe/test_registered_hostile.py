"""`--registered NAME` with what a hostile or careless platform returns (issue 20, 3 and 6).

A tiny platform on loopback answers query-models with a crafted list; a model
server on loopback (the ``/record/`` path of tests/fakes/hostile.py) records every
request it receives, raw. The apiKey the platform returns is checked before it
is used: a key with CR LF would have been written raw by the capacity search's
lean client (an injected header arrived 492 times), a non-ASCII key was a
UnicodeEncodeError traceback. And two models whose names differ only by Unicode
normalisation are never picked silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner
from fakes.hostile import hostile_server
from fakes.loopback_platform import loopback_platform

from lmreg_nb.cli import main
from lmreg_nb.errors import ValidationError
from lmreg_nb.probe import Target
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.settings import Settings

pytestmark = pytest.mark.timeout(60)

CHAT = "/v1/chat/completions"
INJECTED = "X-Injected: yes"
CRLF_KEY = "sk-school-Qw3Er5Ty7U\r\n" + INJECTED
CYRILLIC_KEY = "sk-ключ-Qw3Er5Ty7Ui9"
GOOD_KEY = "sk-school-Op1As3Df5Gh7"


@contextmanager
def model_server() -> Iterator[tuple[str, Callable[[], list[bytes]]]]:
    """A chat endpoint on loopback; yields its chat URL and what gives the heads it received.

    Its ``/record/`` path records each request's raw head and answers a short valid stream.
    """
    with hostile_server() as base:
        yield f"{base}/record{CHAT}", lambda: base.heads("record")


@contextmanager
def platform(models: list[dict[str, Any]]) -> Iterator[str]:
    """A platform whose query-models lists ``models`` (as given, unchecked); its base URL."""
    with loopback_platform() as (base, script):
        script.models = models
        yield base


def _model(model_id: str, name: str, url: str, key: str) -> dict[str, Any]:
    return {"modelId": model_id, "modelName": name, "registryUrl": url, "apiKey": key}


def _env(base: str) -> dict[str, str]:
    # A token obtained elsewhere: the platform needs no token operation.
    return {
        "LMREG_BASE_URL": base,
        "LMREG_TOKEN": "tok-registered-hostile-0123456789",
        "LMREG_ENV": "env-test",
        "LMREG_TIMEOUT": "2",
        "LMREG_LANG": "en",
    }


def _cli(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", ["check", "capacity"])
@pytest.mark.parametrize("key", [CRLF_KEY, CYRILLIC_KEY], ids=["crlf", "non-ascii"])
def test_a_registered_key_that_cannot_be_a_header_is_never_sent(command: str, key: str) -> None:
    with model_server() as (url, heads), platform([_model("m-1", "campus-llm", url, key)]) as base:
        code, out, err = _cli([command, "--registered", "campus-llm"], _env(base))
    assert code == 2, out + err  # the registration must be fixed: as for a missing key
    assert err.count("\n") == 1 and "Traceback" not in err and out == ""
    assert "'campus-llm'" in err and "lmreg-nb modify --model-id m-1 --new-api-key" in err
    assert "ключ" not in err and "Qw3Er5Ty7U" not in err  # the key is not shown
    assert heads() == []  # nothing was sent with it, so no header could be injected


def test_the_lean_client_cannot_be_given_a_key_that_injects_a_header() -> None:
    # The capacity search's own client writes the request head itself: the key
    # reaches it only inside a Target, and a Target refuses one with CR LF.
    with model_server() as (url, heads):
        with pytest.raises(ValidationError, match="apiKey"):
            Target(url, CRLF_KEY, "m")
        from lmreg_nb.probe.load.capacity import LevelPlan, find_capacity

        plan = LevelPlan(min_seconds=0.1, requests_per_worker=1, max_seconds=2)
        result = find_capacity(Target(url, GOOD_KEY, "m", timeout=10), max_concurrency=2, plan=plan)
    assert result.levels and heads()
    assert all(INJECTED.lower().encode() not in h.lower() for h in heads())
    assert all(h.count(b"\r\nAuthorization: Bearer ") == 1 for h in heads())


def test_nfc_and_nfd_twins_are_never_picked_silently() -> None:
    nfc, nfd = "caf\u00e9-llm", "cafe\u0301-llm"  # the same name to the eye
    with model_server() as (url, heads):
        models = [_model("id-nfc", nfc, url, GOOD_KEY), _model("id-nfd", nfd, url, GOOD_KEY)]
        with platform(models) as base:
            env = _env(base)
            settings = Settings.load(environ=env)
            with pytest.raises(ValidationError) as info:
                Target.from_registered(settings, nfd, client=RegistryClient(settings))
            code, _out, err = _cli(["check", "--registered", nfc], env)
    message = str(info.value)
    assert "id-nfc" in message and "id-nfd" in message and "modify --model-id" in message
    assert code == 2 and err.count("\n") == 1 and "id-nfc" in err and "id-nfd" in err
    assert heads() == []


def test_one_registered_model_is_found_in_any_unicode_form() -> None:
    with model_server() as (url, _heads):
        models = [_model("id-1", "caf\u00e9-llm", url, GOOD_KEY)]
        with platform(models) as base:
            settings = Settings.load(environ=_env(base))
            target = Target.from_registered(settings, "cafe\u0301-llm ")
    assert (target.url, target.model, target.registered_name) == (url, "café-llm", "café-llm")
    assert target.api_key.reveal() == GOOD_KEY and target.alias is None
