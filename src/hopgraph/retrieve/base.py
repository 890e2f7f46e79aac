"""The retriever interface and the registry that finds methods by name."""

from __future__ import annotations

import contextlib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict
from typing import Any, ClassVar

import numpy as np

from hopgraph.config import make_options
from hopgraph.errors import ConfigError, HopgraphError
from hopgraph.filters import matching_rows
from hopgraph.index import Index
from hopgraph.index.store import missing_parts_message
from hopgraph.retrieve.ranking import Ranking

_ALLOWED: ContextVar[np.ndarray | None] = ContextVar("hopgraph_allowed_rows", default=None)


def allowed_rows() -> np.ndarray | None:
    """The boolean row mask of the search under way when it has a metadata filter (else
    None). Methods that filter natively (``filters_natively``) read it; it is per thread and
    per task, so concurrent searches with different filters do not see each other's."""
    return _ALLOWED.get()


@contextmanager
def _allowing(mask: np.ndarray | None) -> Iterator[None]:
    token = _ALLOWED.set(mask)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def unfiltered() -> contextlib.AbstractContextManager[None]:
    """A block in which :func:`allowed_rows` is None: for a stage that must see every passage
    (a method's seeds or bridges) while the search as a whole is filtered."""
    return _allowing(None)


def masked(scores: np.ndarray, allowed: np.ndarray | None, fill: float = -np.inf) -> np.ndarray:
    """``scores`` with the rows outside ``allowed`` set to ``fill`` (0 for rankings of positive
    scores only), for a final ``top_k``; unchanged without a filter."""
    return scores if allowed is None else np.where(allowed, scores, fill)


class Retriever(ABC):
    """A search method over an :class:`Index`. Subclasses declare ``name``, ``Params`` (an options
    dataclass, see :mod:`hopgraph.config`), the index parts they ``requires``, and whether they
    encode the query densely (then :meth:`search_batch` encodes all queries in one pass)."""

    name: ClassVar[str]
    Params: ClassVar[type]
    requires: ClassVar[tuple[str, ...]] = ("sparse",)
    uses_dense: ClassVar[bool] = False
    summary: ClassVar[str] = ""
    filters_natively: ClassVar[bool] = False
    """True when the method applies :func:`allowed_rows` itself (its ranking restricted to the
    matching passages, or candidates drawn from them first); otherwise a filtered search asks
    the method for a deeper ranking until it holds ``k`` matching passages."""

    def __init__(self, index: Index, params: Any):
        missing = index.missing(self.parts_for(params))
        if missing:  # one message naming every missing part and the command that adds them
            raise ConfigError(missing_parts_message(index, missing, self.name))
        self.index = index
        self.params = params
        self.ids = index.corpus.ids

    @classmethod
    def parts_for(cls, params: Any) -> tuple[str, ...]:
        """The index parts this method needs with ``params`` (by default ``requires``)."""
        return cls.requires

    def search(self, query: str, k: int = 10, filter: dict[str, Any] | None = None) -> Ranking:
        """The ``k`` best passages for ``query``; with ``filter`` (see :mod:`hopgraph.filters`),
        the best among the passages whose metadata match it."""
        return self.search_batch([query], k, filter=filter)[0]

    def search_batch(
        self, queries: Sequence[str], k: int = 10, filter: dict[str, Any] | None = None
    ) -> list[Ranking]:
        """Search several queries; dense methods encode them together (faster per query).
        ``filter`` restricts every query's hits to the passages whose metadata match it."""
        if isinstance(queries, str):
            raise TypeError("search_batch takes a list of queries; use search() for one")
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ConfigError(f"k must be a positive integer, got {k!r}")
        for q in queries:
            if not isinstance(q, str) or not q.strip():
                raise HopgraphError(f"empty query: {q!r}")
        allowed = matching_rows(self.index.corpus, filter)
        if not queries:
            return []
        n_allowed = len(self.ids) if allowed is None else int(allowed.sum())
        if allowed is not None and n_allowed == len(self.ids):
            allowed = None  # every passage matches: the unfiltered search
        k = min(int(k), n_allowed)
        if k == 0:  # nothing matches the filter
            return [self._ranking(q, np.zeros(0, np.int64), np.zeros(0)) for q in queries]
        qvecs: Sequence[np.ndarray | None]
        if self.uses_dense:
            qvecs = self.index.part("dense").encode_queries(list(queries))
        else:
            qvecs = [None] * len(queries)
        if allowed is None:
            return self._search_many(list(queries), k, qvecs)
        if self.filters_natively:
            with _allowing(allowed):
                out = self._search_many(list(queries), k, qvecs)
        else:
            out = self._deepened(list(queries), k, qvecs, allowed, n_allowed)
        for r in out:
            r.info["filter_matches"] = n_allowed
        return out

    def _deepened(
        self,
        queries: list[str],
        k: int,
        qvecs: Sequence[np.ndarray | None],
        allowed: np.ndarray,
        n_allowed: int,
    ) -> list[Ranking]:
        """The method's own ranking restricted to the ``allowed`` rows: asked for deep enough
        that ``k`` of its hits match (about k·n/matches, doubled), and deeper while short."""
        n = len(self.ids)
        depth = min(n, max(2 * k, math.ceil(2 * k * n / n_allowed)))
        out: list[Ranking | None] = [None] * len(queries)
        todo = list(range(len(queries)))
        while todo:
            got = self._search_many([queries[i] for i in todo], depth, [qvecs[i] for i in todo])
            short = []
            for i, r in zip(todo, got, strict=True):
                keep = allowed[r.rows]  # every ranking is made by _ranking, with its rows
                if int(keep.sum()) >= k or len(r.ids) < depth or depth >= n:
                    out[i] = r.restricted(keep, k)
                else:
                    short.append(i)
            todo, depth = short, min(n, depth * 4)
        return [r for r in out if r is not None]

    def _search_many(
        self, queries: list[str], k: int, qvecs: Sequence[np.ndarray | None]
    ) -> list[Ranking]:
        """Validated queries with their embeddings; methods with a batched path override this."""
        return [self._search(q, k, v) for q, v in zip(queries, qvecs, strict=True)]

    @abstractmethod
    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        """One query; ``qvec`` is its unit embedding when ``uses_dense``."""

    def _ranking(
        self,
        query: str,
        rows: np.ndarray,
        scores: np.ndarray,
        explain: Callable[[], list[dict[str, Any]]] | None = None,
        info: dict[str, Any] | None = None,
    ) -> Ranking:
        ids = self.ids
        rows = np.asarray(rows, np.int64)
        return Ranking(
            query=query,
            method=self.name,
            ids=[ids[r] for r in rows.tolist()],
            scores=[float(s) for s in scores],
            info=info or {},
            explain=explain,
            rows=rows,
        )

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "params": asdict(self.params)}


_METHODS: dict[str, type[Retriever]] = {}

DEFAULT_METHOD = "multihop"
"""The method used when none is named (``--method default`` and ``"default"`` mean it too)."""
DEFAULT_ALIAS = "default"


def resolve_method_name(name: str | None) -> str:
    """``None`` and ``"default"`` → :data:`DEFAULT_METHOD`; any other name unchanged."""
    return DEFAULT_METHOD if name is None or name == DEFAULT_ALIAS else name


def register_method(cls: type[Retriever]) -> type[Retriever]:
    """Class decorator: make a retriever available by name (API, CLI, eval)."""
    _METHODS[cls.name] = cls
    return cls


def _load_builtin_methods() -> None:
    from hopgraph.retrieve import (  # noqa: F401
        dense,
        fastinsight,
        fusion,
        graph,
        grapher,
        griever,
        multihop,
        sparse,
    )


def method_class(name: str | None) -> type[Retriever]:
    """The class of method ``name`` (None or ``"default"``: the recommended default)."""
    _load_builtin_methods()
    name = resolve_method_name(name)
    try:
        return _METHODS[name]
    except KeyError:
        raise ConfigError(
            f"unknown method {name!r}; available: {', '.join(sorted(_METHODS))}"
        ) from None


def list_methods() -> list[str]:
    """Names of every registered retrieval method."""
    _load_builtin_methods()
    return sorted(_METHODS)


def method_parts(name: str | None, params: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The index parts method ``name`` needs with ``params``."""
    cls = method_class(name)
    return cls.parts_for(make_options(cls.Params, params or {}, what=f"method {cls.name!r}"))


def get_retriever(index: Index, name: str | None = None, **params: Any) -> Retriever:
    """The retriever ``name`` over ``index`` with ``params`` (CLI strings are converted);
    without a name (or with ``"default"``), the recommended default method."""
    cls = method_class(name)
    return cls(index, make_options(cls.Params, params, what=f"method {cls.name!r}"))
