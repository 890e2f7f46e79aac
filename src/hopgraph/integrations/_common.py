"""What every framework adapter shares: the index (an :class:`Index` or a saved folder, loaded
once), the retriever over it, and a ranking's hits as passages with their score and explanation.
No framework is imported here."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hopgraph.corpus import Passage
from hopgraph.errors import ConfigError
from hopgraph.filters import validate_filter
from hopgraph.index import Index
from hopgraph.retrieve import Ranking, get_retriever
from hopgraph.retrieve.base import Retriever
from hopgraph.retrieve.crowding import check_max_per_doc

IndexLike = Index | str | os.PathLike
"""An index, or the folder of a saved one."""


def missing_extra(module: str, extra: str, package: str) -> ImportError:
    """The error an adapter raises when its framework is not installed."""
    return ImportError(
        f"hopgraph.integrations.{module} needs {package}: pip install 'hopgraph[{extra}]'"
    )


def load_index(index: IndexLike) -> Index:
    """``index`` itself, or the index saved in the folder ``index`` (loaded once, here)."""
    if isinstance(index, Index):
        return index
    if isinstance(index, str | os.PathLike):
        return Index.load(index)
    raise TypeError(
        f"index must be a hopgraph.Index or the folder of a saved index, got {type(index).__name__}"
    )


def check_k(k: Any) -> int:
    """``k`` as an int; a clear error unless it is a positive integer."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    return int(k)


def check_filter(filter: Any) -> dict[str, Any] | None:
    """``filter`` unchanged if it is None or a valid hopgraph metadata filter (else the
    :class:`ConfigError` of :func:`hopgraph.filters.validate_filter`, saying what is wrong)."""
    if filter is not None:
        validate_filter(filter)
    return filter


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: its ``score``, 1-based ``rank`` and the method's explanation."""

    passage: Passage
    score: float
    rank: int
    method: str
    explanation: dict[str, Any]

    @property
    def why(self) -> str | None:
        """The explanation in words (the default method's path and signals), if there is one."""
        summary = self.explanation.get("summary")
        return summary if isinstance(summary, str) and summary else None

    @property
    def content(self) -> str:
        """Title and text as one string (``Passage.content``: what the retrievers index)."""
        return self.passage.content

    def metadata(self) -> dict[str, Any]:
        """The passage's own metadata, then ``id``, ``title``, ``score``, ``rank``, ``method``
        and ``why`` (when the method explains in words); these win over same-named keys."""
        meta = dict(self.passage.metadata)
        meta.update(
            id=self.passage.id,
            title=self.passage.title,
            score=self.score,
            rank=self.rank,
            method=self.method,
        )
        why = self.why
        if why is not None:
            meta["why"] = why
        else:
            meta.pop("why", None)
        return meta


class Searcher:
    """The retriever an adapter wraps, with its default ``k`` and ``filter``, and the
    ``max_per_doc`` of every search (None: hopgraph's default, see ``Retriever.search``).

    ``method`` and ``params`` go to :func:`hopgraph.get_retriever` (checked here, so a bad name
    or parameter fails when the adapter is made, not at the first query)."""

    def __init__(
        self,
        index: IndexLike,
        method: str | None = None,
        k: int = 10,
        filter: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        max_per_doc: int | None = None,
    ):
        self.k = check_k(k)
        self.filter = check_filter(filter)
        self.max_per_doc = check_max_per_doc(max_per_doc)
        self.index = load_index(index)
        self.params = dict(params or {})
        self.retriever: Retriever = get_retriever(self.index, method, **self.params)
        self.method = self.retriever.name

    def search(
        self, query: str, k: int | None = None, filter: dict[str, Any] | None = None
    ) -> list[Hit]:
        """The hits for ``query``; ``k`` and ``filter`` replace the defaults when given."""
        k, filter = self._args(k, filter)
        return self.hits(
            self.retriever.search(query, k=k, filter=filter, max_per_doc=self.max_per_doc)
        )

    def search_batch(
        self, queries: Sequence[str], k: int | None = None, filter: dict[str, Any] | None = None
    ) -> list[list[Hit]]:
        """The hits for each query (dense methods encode the queries together)."""
        return [self.hits(r) for r in self.rankings(queries, k, filter)]

    def rankings(
        self, queries: Sequence[str], k: int | None = None, filter: dict[str, Any] | None = None
    ) -> list[Ranking]:
        """The rankings themselves, for adapters that need neither passages nor explanations."""
        k, filter = self._args(k, filter)
        return self.retriever.search_batch(
            list(queries), k=k, filter=filter, max_per_doc=self.max_per_doc
        )

    def hits(self, ranking: Ranking) -> list[Hit]:
        """A ranking as passages (read from the index's corpus), best first."""
        corpus = self.index.corpus
        return [
            Hit(corpus.get(pid), float(score), rank, ranking.method, dict(why))
            for rank, (pid, score, why) in enumerate(
                zip(ranking.ids, ranking.scores, ranking.explanations, strict=True), start=1
            )
        ]

    def _args(self, k: int | None, filter: dict[str, Any] | None) -> tuple[int, dict | None]:
        return (
            self.k if k is None else check_k(k),
            self.filter if filter is None else check_filter(filter),
        )

    def describe(self) -> str:
        """``method=..., k=...`` for the adapters' reprs."""
        extra = f", filter={self.filter!r}" if self.filter is not None else ""
        if self.max_per_doc is not None:
            extra += f", max_per_doc={self.max_per_doc}"
        return f"method={self.method!r}, k={self.k}{extra}"
