"""A ranking: passage ids best first, their scores, and where each score came from."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hopgraph.ranks import top_k as top_k  # its former home: keep `from here import top_k`


@dataclass
class Hit:
    id: str
    score: float
    why: dict[str, Any]


@dataclass
class Ranking:
    """Result of one search. ``explanations[i]`` says how ``ids[i]`` got ``scores[i]``.

    Explanations are computed on first access (evaluation never pays for them).
    """

    query: str
    method: str
    ids: list[str]
    scores: list[float]
    info: dict[str, Any] = field(default_factory=dict)
    explain: Callable[[], list[dict[str, Any]]] | None = field(default=None, repr=False)
    _explanations: list[dict[str, Any]] | None = field(default=None, repr=False)
    rows: np.ndarray | None = field(default=None, repr=False)
    """The index rows of ``ids`` (set by the retrievers; used to restrict a ranking)."""

    @property
    def explanations(self) -> list[dict[str, Any]]:
        if self._explanations is None:
            self._explanations = self.explain() if self.explain else [{} for _ in self.ids]
        return self._explanations

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[Hit]:
        for pid, score, why in zip(self.ids, self.scores, self.explanations, strict=True):
            yield Hit(pid, score, why)

    def restricted(self, keep: np.ndarray, k: int) -> Ranking:
        """The first ``k`` hits at the positions where ``keep`` (a boolean per hit) is true, in
        the same order, with their explanations (computed only if asked for)."""
        pos = np.flatnonzero(keep)[:k]
        parent = self
        info = dict(self.info)
        if "filled" in info:  # the filled hits kept
            info["filled"] = int((pos >= len(self.ids) - info["filled"]).sum())

        def explain() -> list[dict[str, Any]]:
            whys = parent.explanations
            return [whys[i] for i in pos.tolist()]

        return Ranking(
            query=self.query,
            method=self.method,
            ids=[self.ids[i] for i in pos.tolist()],
            scores=[self.scores[i] for i in pos.tolist()],
            info=info,
            explain=explain,
            rows=None if self.rows is None else self.rows[pos],
        )

    def extended(self, ids: list[str], rows: np.ndarray, notes: list[dict[str, Any]]) -> Ranking:
        """This ranking followed by the passages ``ids`` (index ``rows``), scored below its last
        hit in the given order and explained by ``notes``; ``info["filled"]`` counts them."""
        last = self.scores[-1] if self.scores else 0.0
        m = len(ids)
        parent = self

        def explain() -> list[dict[str, Any]]:
            return [*parent.explanations, *notes]

        return Ranking(
            query=self.query,
            method=self.method,
            ids=[*self.ids, *ids],
            scores=[*self.scores, *(last - 1.0 - np.arange(m) / max(m, 1)).tolist()],
            info={**self.info, "filled": m},
            explain=explain,
            rows=None if self.rows is None else np.concatenate([self.rows, rows]),
        )

    def to_dict(self, corpus: Any = None) -> dict[str, Any]:
        """The ranking as plain data: query, method, hits (id, score, why) and info; with the
        ``corpus`` the ids come from, each hit also has its passage's title, text and metadata
        (as ``POST /search`` answers with ``passages: true``)."""
        hits = []
        for h in self:
            hit: dict[str, Any] = {"id": h.id, "score": h.score, "why": h.why}
            if corpus is not None:
                p = corpus.get(h.id)
                hit.update(title=p.title, text=p.text, metadata=p.metadata)
            hits.append(hit)
        return {"query": self.query, "method": self.method, "hits": hits, "info": self.info}


def why_text(why: dict[str, Any]) -> str:
    """A hit's explanation on one line, as ``hopgraph search`` and ``hopgraph demo`` show it: its
    summary in words where the method gives one (the numbers stay in ``why``), else every
    field."""
    if isinstance(why.get("summary"), str):
        return why["summary"]

    def fmt(v: Any) -> str:
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    return ", ".join(f"{k}={fmt(v)}" for k, v in why.items())
