"""The OpenAPI document as this server answers: its token, its limits.

FastAPI describes the routes and the pydantic models; :func:`install_openapi` adds what only the
server's :class:`~hopgraph.serve.settings.Settings` know. With a token, an HTTP bearer security
scheme on every operation that needs it (the writes, every operation but ``GET /health`` with
``protect_reads``; :mod:`hopgraph.serve.auth` decides, as for requests) and their 401 answer;
without one, the description says so. The request limits (``max_k``, ``max_query_chars``,
``max_batch``, ``max_add``, ``max_delete``, ``max_create``) become ``maximum``, ``maxLength`` and
``maxItems`` on the fields they bound.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from hopgraph.serve.auth import OPEN_ALWAYS, is_write
from hopgraph.serve.settings import Settings

SCHEME = "bearerToken"

HEAD_NOTE = """
Every `GET` route also answers `HEAD` (the same status and headers, no body); a 405 lists in
`Allow` every method its path takes.
"""

WITH_TOKEN = """
**Authentication.** This server has a token: {which} need `Authorization: Bearer <token>`
(security scheme `bearerToken`) and answer 401 `unauthorized` with `WWW-Authenticate: Bearer`
without it, changing nothing.
"""

WITHOUT_TOKEN = """
**Authentication.** This server has no token: every request, writes included, is taken without
`Authorization`. `hopgraph serve` starts without a token only when it listens on a loopback
address (127.0.0.1, ::1, localhost), so the writes are open to this machine only, or with `--role
reader`, which takes no writes (409 `not_the_writer`). Started with `--token` or
`HOPGRAPH_TOKEN`, it requires the token for writes.
"""

UNAUTHORIZED = {
    "description": "no `Authorization: Bearer <token>` with the server's token (nothing changed)",
    "headers": {
        "WWW-Authenticate": {
            "description": 'Bearer realm="hopgraph"',
            "schema": {"type": "string"},
        }
    },
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
}


def needs_token(method: str, path: str, settings: Settings) -> bool:
    """Whether the operation ``method path`` (a path template) needs the server's token."""
    if not settings.token or (method, path) in OPEN_ALWAYS:
        return False
    return settings.protect_reads or is_write(method, path)


def describe(schema: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """``schema`` (FastAPI's document) with the server's token and limits."""
    info = schema.setdefault("info", {})
    text = info.get("description", "") + HEAD_NOTE
    if settings.token:
        which = "all requests but `GET /health`" if settings.protect_reads else "the writes"
        text += WITH_TOKEN.format(which=which)
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})[SCHEME] = {
            "type": "http",
            "scheme": "bearer",
            "description": "the token hopgraph serve was started with (--token, HOPGRAPH_TOKEN)",
        }
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                if needs_token(method.upper(), path, settings):
                    operation["security"] = [{SCHEME: []}]
                    operation.setdefault("responses", {})["401"] = UNAUTHORIZED
    else:
        text += WITHOUT_TOKEN
    info["description"] = text
    _limits(schema.get("components", {}).get("schemas", {}), settings)
    return schema


def _limits(models: dict[str, Any], settings: Settings) -> None:
    def field(model: str, name: str) -> dict[str, Any]:
        return models.get(model, {}).get("properties", {}).get(name, {})

    for model in ("SearchRequest", "BatchSearchRequest"):
        if k := field(model, "k"):
            k["maximum"] = settings.max_k
    if query := field("SearchRequest", "query"):
        query["maxLength"] = settings.max_query_chars
    if queries := field("BatchSearchRequest", "queries"):
        queries["maxItems"] = settings.max_batch
        queries.get("items", {})["maxLength"] = settings.max_query_chars
    for model, name, limit in (
        ("AddRequest", "passages", settings.max_add),
        ("DeleteRequest", "ids", settings.max_delete),
        ("CreateIndexRequest", "passages", settings.max_create),
    ):
        if items := field(model, name):
            items["maxItems"] = limit


def install_openapi(app: FastAPI, settings: Settings) -> None:
    """Make ``app`` answer ``/openapi.json`` with :func:`describe`'s document."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = describe(FastAPI.openapi(app), settings)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
