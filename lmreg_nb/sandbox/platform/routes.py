"""The platform's operations: routes -> store calls, wrapped in the envelope.

The three model operations live on module-level routers, one per error style
(the documented responses differ: HTTP statuses, or everything inside a 200).
The token operation's path is a setting, so :func:`add_token_route` adds it.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse

from . import schema
from .deps import authenticate, common, json_type, read_json, throttle_and_fault, validated
from .errors import BadCredentials, BadRequest, Conflict, NotFound, envelope
from .store import DuplicateNameError, ModelNotFoundError, Store

__all__ = ["REQUEST_ID_HEADER", "ROUTERS", "add_token_route"]

REQUEST_ID_HEADER = "X-Request-Id"
Style = Literal["http", "envelope"]
_COMMON_ERRORS = (413, 429, 503)
_SECURED: dict[str, Any] = {"security": [{"bearerAuth": [], "envHeader": []}]}


def _responses(style: Style, *statuses: int) -> dict[int | str, dict[str, Any]]:
    rid = {
        REQUEST_ID_HEADER: {
            "schema": {"type": "string"},
            "required": True,
            "description": "Identifies this request in the log",
        }
    }
    out: dict[int | str, dict[str, Any]] = {200: {"headers": rid}}
    if style == "envelope":
        out[200]["description"] = "Success (code 0) or an error with its code: " + "; ".join(
            schema.ERROR_DESCRIPTIONS[s] for s in statuses
        )
        return out
    for status in statuses:
        headers = dict(rid)
        if status == 429:
            headers["Retry-After"] = {
                "schema": {"type": "string"},
                "required": True,
                "description": "Seconds to wait",
            }
        out[status] = {
            "model": schema.ErrorEnvelope,
            "description": schema.ERROR_DESCRIPTIONS[status],
            "headers": headers,
        }
    return out


def _body(spec: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {
        "requestBody": {"required": required, "content": {"application/json": {"schema": spec}}}
    }


def _model(style: Style, success: type) -> Any:
    return success | schema.ErrorEnvelope if style == "envelope" else success


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _conflict(name: str) -> str:
    return (
        f"modelName: {name!r} is already used in this account; choose another name"
        " or modify that model (its modelId is in query-models)"
    )


# -- the endpoints (the same functions on both routers) --------------------------------
# No docstrings: FastAPI would publish them as descriptions; each route has a summary.


async def token(request: Request) -> JSONResponse:
    data = await read_json(request)
    for field in ("appId", "appSecret"):
        if not isinstance(data.get(field), str):
            got = json_type(data[field]) if field in data else "nothing"
            raise BadRequest(f"{field}: must be a string, got {got}")
    throttle_and_fault(request, f"app:{data['appId']}")
    cfg = request.app.state.config
    issued = _store(request).issue_token(data["appId"], data["appSecret"], cfg.token_ttl_s)
    if issued is None:
        # A platform knows nothing of our variables: its words name what is wrong, not a fix.
        raise BadCredentials("appId or appSecret is wrong")
    return JSONResponse(
        envelope({"token": issued.token, "env": issued.env, "expireTime": issued.expires_ms})
    )


async def registry_model(request: Request, account: int = Depends(authenticate)) -> JSONResponse:
    fields = validated(await read_json(request), modify=False)
    try:
        row = _store(request).register(account, fields)
    except DuplicateNameError:
        raise Conflict(_conflict(fields["modelName"])) from None
    return JSONResponse(envelope(row.to_api()))


async def modify_model(request: Request, account: int = Depends(authenticate)) -> JSONResponse:
    fields = validated(await read_json(request), modify=True)
    try:
        row = _store(request).modify(account, fields)
    except DuplicateNameError:
        raise Conflict(_conflict(fields["modelName"])) from None
    except ModelNotFoundError:
        raise NotFound(
            "modelId: no such model in this account; query-models lists your modelIds"
        ) from None
    return JSONResponse(envelope(row.to_api()))


async def query_models(request: Request, account: int = Depends(authenticate)) -> JSONResponse:
    await read_json(request, optional=True)
    rows = _store(request).models(account)
    return JSONResponse(envelope({"models": [r.to_api() for r in rows]}))


# -- routers ---------------------------------------------------------------------------


def _router(style: Style) -> APIRouter:
    router = APIRouter(dependencies=[Depends(common)])
    router.add_api_route(
        "/openapi/v1/registry-model",
        registry_model,
        methods=["POST"],
        operation_id="registryModel",
        summary="Register a model",
        response_model=_model(style, schema.ModelEnvelope),
        responses=_responses(style, 400, 401, 403, 409, *_COMMON_ERRORS),
        openapi_extra={**_body(schema.register_body_schema()), **_SECURED},
    )
    router.add_api_route(
        "/openapi/v1/modify-model",
        modify_model,
        methods=["POST"],
        operation_id="modifyModel",
        summary="Modify a registered model",
        response_model=_model(style, schema.ModelEnvelope),
        responses=_responses(style, 400, 401, 403, 404, 409, *_COMMON_ERRORS),
        openapi_extra={**_body(schema.modify_body_schema()), **_SECURED},
    )
    router.add_api_route(
        "/openapi/v1/query-models",
        query_models,
        methods=["POST"],
        operation_id="queryModels",
        summary="List the account's registered models",
        response_model=_model(style, schema.ModelsEnvelope),
        responses=_responses(style, 400, 401, 403, *_COMMON_ERRORS),
        openapi_extra={**_body(schema.query_body_schema(), required=False), **_SECURED},
    )
    return router


#: The model operations, by error style.
ROUTERS: dict[str, APIRouter] = {"http": _router("http"), "envelope": _router("envelope")}


def add_token_route(app: FastAPI, path: str, style: Style) -> None:
    """The token operation at ``path`` (LMREG_TOKEN_PATH's counterpart)."""
    app.add_api_route(
        path,
        token,
        methods=["POST"],
        dependencies=[Depends(common)],
        operation_id="token",
        summary="Exchange appId and appSecret for a token and env",
        response_model=_model(style, schema.TokenEnvelope),
        responses=_responses(style, 400, 401, *_COMMON_ERRORS),
        openapi_extra=_body(schema.token_body_schema()),
    )
