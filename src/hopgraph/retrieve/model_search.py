"""Model-based search operators (FastInsight §3.1): a cross-encoder scores (query, passage)
pairs, alone (``O_m``, :func:`model_search`) or with the candidates' graph (``O_gm``,
:func:`graph_model_search`, GRanker).

:class:`PairCache` holds one query's pair representations, so a passage goes through the
encoder once per query however often an iterative method (GAR, FastInsight) rescores it.
"""

from __future__ import annotations

import time

import numpy as np

from hopgraph.corpus import Corpus
from hopgraph.graph.cohesion import latent_graph_fusion, reciprocal_degree_propagation
from hopgraph.models.cross_encoder import CrossEncoder
from hopgraph.retrieve.operators import RowsScores


class PairCache:
    """The cross-encoder's [CLS] vectors of (query, passage) pairs for one query."""

    def __init__(self, model: CrossEncoder, query: str, corpus: Corpus):
        self.model = model
        self.query = query
        self.corpus = corpus
        self._h: dict[int, np.ndarray] = {}
        self.encode_seconds = 0.0

    def __len__(self) -> int:
        return len(self._h)

    def represent(self, rows: np.ndarray) -> np.ndarray:
        """(len(rows), dim): encodes only the rows not seen before for this query."""
        new = [int(r) for r in dict.fromkeys(np.asarray(rows).tolist()) if int(r) not in self._h]
        if new:
            t0 = time.perf_counter()
            h = self.model.represent(self.query, [self.corpus[r].content for r in new])
            self.encode_seconds += time.perf_counter() - t0
            self._h.update(zip(new, h, strict=True))
        if len(rows) == 0:
            return np.zeros((0, self.model.dim), np.float32)
        return np.stack([self._h[int(r)] for r in rows])

    def scores(self, rows: np.ndarray) -> np.ndarray:
        """The cross-encoder's relevance of each row."""
        return self.model.head(self.represent(rows))


def sorted_by(rows: np.ndarray, scores: np.ndarray) -> RowsScores:
    """``rows`` and ``scores`` by descending score, ties by row."""
    order = np.lexsort((rows, -scores))  # ties by row: deterministic
    return rows[order], scores[order]


def model_search(pairs: PairCache, rows: np.ndarray) -> RowsScores:
    """``O_m``: ``rows`` reordered by the cross-encoder's scores."""
    rows = np.asarray(rows, dtype=np.int64)
    return sorted_by(rows, pairs.scores(rows))


def zscore(x: np.ndarray) -> np.ndarray:
    """``x`` centred and scaled to unit standard deviation (all zeros when constant)."""
    x = np.asarray(x, dtype=np.float64)
    sd = float(x.std()) if len(x) else 0.0
    return (x - x.mean()) / sd if sd > 0 else np.zeros_like(x)


def path_scores(model: np.ndarray, via: np.ndarray) -> np.ndarray:
    """The model's scores z-scored, where a passage reached through another of the same
    passages (``via[i]``: that one's position, −1 for none) scores at least the mean of the two:
    a second hop is as relevant as the path that leads to it, which a (query, passage) pair
    alone does not see."""
    z = zscore(model)
    via = np.asarray(via)
    has = via >= 0
    out = z.copy()
    out[has] = np.maximum(z[has], (z[has] + z[via[has]]) / 2)
    return out


def mixed_model_search(
    pairs: PairCache,
    rows: np.ndarray,
    base_scores: np.ndarray,
    mix: float,
    via: np.ndarray | None = None,
) -> RowsScores:
    """``O_m`` interpolated with the first stage: ``rows`` by ``z(model) + mix · z(base)``,
    each score z-scored over ``rows`` (so the two scales need not agree); with ``via``, the
    model's part is :func:`path_scores`. ``mix = 0`` without ``via`` is :func:`model_search`."""
    rows = np.asarray(rows, dtype=np.int64)
    model = pairs.scores(rows)
    if via is not None:
        return sorted_by(rows, path_scores(model, via) + mix * zscore(base_scores))
    if not mix:
        return sorted_by(rows, model)
    return sorted_by(rows, zscore(model) + mix * zscore(base_scores))


def graph_model_search(
    pairs: PairCache,
    rows: np.ndarray,
    adjacency: np.ndarray,
    degree: np.ndarray,
    alpha: float,
) -> RowsScores:
    """``O_gm`` by GRanker (FastInsight Algorithm 2): the pair vectors ``H`` of ``rows`` are
    smoothed over the candidates' graph, ``H' = (1 − α)·H + α·P·H`` with the reciprocal-degree
    propagation matrix ``P`` (``adjacency`` among ``rows``, ``degree`` their degrees in the
    whole corpus graph), then scored by the classification head."""
    rows = np.asarray(rows, dtype=np.int64)
    H = pairs.represent(rows)
    P = reciprocal_degree_propagation(adjacency, degree)
    return sorted_by(rows, pairs.model.head(latent_graph_fusion(H, P, alpha)))


__all__ = [
    "PairCache",
    "graph_model_search",
    "mixed_model_search",
    "model_search",
    "path_scores",
    "sorted_by",
    "zscore",
]
