"""Ranking arithmetic on score arrays: the rows of the ``k`` best scores and reciprocal rank
fusion of ranked row lists.

Plain numpy, below both the index (:mod:`hopgraph.index.profile` ranks passages to measure a
corpus) and the retrievers (:mod:`hopgraph.retrieve.ranking` and
:mod:`hopgraph.retrieve.operators` offer these functions under their former names too).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RowsScores = tuple[np.ndarray, np.ndarray]


def top_k(scores: np.ndarray, k: int, *, positive_only: bool = False) -> np.ndarray:
    """Rows of the ``k`` highest scores, best first; ties broken by row (deterministic)."""
    n = scores.shape[0]
    if positive_only:
        cand = np.flatnonzero(scores > 0)
    else:
        cand = None
    if cand is not None:
        if cand.size > k:
            part = cand[np.argpartition(-scores[cand], k - 1)[:k]]
            cand = _boundary_ties(scores, cand, part, k)
        rows = cand
    elif k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        rows = _boundary_ties(scores, np.arange(n), part, k)
    else:
        rows = np.arange(n)
    order = np.lexsort((rows, -scores[rows]))
    return rows[order][:k]


def _boundary_ties(scores: np.ndarray, pool: np.ndarray, part: np.ndarray, k: int) -> np.ndarray:
    """argpartition picks arbitrary members of a tie at the k-th score: take all of them, so the
    final (score, row) sort decides, which makes the result independent of the partition."""
    kth = scores[part].min()
    return np.union1d(part[scores[part] > kth], pool[scores[pool] == kth])


def reciprocal_rank_fusion(
    lists: Sequence[np.ndarray], k_rrf: float = 60.0, weights: Sequence[float] | None = None
) -> RowsScores:
    """RRF (Cormack et al. 2009): score(d) = Σ_lists w_list / (k_rrf + rank_list(d)), ranks
    from 1, every weight 1 unless ``weights`` are given; ties by row."""
    fused: dict[int, float] = {}
    for rows, w in zip(lists, weights or [1.0] * len(lists), strict=True):
        for rank, r in enumerate(rows.tolist(), start=1):
            fused[r] = fused.get(r, 0.0) + w / (k_rrf + rank)
    if not fused:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    rows = np.fromiter(fused.keys(), dtype=np.int64, count=len(fused))
    scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
    order = np.lexsort((rows, -scores))
    return rows[order], scores[order]
