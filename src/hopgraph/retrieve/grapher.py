"""GraphER (Miao et al.): rerank a base retriever's top-n candidates over a graph built at query
time from the passages' enrichment fields (``grapher_gcs``, ``grapher_ppr``, ``grapher_gat``).

Edges among the candidates (§2.1, §A.3) combine three proximities with configurable weights:

* conceptual: shared named entities (``entities`` part), ``|E_i ∩ E_j| / |E_j|``;
* structural: links given with the data or title mentions (``links`` part), weight 1;
* contextual: adjacent chunks of one document (``links`` part), weight 1.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hopgraph.config import NON_NEGATIVE, POSITIVE, UNIT_INTERVAL, option
from hopgraph.errors import ConfigError
from hopgraph.graph.cohesion import (
    graph_cohesive_smoothing,
    row_stochastic,
    shared_entity_adjacency,
)
from hopgraph.graph.ppr import ppr_power
from hopgraph.index import Index
from hopgraph.retrieve.base import (
    Retriever,
    allowed_rows,
    base_methods,
    get_retriever,
    method_parts,
)
from hopgraph.retrieve.ranking import Ranking, top_k


def _bases() -> tuple[str, ...]:
    """The methods a GraphER method may rerank: any base but a GraphER method."""
    return tuple(m for m in base_methods() if not m.startswith("grapher"))


@dataclass(frozen=True)
class GraphERParams:
    base: str = option(
        "hybrid", "base retriever giving the candidates and their seed scores", choices=_bases
    )
    n: int = option(200, "candidates reranked (the base retriever's top n)", bounds=POSITIVE)
    alpha: float = option(
        0.2,
        "weight of the seed scores in each step (chosen on hotpotqa_train)",
        bounds=UNIT_INTERVAL,
    )
    eps: float = option(
        1e-6, "stop when the L1 change of the scores is below this", bounds=POSITIVE
    )
    max_iter: int = option(100, "at most this many iterations", bounds=POSITIVE)
    w_conceptual: float = option(
        0.0,
        "weight of shared-entity edges (the paper's choice for multi-hop QA; 1 to use)",
        bounds=NON_NEGATIVE,
    )
    w_structural: float = option(
        1.0, "weight of links: hyperlinks, foreign keys, title mentions", bounds=NON_NEGATIVE
    )
    w_contextual: float = option(
        1.0, "weight of edges between adjacent chunks of a document", bounds=NON_NEGATIVE
    )


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
    requires = ("sparse", "dense", "links")  # with the default base; see parts_for
    # the base draws candidates from the matching passages (when it filters natively); the
    # candidate graph is then smoothed over those, and only matching candidates are ranked
    filters_natively = True

    @classmethod
    def parts_for(cls, params: GraphERParams) -> tuple[str, ...]:
        parts = [*method_parts(params.base), "links"]
        if params.w_conceptual:
            parts.append("entities")
        if cls.uses_dense:
            parts.append("dense")
        return tuple(dict.fromkeys(parts))

    def __init__(self, index: Index, params: GraphERParams):
        super().__init__(index, params)
        self.base = get_retriever(index, params.base)
        self.uses_dense = type(self).uses_dense or self.base.uses_dense  # type: ignore[misc]

    def fill_source(self) -> tuple[str, Retriever]:
        return "base ranking", self.base  # past the top n: the base's next passages

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
        allowed = allowed_rows()
        if allowed is not None:  # a base that does not filter: its matching candidates only
            keep = allowed[g.rows]
            order = top_k(np.where(keep, scores, -np.inf), min(k, int(keep.sum())))
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


class GraphERGCSRetriever(_GraphERRetriever):
    """Graph Cohesive Smoothing (Algorithm 1) over the candidate graph."""

    name = "grapher_gcs"
    summary = "GraphER: rerank the base's top 200 by graph cohesive smoothing"

    def rerank(self, g: CandidateGraph, qvec: np.ndarray | None) -> np.ndarray:
        p: GraphERParams = self.params
        return graph_cohesive_smoothing(g.adjacency, g.seed, p.alpha, p.eps, p.max_iter)[0]


@dataclass(frozen=True)
class GraphERPPRParams(GraphERParams):
    alpha: float = option(
        0.6, "PPR restart probability (chosen on hotpotqa_train)", bounds=UNIT_INTERVAL
    )


class GraphERPPRRetriever(_GraphERRetriever):
    """Personalized PageRank over the candidate graph, seeded by the base scores (the paper's
    comparison; hub candidates collect mass from their many neighbours)."""

    name = "grapher_ppr"
    Params = GraphERPPRParams
    summary = "GraphER: rerank the base's top 200 by PPR on the candidate graph"

    def rerank(self, g: CandidateGraph, qvec: np.ndarray | None) -> np.ndarray:
        p: GraphERParams = self.params
        s = np.clip(g.seed, 0.0, None)
        s = s / s.sum() if s.sum() > 0 else np.full(len(s), 1.0 / len(s))
        return ppr_power(row_stochastic(g.adjacency).T, s, p.alpha, p.max_iter, tol=p.eps)


def gat_features(
    g: CandidateGraph, gcs: np.ndarray, qvec: np.ndarray, vectors: np.ndarray
) -> np.ndarray:
    """The GAT's node features (§2.2): [GCS score, query embedding, passage embedding]. The GCS
    score is divided by the query's largest, so bases with other score scales (raw BM25) give
    the same range."""
    top = float(np.max(gcs)) if len(gcs) else 0.0
    score = gcs / top if top > 0 else np.zeros_like(gcs)
    n = len(g.rows)
    x = np.empty((n, 1 + 2 * qvec.shape[0]), dtype=np.float32)
    x[:, 0] = score
    x[:, 1 : 1 + qvec.shape[0]] = qvec
    x[:, 1 + qvec.shape[0] :] = vectors[g.rows]
    return x


@dataclass(frozen=True)
class GraphERGATParams(GraphERParams):
    model: str = option(
        "", "folder of a ranker trained by `hopgraph train-gat` (required)", server_only=True
    )

    def validate(self) -> None:
        if not self.model:
            raise ConfigError(
                "grapher_gat needs model=FOLDER: a ranker trained with `hopgraph train-gat`"
            )


class GraphERGATRetriever(_GraphERRetriever):
    """A graph attention network over the candidate graph (5 GATv2 + 2 dense layers, §2.2),
    fed the GCS score and the query and passage embeddings. The GCS settings are this
    method's parameters; they should match those the model was trained with. Loading one sets
    torch to one intra-op thread for the process (HOPGRAPH_KEEP_TORCH_THREADS=1 opts out)."""

    name = "grapher_gat"
    Params = GraphERGATParams
    uses_dense = True  # the query embedding is a node feature
    summary = "GraphER: rerank the base's top 200 with a trained graph attention network"

    def __init__(self, index: Index, params: GraphERGATParams):
        super().__init__(index, params)
        import torch

        from hopgraph.models.gat import load_ranker

        self.model, self.config = load_ranker(Path(params.model).expanduser())
        if os.environ.get("HOPGRAPH_KEEP_TORCH_THREADS") != "1":
            # 200-node graphs gain nothing from intra-op threads, and on a busy 2-core
            # machine the extra thread made the forward pass ~2x slower (17 vs 8 ms).
            torch.set_num_threads(1)
        self.vectors = index.part("dense").embeddings
        dim = self.config.get("in_dim")
        if dim is not None and dim != 1 + 2 * self.vectors.shape[1]:
            raise ConfigError(
                f"the model {params.model} takes {dim} features; this index's embeddings give "
                f"{1 + 2 * self.vectors.shape[1]}: train it on indexes with the same dense model"
            )

    def rerank(self, g: CandidateGraph, qvec: np.ndarray | None) -> np.ndarray:
        import torch

        p: GraphERParams = self.params
        gcs = graph_cohesive_smoothing(g.adjacency, g.seed, p.alpha, p.eps, p.max_iter)[0]
        x = gat_features(g, gcs, qvec, self.vectors)
        with torch.inference_mode():
            out = self.model(torch.from_numpy(x), torch.from_numpy(g.adjacency > 0))
        return out.numpy().astype(np.float64)


__all__ = ["CandidateGraph", "GraphERGATParams", "GraphERParams", "candidate_graph", "gat_features"]
