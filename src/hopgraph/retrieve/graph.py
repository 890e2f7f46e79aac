"""SPRIG: Personalized PageRank over the entity–passage graph, seeded by query entities and/or the
top passages of a base retriever (``graph``, ``graph_bm25_fallback``, ``graph_hybrid``,
``graph_dense``, ``graph_rrf``), plus ``rrf_ppr_fusion``, ``tfidf_graph`` and ``bm25_2step``.

SPRIG-EL is the index option ``entities.title_aliases=true``; SPRIG-PRUNE is
``prune_top_pct=1`` (and/or ``edge_cap``); SPRIG-MIX is ``mixing=adaptive``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hopgraph.config import NON_NEGATIVE, POSITIVE, UNIT_INTERVAL, Bounds, option
from hopgraph.graph.bipartite import BipartiteGraph, build_bipartite
from hopgraph.graph.ppr import ppr_power, ppr_push
from hopgraph.retrieve.base import (
    Retriever,
    allowed_rows,
    get_retriever,
    masked,
    unfiltered,
)
from hopgraph.retrieve.operators import lexical_search, reciprocal_rank_fusion
from hopgraph.retrieve.ranking import Ranking, top_k
from hopgraph.retrieve.seeds import MIXINGS, WEIGHTINGS, entity_weights, mix_seeds, passage_weights


@dataclass(frozen=True)
class GraphParams:
    alpha: float = option(0.15, "PPR restart probability α", bounds=UNIT_INTERVAL)
    max_iter: int = option(5, "power iterations T", bounds=POSITIVE)
    ppr: str = option("power", "PPR solver: power iteration or forward push", ("power", "push"))
    eps: float = option(1e-6, "push residual threshold ε (ppr=push)", bounds=POSITIVE)
    hub_penalty: float = option(0.5, "p: passage→entity edges scaled by df^-p")
    entity_q: float = option(0.5, "q: query-entity seeds weighted df^-q")
    entity_seeds: bool = option(True, "seed the query's entities")
    query_matcher: str = option(
        "ner", "find query entities by the index's NER or by n-gram lookup", ("ner", "ngram")
    )
    seed_k: int = option(5, "top-k passages of the seed retriever", bounds=POSITIVE)
    seed_weighting: str = option("rank", "seed passage weights", WEIGHTINGS)
    mixing: str = option("l1", "entity/passage seed mixing (adaptive = SPRIG-MIX)", MIXINGS)
    alpha_mix: float = option(
        0.5, "entity share of the seed mass (mixing=fixed)", bounds=UNIT_INTERVAL
    )
    fallback: str = option("uniform", "when no seed: uniform over passages or BM25 top-1",
                           ("uniform", "bm25"))  # fmt: skip
    prune_top_pct: float = option(
        0.0, "SPRIG-PRUNE: drop the top x% entities by df", bounds=Bounds(minimum=0, below=100)
    )
    edge_cap: int = option(0, "keep each entity's L heaviest edges (0 = all)")
    own_page_boost: float = option(
        1.0,
        "multiply entity→passage edges into the entity's own page (needs title aliases)",
        bounds=POSITIVE,
    )


class _PPRRetriever(Retriever):
    """Shared machinery: build the seed vector, run PPR, rank passages by the passage slice."""

    Params = GraphParams
    seed_source: ClassVar[str | None] = None  # name of the seed retriever, None = entities only
    requires = ("sparse", "entities")
    filters_natively = True  # seeds from every passage, the walk's matching passages ranked
    fill_from = "bm25"  # past the passages the walk reaches: the seed ranking, else BM25's
    fill_label = "seed ranking"

    def __init__(self, index, params):  # noqa: ANN001
        super().__init__(index, params)
        self.entities = index.part("entities")
        self.seeder = get_retriever(index, self.seed_source) if self.seed_source else None

    def fill_source(self) -> tuple[str, Retriever] | None:
        if self.seeder is not None:
            return self.fill_label, self.seeder
        return super().fill_source()

    def graph(self) -> BipartiteGraph:
        p: GraphParams = self.params
        return self.entities.graph(p.hub_penalty, p.prune_top_pct, p.edge_cap, p.own_page_boost)

    def query_nodes(self, query: str, g: BipartiteGraph) -> np.ndarray:
        """Node ids (offset by the passage count) of the query's usable entities."""
        if not self.params.entity_seeds:
            return np.zeros(0, np.int64)
        ents = self.entities.query_entities(query, self.params.query_matcher)
        ents = np.asarray(ents, dtype=np.int64)
        return ents[g.kept[ents]] if ents.size else ents

    def seed_vector(
        self, query: str, k: int, qvec: np.ndarray | None, g: BipartiteGraph
    ) -> tuple[np.ndarray, dict[str, Any]]:
        p: GraphParams = self.params
        n = g.n_passages
        s_e = np.zeros(g.n_nodes)
        ents = self.query_nodes(query, g)
        s_e[n + ents] = entity_weights(g.df[ents], p.entity_q)
        s_d = np.zeros(g.n_nodes)
        seed_rows = np.zeros(0, np.int64)
        if self.seeder is not None:
            with unfiltered():  # a seed outside a filter may still lead to a passage in it
                r = self.seeder._search(query, p.seed_k, qvec)
            seed_rows = np.array([self.index.corpus.position(i) for i in r.ids], dtype=np.int64)
            s_d[seed_rows] = passage_weights(np.asarray(r.scores), p.seed_weighting)
        s = mix_seeds(s_e, s_d, p.mixing, p.alpha_mix)
        info: dict[str, Any] = {
            "query_entities": [self.entities.names[e] for e in ents.tolist()],
            "seed_passages": len(seed_rows),
        }
        if s.sum() == 0:
            info["fallback"] = p.fallback
            if p.fallback == "bm25":
                rows, _ = lexical_search(self.index.part("sparse"), query, 1)
                s[rows] = 1.0
            if s.sum() == 0:  # uniform (also when BM25 finds nothing)
                s[:n] = 1.0 / n
        return s, info

    def propagate(self, s: np.ndarray, g: BipartiteGraph) -> np.ndarray:
        p: GraphParams = self.params
        if p.ppr == "push":
            return ppr_push(g.P, s, p.alpha, eps=p.eps)
        return ppr_power(g.PT, s, p.alpha, p.max_iter)

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        g = self.graph()
        t0 = time.perf_counter()
        s, info = self.seed_vector(query, k, qvec, g)
        t1 = time.perf_counter()
        r = self.propagate(s, g)
        info.update(seed_ms=(t1 - t0) * 1e3, ppr_ms=(time.perf_counter() - t1) * 1e3)
        return self._rank(query, k, r, s, g, info)

    def _rank(
        self, query: str, k: int, r: np.ndarray, s: np.ndarray, g: BipartiteGraph, info: dict
    ) -> Ranking:
        doc = r[: g.n_passages]
        rows = top_k(masked(doc, allowed_rows(), 0.0), k, positive_only=True)
        return self._ranking(query, rows, doc[rows], lambda: self._explain(rows, r, s, g), info)

    def _search_many(
        self, queries: list[str], k: int, qvecs: Sequence[np.ndarray | None]
    ) -> list[Ranking]:
        """Power iteration for a batch is one sparse × dense product per step for all queries."""
        p: GraphParams = self.params
        if p.ppr != "power" or len(queries) < 2:
            return super()._search_many(queries, k, qvecs)
        g = self.graph()
        seeds = [self.seed_vector(q, k, v, g) for q, v in zip(queries, qvecs, strict=True)]
        S = np.stack([s for s, _ in seeds], axis=1)
        R = ppr_power(g.PT, S, p.alpha, p.max_iter)
        return [
            self._rank(q, k, R[:, j], S[:, j], g, info)
            for j, (q, (_, info)) in enumerate(zip(queries, seeds, strict=True))
        ]

    def _explain(self, rows: np.ndarray, r: np.ndarray, s: np.ndarray, g: BipartiteGraph) -> list:
        n, names = g.n_passages, self.entities.names
        out = []
        for row in rows.tolist():
            ents = self.entities.passage_entities(row)
            ents = ents[g.kept[ents]]
            top = ents[np.argsort(-r[n + ents], kind="stable")[:3]]
            out.append(
                {
                    "ppr": float(r[row]),
                    "seed": float(s[row]),
                    "via_entities": [names[e] for e in top.tolist() if r[n + e] > 0],
                }
            )
        return out


class GraphRetriever(_PPRRetriever):
    name = "graph"
    summary = "SPRIG Graph: PPR seeded by the query's entities (uniform fallback)"
    fill_label = "lexical ranking"


class GraphBM25FallbackRetriever(_PPRRetriever):
    name = "graph_bm25_fallback"
    summary = "SPRIG Graph with BM25 top-1 as seed when the query has no entity (Table A.8)"

    def __init__(self, index, params):  # noqa: ANN001
        from dataclasses import replace

        super().__init__(index, replace(params, fallback="bm25"))


class GraphHybridRetriever(_PPRRetriever):
    name = "graph_hybrid"
    seed_source = "bm25"
    summary = "SPRIG GraphHybrid: PPR seeded by query entities + BM25 top-k"


class GraphDenseRetriever(_PPRRetriever):
    name = "graph_dense"
    seed_source = "dense"
    requires = ("sparse", "dense", "entities")
    uses_dense = True
    summary = "SPRIG GraphDense: PPR seeded by query entities + dense top-k"


class GraphRRFRetriever(_PPRRetriever):
    name = "graph_rrf"
    seed_source = "rrf"
    requires = ("sparse", "dense", "entities")
    uses_dense = True
    summary = "SPRIG GraphRRF: PPR seeded by query entities + RRF top-k"


@dataclass(frozen=True)
class FusionParams(GraphParams):
    k_rrf: float = option(60.0, "RRF constant", bounds=NON_NEGATIVE)
    depth: int = option(100, "list depth fused", bounds=POSITIVE)


class RRFPPRFusionRetriever(_PPRRetriever):
    """Score-level ensembling (SPRIG Table 5): RRF of the ``rrf`` list and the entity-seeded PPR
    list, to tell seed enrichment apart from fusion."""

    name = "rrf_ppr_fusion"
    Params = FusionParams
    requires = ("sparse", "dense", "entities")
    uses_dense = True
    fill_from = "rrf"
    fill_label = "fused base ranking"
    summary = "RRF of the rrf ranking and the entity-seeded PPR ranking"

    def __init__(self, index, params):  # noqa: ANN001
        super().__init__(index, params)
        self.rrf = get_retriever(index, "rrf")

    _search_many = Retriever._search_many  # per query: the fused list is not a PPR vector

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        p: FusionParams = self.params
        depth = max(p.depth, k)
        base = self.rrf._search(query, depth, qvec)
        graph = super()._search(query, depth, None)
        pos = self.index.corpus.position
        lists = [np.array([pos(i) for i in r.ids], dtype=np.int64) for r in (base, graph)]
        rows, scores = reciprocal_rank_fusion(lists, p.k_rrf)
        rows, scores = rows[:k], scores[:k]
        rank_base = {i: n for n, i in enumerate(base.ids, 1)}
        rank_graph = {i: n for n, i in enumerate(graph.ids, 1)}

        def explain() -> list[dict]:
            ids = self.index.corpus.ids
            return [
                {
                    "rrf": float(s),
                    "rrf_rank": rank_base.get(ids[r]),
                    "ppr_rank": rank_graph.get(ids[r]),
                }
                for r, s in zip(rows.tolist(), scores.tolist(), strict=True)
            ]

        return self._ranking(query, rows, scores, explain, graph.info)


@dataclass(frozen=True)
class TermGraphParams:
    alpha: float = option(0.15, "PPR restart probability α", bounds=UNIT_INTERVAL)
    max_iter: int = option(5, "power iterations T", bounds=POSITIVE)
    hub_penalty: float = option(0.5, "p: passage→term edges scaled by df^-p")
    min_df: int = option(3, "drop terms in fewer passages")
    max_df_ratio: float = option(
        0.1, "drop terms in more than this share of passages", bounds=UNIT_INTERVAL
    )


class TfidfGraphRetriever(Retriever):
    """MixPR-like baseline (SPRIG §3.2): the same TF–IDF bipartite graph over BM25 index terms
    (df ≥ 3 and ≤ 0.1·N), PPR seeded uniformly by the query's terms."""

    name = "tfidf_graph"
    filters_natively = True
    fill_from = "bm25"  # past the passages the walk reaches: BM25 of the same query terms
    fill_label = "lexical ranking"
    Params = TermGraphParams
    summary = "PPR over a TF-IDF term-passage graph (MixPR-like baseline)"

    def graph(self) -> BipartiteGraph:
        """The term graph for these settings, cached on the sparse part it is derived from."""
        p: TermGraphParams = self.params
        sparse = self.index.part("sparse")
        key = ("term_graph", p.hub_penalty, p.min_df, p.max_df_ratio)
        g = sparse.derived.get(key)
        if g is None:
            tf = sparse.doc_terms
            df = np.bincount(tf.indices, minlength=tf.shape[1])
            keep = (df >= p.min_df) & (df <= p.max_df_ratio * tf.shape[0])
            g = sparse.derived[key] = build_bipartite(tf, hub_penalty=p.hub_penalty, keep=keep)
        return g

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        p: TermGraphParams = self.params
        g = self.graph()
        terms = np.unique(np.asarray(self.index.part("sparse").term_ids(query), dtype=np.int64))
        terms = terms[g.kept[terms]] if terms.size else terms
        s = np.zeros(g.n_nodes)
        if terms.size:
            s[g.n_passages + terms] = 1.0 / terms.size
        else:
            s[: g.n_passages] = 1.0 / g.n_passages
        r = ppr_power(g.PT, s, p.alpha, p.max_iter)[: g.n_passages]
        rows = top_k(masked(r, allowed_rows(), 0.0), k, positive_only=True)
        return self._ranking(query, rows, r[rows], lambda: [{"ppr": float(x)} for x in r[rows]])


@dataclass(frozen=True)
class TwoStepParams:
    first_k: int = option(5, "passages read in the first BM25 step", bounds=POSITIVE)
    n_expand: int = option(5, "entities added to the query", bounds=POSITIVE)


class BM25TwoStepRetriever(Retriever):
    """Two-stage lexical routing (SPRIG baseline 3): BM25, then the entities of the top
    ``first_k`` passages not already in the query (heaviest by summed TF–IDF weight) are appended
    to the query, and BM25 runs again."""

    name = "bm25_2step"
    filters_natively = True  # the first step reads every passage, the second the matching
    Params = TwoStepParams
    requires = ("sparse", "entities")
    summary = "BM25, entity-based query expansion from the top passages, BM25 again"

    def __init__(self, index, params):  # noqa: ANN001
        super().__init__(index, params)
        n, df = len(index.corpus), index.part("entities").df
        self.idf = np.log((n + 1.0) / (df + 1.0))  # SPRIG's entity IDF, fixed per index

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        p: TwoStepParams = self.params
        sparse, ents = self.index.part("sparse"), self.index.part("entities")
        first, _ = lexical_search(sparse, query, p.first_k)
        in_query = set(ents.query_entities(query))
        idf = self.idf
        weight: dict[int, float] = {}
        for row in first.tolist():
            lo, hi = ents.mentions.indptr[row], ents.mentions.indptr[row + 1]
            for e, tf in zip(
                ents.mentions.indices[lo:hi].tolist(),
                ents.mentions.data[lo:hi].tolist(),
                strict=True,
            ):
                if e not in in_query:
                    weight[e] = weight.get(e, 0.0) + tf * idf[e] + 1.0
        chosen = sorted(weight, key=lambda e: (-weight[e], e))[: p.n_expand]
        expansion = [ents.names[e] for e in chosen]
        expanded = " ".join([query, *expansion])
        rows, scores = lexical_search(sparse, expanded, k, allowed_rows())
        return self._ranking(
            query,
            rows,
            scores,
            lambda: [{"bm25_expanded": float(s)} for s in scores.tolist()],
            info={"expansion": expansion},
        )
