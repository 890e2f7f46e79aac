"""Ranking arithmetic on score arrays: the rows of the ``k`` best scores and reciprocal rank
fusion of ranked row lists.

Plain numpy, below both the index (:mod:`hopgraph.index.profile` ranks passages to measure a
corpus) and the retrievers (:mod:`hopgraph.retrieve.ranking` and
:mod:`hopgraph.retrieve.operators` offer these functions under their former names too).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hopgraph.jit import LARGE, compiled, has_numba

RowsScores = tuple[np.ndarray, np.ndarray]


def top_k(scores: np.ndarray, k: int, *, positive_only: bool = False) -> np.ndarray:
    """Rows of the ``k`` highest scores, best first; ties broken by row (deterministic)."""
    n = scores.shape[0]
    if n >= LARGE and 0 < k < n and scores.dtype.kind == "f" and has_numba():  # one pass
        rows = _best(np.ascontiguousarray(scores), k, positive_only)
        return rows[np.lexsort((rows, -scores[rows]))]
    if positive_only:
        cand = np.flatnonzero(scores > 0)
        return top_rows(cand, scores[cand], k)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        rows = _boundary_ties(scores, np.arange(n), part, k)
    else:
        rows = np.arange(n)
    order = np.lexsort((rows, -scores[rows]))
    return rows[order][:k]


def top_rows(rows: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """:func:`top_k` with ``positive_only`` of a sparse score vector given by its entries
    (``rows`` distinct, ``scores`` theirs; zero elsewhere): the same rows, best first, at the
    cost of its entries rather than its length."""
    keep = scores > 0
    rows, scores = rows[keep], scores[keep]
    if k <= 0:
        return rows[:0]
    if rows.size > k:
        kth = scores[np.argpartition(-scores, k - 1)[:k]].min()
        tied = scores >= kth  # every row at the k-th score: the (score, row) sort decides
        rows, scores = rows[tied], scores[tied]
    return rows[np.lexsort((rows, -scores))][:k]


def _boundary_ties(scores: np.ndarray, pool: np.ndarray, part: np.ndarray, k: int) -> np.ndarray:
    """argpartition picks arbitrary members of a tie at the k-th score: take all of them, so the
    final (score, row) sort decides, which makes the result independent of the partition."""
    kth = scores[part].min()
    return np.union1d(part[scores[part] > kth], pool[scores[pool] == kth])


def _best_loop(scores, k, positive_only):  # noqa: ANN001, ANN202
    """The rows of the ``k`` best scores in one pass (unordered): a heap of rows whose root is
    the worst kept, a row worse than another when its score is lower, or equal with a larger row
    (the order :func:`top_k` sorts by, so the same rows as its partition with ties)."""
    heap = np.empty(k, dtype=np.int64)
    size = 0
    bar = 0.0  # a row must score above it: 0 while filling (positive_only), then the root's
    for i in range(scores.shape[0]):
        x = scores[i]
        if (size == k or positive_only) and not x > bar:
            continue
        if size == k:  # replace the root (rows come in order: an equal score lost), sift down
            j = 0
            while True:
                c = 2 * j + 1
                if c >= k:
                    break
                if c + 1 < k:
                    a, b = heap[c], heap[c + 1]
                    if scores[b] < scores[a] or (scores[b] == scores[a] and b > a):
                        c += 1
                w = heap[c]
                if scores[w] < x or (scores[w] == x and w > i):
                    heap[j] = w
                    j = c
                else:
                    break
            heap[j] = i
        else:  # push, sift up
            j = size
            size += 1
            while j > 0:
                p = (j - 1) // 2
                w = heap[p]
                if x < scores[w] or (x == scores[w] and i > w):
                    heap[j] = w
                    j = p
                else:
                    break
            heap[j] = i
        if size == k:
            bar = scores[heap[0]]
    return heap[:size].copy()


_best = compiled(_best_loop)


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
