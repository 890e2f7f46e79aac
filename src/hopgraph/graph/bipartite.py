"""Node–passage bipartite graphs (entities or terms) with SPRIG's TF–IDF edge weights (§3.2).

Nodes ``0..N-1`` are passages and ``N..N+E-1`` the entities (or terms). From the mention counts
``tf(e, d)`` an edge weight ``w(e, d) = tf · log((N + 1)/(df(e) + 1)) + 1`` is put on both
directions; passage→entity edges are scaled by ``df(e)^-p`` (hub down-weighting); the matrix is
row-normalised into the transition matrix ``P``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from hopgraph.graph.ppr import row_normalize


@dataclass
class BipartiteGraph:
    """Transition matrix over passages + nodes, its transpose (for power iteration; made on
    first use, since the local solver never needs it: 0.4 GB at a million passages), and the
    per-node document frequency and kept-node mask."""

    n_passages: int
    P: sp.csr_matrix
    df: np.ndarray
    kept: np.ndarray  # bool per node (False = pruned hub)

    @cached_property
    def PT(self) -> sp.csr_matrix:  # noqa: N802 - the matrix's name in the papers
        return sp.csr_matrix(self.P.T)

    @property
    def n_nodes(self) -> int:
        return self.P.shape[0]

    @property
    def n_edges(self) -> int:
        return int(self.P.nnz)


def tfidf_weights(tf: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    """``w = tf · log((N+1)/(df+1)) + 1`` on the non-zeros of the passages × nodes count matrix."""
    tf = sp.csr_matrix(tf, dtype=np.float64)
    n = tf.shape[0]
    df = np.bincount(tf.indices, minlength=tf.shape[1]).astype(np.float64)
    idf = np.log((n + 1.0) / (df + 1.0))
    w = tf.copy()
    w.data = tf.data * idf[tf.indices] + 1.0
    return w, df


def build_bipartite(
    tf: sp.csr_matrix,
    *,
    hub_penalty: float = 0.5,
    prune_top_pct: float = 0.0,
    edge_cap: int = 0,
    keep: np.ndarray | None = None,
    own: sp.csr_matrix | None = None,
    own_boost: float = 1.0,
) -> BipartiteGraph:
    """Build the graph from passage × node counts ``tf``.

    ``hub_penalty`` p scales passage→node edges by df^-p; ``prune_top_pct`` removes the x% of nodes
    with the highest df; ``edge_cap`` L keeps each node's L heaviest edges (0 = no cap);
    ``keep`` is an optional prior mask of usable nodes (e.g. df filters); ``own`` marks
    (passage, node) pairs where the passage is the node's own page (its title), whose
    node→passage edges are multiplied by ``own_boost``.
    """
    n, e = tf.shape
    w, df = tfidf_weights(tf)
    kept = np.ones(e, dtype=bool) if keep is None else keep.copy()
    kept &= df > 0
    if prune_top_pct > 0 and kept.any():
        n_prune = int(np.floor(kept.sum() * prune_top_pct / 100.0))
        if n_prune:
            cand = np.flatnonzero(kept)
            order = np.lexsort((cand, -df[cand]))  # highest df first, ties by id
            kept[cand[order[:n_prune]]] = False
    w = sp.csr_matrix(w @ sp.diags(kept.astype(np.float64)))
    w.eliminate_zeros()
    wt = sp.csr_matrix(w.T)  # node × passage
    if edge_cap > 0:
        wt = _cap_rows(wt, edge_cap)
        w = sp.csr_matrix(wt.T)
    if own is not None and own_boost != 1.0:
        wt = sp.csr_matrix(wt + (own_boost - 1.0) * wt.multiply(sp.csr_matrix(own.T)))
    scale = np.power(np.maximum(df, 1.0), -hub_penalty)
    d2e = sp.csr_matrix(w @ sp.diags(scale))
    W = sp.bmat([[None, d2e], [wt, None]], format="csr", dtype=np.float64)
    W.resize((n + e, n + e))
    P = row_normalize(W)
    return BipartiteGraph(n, P, df, kept)


def _cap_rows(m: sp.csr_matrix, cap: int) -> sp.csr_matrix:
    """Keep the ``cap`` largest entries of every row (ties: lower column first)."""
    m = sp.csr_matrix(m)
    counts = np.diff(m.indptr)
    if counts.max(initial=0) <= cap:
        return m
    keep = np.ones(m.nnz, dtype=bool)
    for r in np.flatnonzero(counts > cap):
        lo, hi = m.indptr[r], m.indptr[r + 1]
        order = np.lexsort((m.indices[lo:hi], -m.data[lo:hi]))
        keep[lo + order[cap:]] = False
    rows = np.repeat(np.arange(m.shape[0]), counts)[keep]
    return sp.csr_matrix((m.data[keep], (rows, m.indices[keep])), shape=m.shape)
