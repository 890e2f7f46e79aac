"""Every error answer has one shape: ``{"error": {"type", "message", "details"}}``.

Messages and details never carry the raw request bytes: validation details name the location
and the rule, not the input, and every string is cut short. Bodies are written as ASCII JSON,
so they can always be encoded whatever a message contains.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response

from hopgraph.serve.methods import allowed_methods

log = logging.getLogger("hopgraph.serve")

MAX_MESSAGE_CHARS = 500
MAX_DETAILS = 20

_HTTP_TYPES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
}


class ApiError(HTTPException):
    """An answer with a status, an error ``type`` clients can branch on, and a message."""

    def __init__(
        self,
        status: int,
        type_: str,
        message: str,
        details: list[Any] | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(status_code=status, detail=message, headers=headers)
        self.type = type_
        self.message = message
        self.details = details or []


def clip(text: str, n: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to ``n`` characters (messages may quote user values)."""
    return text if len(text) <= n else text[: n - 1] + "…"


def error_body(type_: str, message: str, details: list[Any] | None = None) -> bytes:
    """The JSON bytes of an error answer."""
    details = (details or [])[:MAX_DETAILS]
    body = {"error": {"type": type_, "message": clip(message), "details": details}}
    return json.dumps(body, ensure_ascii=True, default=str).encode("ascii")


def error_response(
    status: int,
    type_: str,
    message: str,
    details: list[Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    return Response(
        error_body(type_, message, details),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


def _loc(loc: Any) -> list[Any]:
    return [p if isinstance(p, int) else clip(str(p), 80) for p in loc]


def validation_details(errors: Any) -> list[dict[str, Any]]:
    """Pydantic errors without their ``input`` and ``ctx`` (which would echo the request)."""
    return [
        {"loc": _loc(e.get("loc", ())), "msg": clip(str(e.get("msg", ""))), "type": e.get("type")}
        for e in errors
    ]


async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, "invalid_json", "the request body is not valid JSON")
    details = validation_details(errors)
    first = details[0] if details else {"loc": [], "msg": "invalid request"}
    where = ".".join(str(p) for p in first["loc"] if p != "body") or "body"
    return error_response(422, "validation_error", f"{where}: {first['msg']}", details)


async def _http_error(request: Request, exc: HTTPException) -> Response:
    if isinstance(exc, ApiError):
        return error_response(exc.status_code, exc.type, exc.message, exc.details, exc.headers)
    status = exc.status_code
    if status == 400 and isinstance(exc.__cause__, UnicodeDecodeError):
        return error_response(400, "invalid_encoding", "the request body is not valid UTF-8")
    message = exc.detail if isinstance(exc.detail, str) else "request failed"
    headers = getattr(exc, "headers", None)
    if status == 405:  # every method the path serves, whichever route refused this one
        scope = request.scope
        allow = allowed_methods(request.app, scope["path"], scope.get("root_path", ""))
        if allow:
            headers = {k: v for k, v in (headers or {}).items() if k.lower() != "allow"}
            headers["Allow"] = ", ".join(allow)
        message = _not_allowed(request, headers)
    if status < 200 or status in (204, 304):
        return Response(status_code=status, headers=headers)
    return error_response(status, _HTTP_TYPES.get(status, "http_error"), message, headers=headers)


def _not_allowed(request: Request, headers: dict[str, str] | None) -> str:
    """What a route takes instead (no part of the request is echoed but its method, which is
    one of a few tokens)."""
    allow = (headers or {}).get("Allow") or (headers or {}).get("allow") or ""
    method = request.method if request.method.isalpha() else "this method"
    method = clip(method, 16)
    message = f"this route does not take {method}" + (f"; it takes {allow}" if allow else "")
    if request.url.path.endswith("/search") and method == "GET":
        message += (
            ' with a JSON body such as {"query": "...", "k": 10}; the search page is GET /?q=...'
        )
    return message


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error answering %s %s", request.method, request.url.path)
    return error_response(
        500, "internal_error", "the server failed to answer this request; see its log"
    )


def install_error_handlers(app: FastAPI) -> None:
    """Answer validation errors, HTTP errors and unexpected exceptions in the common shape."""
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
