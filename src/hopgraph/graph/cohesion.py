"""Candidate graphs and Graph Cohesive Smoothing (GraphER §2.2, Algorithm 1).

A candidate graph is a small dense matrix over the top-n candidates of a base retriever
(n ≈ 200), built at query time from each passage's enrichment fields.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def shared_entity_adjacency(mentions: sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
    """GraphER's multi-hop QA edge weights (§A.3) among ``rows``:
    ``A[i, j] = |E_i ∩ E_j| / |E_j|``, the unique entities passages i and j share over the
    unique entities of j. No self loops."""
    sub = mentions[rows]
    sub = sp.csr_matrix(
        (np.ones_like(sub.data, dtype=np.float32), sub.indices, sub.indptr), sub.shape
    )
    shared = (sub @ sub.T).toarray()
    np.fill_diagonal(shared, 0.0)
    counts = np.diff(sub.indptr).astype(np.float32)
    return np.divide(shared, counts[None, :], out=np.zeros_like(shared), where=counts[None, :] > 0)


def row_stochastic(A: np.ndarray) -> np.ndarray:
    """``W[i, j] = A[i, j] / Σ_k A[i, k]``; rows without edges stay zero."""
    sums = A.sum(axis=1, keepdims=True)
    return np.divide(A, sums, out=np.zeros_like(A, dtype=np.float64), where=sums > 0)


def graph_cohesive_smoothing(
    A: np.ndarray, s: np.ndarray, alpha: float, eps: float = 1e-6, max_iter: int = 100
) -> tuple[np.ndarray, int]:
    """Algorithm 1: ``p ← α·s + (1 − α)·W·p`` from ``p = s`` until ``‖Δp‖₁ < eps``, with ``W``
    the row-normalised ``A``; returns ``(max(p, s), iterations)``. Each node's score moves
    toward the weighted mean of its neighbours' but never drops below its own seed score, so
    a hub does not gain from having many neighbours (unlike PPR)."""
    W = row_stochastic(A)
    s = np.asarray(s, dtype=np.float64)
    p = s.copy()
    a_s = alpha * s
    it = 0
    while it < max_iter:
        nxt = a_s + (1.0 - alpha) * (W @ p)
        it += 1
        delta = np.abs(nxt - p).sum()
        p = nxt
        if delta < eps:
            break
    return np.maximum(p, s), it


def reciprocal_degree_propagation(A: np.ndarray, degree: np.ndarray) -> np.ndarray:
    """FastInsight's GRanker propagation matrix (Algorithm 2, lines 2–5): ``W = A·D⁻¹`` (an
    edge to node j weighs ``1 / deg(j)``, its degree in the whole corpus graph, so hubs count
    less), then ``P = diag(W·1)⁻¹·W``. A node with no neighbour among the candidates gets
    ``P[i, i] = 1`` (it keeps its own vector; the paper leaves this row undefined)."""
    deg = np.maximum(np.asarray(degree, dtype=np.float64), 1.0)
    W = (np.asarray(A, dtype=np.float64) > 0) / deg[None, :]
    np.fill_diagonal(W, 0.0)
    P = row_stochastic(W)
    lonely = P.sum(axis=1) == 0
    P[lonely, lonely] = 1.0
    return P


def latent_graph_fusion(H: np.ndarray, P: np.ndarray, alpha: float) -> np.ndarray:
    """``H' = (1 − α)·H + α·P·H`` (Algorithm 2, line 6): one gradient step on the
    Laplacian-regularised denoising objective."""
    H = np.asarray(H)
    return ((1.0 - alpha) * H + alpha * (P @ H)).astype(H.dtype, copy=False)
