"""The retriever interface, and the table that finds methods by name.

Method modules (:mod:`~hopgraph.retrieve.sparse`, :mod:`~hopgraph.retrieve.multihop`, ...)
import this module and define their :class:`Retriever` classes; this module imports none of
them. The one place that lists the built-in methods and puts them in the table is
:mod:`hopgraph.retrieve.registry`, which the package imports, so the table is full before any
lookup. The lookups live here because methods compose other methods by name (the graph
family's seeds, ``grapher``'s and ``fastinsight``'s ``base``, a short ranking's filler).
"""

from __future__ import annotations

import contextlib
import functools
import math
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from hopgraph.config import make_options
from hopgraph.errors import ConfigError, HopgraphError
from hopgraph.filters import matching_rows
from hopgraph.index import Index
from hopgraph.index.registry import available_parts as registered_parts
from hopgraph.index.store import missing_parts_message
from hopgraph.retrieve.crowding import Crowding, check_max_per_doc, crowding_for
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
    optional: ClassVar[tuple[str, ...]] = ()
    """Parts the method uses where the index has them and does without otherwise."""
    uses_dense: ClassVar[bool] = False
    summary: ClassVar[str] = ""
    filters_natively: ClassVar[bool] = False
    """True when the method applies :func:`allowed_rows` itself (its ranking restricted to the
    matching passages, or candidates drawn from them first); otherwise a filtered search asks
    the method for a deeper ranking until it holds ``k`` matching passages."""
    fill_from: ClassVar[str | None] = None
    """The method whose ranking continues this one's when it has fewer than ``k`` hits (its
    seed or first-stage ranking), before corpus order; None: corpus order alone."""
    fill_label: ClassVar[str] = "first-stage ranking"
    """What ``fill_from``'s ranking is to this method, in the explanations of filled hits."""
    default_fallback: dict[str, Any] | None = None
    """Set by :func:`get_retriever` when a search without a method falls back from
    :data:`DEFAULT_METHOD` to this method (:func:`default_choice`): every ranking's ``info``
    then holds it (``method``, ``default_fallback``)."""

    def __init__(self, index: Index, params: Any):
        missing = index.missing(self.parts_for(params))
        if missing:  # one message naming every missing part and the command that adds them
            also = index.missing(self.optional)
            raise ConfigError(missing_parts_message(index, missing, self.name, also))
        self.index = index
        self.params = params
        self.ids = index.corpus.ids

    @classmethod
    def parts_for(cls, params: Any) -> tuple[str, ...]:
        """The index parts this method needs with ``params`` (by default ``requires``)."""
        return cls.requires

    def search(
        self,
        query: str,
        k: int = 10,
        filter: dict[str, Any] | None = None,
        max_per_doc: int | None = None,
    ) -> Ranking:
        """The ``k`` best passages for ``query``; with ``filter`` (see :mod:`hopgraph.filters`),
        the best among the passages whose metadata match it; with ``max_per_doc`` N, at most N
        of one document (metadata ``doc_id``, see :mod:`hopgraph.retrieve.crowding`)."""
        return self.search_batch([query], k, filter=filter, max_per_doc=max_per_doc)[0]

    def search_batch(
        self,
        queries: Sequence[str],
        k: int = 10,
        filter: dict[str, Any] | None = None,
        max_per_doc: int | None = None,
    ) -> list[Ranking]:
        """Search several queries; dense methods encode them together (faster per query).
        ``filter`` restricts every query's hits to the passages whose metadata match it.
        ``max_per_doc``: at most that many hits of one document (0: no limit; None: the default,
        :data:`~hopgraph.retrieve.crowding.DEFAULT_MAX_PER_DOC` on an index of documents cut
        into passages, raised where they are too few for ``k`` hits, and no limit on any other
        index); the ranking is asked deeper so that it still holds ``k`` hits when the index has
        enough documents, and its ``info`` says the limit and the hits skipped for it."""
        if isinstance(queries, str):
            raise TypeError("search_batch takes a list of queries; use search() for one")
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ConfigError(f"k must be a positive integer, got {k!r}")
        max_per_doc = check_max_per_doc(max_per_doc)
        for q in queries:
            if not isinstance(q, str) or not q.strip():
                raise HopgraphError(f"empty query: {q!r}")
        allowed = matching_rows(self.index.corpus, filter)
        if not queries:
            return []
        n_allowed = len(self.ids) if allowed is None else int(allowed.sum())
        if allowed is not None and n_allowed == len(self.ids):
            allowed = None  # every passage matches: the unfiltered search
        crowding = crowding_for(self.index.corpus, max_per_doc)
        n_keep = n_allowed  # the most hits a ranking can keep
        if crowding is not None:
            crowding = crowding.filling(min(int(k), n_allowed), allowed)
            if crowding.docs.largest <= crowding.cap:  # no document can crowd: the plain search
                out = self.search_batch(queries, k, filter=filter, max_per_doc=0)
                for r in out:
                    r.info.update(crowding.info(0))
                return out
            n_keep = crowding.docs.capacity(crowding.cap, allowed)
        k = min(int(k), n_keep)
        if k == 0:  # nothing matches the filter
            return [self._ranking(q, np.zeros(0, np.int64), np.zeros(0)) for q in queries]
        qvecs: Sequence[np.ndarray | None]
        if self.uses_dense:
            qvecs = self.index.part("dense").encode_queries(list(queries))
        else:
            qvecs = [None] * len(queries)
        queries = list(queries)
        if allowed is None and crowding is None:
            return self._complete(queries, k, qvecs)
        if allowed is not None and self.filters_natively:
            with _allowing(allowed):  # the method's rankings hold only allowed passages
                if crowding is None:
                    out = self._complete(queries, k, qvecs)
                else:
                    out = self._deepened(queries, k, qvecs, crowding.apply, n_allowed, n_keep)
        else:
            keep = _keeper(allowed, crowding)
            out = self._deepened(queries, k, qvecs, keep, len(self.ids), n_keep)
        if allowed is not None:
            for r in out:
                r.info["filter_matches"] = n_allowed
        return out

    def _deepened(
        self,
        queries: list[str],
        k: int,
        qvecs: Sequence[np.ndarray | None],
        keep: Callable[[Ranking, int], Ranking],
        n: int,
        n_keep: int,
    ) -> list[Ranking]:
        """The method's rankings cut to ``k`` hits by ``keep`` (a ranking and ``k`` → its first
        ``k`` hits that a filter or a per-document limit keeps; fewer when it holds fewer):
        asked deep enough that ``k`` of its hits are kept (about k·n/n_keep, doubled, of the
        ``n`` passages a ranking can hold), and deeper while short (at once to all ``n`` when
        the method's own hits ran out and were filled)."""
        depth = min(n, max(2 * k, math.ceil(2 * k * n / max(n_keep, 1))))
        out: list[Ranking | None] = [None] * len(queries)
        todo = list(range(len(queries)))
        while todo:
            got = self._complete([queries[i] for i in todo], depth, [qvecs[i] for i in todo])
            short, filled = [], False
            for i, r in zip(todo, got, strict=True):
                kept = keep(r, k)
                if len(kept) >= k or len(r.ids) < depth or depth >= n:
                    out[i] = kept
                else:
                    short.append(i)
                    filled = filled or bool(r.info.get("filled"))
            todo, depth = short, n if filled else min(n, depth * 4)
        return [r for r in out if r is not None]

    def _complete(
        self, queries: list[str], k: int, qvecs: Sequence[np.ndarray | None]
    ) -> list[Ranking]:
        """The method's rankings, each with ``k`` hits: one with fewer is filled
        (:meth:`_filled`). ``k`` is at most the number of passages the search may return."""
        out = self._search_many(queries, k, qvecs)
        return [
            r if len(r) >= k else self._filled(r, k, v) for r, v in zip(out, qvecs, strict=True)
        ]

    def fill_source(self) -> tuple[str, Retriever] | None:
        """What continues a short ranking before corpus order: its label for explanations and
        its retriever (by default ``fill_from``'s, built once); None: corpus order alone."""
        if self.fill_from is None:
            return None
        filler: Retriever | None = self.__dict__.get("_filler")
        if filler is None:
            filler = self._filler = get_retriever(self.index, self.fill_from)
        return self.fill_label, filler

    def _filled(self, r: Ranking, k: int, qvec: np.ndarray | None) -> Ranking:
        """``r`` continued to ``k`` hits, never repeating a passage and only with passages the
        search's filter allows: first the :meth:`fill_source` ranking, then corpus order; scores
        below ``r``'s last, each filled hit's explanation says so (``filled``)."""
        allowed = allowed_rows()
        free = np.ones(len(self.ids), bool) if allowed is None else allowed.copy()
        assert r.rows is not None  # every ranking is made by _ranking, with its rows
        free[r.rows] = False
        need = k - len(r)
        after = f"after {self.name}'s {len(r)} hit{'' if len(r) == 1 else 's'}"
        first = np.zeros(0, np.int64)
        notes: list[dict[str, Any]] = []
        source = self.fill_source()
        if source is not None:
            label, filler = source
            first = _free_rows(filler, r.query, qvec, free, need)
            free[first] = False
            label = f"{label} ({filler.name})"
            notes = [{"filled": f"{label}, {after}"} for _ in first.tolist()]
            if len(first):
                after += f" and {len(first)} from its {label}"
        rest = np.flatnonzero(free)[: need - len(first)]
        notes += [{"filled": f"corpus order, {after}"} for _ in rest.tolist()]
        rows = np.concatenate([first, rest])
        return r.extended([self.ids[i] for i in rows.tolist()], rows, notes)

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
            info={**(info or {}), **(self.default_fallback or {})},
            explain=explain,
            rows=rows,
        )

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "params": asdict(self.params)}

    def trusted(self) -> str:
        """In words, which signals the ranking trusts on this index, where that depends on the
        corpus ("" where the method fixes it): ``hopgraph eval`` prints it beside the table."""
        return ""


def _free_rows(
    filler: Retriever, query: str, qvec: np.ndarray | None, free: np.ndarray, need: int
) -> np.ndarray:
    """The first ``need`` rows of ``filler``'s unfiltered ranking of ``query`` that are
    ``free`` (a boolean row mask), asked deeper while it holds too few of them."""
    n = len(free)
    if filler.uses_dense and qvec is None:
        qvec = filler.index.part("dense").encode_queries([query])[0]
    depth = min(n, max(2 * need, math.ceil(2 * need * n / max(int(free.sum()), 1))))
    with unfiltered():
        while True:
            got = filler._search(query, depth, qvec)
            rows = np.asarray(got.rows, np.int64)
            rows = rows[free[rows]]
            if len(rows) >= need or len(got) < depth or depth >= n:
                return rows[:need]
            depth = min(n, depth * 4)


def _keeper(
    allowed: np.ndarray | None, crowding: Crowding | None
) -> Callable[[Ranking, int], Ranking]:
    """A ranking and ``k`` → its first ``k`` hits among the ``allowed`` rows (a filter the method
    does not apply itself) with at most ``crowding``'s limit per document."""

    def keep(r: Ranking, k: int) -> Ranking:
        assert r.rows is not None  # every ranking is made by _ranking, with its rows
        eligible = None if allowed is None else allowed[r.rows]
        if crowding is not None:
            return crowding.apply(r, k, eligible)
        assert eligible is not None
        return r.restricted(eligible, k)

    return keep


_METHODS: dict[str, type[Retriever]] = {}

DEFAULT_METHOD = "multihop"
"""The method used when none is named (``--method default`` and ``"default"`` mean it too) on
an index with its parts; on another, :func:`default_choice` picks a fallback."""
DEFAULT_ALIAS = "default"
DEFAULT_FALLBACKS: tuple[str, ...] = ("rrf", "bm25", "dense")
"""What a search without a method uses on an index that lacks a part of :data:`DEFAULT_METHOD`:
the first of these whose parts the index has (``rrf``: sparse and dense; ``bm25``: sparse;
``dense``: dense), best first. A method named explicitly never falls back."""


@dataclass(frozen=True)
class DefaultChoice:
    """The method a search without one gets on an index (:func:`default_choice`)."""

    method: str
    missing: tuple[str, ...] = ()
    """The parts of the full default (:data:`DEFAULT_METHOD` with every part it uses) the index
    lacks; empty: the full default."""
    folder: str = "INDEX_DIR"
    works: bool = True
    """False when the index lacks what even the fallbacks need (a search then fails, naming
    the parts to add)."""
    building: bool = False
    """The missing parts are being built: a staged build's first stage (its manifest's
    ``pending``), whose second stage adds them."""

    @property
    def fell_back(self) -> bool:
        """Another method than :data:`DEFAULT_METHOD` is used."""
        return self.method != DEFAULT_METHOD

    @property
    def partial(self) -> bool:
        """Not the full default: another method, or the default without an optional part (its
        passage vectors)."""
        return bool(self.missing)

    @property
    def command(self) -> str:
        """The command that adds the default's missing parts."""
        return f"hopgraph add-parts {self.folder} --parts {','.join(self.missing)}"

    @property
    def note(self) -> str:
        """One line: the method used instead of the full default and the command that adds its
        parts ("" when the full default is used, or when no method can search the index)."""
        if not self.missing or not self.works:
            return ""
        n = len(self.missing)
        lacks = f"this index lacks its {', '.join(self.missing)} part{'s' if n > 1 else ''}"
        add = f"add {'them' if n > 1 else 'it'} with `{self.command}`"
        if self.building:
            lacks = f"this index's build is still making its {', '.join(self.missing)} part"
            add = "searches use the full default once the build commits it"
        if not self.fell_back:
            return (
                f"searched with the default {DEFAULT_METHOD!r} without passage vectors (its "
                f"ranker fitted for that): {lacks}; {add}"
            )
        return f"searched with {self.method!r}, not the default {DEFAULT_METHOD!r}: {lacks}; {add}"

    def info(self) -> dict[str, Any]:
        """What a ranking's ``info`` says of a partial default (empty for the full default)."""
        if not self.missing or not self.works:
            return {}
        fallback = {"default": DEFAULT_METHOD, "missing_parts": list(self.missing)}
        return {"method": self.method, "default_fallback": {**fallback, "note": self.note}}


def default_choice(index: Index) -> DefaultChoice:
    """The method a search without one uses on ``index``: :data:`DEFAULT_METHOD` when the index
    has the parts it needs (with the parts it only uses where present, e.g. the passage vectors,
    named in ``missing`` when absent), else the first of :data:`DEFAULT_FALLBACKS` it has the
    parts for (with the default's missing parts, for the note); with none of them, the default
    itself (whose search then fails naming the parts to add). Parts the build left out on
    purpose (the passage vectors of a corpus the encoder does not speak: ``detected.why.dense``)
    are not missing."""
    left_out = {"dense"} if ((index.detected or {}).get("why") or {}).get("dense") else set()
    missing = [p for p in index.missing(full_parts(DEFAULT_METHOD)) if p not in left_out]
    if not missing:
        return DefaultChoice(DEFAULT_METHOD)
    folder = shlex.quote(str(index.path)) if index.path else "INDEX_DIR"
    building = bool(set(missing) & set((index.pending or {}).get("parts", [])))
    for name in (DEFAULT_METHOD, *DEFAULT_FALLBACKS):
        if not index.missing(_default_parts(name)):
            return DefaultChoice(name, tuple(missing), folder, building=building)
    return DefaultChoice(DEFAULT_METHOD, tuple(missing), folder, works=False)


@functools.cache
def full_parts(name: str) -> tuple[str, ...]:
    """The parts method ``name`` needs with its default parameters, and those it uses where the
    index has them (:attr:`Retriever.optional`): what a build for it makes."""
    parts = set(method_parts(name))
    known = [p for p in registered_parts() if p in parts]  # in the parts' registration order
    return (*known, *sorted(parts - set(known)))


@functools.cache
def _default_parts(name: str) -> tuple[str, ...]:
    """:func:`needed_parts` with the default parameters, once per method (every search without
    a method on the server asks)."""
    return needed_parts(name)


def is_default(name: str | None) -> bool:
    """Whether ``name`` asks for the default method (None or ``"default"``)."""
    return name is None or name == DEFAULT_ALIAS


def resolve_method_name(name: str | None) -> str:
    """``None`` and ``"default"`` → :data:`DEFAULT_METHOD`; any other name unchanged."""
    return DEFAULT_METHOD if name is None or name == DEFAULT_ALIAS else name


def register_method(cls: type[Retriever]) -> type[Retriever]:
    """Make a retriever class available by name (API, CLI, eval); usable as a class decorator.
    The built-in methods are registered by :mod:`hopgraph.retrieve.registry`."""
    _METHODS[cls.name] = cls
    return cls


def method_class(name: str | None) -> type[Retriever]:
    """The class of method ``name`` (None or ``"default"``: the recommended default)."""
    name = resolve_method_name(name)
    try:
        return _METHODS[name]
    except KeyError:
        raise ConfigError(
            f"unknown method {name!r}; available: {', '.join(sorted(_METHODS))}"
        ) from None


def base_methods() -> tuple[str, ...]:
    """The methods another method may take as its base (``base=``): ``default`` and every
    method that runs with its default parameters (:func:`supported_methods`)."""
    return (DEFAULT_ALIAS, *supported_methods())


def list_methods() -> list[str]:
    """Names of every registered retrieval method."""
    return sorted(_METHODS)


def supported_methods(index: Index | None = None) -> list[str]:
    """The methods that run without parameters (``grapher_gat`` needs ``model``) on ``index``:
    whose parts, with their default parameters, it has (None: an index with every part)."""
    out = []
    for name in list_methods():
        try:
            parts = needed_parts(name)
        except ConfigError:  # a method that needs a parameter
            continue
        if index is None or not index.missing(parts):
            out.append(name)
    return out


def method_parts(name: str | None, params: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The index parts a build for method ``name`` with ``params`` makes: those it needs
    (:func:`needed_parts`) and those it uses where present (:attr:`Retriever.optional`)."""
    return tuple(dict.fromkeys([*needed_parts(name, params), *method_class(name).optional]))


def needed_parts(name: str | None, params: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The index parts method ``name`` cannot search without, with ``params``."""
    cls = method_class(name)
    return cls.parts_for(make_options(cls.Params, params or {}, what=f"method {cls.name!r}"))


def get_retriever(index: Index, name: str | None = None, **params: Any) -> Retriever:
    """The retriever ``name`` over ``index`` with ``params`` (CLI strings are converted);
    without a name (or with ``"default"``), the recommended default method, or on an index
    without its parts the best method the index has the parts for (:func:`default_choice`;
    the retriever's rankings say so in ``info``)."""
    choice = default_choice(index) if is_default(name) else None
    cls = method_class(choice.method if choice else name)
    retriever = cls(index, make_options(cls.Params, params, what=f"method {cls.name!r}"))
    if choice is not None and choice.partial and choice.works:
        retriever.default_fallback = choice.info()
    return retriever
