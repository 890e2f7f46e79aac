"""Named indexes served beside the default one (``hopgraph serve INDEX_DIR --indexes-dir DIR``).

Each named index is an ordinary index folder ``DIR/NAME``, served by its own
:class:`~hopgraph.serve.state.ServedIndex` (snapshots, writer role, reload watcher, background
compaction), so the routes of the default index serve it under ``/indexes/NAME/...``.
:class:`IndexRegistry` serves the folders it finds in ``DIR`` at startup, builds new ones
(``POST /indexes``: built in memory, then saved atomically) and drops them (``DELETE
/indexes/NAME``: no longer served, then the folder removed); :func:`indexes_router` gives those
routes and the list, ``GET /indexes``.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from fastapi import APIRouter, status
from pydantic import BaseModel, Field

from hopgraph.atomic import fsync_dir, writer_lock
from hopgraph.corpus import Corpus, Passage
from hopgraph.errors import ConfigError, CorpusError, HopgraphError, StorageError
from hopgraph.index import Index
from hopgraph.index.store import MANIFEST
from hopgraph.priority import lower_priority
from hopgraph.serve import schemas as s
from hopgraph.serve.jsonbody import StrictJSONRoute
from hopgraph.serve.problems import ApiError
from hopgraph.serve.process import cores
from hopgraph.serve.settings import Settings
from hopgraph.serve.state import ServedIndex

log = logging.getLogger("hopgraph.serve")

NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
_NAME = re.compile(NAME_PATTERN)
_DROPPED = ".dropped-"  # a dropped folder renamed aside, removed right after: .NAME.dropped-...


class RegistryError(HopgraphError):
    """A refused create, drop or lookup; ``kind`` says why (invalid_index_name, index_exists,
    too_many_indexes, unknown_index, not_the_writer)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def check_name(name: str) -> str:
    """``name`` if it may name an index (a folder of the indexes folder), else RegistryError."""
    if not _NAME.fullmatch(name):
        raise RegistryError(
            "invalid_index_name",
            "an index name is 1 to 64 letters, digits, '_', '.' or '-', starting with a letter "
            f"or a digit (^{NAME_PATTERN}$)",
        )
    return name


def build_index(passages: Sequence[Passage], parts: Sequence[str] | None = None) -> Index:
    """The index of ``passages`` with ``parts`` (None: the default method's), with the options
    detected from the titles, as ``hopgraph index`` builds it."""
    from hopgraph.defaults import default_build, detected_options

    corpus = Corpus(passages)
    if parts is None:
        names, options, detected = default_build(corpus)
    else:
        names = list(parts)
        options, detected = detected_options(corpus, names)
    index = Index(corpus)
    index.detected = detected
    index.add_parts(names, options, progress=False)
    return index


def summary(name: str, served: ServedIndex) -> dict[str, Any]:
    snap = served.snapshot
    return {
        "name": name,
        "passages": len(snap.index),
        "generation": snap.generation,
        "parts": list(snap.index.parts),
    }


class IndexRegistry:
    """The named indexes of the folder ``root``, each served by its own ServedIndex; a folder
    ``exclude`` (the default index, when it lies in ``root``) is not served again."""

    def __init__(self, root: str | Path, settings: Settings, exclude: Path | None = None):
        self.root = Path(root).expanduser().resolve()
        self.exclude = exclude
        self.settings = settings
        self._lock = threading.Lock()
        self._served: dict[str, ServedIndex] = {}
        self._building: set[str] = set()  # names reserved by a create in progress
        # creates build on these threads, at the writer's niceness, as updates do
        self._builders = ThreadPoolExecutor(
            cores(),
            thread_name_prefix="hopgraph-build",
            initializer=partial(lower_priority, settings.writer_nice),
        )
        self.root.mkdir(parents=True, exist_ok=True)
        for leftover in self.root.glob(f".*{_DROPPED}*"):  # a drop interrupted by a crash
            shutil.rmtree(leftover, ignore_errors=True)
        names = self._found()
        if len(names) > settings.max_indexes:
            raise ConfigError(
                f"{self.root} holds {len(names)} indexes, more than max_indexes "
                f"({settings.max_indexes}): raise --max-indexes"
            )
        try:
            for name in names:
                try:
                    self._served[name] = ServedIndex(self.root / name, settings)
                except HopgraphError as exc:
                    raise HopgraphError(f"named index {name!r} in {self.root}: {exc}") from exc
        except BaseException:
            self.close()
            raise

    def _found(self) -> list[str]:
        names = []
        for p in sorted(self.root.iterdir()):
            if not p.is_dir() or not _NAME.fullmatch(p.name) or p == self.exclude:
                continue
            if (p / MANIFEST).is_file():
                names.append(p.name)
            else:
                log.warning("%s is not an index folder (no %s): not served", p, MANIFEST)
        return names

    # -- lookups ----------------------------------------------------------------------------
    def get(self, name: str) -> ServedIndex:
        served = self._served.get(name)
        if served is None:
            raise RegistryError("unknown_index", f"no index named {name!r} (GET /indexes)")
        return served

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._served)

    def summaries(self) -> list[dict[str, Any]]:
        with self._lock:
            items = sorted(self._served.items())
        return [summary(name, served) for name, served in items]

    # -- creating and dropping --------------------------------------------------------------
    def create(
        self, name: str, passages: Sequence[Passage], parts: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """Build the index ``name`` of ``passages`` (on a builder thread at the writer's
        niceness), save it in its folder and serve it."""
        path = self.root / check_name(name)
        self._reserve(name, path)
        try:
            t0 = time.perf_counter()
            index = self._builders.submit(build_index, passages, parts).result()
            with writer_lock(path):
                if os.path.lexists(path):  # another process made it meanwhile
                    raise RegistryError("index_exists", f"{path} already exists")
                index.save(path)
            served = ServedIndex(path, self.settings)
            with self._lock:
                self._served[name] = served
        finally:
            with self._lock:
                self._building.discard(name)
        log.info("index %r created in %s (%d passages)", name, path, len(index))
        return {**summary(name, served), "seconds": round(time.perf_counter() - t0, 4)}

    def _reserve(self, name: str, path: Path) -> None:
        if self.settings.role == "reader":
            raise RegistryError(
                "not_the_writer", "this server only reads (--role reader): it creates no index"
            )
        with self._lock:
            if name in self._served or name in self._building or os.path.lexists(path):
                raise RegistryError("index_exists", f"an index named {name!r} already exists")
            if len(self._served) + len(self._building) >= self.settings.max_indexes:
                raise RegistryError(
                    "too_many_indexes",
                    f"this server serves at most {self.settings.max_indexes} named indexes "
                    "(max_indexes): drop one first",
                )
            self._building.add(name)

    def drop(self, name: str) -> dict[str, Any]:
        """Stop serving the index ``name`` and remove its folder."""
        with self._lock:
            served = self.get(name)
            if served.role != "writer":
                raise RegistryError(
                    "not_the_writer",
                    f"this server only reads {served.path}; its writer is {served.writer()}: "
                    "drop it there",
                )
            del self._served[name]
        about = summary(name, served)
        served.close()  # no more reloads, compactions or updates; the writer role given up
        aside = self.root / f".{name}{_DROPPED}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        with writer_lock(served.path):  # after any update in flight
            if served.path.exists():
                os.rename(served.path, aside)
                fsync_dir(self.root)
        shutil.rmtree(aside, ignore_errors=True)
        served.writer_role.file.unlink(missing_ok=True)  # given up by close(); the lock stays
        log.info("index %r dropped (%s removed)", name, served.path)
        return about

    def close(self) -> None:
        """Stop serving every named index (their watchers, their writer roles)."""
        with self._lock:
            served, self._served = list(self._served.values()), {}
        for one in served:
            one.close()
        self._builders.shutdown(wait=True)


# -- routes ---------------------------------------------------------------------------------
STATUS = {
    "invalid_index_name": 422,
    "index_exists": 409,
    "too_many_indexes": 409,
    "unknown_index": 404,
    "not_the_writer": 409,
}


def api_error(exc: RegistryError) -> ApiError:
    return ApiError(STATUS[exc.kind], exc.kind, str(exc))


class IndexSummary(BaseModel):
    name: str
    passages: int
    generation: int = Field(description="the index generation served")
    parts: list[str]


class IndexList(BaseModel):
    indexes: list[IndexSummary] = Field(description="by name")
    max_indexes: int = Field(description="the most named indexes this server serves")


class CreatedIndex(IndexSummary):
    seconds: float = Field(description="time to build, save and load the index")


class CreateIndexRequest(s.Strict):
    name: str = Field(
        description=f"the index's name (^{NAME_PATTERN}$); its routes are /indexes/NAME/...",
        # checked by check_name (422 invalid_index_name), stated here for the schema
        json_schema_extra={"pattern": f"^{NAME_PATTERN}$", "minLength": 1, "maxLength": 64},
    )
    passages: list[s.PassageIn] = Field(min_length=1, description="at most max_create passages")
    parts: list[str] | None = Field(
        None, description="index parts to build (default: those the default method needs)"
    )


def _errors(**codes: str) -> dict[int | str, dict[str, Any]]:
    out = {int(c[1:]): {"model": s.ErrorResponse, "description": d} for c, d in codes.items()}
    out[500] = {"model": s.ErrorResponse, "description": "unexpected server error (logged)"}
    return out


def indexes_router(registry: IndexRegistry) -> APIRouter:
    """``GET /indexes``, ``POST /indexes`` and ``DELETE /indexes/{name}``."""
    settings = registry.settings
    router = APIRouter(route_class=StrictJSONRoute, strict_content_type=False)

    @router.get("/indexes", response_model=IndexList, summary="List the named indexes")
    def list_indexes() -> dict[str, Any]:
        return {"indexes": registry.summaries(), "max_indexes": settings.max_indexes}

    @router.post(
        "/indexes",
        status_code=status.HTTP_201_CREATED,
        response_model=CreatedIndex,
        responses=_errors(
            e400="body not valid UTF-8 or JSON",
            e409="the name is taken, max_indexes reached, duplicate ids, or a reader",
            e413="body over max_body_bytes",
            e415="body not application/json",
            e422="invalid request (the name, a passage, the parts, over max_create)",
            e507="no space left to write the index (nothing changed)",
        ),
        summary="Create a named index",
        description="Builds an index of the passages with `parts` (default: the default "
        "method's), saves it atomically in the indexes folder and serves it under "
        "/indexes/NAME/...; answers when it is searchable.",
    )
    def create_index(req: CreateIndexRequest) -> dict[str, Any]:  # sync: a worker thread
        if len(req.passages) > settings.max_create:
            raise ApiError(
                422,
                "too_many_passages",
                f"{len(req.passages)} passages in one request; the limit is "
                f"{settings.max_create} (max_create): create the index with fewer, then add "
                "the others with POST /indexes/NAME/passages",
            )
        if req.parts is not None and not req.parts:
            raise ApiError(422, "invalid_parts", "parts: name at least one part, or omit it")
        twice = sorted(i for i, n in Counter(p.id for p in req.passages).items() if n > 1)
        if twice:
            raise ApiError(
                409, "duplicate_ids", f"passage ids given twice: {twice[:5]}", [{"ids": twice[:20]}]
            )
        passages = [Passage(p.id, p.title, p.text, p.metadata) for p in req.passages]
        try:
            return registry.create(req.name, passages, req.parts)
        except RegistryError as exc:
            raise api_error(exc) from None
        except CorpusError as exc:
            raise ApiError(422, "invalid_passage", str(exc)) from None
        except ConfigError as exc:  # an unknown part, options that do not fit
            raise ApiError(422, "invalid_parts", str(exc)) from None
        except StorageError as exc:
            raise ApiError(507, "insufficient_storage", str(exc)) from None
        except HopgraphError as exc:
            raise ApiError(422, "build_failed", str(exc)) from None

    @router.delete(
        "/indexes/{name}",
        response_model=IndexSummary,
        responses=_errors(e404="unknown index", e409="this server does not write it"),
        summary="Drop a named index",
        description="Stops serving the index and removes its folder; answers what it held.",
    )
    def drop_index(name: str) -> dict[str, Any]:
        try:
            return registry.drop(name)
        except RegistryError as exc:
            raise api_error(exc) from None

    return router
