"""The exception tree: its docstring drawing, the code/status mapping, one-line messages."""

from __future__ import annotations

import inspect
import re

import pytest

from lmreg_nb import errors
from lmreg_nb.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    CredentialsError,
    LmregError,
    MalformedResponseError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    TokenExpiredError,
    ValidationError,
    api_error_for,
)

CLASSES = [
    obj for obj in vars(errors).values() if inspect.isclass(obj) and issubclass(obj, LmregError)
]


def test_docstring_tree_matches_the_classes() -> None:
    doc = errors.__doc__ or ""
    drawn = re.findall(r"(?:├── |└── |^)(\w+Error|\w+Timeout|LmregError)\s", doc, re.MULTILINE)
    assert sorted(set(drawn)) == sorted(c.__name__ for c in CLASSES)
    # Each drawn child sits under its real parent: indentation depth = inheritance depth.
    for line in doc.splitlines():
        match = re.match(r"^([│ ]*)(?:├── |└── )(\w+)", line)
        if match:
            cls = getattr(errors, match.group(2))
            depth = len(match.group(1)) // 4 + 1
            chain = [c for c in cls.__mro__ if c in CLASSES]
            assert len(chain) - 1 == depth, cls.__name__


def test_all_lists_every_class() -> None:
    assert {c.__name__ for c in CLASSES} <= set(errors.__all__)
    assert errors.__all__ == sorted(errors.__all__)


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (400, 40000, BadRequestError),
        (401, 40100, AuthenticationError),
        (401, 40101, TokenExpiredError),
        (401, 40102, CredentialsError),
        (403, 40300, PermissionDeniedError),
        (404, 40400, NotFoundError),
        (409, 40900, ConflictError),
        (413, 41300, PayloadTooLargeError),
        (429, 42900, RateLimitError),
        (503, 50300, ServerError),
        # the envelope style: HTTP 200 with the code
        (200, 40900, ConflictError),
        (200, 40101, TokenExpiredError),
        # only a status
        (409, None, ConflictError),
        (502, None, ServerError),
        (418, None, APIError),
        (None, None, APIError),
        # an unlisted code counts as its status
        (200, 40001, BadRequestError),
        (200, 50001, ServerError),
        (400, 49999, BadRequestError),
        (200, 12345, APIError),
    ],
)
def test_api_error_for(status: int | None, code: int | None, cls: type[APIError]) -> None:
    assert api_error_for(status, code) is cls


@pytest.mark.parametrize("cls", [c for c in CLASSES if issubclass(c, APIError)])
def test_api_error_messages_are_one_line_and_say_what_to_do(cls: type[APIError]) -> None:
    err = cls(
        "line one\nline two", status=409, code=40900, request_id="rid-1", operation="register"
    )
    text = str(err)
    assert "\n" not in text
    assert text.startswith(
        "registering the model failed (HTTP 409, code 40900, request id rid-1): line one line two"
    )
    assert cls.hint and text.endswith(cls.hint)
    assert (err.status, err.code, err.request_id, err.server_message) == (
        409,
        40900,
        "rid-1",
        "line one\nline two",
    )
    assert err.message == text


def test_api_error_without_details() -> None:
    assert str(APIError("")).startswith("the platform refused the request. ")


def test_rate_limit_keeps_retry_after() -> None:
    err = RateLimitError("slow", retry_after=3.0, status=429, code=42900)
    assert err.retry_after == 3.0 and err.status == 429


def test_validation_error_names_the_field() -> None:
    err = ValidationError("registryUrl", "must start with https://")
    assert str(err) == "registryUrl: must start with https://"
    assert err.field == "registryUrl" and isinstance(err, ValueError)


def test_configuration_error_keeps_the_variable() -> None:
    err = ConfigurationError("LMREG_APP_ID is not set\n", variable="LMREG_APP_ID")
    assert err.variable == "LMREG_APP_ID" and str(err) == "LMREG_APP_ID is not set"


def test_malformed_hint_points_at_base_url() -> None:
    assert "LMREG_BASE_URL" in str(MalformedResponseError("an HTML page"))


def test_the_hint_is_not_repeated_when_the_server_already_gives_it() -> None:
    from lmreg_nb.errors import AuthenticationError, CredentialsError

    said = CredentialsError(
        "appId or appSecret is wrong; check LMREG_APP_ID and LMREG_APP_SECRET",
        status=401,
        code=40102,
        operation="token",
    )
    assert str(said).count("LMREG_APP_SECRET") == 1
    silent = CredentialsError("denied", status=401, code=40102, operation="token")
    assert str(silent).endswith("check LMREG_APP_ID and LMREG_APP_SECRET with the provider")
    told = AuthenticationError("expired: run `lmreg-nb token`", status=401, code=40100)
    assert str(told).count("lmreg-nb token") == 1
