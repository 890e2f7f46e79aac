"""The HTTP application: ``create_app(index_dir, settings)`` returns a FastAPI app serving one
index folder. Endpoints (JSON but the page; JSON errors are
``{"error": {"type", "message", "details"}}``):

=========================  =========================================================
``POST /search``           one query → ranked hits with explanations
``POST /search/batch``     several queries with one method (dense ones encoded together)
``POST /passages``         add passages (201)
``POST /passages/delete``  delete passages by id, all or none
``DELETE /passages/{id}``  delete one passage
``GET /passages/{id}``     one passage
``GET /health``            liveness, generation, passage count
``GET /info``              index info, methods (parts, parameters), limits
``GET /?q=``               the search page (HTML, :mod:`hopgraph.serve.page`)
=========================  =========================================================

With ``Settings.indexes_dir`` (``hopgraph serve --indexes-dir DIR``), named indexes too
(:mod:`hopgraph.serve.multi`): ``GET /indexes``, ``POST /indexes`` (create), ``DELETE
/indexes/{name}`` (drop), and the routes above but ``/health`` under ``/indexes/{name}``.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import APIRouter, Depends, FastAPI, status
from fastapi.responses import HTMLResponse

from hopgraph import __version__
from hopgraph.config import describe_options, server_only_options
from hopgraph.corpus import Passage
from hopgraph.errors import (
    BuildPendingError,
    ConfigError,
    CorpusError,
    DuplicateIdError,
    HopgraphError,
    NotWriterError,
    StorageError,
    UnknownIdError,
    UpdateError,
)
from hopgraph.filters import validate_filter
from hopgraph.index.registry import available_parts
from hopgraph.jsonable import jsonable
from hopgraph.retrieve.ranking import Ranking
from hopgraph.retrieve.registry import (
    DEFAULT_METHOD,
    Retriever,
    default_choice,
    is_default,
    list_methods,
    method_class,
    method_parts,
    supported_methods,
)
from hopgraph.serve import page
from hopgraph.serve import schemas as s
from hopgraph.serve.auth import TokenMiddleware
from hopgraph.serve.bounds import param_bounds
from hopgraph.serve.jsonbody import StrictJSONRoute
from hopgraph.serve.limits import BodyLimitMiddleware
from hopgraph.serve.methods import HeadMiddleware
from hopgraph.serve.multi import IndexRegistry, RegistryError, api_error, indexes_router
from hopgraph.serve.openapi import install_openapi
from hopgraph.serve.problems import ApiError, install_error_handlers
from hopgraph.serve.process import configured
from hopgraph.serve.settings import Settings
from hopgraph.serve.state import RequestError, ServedIndex, Snapshot

DESCRIPTION = """Multi-hop retrieval over one hopgraph index folder, with live updates.

Searches run on an immutable snapshot of the index; an update (add or delete) builds the new
index, saves it atomically over the folder, reloads it and then swaps the snapshot, so a search
sees the index entirely before or entirely after an update. Several servers may serve one
folder: one holds its writer role and takes updates (serialized by a lock); the others answer
them 409 `not_the_writer` naming it, and load each generation it commits within
`reload_interval` seconds (`GET /info`: `role`, `writer`, `generation`).

A search that names no `method` (or names `default`) uses the recommended default method
(`default_method` in `GET /info`); on an index without its parts it uses the first of `rrf`,
`bm25`, `dense` the index has the parts for (`default_used` and `default_note` in `GET /info`;
the answer's `method` and `info.default_fallback` say so, with the `hopgraph add-parts` command
that adds the default's parts). A method named explicitly never falls back: without its parts
it answers 409 `missing_index_part` (the request is valid; the index lacks what it needs).

Every error answers `{"error": {"type", "message", "details"}}` with a 4xx status:
400 bad encoding or JSON, 404 unknown passage or path, 409 a valid request the index cannot
serve as it stands (a search with a method needing a part the index lacks: `missing_index_part`)
or a refused update (duplicate ids, would empty the index, a part that cannot be updated in
place, an index whose build is still encoding its passage vectors: `index_building`, `GET
/info`'s `build`), 413 a body over `max_body_bytes`,
415 a body that is not JSON, 422 invalid request (validation, a field over its limit: query
length, batch size, passages or ids per update, k over max_k; unknown method or parameter).
`GET /info` lists the limits; the OpenAPI
document states them as `maxLength`, `maxItems` and `maximum`.
"""


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    text = {
        400: "body not valid UTF-8 or JSON",
        404: "unknown passage id",
        409: "update refused, or a search needing an index part the index lacks",
        405: "the passage id `delete`: the path of `POST /passages/delete` (read that passage "
        "by search)",
        413: "body over max_body_bytes",
        415: "body not application/json",
        422: "invalid request (a field over its limit included)",
        503: "search over the time limit (max_search_seconds)",
        507: "no space left to commit the update (nothing changed)",
        500: "unexpected server error (logged)",
    }
    return {c: {"model": s.ErrorResponse, "description": text[c]} for c in (*codes, 500)}


SEARCH_ERRORS = _errors(400, 409, 413, 415, 422, 503)
UPDATE_ERRORS = _errors(400, 404, 409, 413, 415, 422, 507)


def create_app(index_dir: str, settings: Settings | None = None) -> FastAPI:
    """A FastAPI app serving the index folder ``index_dir`` (loaded now: a missing or corrupt
    index raises :class:`~hopgraph.errors.IndexError_`), and the named indexes of
    ``settings.indexes_dir`` if set (created if missing)."""
    settings = settings or Settings()
    served = ServedIndex(index_dir, settings)
    registry = None
    if settings.indexes_dir:
        try:
            registry = IndexRegistry(settings.indexes_dir, settings, exclude=served.path)
        except BaseException:
            served.close()
            raise

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        served.close()  # stop following the folder, give up the writer role
        if registry is not None:
            registry.close()

    app = FastAPI(
        title="hopgraph",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.served = served
    app.state.indexes = registry
    install_error_handlers(app)
    install_openapi(  # the token's security scheme, the limits, the choices
        app,
        settings,
        methods=lambda: supported_methods(served.snapshot.index),
        all_methods=supported_methods(None),
        parts=available_parts(),
        default_method=lambda: default_choice(served.snapshot.index).method,
    )
    app.add_middleware(HeadMiddleware)  # HEAD wherever GET is served
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    if settings.token:  # added last: runs first, before any body is read
        app.add_middleware(
            TokenMiddleware, token=settings.token, protect_reads=settings.protect_reads
        )

    async def default_index() -> ServedIndex:
        return served

    app.include_router(_router(default_index, settings))
    if registry is not None:

        async def named_index(name: str) -> ServedIndex:
            try:
                return registry.get(name)
            except RegistryError as exc:
                raise api_error(exc) from None

        app.include_router(indexes_router(registry))
        app.include_router(
            _router(named_index, settings, health=False),
            prefix="/indexes/{name}",
            responses={404: {"model": s.ErrorResponse, "description": "unknown index"}},
        )
    return app


def _router(
    get_served: Callable[..., Any], settings: Settings, *, health: bool = True
) -> APIRouter:
    """The routes of one served index, which the dependency ``get_served`` gives each request
    (the default index, or a named one by the ``name`` in the path)."""
    router = APIRouter(route_class=StrictJSONRoute, strict_content_type=False)
    index_of = Depends(get_served)

    @router.post(
        "/search",
        response_model=s.SearchResponse,
        responses=SEARCH_ERRORS,
        summary="Search one query",
    )
    async def search(req: s.SearchRequest, served: ServedIndex = index_of) -> dict[str, Any]:
        return await _within_deadline(settings, lambda: _search_one(served, req))

    def _search_one(served: ServedIndex, req: s.SearchRequest) -> dict[str, Any]:
        _check_queries([req.query], settings, loc=["body", "query"])
        snap = served.snapshot  # read once: this search uses this snapshot only
        retriever, ms, rankings = _run(served, snap, req, [req.query])
        return {
            "query": req.query,
            "method": retriever.name,
            "params": jsonable(retriever.describe()["params"]),
            "k": req.k,
            "hits": _hits(snap, rankings[0], req),
            "info": jsonable(rankings[0].info),
            "generation": snap.generation,
            "latency_ms": ms,
        }

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def search_page(
        q: str = "", k: str = "10", method: str = "default", served: ServedIndex = index_of
    ) -> HTMLResponse:
        """The search page (serve/page.py): POST /search's search, answered as HTML."""
        snap = served.snapshot
        methods = [n for n in list_methods() if _method_info(n, snap, served)["available"]]
        form, size = page.Form(q, k, method, methods, DEFAULT_METHOD), len(snap.index)
        try:
            result = None
            if q.strip():
                req = s.SearchRequest(query=q, k=page.parse_k(k), method=method, passages=True)
                result = await _within_deadline(settings, lambda: _search_one(served, req))
        except ApiError as exc:  # the same errors as POST /search, shown on the page
            return page.page_response(page.render_page(form, None, exc, size), exc.status_code)
        return page.page_response(page.render_page(form, result, None, size))

    @router.post(
        "/search/batch",
        response_model=s.BatchSearchResponse,
        responses=SEARCH_ERRORS,
        summary="Search several queries with one method",
    )
    async def search_batch(
        req: s.BatchSearchRequest, served: ServedIndex = index_of
    ) -> dict[str, Any]:
        return await _within_deadline(settings, lambda: _search_many(served, req))

    def _search_many(served: ServedIndex, req: s.BatchSearchRequest) -> dict[str, Any]:
        if len(req.queries) > settings.max_batch:
            raise ApiError(
                422,
                "too_many_queries",
                f"{len(req.queries)} queries in one batch; the limit is {settings.max_batch}",
            )
        _check_queries(req.queries, settings, loc=["body", "queries"])
        snap = served.snapshot
        retriever, ms, rankings = _run(served, snap, req, req.queries)
        return {
            "method": retriever.name,
            "params": jsonable(retriever.describe()["params"]),
            "k": req.k,
            "results": [
                {"query": q, "hits": _hits(snap, r, req), "info": jsonable(r.info)}
                for q, r in zip(req.queries, rankings, strict=True)
            ],
            "generation": snap.generation,
            "latency_ms": ms,
        }

    @router.post(
        "/passages",
        status_code=status.HTTP_201_CREATED,
        response_model=s.UpdateResponse,
        responses=UPDATE_ERRORS,
        summary="Add passages",
        description="Adds every passage or none. 409 when an id is already in the index or "
        "given twice; the new passages are searchable when this answers.",
    )
    def add_passages(req: s.AddRequest, served: ServedIndex = index_of) -> dict[str, Any]:
        if len(req.passages) > settings.max_add:
            raise ApiError(
                422,
                "too_many_passages",
                f"{len(req.passages)} passages in one request; the limit is {settings.max_add}",
            )
        passages = [Passage(p.id, p.title, p.text, p.metadata) for p in req.passages]
        return _update(served, add=passages)

    @router.post(
        "/passages/delete",
        response_model=s.UpdateResponse,
        responses=UPDATE_ERRORS,
        summary="Delete passages by id",
        description="Deletes every id or none: 404 when an id is not in the index, 409 when "
        "the index would be left empty. Repeated ids count once.",
    )
    def delete_passages(req: s.DeleteRequest, served: ServedIndex = index_of) -> dict[str, Any]:
        if len(req.ids) > settings.max_delete:
            raise ApiError(
                422,
                "too_many_ids",
                f"{len(req.ids)} ids in one request; the limit is {settings.max_delete}",
            )
        return _update(served, delete=list(dict.fromkeys(req.ids)))

    @router.delete(
        "/passages/{passage_id:passage_id}",
        response_model=s.UpdateResponse,
        responses={**UPDATE_ERRORS, **_errors(405)},
        summary="Delete one passage",
    )
    def delete_passage(passage_id: str, served: ServedIndex = index_of) -> dict[str, Any]:
        return _update(served, delete=[passage_id])

    @router.get(
        "/passages/{passage_id:passage_id}",
        response_model=s.Passage,
        responses=_errors(404, 405, 422),
        summary="Get one passage",
    )
    def get_passage(passage_id: str, served: ServedIndex = index_of) -> dict[str, Any]:
        corpus = served.snapshot.index.corpus
        if passage_id not in corpus:
            raise ApiError(404, "unknown_id", "no passage with this id in the index")
        p = corpus.get(passage_id)
        return {"id": p.id, "title": p.title, "text": p.text, "metadata": jsonable(p.metadata)}

    if health:

        @router.get("/health", response_model=s.Health, summary="Liveness and index generation")
        def health_(served: ServedIndex = index_of) -> dict[str, Any]:
            snap = served.snapshot
            return {"status": "ok", "generation": snap.generation, "passages": len(snap.index)}

    @router.get("/info", response_model=s.Info, summary="Index, methods and limits")
    def info(served: ServedIndex = index_of) -> dict[str, Any]:
        snap = served.snapshot
        methods = [_method_info(name, snap, served) for name in list_methods()]
        choice = default_choice(snap.index)
        build = served.build_stage(snap)
        note = choice.note or None
        if note and build["stage"] != "complete":  # no part to add: the build is adding them
            note = (
                f"the build is encoding the passage vectors ({build['vectors_done']} / "
                f"{build['vectors_total']}): until it commits the complete index, searches "
                f"without a method use {choice.method!r}"
            )
        return {
            "index": jsonable(snap.index.info()),
            "generation": snap.generation,
            "build": build,
            "default_method": DEFAULT_METHOD,
            "default_available": any(m["default"] and m["available"] for m in methods),
            "default_used": choice.method,
            "default_note": note,
            "methods": methods,
            "limits": settings.limits(),
            "role": served.role,
            "writer": served.writer(),
            "auth": {"writes": bool(settings.token), "reads": settings.protect_reads},
            "process": {**configured(), "writer_nice": settings.writer_nice},
        }

    return router


def _check_queries(queries: list[str], settings: Settings, loc: list[Any]) -> None:
    for i, q in enumerate(queries):
        if len(q) > settings.max_query_chars:
            where = loc if len(queries) == 1 and loc[-1] == "query" else [*loc, i]
            raise ApiError(
                422,
                "query_too_long",
                f"a query of {len(q)} characters; the limit is {settings.max_query_chars}",
                [{"loc": where, "msg": "query too long", "type": "query_too_long"}],
            )


def _run(
    served: ServedIndex, snap: Snapshot, req: s.SearchOptions, queries: list[str]
) -> tuple[Retriever, float, list[Ranking]]:
    """Search ``queries`` on ``snap``; request problems become 422 answers."""
    if req.k > served.settings.max_k:
        raise ApiError(
            422,
            "k_too_large",
            f"k={req.k} is over the limit of {served.settings.max_k}",
            [{"loc": ["body", "k"], "msg": "over max_k", "type": "k_too_large"}],
        )
    if req.filter is not None:
        try:
            validate_filter(req.filter)
        except ConfigError as exc:
            raise ApiError(
                422,
                "invalid_filter",
                str(exc),
                [{"loc": ["body", "filter"], "msg": str(exc), "type": "invalid_filter"}],
            ) from None
    try:
        retriever = served.retriever(snap, req.method, dict(req.params))
        t0 = time.perf_counter()
        rankings = retriever.search_batch(
            queries, req.k, filter=req.filter, max_per_doc=req.max_per_doc
        )
        if is_default(req.method):  # say when the index lacks the default's parts
            fallback = default_choice(snap.index).info()
            for r in rankings:
                r.info.update(fallback)
        if req.explain:
            for r in rankings:
                r.explanations  # noqa: B018 - computed now, so the latency includes them
        ms = (time.perf_counter() - t0) * 1000
    except RequestError as exc:  # a valid request the index cannot serve as it stands: 409
        raise ApiError(
            409 if exc.kind == "missing_index_part" else 422, exc.kind, str(exc)
        ) from None
    except ConfigError as exc:  # a parameter only the search itself checks
        raise ApiError(422, "invalid_params", str(exc)) from None
    except HopgraphError as exc:
        raise ApiError(422, "search_failed", str(exc)) from None
    return retriever, round(ms, 3), rankings


def _hits(snap: Snapshot, ranking: Ranking, req: s.SearchOptions) -> list[dict[str, Any]]:
    corpus = snap.index.corpus
    whys = ranking.explanations if req.explain else None
    out = []
    for i, (pid, score) in enumerate(zip(ranking.ids, ranking.scores, strict=True)):
        hit: dict[str, Any] = {"id": pid, "score": score if math.isfinite(score) else None}
        if whys is not None:
            hit["why"] = jsonable(whys[i])
        if req.passages:
            p = corpus.get(pid)
            hit["title"], hit["text"] = p.title, p.text
            hit["metadata"] = jsonable(p.metadata)
        out.append(hit)
    return out


async def _within_deadline(settings: Settings, work: Any) -> Any:
    """Run a search on a worker thread and answer 503 once it passes the server's
    max_search_seconds. A Python thread cannot be stopped: the search is abandoned (its result
    dropped) and runs to its end, which the parameter bounds keep short."""
    try:
        with anyio.fail_after(settings.max_search_seconds):
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except TimeoutError:
        raise ApiError(
            503,
            "search_timeout",
            f"the search took longer than this server's limit of {settings.max_search_seconds:g} "
            "s (max_search_seconds) and was abandoned; ask for less (a smaller k, depth or "
            "budget), or another method",
        ) from None


def _update(
    served: ServedIndex, add: list[Passage] | None = None, delete: list[str] | None = None
) -> dict[str, Any]:
    try:
        result = served.update(add=add or [], delete=delete or [])
    except DuplicateIdError as exc:
        raise ApiError(409, "duplicate_ids", str(exc), [{"ids": exc.ids[:20]}]) from None
    except UnknownIdError as exc:
        raise ApiError(404, "unknown_ids", str(exc), [{"ids": exc.ids[:20]}]) from None
    except NotWriterError as exc:
        raise ApiError(409, "not_the_writer", str(exc)) from None
    except BuildPendingError as exc:  # a staged build is encoding the passage vectors
        raise ApiError(409, "index_building", str(exc)) from None
    except UpdateError as exc:
        raise ApiError(409, "update_refused", str(exc)) from None
    except CorpusError as exc:
        raise ApiError(422, "invalid_passage", str(exc)) from None
    except StorageError as exc:  # nothing changed: the served generation is still on disk
        raise ApiError(507, "insufficient_storage", str(exc)) from None
    except HopgraphError as exc:  # e.g. a part that cannot be updated in place
        raise ApiError(409, "update_unsupported", str(exc)) from None
    return {
        "added": result.added,
        "deleted": result.deleted,
        "passages": result.passages,
        "generation": result.generation,
        "seconds": round(result.seconds, 4),
    }


def _method_info(name: str, snap: Snapshot, served: ServedIndex) -> dict[str, Any]:
    cls = method_class(name)
    bounds = param_bounds(cls.Params)
    fixed = served.method_params.get(name, {})
    server_only = server_only_options(cls.Params)
    try:
        parts = list(method_parts(name, fixed))
    except HopgraphError:  # e.g. a method that needs model=FOLDER
        parts = list(cls.parts_for(cls.Params()))
    return {
        "name": name,
        "default": name == DEFAULT_METHOD,
        "summary": cls.summary,
        "parts": parts,
        "available": all(snap.index.has(p) for p in parts),
        "params": [
            {
                "name": opt,
                "type": tp,
                "default": jsonable(default),
                "help": help_,
                "server_only": opt in server_only,
                "max": bounds.get(opt),
            }
            for opt, tp, default, help_ in describe_options(cls.Params)
        ],
        "server_params": jsonable(fixed),
    }
