"""Graph search operators over the ``corpus_graph`` part (FastInsight §3.1):

* :func:`neighbourhood`: ``O_gs``, the one-hop neighbours of a node set;
* :func:`stex`: ``O_vgs`` by STeX (FastInsight Algorithm 3): the neighbours of the retrieved
  list ranked by their structural score plus β × their similarity to the query;
* :class:`Frontier`: GAR's frontier (MacAvaney et al. 2022), the neighbours of the scored
  passages ranked by the best score among the passages that reached them.
"""

from __future__ import annotations

import heapq

import numpy as np
import scipy.sparse as sp

from hopgraph.retrieve.operators import RowsScores


def neighbourhood(adjacency: sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
    """``O_gs``: the rows adjacent to any of ``rows`` and not among them (sorted)."""
    rows = np.asarray(rows, dtype=np.int64)
    nb = np.unique(adjacency[rows].indices)
    return nb[~np.isin(nb, rows)]


def stex(
    adjacency: sp.csr_matrix,
    degree: np.ndarray,
    ranked: np.ndarray,
    qvec: np.ndarray,
    vectors: np.ndarray,
    beta: float,
) -> RowsScores:
    """``O_vgs`` by STeX over ``ranked`` (the retrieved rows, best first): for each neighbour
    ``n`` not yet retrieved, with ``A(n)`` its retrieved neighbours and ``R = |ranked|``,

    * rank proximity ``1 − (r_best − 1) / (R − 1)`` (``r_best``: best rank in ``A(n)``; R > 1),
    * bridging ``(|A(n)| − 1) / (min(deg(n), R) − 1)`` (when that minimum is > 1),
    * ``S_n = v_q·v_n + β · (proximity + bridging)``;

    returns the neighbours best first (ties by row)."""
    ranked = np.asarray(ranked, dtype=np.int64)
    sub = adjacency[ranked].tocoo()  # row i = ranked[i]; columns: its neighbours
    keep = ~np.isin(sub.col, ranked)
    cols, ranks = sub.col[keep], sub.row[keep] + 1
    if len(cols) == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    cand, inverse = np.unique(cols, return_inverse=True)
    r_best = np.full(len(cand), np.iinfo(np.int64).max)
    np.minimum.at(r_best, inverse, ranks)
    n_adj = np.bincount(inverse, minlength=len(cand)).astype(np.float64)
    r_max = len(ranked)
    struct = np.zeros(len(cand))
    if r_max > 1:
        struct += 1.0 - (r_best - 1) / (r_max - 1)
    c_max = np.minimum(np.asarray(degree)[cand], r_max).astype(np.float64)
    bridge = c_max > 1
    struct[bridge] += (n_adj[bridge] - 1.0) / (c_max[bridge] - 1.0)
    sim = np.asarray(vectors[cand], dtype=np.float64) @ np.asarray(qvec, dtype=np.float64)
    scores = sim + beta * struct
    order = np.lexsort((cand, -scores))
    return cand[order], scores[order]


class Frontier:
    """GAR's graph frontier: passages adjacent to scored ones, not scored themselves, popped
    in order of the best score of a scored neighbour (ties: earlier first, then row)."""

    def __init__(self, adjacency: sp.csr_matrix):
        self.adjacency = adjacency
        self._best: dict[int, float] = {}
        self._heap: list[tuple[float, int, int]] = []
        self._tick = 0
        self.done: set[int] = set()

    def __len__(self) -> int:
        return sum(1 for r in self._best if r not in self.done)

    def mark_scored(self, rows: np.ndarray, scores: np.ndarray) -> None:
        """Record scored passages; their neighbours join the frontier."""
        a = self.adjacency
        self.done.update(int(r) for r in rows)
        for r, s in zip(np.asarray(rows).tolist(), np.asarray(scores).tolist(), strict=True):
            for nb in a.indices[a.indptr[r] : a.indptr[r + 1]].tolist():
                if nb in self.done or self._best.get(nb, -np.inf) >= s:
                    continue
                self._best[nb] = s
                self._tick += 1
                heapq.heappush(self._heap, (-s, self._tick, nb))

    def pop(self, n: int) -> list[int]:
        """Up to ``n`` best frontier passages (removed from the frontier)."""
        out: list[int] = []
        while self._heap and len(out) < n:
            neg, _, r = heapq.heappop(self._heap)
            if r in self.done or self._best.get(r) != -neg or r in out:
                continue  # stale entry: scored already, or reached again with a better score
            out.append(r)
        for r in out:
            self._best.pop(r, None)
        return out


__all__ = ["Frontier", "neighbourhood", "stex"]
