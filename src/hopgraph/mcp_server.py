"""``hopgraph mcp``: one index folder served to AI agents over the Model Context Protocol (stdio).

Two read-only tools: ``search`` (the k best passages for a query, each with how it was reached)
and ``get_passage`` (one passage by id). The index is loaded at start; a retriever is built on
first use for each (method, parameters) and kept. Nothing here writes to the index: additions
and deletions go through ``hopgraph add``/``delete`` or the HTTP server, and the server follows
them as ``hopgraph serve`` does: a tool call that comes at least ``reload_interval`` seconds
after the last check looks at the folder's manifest and, when another process has committed a
new generation, serves it (only the deltas committed since are replayed) before answering.

Without a method, searches use the default method, or on an index without its parts the best
method the index has the parts for (:func:`~hopgraph.retrieve.base.default_choice`); the start
line on stderr and the search tool's description say which, with the ``hopgraph add-parts``
command that gives the full default.

The tools' parameter descriptions name the index's methods, so the annotations are evaluated
when the tools are made (no ``from __future__ import annotations`` here).

stdout carries the protocol and nothing else: log records go to stderr, and while the index
and the first retriever load, stdout (the file descriptor, so C libraries too) points at stderr.
"""

import logging
import math
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from hopgraph import __version__
from hopgraph.errors import HopgraphError
from hopgraph.filters import FILTER_OPERATORS
from hopgraph.index import Index
from hopgraph.index.store import manifest_digest
from hopgraph.jsonable import jsonable
from hopgraph.retrieve.crowding import DEFAULT_MAX_PER_DOC
from hopgraph.retrieve.ranking import why_text
from hopgraph.retrieve.registry import (
    DEFAULT_METHOD,
    DefaultChoice,
    Retriever,
    default_choice,
    get_retriever,
    is_default,
    method_class,
    supported_methods,
)

MAX_K = 100
"""Most hits one search returns (an agent's context is the limit, not the index)."""
MAX_QUERY_CHARS = 2000
"""Longest query accepted, in characters."""
RELOAD_INTERVAL = 1.0
"""Least seconds between two looks for a generation committed by another process."""

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


class SearchHit(BaseModel):
    """One passage of a ranking."""

    id: str = Field(description="passage id (get_passage takes it)")
    title: str
    text: str
    score: float | None = Field(description="the method's score (higher is better)")
    rank: int = Field(description="1 for the best hit")
    metadata: dict[str, Any] = Field(description="the passage's metadata (what filter matches)")
    why: str = Field(
        description="how the hit was reached, in words (the default method), or "
        "the signals of its score (other methods)"
    )


class SearchResult(BaseModel):
    """A ranking: the best passages for the query, best first."""

    query: str
    method: str = Field(description="the method that ranked the hits")
    k: int
    hits: list[SearchHit]
    crowded_out: int = Field(
        0,
        description="hits skipped because their document already had max_per_doc in the list",
    )
    note: str = Field(
        "",
        description="why another method than the default ranked the hits (a partial index), "
        "and the command that adds the default's parts; empty otherwise",
    )


class PassageResult(BaseModel):
    """One passage of the index."""

    id: str
    title: str
    text: str
    metadata: dict[str, Any]


class IndexTools:
    """What the tools do, over one loaded index: searches with retrievers kept per (method,
    parameters), and passages by id. ``method`` is used when a search names none (None: the
    default, or the best method a partial index has the parts for); ``params`` are its
    parameters (other methods run with their defaults). Raises
    :class:`~hopgraph.errors.ConfigError` at once for an unknown method or parameter, or a
    method named explicitly whose index parts are missing. ``reload_interval`` > 0: follow the
    generations other processes commit to the index's folder (0: never)."""

    def __init__(
        self,
        index: Index,
        method: str | None = None,
        params: Mapping[str, Any] | None = None,
        reload_interval: float = RELOAD_INTERVAL,
    ):
        self.index = index
        self.requested = None if is_default(method) else method_class(method).name
        self.params = dict(params or {})
        self.reload_interval = reload_interval
        self._retrievers: dict[tuple[str, tuple[tuple[str, str], ...]], Retriever] = {}
        self._lock = threading.Lock()
        self._checked = time.monotonic()
        self.choice: DefaultChoice = default_choice(index)
        self.retriever(None)  # check the method and its parameters now, not on the first call

    @property
    def method(self) -> str:
        """The method of a search that names none."""
        return self.requested or self.choice.method

    def follow(self) -> bool:
        """Serve the generation in the index's folder if another process committed one since
        (looked at most every ``reload_interval`` seconds); True if it changed."""
        path = self.index.path
        if path is None or self.reload_interval <= 0:
            return False
        if time.monotonic() - self._checked < self.reload_interval:
            return False
        with self._lock:
            self._checked = time.monotonic()
            try:
                digest = manifest_digest(path)
            except OSError:  # the folder is being replaced this instant: next time
                return False
            if digest is None or digest == self.index.manifest_digest:
                return False
            self.index = self.index.reloaded()
            self.choice = default_choice(self.index)
            self._retrievers.clear()
        print(
            f"hopgraph mcp: generation {self.index.generation} of {path} ({len(self.index)} "
            "passages)",
            file=sys.stderr,
            flush=True,
        )
        return True

    def retriever(self, method: str | None) -> Retriever:
        """The retriever of ``method`` (None: the server's method; ``"default"``: hopgraph's
        default method, or the best method a partial index has the parts for), built on first
        use."""
        if method is None:
            name = self.method
        elif is_default(method):
            name = self.choice.method
        else:
            name = method_class(method).name
        params = self.params if name == self.method else {}
        key = (name, tuple(sorted((k, str(v)) for k, v in params.items())))
        with self._lock:  # one build per key (once); the searches run outside the lock
            r = self._retrievers.get(key)
            if r is None:
                r = get_retriever(self.index, name, **params)
                self._retrievers[key] = r
        return r

    def available_methods(self) -> list[str]:
        """The methods this index has the parts for (with their default parameters)."""
        return supported_methods(self.index)

    def search(
        self,
        query: str,
        k: int = 10,
        method: str | None = None,
        filter: dict[str, Any] | None = None,
        max_per_doc: int | None = None,
    ) -> SearchResult:
        if not query.strip():
            raise ToolError("the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise ToolError(f"a query of {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
        if isinstance(k, bool) or not 1 <= k <= MAX_K:
            raise ToolError(f"k must be between 1 and {MAX_K}, got {k!r}")
        self.follow()
        try:
            retriever = self.retriever(method)
            ranking = retriever.search(query, k, filter=filter, max_per_doc=max_per_doc)
            whys = ranking.explanations
        except HopgraphError as exc:  # unknown method, missing part, bad filter: for the agent
            raise ToolError(str(exc)) from None
        corpus = retriever.index.corpus  # the generation that ranked (another may follow)
        hits = []
        for rank, (pid, score, why) in enumerate(
            zip(ranking.ids, ranking.scores, whys, strict=True), start=1
        ):
            p = corpus.get(pid)
            hits.append(
                SearchHit(
                    id=pid,
                    title=p.title,
                    text=p.text,
                    score=score if math.isfinite(score) else None,
                    rank=rank,
                    metadata=jsonable(p.metadata),
                    why=why_text(why),
                )
            )
        crowded = int(ranking.info.get("crowded_out", 0))
        chose = self.requested is None if method is None else is_default(method)
        note = self.choice.note if chose else ""  # a search that named no method
        return SearchResult(
            query=query, method=retriever.name, k=k, hits=hits, crowded_out=crowded, note=note
        )

    def get_passage(self, id: str) -> PassageResult:
        self.follow()
        corpus = self.index.corpus
        if id not in corpus:
            raise ToolError(f"no passage with id {id!r} in this index (ids come from search hits)")
        p = corpus.get(id)
        return PassageResult(id=p.id, title=p.title, text=p.text, metadata=jsonable(p.metadata))


def create_server(tools: IndexTools) -> MCPServer:
    """An MCP server with the ``search`` and ``get_passage`` tools over ``tools``."""
    index, own = tools.index, tools.method
    others = [m for m in tools.available_methods() if m != own]
    server = MCPServer(
        "hopgraph",
        version=__version__,
        instructions=(
            f"Retrieval over a hopgraph index of {len(index)} passages. Call `search` with a "
            "question to get the passages that answer it (multi-hop questions included: one "
            "call returns the bridge passage and the answer passage), then `get_passage` to "
            "re-read one by id. Read-only: this server cannot add or delete passages."
        ),
        log_level="WARNING",
    )

    def search(
        query: Annotated[
            str, Field(description=f"the question or keywords, at most {MAX_QUERY_CHARS} chars")
        ],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="how many passages")] = 10,
        method: Annotated[
            str | None,
            Field(
                description=f"another retrieval method: {', '.join(others) or 'none'}; "
                f"omit for {own}"
            ),
        ] = None,
        filter: Annotated[
            dict[str, Any] | None,
            Field(
                description="only passages whose metadata match, e.g. "
                '{"year": {"$gte": 2020}, "lang": {"$in": ["en"]}}'
            ),
        ] = None,
        max_per_doc: Annotated[
            int | None,
            Field(
                ge=0,
                description="at most this many passages of one document (the chunks of one "
                f"file); 0: no limit; omit for the default ({DEFAULT_MAX_PER_DOC} on an index "
                "of documents, no limit on one of passages)",
            ),
        ] = None,
    ) -> SearchResult:
        return tools.search(query, k, method, filter, max_per_doc)

    def get_passage(
        id: Annotated[str, Field(description="a passage id from a search hit")],
    ) -> PassageResult:
        return tools.get_passage(id)

    server.add_tool(
        search,
        title="Search the index",
        description=_search_description(tools, others),
        annotations=READ_ONLY,
    )
    server.add_tool(
        get_passage,
        title="Read one passage",
        description="The full passage with this id (an id from a `search` hit): id, title, "
        "text and metadata. An unknown id is an error.",
        annotations=READ_ONLY,
    )
    return server


def _search_description(tools: IndexTools, others: list[str]) -> str:
    cls = method_class(tools.method)
    lines = [
        f"Search the {len(tools.index)} passages of this index; returns the k best (default "
        f"10, at most {MAX_K}), best first, each with id, title, text, score, rank, metadata "
        "and `why`: how it was reached, in words.",
        "",
        f"Method `{cls.name}`: {cls.summary}.",
    ]
    if tools.requested is None and tools.choice.partial and tools.choice.works:
        lines.append(f"(The index lacks the default's parts: {tools.choice.note}.)")
    if cls.name == DEFAULT_METHOD:
        lines.append(
            "It is multi-hop retrieval without an LLM: besides the passages that match the "
            "question, it ranks the passages one hop away (the page of an entity a first hit "
            "mentions, passages matching the question rewritten through a first hit), so a "
            "two-hop question ('Who founded the company that built X?') gets both the bridge "
            "and the answer passage from one call. Runs in milliseconds on a CPU."
        )
    lines += [
        "",
        "`filter` keeps the passages whose metadata match: a field equal to a value, or "
        f"operators {' '.join(FILTER_OPERATORS)} on a field, $and $or $not to combine.",
        "`max_per_doc` caps the passages of one document (several chunks of one page would "
        "otherwise fill the list); 0 shows them all.",
        f"`method` picks another method: {', '.join(others) or 'none on this index'}.",
    ]
    return "\n".join(lines)


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send what is written to stdout (``sys.stdout`` and file descriptor 1) to stderr for the
    duration: a model loading, a library's warning must not reach the protocol stream."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    real = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = real
        os.dup2(saved, 1)
        os.close(saved)


def run_stdio(
    index_dir: str | Path, method: str | None = None, params: Mapping[str, Any] | None = None
) -> None:
    """Load ``index_dir``, then serve it over stdin/stdout until the client closes them."""
    if not logging.getLogger().handlers:  # log records to stderr, never stdout
        logging.basicConfig(
            stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s"
        )
    with stdout_to_stderr():
        index = Index.load(index_dir)
        tools = IndexTools(index, method, params)
        server = create_server(tools)
    print(
        f"hopgraph mcp: serving {index.path} ({len(index)} passages; method {tools.method}) "
        "over stdio",
        file=sys.stderr,
        flush=True,
    )
    if tools.requested is None and tools.choice.partial and tools.choice.works:
        print(f"hopgraph mcp: {tools.choice.note}", file=sys.stderr, flush=True)
    anyio.run(server.run_stdio_async)
