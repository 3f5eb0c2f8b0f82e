"""Field rules (shared with the sandbox): examples, boundaries and hypothesis properties."""

from __future__ import annotations

import string
import unicodedata
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lmreg_nb.errors import ValidationError
from lmreg_nb.validate import (
    MAX_API_KEY,
    MAX_EXAMPLE_BYTES,
    MAX_MODEL_NAME,
    MAX_URL,
    UrlWarning,
    check_api_key,
    check_email,
    check_mobile,
    check_model_id,
    check_model_name,
    check_registry_url,
    check_reserved,
    model_body,
    url_warnings,
)

CHAT = "https://llm.school.edu.cn/v1/chat/completions"
anything = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.lists(st.text(max_size=3))
)


def refuses(fn: Any, value: Any, field: str) -> str:
    with pytest.raises(ValidationError) as info:
        fn(value)
    assert info.value.field == field and "\n" not in str(info.value)
    return info.value.reason


# -- modelName -----------------------------------------------------------------------------


def test_model_name_examples() -> None:
    assert check_model_name("  qwen-72b  ") == "qwen-72b"
    assert check_model_name("学校模型") == "学校模型"
    assert check_model_name("x" * MAX_MODEL_NAME) == "x" * 64
    assert "at most 64" in refuses(check_model_name, "x" * 65, "modelName")
    assert refuses(check_model_name, "   ", "modelName") == "must not be empty"
    assert refuses(check_model_name, None, "modelName") == "is required"
    assert "got int" in refuses(check_model_name, 5, "modelName")
    assert "control" in refuses(check_model_name, "a\x00b", "modelName")
    assert "invisible" in refuses(check_model_name, "a\u200bb", "modelName")  # zero-width space
    assert "control" in refuses(check_model_name, "a\ud800b", "modelName")  # lone surrogate


@given(anything)
def test_model_name_is_total(value: Any) -> None:
    try:
        name = check_model_name(value)
    except ValidationError as exc:
        assert exc.field == "modelName"
        return
    assert isinstance(value, str)
    assert name == name.strip() and 1 <= len(name) <= MAX_MODEL_NAME
    assert check_model_name(name) == name  # idempotent
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in name)


BLANKS = "\u3164\u2800\u115f\u1160\uffa0"


@given(
    st.text(
        alphabet=st.characters(categories=["L", "N", "P", "S"], exclude_characters=BLANKS),
        min_size=1,
        max_size=64,
    )
)
def test_visible_names_up_to_64_are_accepted(name: str) -> None:
    # NFC may lengthen a name (U+0A59 is two characters after it): the limit is on that form.
    assume(len(unicodedata.normalize("NFC", name)) <= 64)
    assert check_model_name(name) == unicodedata.normalize("NFC", name)


@pytest.mark.parametrize("name", ["\u0a59", "qwen-\u0a59", "\u0958", "model \u0915\u093c"])
def test_a_name_ending_in_a_mark_on_a_visible_letter_is_accepted(name: str) -> None:
    """NFC splits U+0A59 (Gurmukhi khha) into a letter and a nukta: the name still ends
    in what a reader sees as one letter (hypothesis found it refused)."""
    assert check_model_name(name) == unicodedata.normalize("NFC", name)


@pytest.mark.parametrize("name", ["\u0301abc", "abc \u0301", "\u0301"])
def test_a_mark_on_no_visible_letter_is_still_refused(name: str) -> None:
    refuses(check_model_name, name, "modelName")


@pytest.mark.parametrize("name", ["\u3164", "\u2800\u2800", " \u3164 ", "\u115f\u1160", "\u3000"])
def test_names_without_a_visible_character_are_refused(name: str) -> None:
    reason = refuses(check_model_name, name, "modelName")
    assert "visible" in reason or "empty" in reason


def test_names_are_nfc_so_look_alikes_are_one_name() -> None:
    nfd, nfc = "cafe\u0301", "caf\u00e9"
    assert check_model_name(nfd) == check_model_name(nfc) == nfc
    assert model_body({"modelName": nfd, "registryUrl": CHAT, "apiKey": "k"})["modelName"] == nfc


# -- registryUrl ---------------------------------------------------------------------------

LABEL = r"[a-z](?:[a-z0-9-]{0,19}[a-z0-9])?"
# IDNA reserves "--" in a label's third and fourth places (xn--...): such names are refused.
hosts = st.from_regex(rf"\A{LABEL}(\.{LABEL}){{1,3}}\Z").filter(
    lambda host: all(label[2:4] != "--" for label in host.split("."))
)
paths = st.lists(
    st.text(alphabet=string.ascii_letters + string.digits + "-_.~", min_size=1, max_size=10),
    max_size=4,
)


@given(st.sampled_from(["http", "https", "HTTPS"]), hosts, st.none() | st.integers(1, 65535), paths)
def test_generated_urls_are_accepted(
    scheme: str, host: str, port: int | None, path: list[str]
) -> None:
    url = f"{scheme}://{host}{'' if port is None else f':{port}'}/{'/'.join(path)}"
    assert check_registry_url(url) == url


@given(st.text(max_size=200))
def test_registry_url_is_total_and_url_warnings_never_raise(value: str) -> None:
    try:
        url = check_registry_url(value)
    except ValidationError as exc:
        assert exc.field == "registryUrl"
    else:
        assert url.lower().startswith(("http://", "https://")) and len(url) <= MAX_URL
    assert isinstance(url_warnings(value), list)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("", "must not be empty"),
        ("llm.school.edu/v1/chat/completions", "must start with https://"),
        ("ftp://llm.school.edu/", "must start with https://"),
        ("https:///v1/chat/completions", "must name a host"),
        ("https://user:pw@llm.school.edu/v1/chat/completions", "user:password"),
        ("https://user@llm.school.edu/v1/chat/completions", "user:password"),
        ("https://llm.school.edu:99999/", "not a valid URL"),
        ("https://[::1/", "not a valid URL"),
        ("https://llm school.edu/", "spaces"),
        ("https://llm.school.edu/" + "a" * MAX_URL, "at most 2048"),
    ],
)
def test_bad_urls(url: str, reason: str) -> None:
    assert reason in refuses(check_registry_url, url, "registryUrl")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (CHAT, []),
        # A slash after the chat path is another path: llama.cpp answers it 404.
        (
            "https://llm.school.edu.cn/v1/chat/completions/",
            [("chat-path", "should end in v1/chat/completions")],
        ),
        ("http://llm.school.edu.cn/v1/chat/completions", [("plain-http", "plain http")]),
        ("https://llm.school.edu.cn/chat", [("chat-path", "should end in v1/chat/completions")]),
        ("https://127.0.0.1/v1/chat/completions", [("unreachable-host", "loopback")]),
        ("https://localhost/v1/chat/completions", [("unreachable-host", "loopback")]),
        ("https://[::1]/v1/chat/completions", [("unreachable-host", "loopback")]),
        ("https://[::ffff:127.0.0.1]/v1/chat/completions", [("unreachable-host", "loopback")]),
        # Spellings of 127.0.0.1 and 10.0.0.1 a resolver reads as those (red-team pass 2,
        # issue 44): shorthand and hex IPv4, IPv4-compatible, 6to4 and NAT64 IPv6.
        ("https://127.1/v1/chat/completions", [("unreachable-host", "loopback")]),
        ("https://0x7f.1/v1/chat/completions", [("unreachable-host", "loopback")]),
        ("https://2130706433/v1/chat/completions", [("unreachable-host", "loopback")]),
        ("https://[::127.0.0.1]/v1/chat/completions", [("unreachable-host", "loopback")]),
        ("https://[2002:7f00:1::]/v1/chat/completions", [("unreachable-host", "loopback")]),
        ("https://[64:ff9b::a00:1]/v1/chat/completions", [("unreachable-host", "a private")]),
        ("https://[2002:808:808::]/v1/chat/completions", []),
        ("https://10.1.2.3/v1/chat/completions", [("unreachable-host", "a private address")]),
        ("https://192.168.1.9/v1/chat/completions", [("unreachable-host", "a private address")]),
        ("https://100.64.0.1/v1/chat/completions", [("unreachable-host", "a private address")]),
        ("https://169.254.1.1/v1/chat/completions", [("unreachable-host", "link-local")]),
        ("https://0.0.0.0/v1/chat/completions", [("unreachable-host", "unspecified")]),
        ("https://gpu-box/v1/chat/completions", [("unreachable-host", "single-label")]),
        ("https://gpu.lan/v1/chat/completions", [("unreachable-host", "local-network")]),
        ("https://8.8.8.8/v1/chat/completions", []),
        (
            "http://127.0.0.1/x",
            [
                ("plain-http", "plain http"),
                ("chat-path", "should end in"),
                ("unreachable-host", "loopback"),
            ],
        ),
    ],
)
def test_url_warnings(url: str, expected: list[tuple[str, str]]) -> None:
    warnings = url_warnings(url)
    assert [w.code for w in warnings] == [code for code, _part in expected]
    for warning, (_code, part) in zip(warnings, expected, strict=True):
        assert isinstance(warning, UrlWarning)
        assert part in warning.message and str(warning) == warning.message
        assert "registryUrl" in warning.message  # names the field


# -- apiKey --------------------------------------------------------------------------------


@given(
    st.text(
        alphabet=string.ascii_letters + string.digits + string.punctuation,
        min_size=1,
        max_size=MAX_API_KEY,
    )
)
def test_visible_keys_are_accepted_unchanged(key: str) -> None:
    assert check_api_key(key) == key


@given(
    st.text(min_size=1, max_size=20), st.sampled_from([" ", "\t", "\n", "\u3000", "\x00", "\u200b"])
)
def test_keys_with_whitespace_or_invisibles_are_refused(key: str, bad: str) -> None:
    refuses(check_api_key, key[: len(key) // 2] + bad + key[len(key) // 2 :], "apiKey")


@pytest.mark.parametrize("key", ["ключ中文", "sk-café-1234", "sk-\u00a0x", "sk-\x7f"])
def test_keys_a_header_cannot_carry_are_refused(key: str) -> None:
    # Sent as "Authorization: Bearer <apiKey>": visible ASCII only (before: UnicodeEncodeError).
    assert "visible ASCII" in refuses(check_api_key, key, "apiKey")


@pytest.mark.parametrize(
    "url",
    [
        "https://<script>.com/v1/chat/completions",
        "https://a..b/v1/chat/completions",
        "https://xn--/v1/chat/completions",
        "https://xn--zz.example/v1/chat/completions",
        "https://" + "a" * 64 + ".example/v1/chat/completions",
        "https://" + "a" * 300 + ".example/v1/chat/completions",
        "https://-bad.example/v1/chat/completions",
        "https://llm.school.edu:0/v1/chat/completions",
    ],
)
def test_hosts_that_are_not_host_names_are_refused(url: str) -> None:
    reason = refuses(check_registry_url, url, "registryUrl")
    assert "host" in reason or "port" in reason


@pytest.mark.parametrize(
    "url",
    [
        "https://例子.测试/v1/chat/completions",
        "https://xn--bcher-kva.example/v1/chat/completions",
        "https://[2001:db8::1]:8443/v1/chat/completions",
        "http://10.0.0.5:8000/v1/chat/completions",
        "https://gpu-box/v1/chat/completions",
    ],
)
def test_valid_hosts_stay_accepted(url: str) -> None:
    assert check_registry_url(url) == url


def test_api_key_bounds() -> None:
    assert check_api_key("k" * MAX_API_KEY)
    assert "at most 512" in refuses(check_api_key, "k" * 513, "apiKey")
    assert refuses(check_api_key, "", "apiKey") == "must not be empty"
    assert refuses(check_api_key, None, "apiKey") == "is required"


def test_model_id() -> None:
    assert check_model_id(" mdl_1 ") == "mdl_1"
    refuses(check_model_id, "", "modelId")
    refuses(check_model_id, "x" * 129, "modelId")
    refuses(check_model_id, 7, "modelId")


# -- reserved fields and whole bodies -------------------------------------------------------


def test_reserved_fields_64_kib_is_in_bytes() -> None:
    exact = "a" * MAX_EXAMPLE_BYTES
    assert check_reserved({"reqExample": exact})["reqExample"] == exact
    assert "64 KiB" in refuses(
        lambda v: check_reserved({"resExample": v}), exact + "a", "resExample"
    )
    wide = "é" * (MAX_EXAMPLE_BYTES // 2 + 1)  # fewer characters, more bytes
    refuses(lambda v: check_reserved({"reqExample": v}), wide, "reqExample")
    refuses(lambda v: check_reserved({"reqExample": v}), "\ud800", "reqExample")
    assert check_reserved({"reqParams": ["a", "b"]}) == {"reqParams": ["a", "b"]}
    refuses(lambda v: check_reserved({"reqParams": v}), ["a", 1], "reqParams")
    refuses(lambda v: check_reserved({"reqParams": v}), "a", "reqParams")
    refuses(
        lambda v: check_reserved({"reqParams": v}), ["x" * (MAX_EXAMPLE_BYTES + 1)], "reqParams"
    )


def test_model_body_normalises_and_drops_service_fields() -> None:
    body = model_body(
        {
            "modelName": " m ",
            "registryUrl": CHAT,
            "apiKey": "k-1",
            "modelId": "ignored",
            "createTime": 1,
            "updateTime": 2,
            "reqParams": [],
        }
    )
    assert body == {"modelName": "m", "registryUrl": CHAT, "apiKey": "k-1", "reqParams": []}
    modify = model_body(
        {"modelName": "m", "registryUrl": CHAT, "apiKey": "k", "modelId": "id"}, modify=True
    )
    assert modify["modelId"] == "id"
    refuses(
        lambda v: model_body(v, modify=True),
        {"modelName": "m", "registryUrl": CHAT, "apiKey": "k"},
        "modelId",
    )
    refuses(model_body, ["not", "a", "dict"], "body")


FIELDS = [
    "modelName",
    "registryUrl",
    "apiKey",
    "modelId",
    "reqParams",
    "reqExample",
    "resExample",
    "createTime",
]


@settings(max_examples=150)
@given(st.dictionaries(st.sampled_from(FIELDS), anything | st.just(CHAT)), st.booleans())
def test_model_body_is_total(data: dict[str, Any], modify: bool) -> None:
    try:
        body = model_body(data, modify=modify)
    except ValidationError as exc:
        assert exc.field in FIELDS
        return
    assert {"modelName", "registryUrl", "apiKey"} <= set(body)
    assert "createTime" not in body and ("modelId" in body) == modify
    assert model_body(body, modify=modify) == body  # validating twice changes nothing


# -- contact fields ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw", ["13812345678", "+86 138 1234 5678", "86-138-1234-5678", "+8613812345678"]
)
def test_mobile_numbers(raw: str) -> None:
    assert check_mobile(raw) == "13812345678"


def test_mobile_number_given_as_an_int_by_papermill() -> None:
    # `papermill -p contact_mobile 13812345678` parses the value as an int.
    assert check_mobile(13812345678) == "13812345678"
    refuses(check_mobile, 1381234567, "contact_mobile")
    refuses(check_mobile, True, "contact_mobile")


@pytest.mark.parametrize(
    "raw", ["12812345678", "1381234567", "138123456789", "+1 415 555 0100", "", "abc"]
)
def test_bad_mobile_numbers(raw: str) -> None:
    refuses(check_mobile, raw, "contact_mobile")


@pytest.mark.parametrize(
    "raw",
    ["ops@school.edu.cn", " a.b+c@x-y.example ", "李@x.cn", "a..b@x.cn", "a@x", "a@-x.cn", "@x.cn"],
)
def test_emails(raw: str) -> None:
    if raw in ("ops@school.edu.cn", " a.b+c@x-y.example "):
        assert check_email(raw) == raw.strip()
    else:
        refuses(check_email, raw, "contact_email")


@pytest.mark.parametrize(
    "raw",
    ["li@127.0.0.1", "x@b.c", "x.@x.cn", ".x@x.cn", "a@1.2.3.4", "a@[1.2.3.4]", "a@localhost",
     "a@x.invalid", "a@x.cn.", "a@x.c1"],
)  # fmt: skip
def test_addresses_a_mail_server_cannot_take_are_refused(raw: str) -> None:
    # Each passed the old hand-written rule, and Apprise then mailed no one (issue 42).
    refuses(check_email, raw, "contact_email")


@pytest.mark.parametrize(
    ("raw", "mailed"),
    [
        ("o'brien+x@school-g.cn", "o'brien+x@school-g.cn"),
        ("wangfang@school-a.example", "wangfang@school-a.example"),  # a reserved test domain
        ("it@a.test", "it@a.test"),
        ("li@学校.cn", "li@xn--48s290a.cn"),  # an international domain: its ASCII form
    ],
)
def test_an_address_is_kept_as_it_will_be_mailed(raw: str, mailed: str) -> None:
    assert check_email(raw) == mailed


# -- numbers that only look like IPv4 addresses, invisible marks in names (issue 20) --------


@pytest.mark.parametrize(
    "host",
    ["0177.0.0.1", "256.1.1.1", "01.2.3.4", "1.2.3", "127.1", "0x7f.0.0.1", "0x7f000001",
     "2130706433", "1.2.3.4.5", "x.1", "llm.school.0x1f"],
)  # fmt: skip
def test_numeric_hosts_that_are_not_dotted_quads_are_refused(host: str) -> None:
    # httpx refuses some (InvalidURL crashed `check`), and the resolver reads others
    # as an address (127.1 is loopback): only the usual dotted quad is an address.
    reason = refuses(check_registry_url, f"http://{host}:8000/v1/chat/completions", "registryUrl")
    assert "four numbers from 0 to 255" in reason


def test_a_numeric_host_in_full_width_digits_is_named_as_full_width() -> None:
    reason = refuses(
        check_registry_url, "http://１２７.０.０.１:8000/v1/chat/completions", "registryUrl"
    )
    assert "full-width “１”" in reason and "“1”" in reason


@pytest.mark.parametrize(
    "host", ["203.0.113.10", "0.0.0.0", "255.255.255.255", "10.0.0.5", "1.2.3.4.", "v1.example"]
)
def test_dotted_quads_and_names_with_digits_stay_accepted(host: str) -> None:
    url = f"http://{host}:8000/v1/chat/completions"
    assert check_registry_url(url) == url


@pytest.mark.parametrize(
    "mark",
    ["\u034f", "\ufe00", "\ufe0f", "\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad",
     "\u180b", "\u17b4", "\U000e0100", "\U000e0041", "\u115f", "\u3164"],
)  # fmt: skip
def test_invisible_marks_inside_a_model_name_are_refused(mark: str) -> None:
    reason = refuses(check_model_name, f"qwen{mark}-72b", "modelName")
    assert "invisible" in reason and f"U+{ord(mark):04X}" in reason


def test_visible_combining_marks_stay_accepted() -> None:
    # A combining accent or a vowel sign shows something: not an invisible mark.
    assert check_model_name("mo\u0308del") == "m\u00f6del"
    assert check_model_name("हिन्दी-llm") == "हिन्दी-llm"


@pytest.mark.parametrize("host", ["\uff21\uff22\uff23.example", "\uff4c\uff4c\uff4d.school.cn"])
def test_hosts_httpx_cannot_parse_are_refused(host: str) -> None:
    # Valid for IDNA's UTS46 mapping, refused by httpx (a traceback in `check` before):
    # refused first as what they are, letters a Chinese input method typed full-width.
    reason = refuses(check_registry_url, f"https://{host}/v1/chat/completions", "registryUrl")
    assert "full-width “" in reason


@pytest.mark.parametrize(
    ("url", "wide", "narrow"),
    [
        ("http://127.0.0.1：8016/v1/chat/completions", "：", ":"),
        ("http：//127.0.0.1:8016/v1/chat/completions", "：", ":"),
        ("http://127.0.0.1:８０16/v1/chat/completions", "８", "8"),
        ("https://llm。school.edu.cn/v1/chat/completions", "。", "."),
        ("https://llm.school.edu.cn／v1/chat/completions", "／", "/"),
    ],
)
def test_a_full_width_mark_in_a_url_is_named_with_its_half_width_form(
    url: str, wide: str, narrow: str
) -> None:
    # A red-team finding: "is not a valid URL" or "must start with https://", which do
    # not point at the character a Chinese input method typed.
    with pytest.raises(ValidationError) as info:
        check_registry_url(url)
    message = str(info.value)
    assert f"“{wide}”" in message and f"“{narrow}”" in message, message
