"""LMREG_NOTIFY is a secret: its URLs' secret parts are found, masked and scrubbed, no more."""

from __future__ import annotations

import pytest

from lmreg_nb.runner.scrub import secret_values
from lmreg_nb.secret import Masker, Secret, split_urls, url_secrets
from lmreg_nb.settings import SECRET_VARIABLES, Settings


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("mailtos://ops:Pa55-word-xyz@smtp.school.example?to=li@school.example", "Pa55-word-xyz"),
        ("mailto://ops:abc12@127.0.0.1:2525?to=li@school.example", "abc12"),  # short: still
        ("dingtalk://DingTokenAbC0123456789/", "DingTokenAbC0123456789"),
        ("dingtalk://SECsignAbc012345@DingTokenAbC0123456789/", "SECsignAbc012345"),
        ("wecombot://WeComBotKey0123456789", "WeComBotKey0123456789"),
        ("feishu://FeishuHookToken0123/", "FeishuHookToken0123"),
        ("json://127.0.0.1:8080/hook/HookPathToken0123", "HookPathToken0123"),
        ("json://hooks.example/alerts?token=q5", "q5"),
        ("json://hooks.example/alerts?sig=Zq81Lm3Xv9Tb", "Zq81Lm3Xv9Tb"),
    ],
)
def test_each_kind_of_secret_in_a_notify_url_is_found(url: str, secret: str) -> None:
    assert secret in url_secrets(url)


def test_addresses_and_hosts_are_not_secrets() -> None:
    found = url_secrets("mailtos://ops:Pa55-word-xyz@smtp.school.example:465?to=li@school.example")
    assert found == ["Pa55-word-xyz"]
    assert url_secrets("json://127.0.0.1:8080/api/v1") == []


def test_comma_separated_urls_split_but_not_inside_a_query() -> None:
    value = " mailto://a:b@h.example?to=x@y.example,z@y.example , json://127.0.0.1:9/hook ,"
    assert split_urls(value) == [
        "mailto://a:b@h.example?to=x@y.example,z@y.example",
        "json://127.0.0.1:9/hook",
    ]
    assert split_urls("") == [] == split_urls(" , ")


def test_masking_a_notify_url_keeps_it_readable() -> None:
    url = "json://127.0.0.1:8080/hook/HookPathToken0123?to=li@school.example"
    shown = Masker(url_secrets(url))(url)
    assert "HookPathToken0123" not in shown and "PathToke" not in shown
    assert shown.startswith("json://127.0.0.1:8080/hook/") and "li@school.example" in shown


def test_lmreg_notify_is_a_secret_setting() -> None:
    url = "json://127.0.0.1:8080/hook/HookPathToken0123"
    settings = Settings.load(environ={"LMREG_NOTIFY": f"{url}, dingtalk://DingTokenAbC0123456789"})
    assert isinstance(settings.notify, Secret)
    assert "HookPathToken0123" not in repr(settings)
    assert "LMREG_NOTIFY" in SECRET_VARIABLES
    # Scrubbing masks the secret parts, not every 8 characters of the URLs (hosts stay).
    assert sorted(settings.secret_values()) == ["DingTokenAbC0123456789", "HookPathToken0123"]
    found = secret_values({"LMREG_NOTIFY": url})
    assert list(found.values()) == ["HookPathToken0123"]
