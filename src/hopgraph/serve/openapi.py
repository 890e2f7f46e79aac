"""The OpenAPI document as this server answers: its token, its limits.

FastAPI describes the routes and the pydantic models; :func:`install_openapi` adds what only the
server's :class:`~hopgraph.serve.settings.Settings` know. With a token, an HTTP bearer security
scheme on every operation that needs it (the writes, every operation but ``GET /health`` with
``protect_reads``; :mod:`hopgraph.serve.auth` decides, as for requests) and their 401 answer;
without one, the description says so. The request limits (``max_k``, ``max_query_chars``,
``max_batch``, ``max_add``, ``max_delete``, ``max_create``) become ``maximum``, ``maxLength`` and
``maxItems`` on the fields they bound. What the served indexes hold: ``method`` lists the methods
whose parts the served index has (``/search``; any method under ``/indexes/NAME/``, whose
indexes each have their own parts), ``parts`` the parts an index can be built with; the
metadata filter's grammar is ``MetadataFilter``.

A method's ``params`` are stated per method, from the definitions the server checks them with
(:func:`params_schema`: each option of the method's ``Params`` with its type, choices and
bounds, within the server's cost bounds of :mod:`hopgraph.serve.bounds`; no other name, and
none of the options only the operator sets). The search requests hold a ``oneOf`` keyed by
``method``: one branch per method, whose ``params`` are ``#/components/schemas/Params_METHOD``;
the branch of ``default`` (or no ``method``) takes those of the method a search without one
uses (on ``/search``, the served index's; under ``/indexes/NAME/``, where each index chooses
its own, only the options every possible choice takes alike).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI

from hopgraph.config import option_json_schema, server_only_options
from hopgraph.filters import filter_json_schema
from hopgraph.retrieve.registry import (
    DEFAULT_ALIAS,
    DEFAULT_FALLBACKS,
    DEFAULT_METHOD,
    method_class,
)
from hopgraph.serve.auth import OPEN_ALWAYS, is_write
from hopgraph.serve.bounds import param_bounds
from hopgraph.serve.methods import RESERVED_PASSAGE_IDS
from hopgraph.serve.schemas import FILTER_REF
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


def params_schema(method: str) -> dict[str, Any]:
    """The JSON Schema of method ``method``'s ``params`` as the server takes them: each option
    of its ``Params`` but those only the operator sets, with its type, choices and bounds
    (within the cost bound of :func:`~hopgraph.serve.bounds.param_bounds`), no other name, and
    the rules between options the class states (``json_schema_rules``)."""
    params = method_class(method).Params
    limits = param_bounds(params)
    hidden = server_only_options(params)
    names = [f.name for f in dataclasses.fields(params) if f.name not in hidden]
    out: dict[str, Any] = {
        "title": f"Params_{method}",
        "description": f"the parameters of method {method!r} (GET /info describes them)",
        "type": "object",
        "properties": {n: option_json_schema(params, n, limits.get(n)) for n in names},
        "additionalProperties": False,
    }
    out.update(copy.deepcopy(getattr(params, "json_schema_rules", {})))
    return out


def common_params_schema(methods: Sequence[str]) -> dict[str, Any]:
    """The ``params`` every one of ``methods`` takes: the options they all have, each as every
    one of them takes it (for a search whose method the schema cannot know)."""
    schemas = [params_schema(m) for m in dict.fromkeys(methods)]
    names = [n for n in schemas[0]["properties"] if all(n in s["properties"] for s in schemas)]
    properties = {}
    for n in names:
        each = [s["properties"][n] for s in schemas]
        properties[n] = each[0] if all(e == each[0] for e in each) else {"allOf": each}
    return {
        "description": f"the parameters every one of {', '.join(dict.fromkeys(methods))} takes "
        "(name the method to give its own)",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }


def _method_branches(
    methods: Sequence[str], default: dict[str, Any], refs: dict[str, str]
) -> list[dict[str, Any]]:
    """The ``oneOf`` of a search request: ``params`` per ``method`` (``refs``: the component
    of each method's), and ``default`` (``method`` ``"default"`` or absent) with ``default``."""
    branches = [
        {
            "title": f"method {DEFAULT_ALIAS!r} or none",
            "properties": {"method": {"const": DEFAULT_ALIAS}, "params": default},
        }
    ]
    for m in methods:
        branches.append(
            {
                "title": f"method {m!r}",
                "properties": {"method": {"const": m}, "params": {"$ref": refs[m]}},
                "required": ["method"],
            }
        )
    return branches


def describe(
    schema: dict[str, Any],
    settings: Settings,
    methods: Sequence[str] = (),
    all_methods: Sequence[str] = (),
    parts: Sequence[str] = (),
    default_method: str = DEFAULT_METHOD,
) -> dict[str, Any]:
    """``schema`` (FastAPI's document) with the server's token and limits; ``methods`` (those
    the served index supports), ``all_methods`` and ``parts`` (the part names) become enums
    where given, and each method's ``params`` are stated (``default_method``: the method a
    search of the served index without one uses)."""
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
    models = schema.setdefault("components", {}).setdefault("schemas", {})
    _limits(models, settings)
    models["MetadataFilter"] = filter_json_schema(FILTER_REF)
    _choices(schema, methods, all_methods, parts, default_method)
    return schema


NAMED = "/indexes/{name}/"


def _choices(
    schema: dict[str, Any],
    methods: Sequence[str],
    all_methods: Sequence[str],
    parts: Sequence[str],
    default_method: str = DEFAULT_METHOD,
) -> None:
    """Enums for ``method`` (per route: the served index's methods, or any method on a named
    index, under a ``Named...`` copy of the request) with each method's ``params``, ``parts``,
    and the passage ids the concrete routes take."""
    models = schema["components"]["schemas"]
    refs = {}
    for m in dict.fromkeys([*methods, *all_methods, default_method]):
        models[f"Params_{m}"] = params_schema(m)
        refs[m] = f"#/components/schemas/Params_{m}"
    for name in ("SearchRequest", "BatchSearchRequest"):
        if name not in models:
            continue
        models[name]["properties"]["params"] = {
            "type": "object",
            "description": "the method's parameters: Params_METHOD of the method searched "
            "(GET /info describes them)",
        }
        if all_methods:
            named = copy.deepcopy(models[name])
            named["title"] = f"Named{name}"
            named["properties"]["method"]["enum"] = [DEFAULT_ALIAS, *all_methods]
            common = common_params_schema([DEFAULT_METHOD, *DEFAULT_FALLBACKS])
            named["oneOf"] = _method_branches(all_methods, common, refs)
            models[f"Named{name}"] = named
            for path, operations in schema.get("paths", {}).items():
                if path.startswith(NAMED):
                    _repoint(operations, name, f"Named{name}")
        if methods:
            models[name]["properties"]["method"]["enum"] = [DEFAULT_ALIAS, *methods]
            default = {"$ref": refs[default_method]}
            models[name]["oneOf"] = _method_branches(methods, default, refs)
    choice = models.get("CreateIndexRequest", {}).get("properties", {}).get("parts", {})
    for branch in choice.get("anyOf", []):
        if branch.get("type") == "array" and parts:
            branch["minItems"] = 1
            branch["items"] = {"type": "string", "enum": list(parts)}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("name") == "passage_id":
                    parameter["schema"]["not"] = {"enum": list(RESERVED_PASSAGE_IDS)}


def _repoint(operations: dict[str, Any], old: str, new: str) -> None:
    for operation in operations.values():
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
        if body.get("schema", {}).get("$ref") == f"#/components/schemas/{old}":
            body["schema"] = {"$ref": f"#/components/schemas/{new}"}


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


def install_openapi(
    app: FastAPI,
    settings: Settings,
    methods: Callable[[], Sequence[str]] = tuple,
    all_methods: Sequence[str] = (),
    parts: Sequence[str] = (),
    default_method: Callable[[], str] = lambda: DEFAULT_METHOD,
) -> None:
    """Make ``app`` answer ``/openapi.json`` with :func:`describe`'s document; ``methods()``
    and ``default_method()`` say, at each request, which methods the served index supports and
    which one a search without a method uses (its parts may grow)."""
    base: dict[str, Any] = {}

    def openapi() -> dict[str, Any]:
        if not base:
            base.update(FastAPI.openapi(app))
        return describe(
            copy.deepcopy(base), settings, methods(), all_methods, parts, default_method()
        )

    app.openapi = openapi  # type: ignore[method-assign]
