"""Known platform errors in our own words, in both languages; the server's text a detail.

The hint names where the value came from: the appSecret typed into a form, or the
LMREG_* variable. Operation names (the API's identifiers) read as words in a sentence.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fakes.registry_fakes import FakePlatform

from lmreg_nb import i18n
from lmreg_nb.errors import (
    APIError,
    ConflictError,
    CredentialsError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    TokenExpiredError,
    operation_label,
)
from lmreg_nb.registry import client as client_module
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.registry.envelope import parse_envelope

CJK = "\u4e00-\u9fff"


@pytest.fixture(autouse=True)
def _english_after() -> Iterator[None]:
    yield
    i18n.set_language("en")


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "_sleep", lambda s: None)


def _answer(status: int, code: int, message: str, operation: str, **kw: object) -> APIError:
    response = httpx.Response(
        status, json={"code": code, "message": message, "data": {}}, headers={"x-request-id": "r1"}
    )
    with pytest.raises(APIError) as caught:
        parse_envelope(response, operation, **kw)  # type: ignore[arg-type]
    return caught.value


KNOWN = [
    (401, 40102, "appId or appSecret is wrong", "token", CredentialsError, "appSecret is wrong"),
    (401, 40101, "token expired", "query-models", TokenExpiredError, "has expired"),
    (403, 40300, "X-ENV mismatch", "register", PermissionDeniedError, "env"),
    (409, 40900, "duplicate modelName", "register", ConflictError, "already used"),
    (404, 40400, "modelId not found", "modify-model", NotFoundError, "no model"),
    (429, 42900, "slow down", "query-models", RateLimitError, "too many requests"),
    (503, 50300, "injected fault", "register", ServerError, "internal error"),
]


@pytest.mark.parametrize(("status", "code", "said", "operation", "cls", "words"), KNOWN)
def test_known_errors_in_our_words_with_the_servers_text_kept(
    status: int, code: int, said: str, operation: str, cls: type[APIError], words: str
) -> None:
    i18n.set_language("en")
    error = _answer(status, code, said, operation)
    assert type(error) is cls
    text = str(error)
    assert text.startswith(operation_label(operation) + " failed: ")
    assert words in text
    assert f"“{said}”" in text and f"HTTP {status}" in text and f"code {code}" in text
    assert text.index(words) < text.index(f"“{said}”")  # our words first, the server's as a detail
    assert error.server_message == said


@pytest.mark.parametrize(("status", "code", "said", "operation", "cls", "words"), KNOWN)
def test_known_errors_in_chinese(
    status: int, code: int, said: str, operation: str, cls: type[APIError], words: str
) -> None:
    i18n.set_language("zh-CN")
    text = str(_answer(status, code, said, operation))
    head = text.split("“")[0]  # everything before the server's own words
    assert head.count(" failed") == 0 and "HTTP" in head
    assert operation not in head.replace("modelName", "").replace("modelId", "")
    ascii_words = [w for w in head.replace("：", " ").split() if w.isascii() and w.isalpha()]
    allowed = {"appId", "appSecret", "env", "modelName", "modelId", "HTTP", "ID", "X", "ENV"}
    assert set(ascii_words) <= allowed, head
    assert f"“{said}”" in text


@pytest.mark.parametrize(
    ("operation", "english", "chinese"),
    [
        ("token", "getting a token", "获取令牌"),
        ("register", "registering the model", "注册模型"),
        ("modify-model", "modifying the model", "修改模型"),
        ("query-models", "listing the models", "查询模型列表"),
    ],
)
def test_operation_names_read_as_words(operation: str, english: str, chinese: str) -> None:
    i18n.set_language("en")
    assert operation_label(operation) == english
    i18n.set_language("zh-CN")
    assert operation_label(operation) == chinese


def test_wrong_secret_from_the_environment_names_the_variable() -> None:
    i18n.set_language("en")
    platform = FakePlatform()
    settings = platform.settings(app_secret="not-the-secret-000000")
    with (
        RegistryClient(settings, transport=platform.transport()) as c,
        pytest.raises(CredentialsError) as caught,
    ):
        c.token()
    assert "LMREG_APP_SECRET" in str(caught.value).split("“")[0]
    assert "you typed" not in str(caught.value)


@pytest.mark.parametrize(
    ("lang", "typed", "start"),
    [("en", "you typed", "getting a token failed: "), ("zh-CN", "输入", "获取令牌失败：")],
)
def test_wrong_secret_typed_into_the_form_names_the_form(lang: str, typed: str, start: str) -> None:
    i18n.set_language(lang)
    platform = FakePlatform()
    settings = platform.settings().with_(app_secret="typed-wrong-0000000", typed={"app_secret"})
    with (
        RegistryClient(settings, transport=platform.transport()) as c,
        pytest.raises(CredentialsError) as caught,
    ):
        c.token()
    ours = str(caught.value).split("“")[0]
    assert typed in ours and "LMREG_APP_SECRET" not in ours
    assert ours.startswith(start)


def test_our_own_messages_are_not_quoted_as_the_platforms() -> None:
    i18n.set_language("en")
    error = ConflictError("modelName 'x' is already used by modelId 7", operation="register")
    assert "“" not in str(error) and "modelId 7" in str(error)


def test_the_credentials_form_marks_what_was_typed() -> None:
    from lmreg_nb.onboarding import Onboarding
    from lmreg_nb.settings import Settings

    base = Settings.load(environ={"LMREG_APP_ID": "app-1", "LMREG_APP_SECRET": "env-secret-0001"})
    run = Onboarding("S", settings=base)
    run.use_credentials("app-1", "typed-secret-0001")
    assert run.settings.typed == {"app_secret"}
    run.use_credentials("app-2", base.app_secret)  # the form hands back the environment's
    assert run.settings.typed == {"app_id"}
    run.use_credentials("", None)
    assert run.settings.typed == set()
