"""GraphER (Miao et al.): rerank a base retriever's top-n candidates over a graph built at query
time from the passages' enrichment fields (``grapher_gcs``, ``grapher_ppr``, ``grapher_gat``).

Edges among the candidates (§2.1, §A.3) combine three proximities with configurable weights:

* conceptual: shared named entities (``entities`` part), ``|E_i ∩ E_j| / |E_j|``;
* structural: links given with the data or title mentions (``links`` part), weight 1;
* contextual: adjacent chunks of one document (``links`` part), weight 1.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from hopgraph.config import in_unit_interval, option, positive
from hopgraph.errors import ConfigError
from hopgraph.graph.cohesion import (
    graph_cohesive_smoothing,
    row_stochastic,
    shared_entity_adjacency,
)
from hopgraph.graph.ppr import ppr_power
from hopgraph.index import Index
from hopgraph.retrieve.base import Retriever, get_retriever, register_method
from hopgraph.retrieve.ranking import Ranking, top_k


@dataclass(frozen=True)
class GraphERParams:
    base: str = option("hybrid", "base retriever giving the candidates and their seed scores")
    n: int = option(200, "candidates reranked (the base retriever's top n)")
    alpha: float = option(0.5, "weight of the seed scores in each step (GCS and PPR)")
    eps: float = option(1e-6, "stop when the L1 change of the scores is below this")
    max_iter: int = option(100, "at most this many iterations")
    w_conceptual: float = option(1.0, "weight of shared-entity edges")
    w_structural: float = option(1.0, "weight of links: hyperlinks, foreign keys, title mentions")
    w_contextual: float = option(1.0, "weight of edges between adjacent chunks of a document")

    def validate(self) -> None:
        positive("n", self.n)
        in_unit_interval("alpha", self.alpha)
        positive("eps", self.eps)
        positive("max_iter", self.max_iter)
        ws = (self.w_conceptual, self.w_structural, self.w_contextual)
        if min(ws) < 0:
            raise ConfigError(f"edge weights must be >= 0, got {ws}")
        if self.base.startswith("grapher"):
            raise ConfigError("the base of a GraphER method cannot be a GraphER method")


@dataclass
class CandidateGraph:
    """The top-n candidates of the base retriever and the graph among them."""

    rows: np.ndarray  # corpus rows, base order
    seed: np.ndarray  # base scores
    adjacency: np.ndarray  # weighted, n × n, zero diagonal


def candidate_graph(index: Index, params: GraphERParams, r: Ranking) -> CandidateGraph:
    """Connect the candidates of the base ranking ``r`` by the enrichment fields."""
    pos = index.corpus.position
    rows = np.fromiter((pos(i) for i in r.ids), dtype=np.int64, count=len(r.ids))
    seed = np.asarray(r.scores, dtype=np.float64)
    A = np.zeros((len(rows), len(rows)))
    if params.w_conceptual:
        A += params.w_conceptual * shared_entity_adjacency(index.part("entities").mentions, rows)
    links = index.part("links")
    if params.w_structural:
        A += params.w_structural * links.structural(rows)
    if params.w_contextual:
        A += params.w_contextual * links.contextual(rows)
    return CandidateGraph(rows, seed, A)


class _GraphERRetriever(Retriever):
    Params = GraphERParams
    requires = ("sparse", "dense", "entities", "links")

    def __init__(self, index: Index, params: GraphERParams):
        super().__init__(index, params)
        self.base = get_retriever(index, params.base)
        self.uses_dense = self.base.uses_dense  # type: ignore[misc]

    def rerank(self, g: CandidateGraph, qvec: np.ndarray | None) -> np.ndarray:
        """New scores of the candidates (same order as ``g.rows``)."""
        raise NotImplementedError

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        t0 = time.perf_counter()
        p: GraphERParams = self.params
        n = min(p.n, len(self.ids))
        r = self.base._search(query, n, qvec)
        t1 = time.perf_counter()
        g = candidate_graph(self.index, p, r)
        t2 = time.perf_counter()
        scores = self.rerank(g, qvec)
        t3 = time.perf_counter()
        order = top_k(scores, k)
        info = {
            "candidates": int(len(g.rows)),
            "edges": int(np.count_nonzero(g.adjacency)) // 2,
            "base_ms": (t1 - t0) * 1e3,
            "graph_ms": (t2 - t1) * 1e3,
            "rerank_ms": (t3 - t2) * 1e3,
        }
        return self._ranking(
            query, g.rows[order], scores[order], lambda: self._explain(g, scores, order), info
        )

    def _explain(self, g: CandidateGraph, scores: np.ndarray, order: np.ndarray) -> list[dict]:
        ids = self.ids
        out = []
        for o in order.tolist():
            nb = np.flatnonzero(g.adjacency[o])
            nb = nb[np.argsort(-g.adjacency[o, nb], kind="stable")[:3]]
            out.append(
                {
                    self.name: float(scores[o]),
                    "seed": float(g.seed[o]),
                    "base_rank": o + 1,
                    "neighbours": [ids[g.rows[j]] for j in nb.tolist()],
                }
            )
        return out


@register_method
class GraphERGCSRetriever(_GraphERRetriever):
    """Graph Cohesive Smoothing (Algorithm 1) over the candidate graph."""

    name = "grapher_gcs"
    summary = "GraphER: rerank the base's top 200 by graph cohesive smoothing"

    def rerank(self, g: CandidateGraph, qvec: np.ndarray | None) -> np.ndarray:
        p: GraphERParams = self.params
        return graph_cohesive_smoothing(g.adjacency, g.seed, p.alpha, p.eps, p.max_iter)[0]


@register_method
class GraphERPPRRetriever(_GraphERRetriever):
    """Personalized PageRank over the candidate graph, seeded by the base scores (the paper's
    comparison; hub candidates collect mass from their many neighbours)."""

    name = "grapher_ppr"
    summary = "GraphER: rerank the base's top 200 by PPR on the candidate graph"

    def rerank(self, g: CandidateGraph, qvec: np.ndarray | None) -> np.ndarray:
        p: GraphERParams = self.params
        s = np.clip(g.seed, 0.0, None)
        s = s / s.sum() if s.sum() > 0 else np.full(len(s), 1.0 / len(s))
        return ppr_power(row_stochastic(g.adjacency).T, s, p.alpha, p.max_iter, tol=p.eps)


__all__ = ["CandidateGraph", "GraphERParams", "candidate_graph"]
