"""Shared retrieval operators: the pieces every method composes.

Vector search and lexical search return ``(rows, scores)`` best first; fusion operators combine
such lists. Later methods (graph propagation, reranking) build on the same shapes.
"""

from __future__ import annotations

import numpy as np

from hopgraph.index.dense import DensePart
from hopgraph.index.sparse import SparsePart
from hopgraph.ranks import RowsScores, top_k
from hopgraph.ranks import reciprocal_rank_fusion as reciprocal_rank_fusion  # kept importable here

EXACT_FILTERED_ROWS = 200_000
"""A filtered vector search scans the matching passages exactly when there are at most this
many (an HNSW graph walk would spend most of its time on passages the filter drops)."""


def lexical_search(
    sparse: SparsePart, query: str, depth: int, allowed: np.ndarray | None = None
) -> RowsScores:
    """BM25 top-``depth`` passages with a positive score (among the ``allowed`` rows, a boolean
    mask, when given)."""
    scores = sparse.scores(query)
    if allowed is not None:
        scores = np.where(allowed, scores, 0.0).astype(scores.dtype, copy=False)
    rows = top_k(scores, depth, positive_only=True)
    return rows, scores[rows]


def vector_search(
    dense: DensePart,
    qvec: np.ndarray,
    depth: int,
    *,
    mode: str = "auto",
    ef_search: int = 256,
    allowed: np.ndarray | None = None,
) -> RowsScores:
    """Top-``depth`` passages by cosine: exact (matrix product) or HNSW (approximate);
    ``auto``: the HNSW graph when the part has one (large corpora), else exact. With
    ``allowed`` (a boolean row mask), only those rows: scanned exactly when they are few or the
    search is exact, else the HNSW walk is asked for more until ``depth`` of them are found."""
    if mode == "auto":
        mode = "hnsw" if dense.ann is not None else "exact"
    if allowed is not None:
        return _filtered_vector_search(dense, qvec, depth, mode, ef_search, allowed)
    if mode == "hnsw" and dense.ann is not None:
        return dense.search_ann(qvec, depth, ef_search)
    if mode == "hnsw":
        labels, sims = dense.search_hnsw(qvec[None, :], depth, ef_search)
        rows, sims = labels[0], sims[0]
        order = np.lexsort((rows, -sims))  # same tie order as exact search
        return rows[order], sims[order]
    scores = dense.scores(qvec)
    rows = top_k(scores, depth)
    return rows, scores[rows]


def _filtered_vector_search(
    dense: DensePart, qvec: np.ndarray, depth: int, mode: str, ef_search: int, allowed: np.ndarray
) -> RowsScores:
    cand = np.flatnonzero(allowed)
    if mode == "exact" or cand.size <= EXACT_FILTERED_ROWS:
        sims = dense.scores_for(qvec, cand) if cand.size < allowed.size // 2 else None
        if sims is None:  # most rows match: one product over all, then the mask
            sims = dense.scores(qvec)[cand]
        order = top_k(sims, depth)
        return cand[order], sims[order]
    n = allowed.size
    want = min(n, max(depth, depth * n // max(cand.size, 1) * 2))
    while True:
        rows, sims = vector_search(dense, qvec, want, mode=mode, ef_search=ef_search)
        keep = allowed[rows]
        if int(keep.sum()) >= depth or want >= n or len(rows) < want:
            return rows[keep][:depth], sims[keep][:depth]
        want = min(n, want * 4)


def composed_search(
    sparse: SparsePart,
    dense: DensePart,
    query: str,
    qvec: np.ndarray,
    candidates: int,
    k: int,
    bm25_weight: float = 0.0,
    allowed: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """GRIEVER's composed retrieval (§4.2.2): BM25 picks ``candidates`` passages (among the
    ``allowed`` rows when given), their cosine with ``qvec`` ranks them (plus ``bm25_weight`` ×
    their BM25 / the best one's, when given). Returns the top-``k`` rows, their cosines and BM25
    positions (0-based), and how many BM25 candidates there were."""
    cand, lex = lexical_search(sparse, query, candidates, allowed)
    sims = dense.scores_for(qvec, cand)
    rank = sims + bm25_weight * max_normalize(lex) if bm25_weight else sims
    order = top_k(rank, k)
    return cand[order], sims[order], order, int(cand.size)


def filtered_rrf(
    sparse: SparsePart,
    dense: DensePart | None,
    query: str,
    qvec: np.ndarray | None,
    rows: np.ndarray,
    k: int,
    k_rrf: float = 60.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """RRF of BM25 and cosine restricted to the passages ``rows`` (a filter, as in GRIEVER's
    later iterations): the top-``k`` rows, their RRF scores and cosines. Without ``dense`` (an
    index without passage vectors), BM25's order alone and cosines of 0."""
    if len(rows) == 0:
        empty = np.zeros(0, np.int64)
        return empty, np.zeros(0), np.zeros(0, np.float32)
    rows = np.asarray(rows, np.int64)
    bm25 = sparse.scores(query)[rows]
    cos = np.zeros(len(rows), np.float32) if dense is None else dense.scores_for(qvec, rows)
    by_bm25 = rows[top_k(bm25, len(rows), positive_only=True)]
    by_cos = rows[top_k(cos, len(rows))] if dense is not None else np.zeros(0, np.int64)
    fused, scores = reciprocal_rank_fusion([by_bm25, by_cos], k_rrf)
    fused, scores = fused[:k], scores[:k]
    pos = {int(r): i for i, r in enumerate(rows.tolist())}
    return fused, scores, cos[[pos[int(r)] for r in fused.tolist()]]


def max_normalize(scores: np.ndarray) -> np.ndarray:
    """Min–max normalisation to [0, 1] with the minimum taken as 0 for non-negative scores
    (BM25's unmatched passages score 0), so a passage's value does not depend on the weakest
    candidate. All-zero input stays zero."""
    lo = min(float(scores.min(initial=0.0)), 0.0)
    hi = float(scores.max(initial=0.0))
    if hi <= lo:
        return np.zeros_like(scores, dtype=np.float32)
    return ((scores - lo) / (hi - lo)).astype(np.float32)


def rank_of(rows: np.ndarray) -> dict[int, int]:
    """Row → 1-based rank in a ranked list (for explanations)."""
    return {int(r): i for i, r in enumerate(rows.tolist(), start=1)}
