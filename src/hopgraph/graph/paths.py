"""Shortest paths on a corpus graph: the *uncertainty* of reaching a node from a retrieved set,
used by Topological Recall (FastInsight, Definition 7).

The uncertainty of reaching ``target`` from a set ``S`` is the smallest accumulated log-degree
``Σ ln(1 + deg(n_k))`` over the nodes ``n_k`` of a path from a node of ``S`` to ``target``, the
target itself excluded (so a retrieved node has uncertainty 0). It is a multi-source Dijkstra
where leaving node ``a`` costs ``ln(1 + deg(a))``. The paper sums along "the shortest path";
taking the cheapest path is the same when the shortest path is unique and removes the
ambiguity when several tie.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra


def degree(adjacency: sp.csr_matrix) -> np.ndarray:
    """Number of neighbours of each node (self-loops ignored)."""
    a = sp.csr_matrix(adjacency)
    deg = np.diff(a.indptr).astype(np.int64)
    deg -= (a.diagonal() != 0).astype(np.int64)
    return deg


def log_degree_costs(adjacency: sp.csr_matrix) -> sp.csr_matrix:
    """Directed edge costs for :func:`uncertainty`: leaving node ``a`` costs ``ln(1 + deg(a))``
    (compute once per graph, reuse for every query)."""
    a = sp.csr_matrix(adjacency, dtype=np.float64, copy=True)
    a.setdiag(0)
    a.eliminate_zeros()
    a.data[:] = 1.0
    cost = np.log1p(degree(a).astype(np.float64))
    return sp.csr_matrix(sp.diags(cost) @ a)  # every stored cost > 0


def uncertainty(costs: sp.csr_matrix, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """``u(E, sources, t)`` for each target, over ``costs = log_degree_costs(adjacency)``
    (``inf`` when unreachable or ``sources`` is empty)."""
    targets = np.asarray(targets, dtype=np.int64)
    sources = np.unique(np.asarray(sources, dtype=np.int64))
    if len(sources) == 0:
        return np.full(len(targets), np.inf)
    dist = dijkstra(costs, directed=True, indices=sources, min_only=True)
    return dist[targets]


__all__ = ["degree", "log_degree_costs", "uncertainty"]
