"""Cross-encoder methods over a corpus graph: ``rerank`` (retrieve-then-rerank, the papers' Re2,
BM25+CE and RRF+CE baselines), ``gar`` (adaptive reranking with a corpus graph, MacAvaney et al.
2022) and ``fastinsight`` (An et al., Algorithm 1: vector search, then GRanker and STeX
interleaved until the budget is spent).

All three spend the same budget: at most ``b_max`` (for ``rerank``: ``n``) passages go through
the cross-encoder per query, each once (:class:`~hopgraph.retrieve.model_search.PairCache`).
Passages the cross-encoder has not scored follow the scored ones in the base retriever's order,
so a ranking deeper than the budget is still complete.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hopgraph.config import NON_NEGATIVE, POSITIVE, UNIT_INTERVAL, option
from hopgraph.index import Index
from hopgraph.models.rerankers import load_cross_encoder
from hopgraph.retrieve.base import Retriever, base_methods, get_retriever, method_parts
from hopgraph.retrieve.graph_search import Frontier, stex
from hopgraph.retrieve.model_search import (
    PairCache,
    graph_model_search,
    mixed_model_search,
    sorted_by,
    zscore,
)
from hopgraph.retrieve.ranking import Ranking

MODEL_HELP = (
    "cross-encoder: a model folder (from `hopgraph train-reranker` or `export-reranker`) or "
    "cached name; empty: the packaged default reranker"
)


@dataclass(frozen=True)
class CrossEncoderParams:
    """What every cross-encoder method takes."""

    model: str = option("", MODEL_HELP, server_only=True)
    base: str = option("dense", "first-stage retriever (vector search, O_vs)", choices=base_methods)
    max_length: int = option(
        0, "tokens per (query, passage) pair; 0: the model's own setting", bounds=NON_NEGATIVE
    )


@dataclass(frozen=True)
class RerankParams(CrossEncoderParams):
    n: int = option(
        100, "candidates rescored by the cross-encoder (the base's top n)", bounds=POSITIVE
    )
    mix: float = option(
        3.0,
        "weight of the base's score beside the cross-encoder's (each z-scored over the n); "
        "0: the cross-encoder alone",
        bounds=NON_NEGATIVE,
    )


class _CrossEncoderRetriever(Retriever):
    """Shared set-up: the base retriever and the cross-encoder. ``requires``: the parts needed
    beyond the base retriever's."""

    uses_dense = False

    @classmethod
    def parts_for(cls, params: Any) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*method_parts(params.base), *cls.requires]))

    def __init__(self, index: Index, params: Any):
        super().__init__(index, params)
        self.base = get_retriever(index, params.base)
        self.uses_dense = type(self).uses_dense or self.base.uses_dense  # type: ignore[misc]
        self.model = load_cross_encoder(params.model, max_length=params.max_length or None)

    def fill_source(self) -> tuple[str, Retriever]:
        return "base ranking", self.base

    def _base(self, query: str, depth: int, qvec: np.ndarray | None) -> Ranking:
        return self.base._search(query, min(depth, len(self.ids)), qvec)

    def _finish(
        self,
        query: str,
        k: int,
        rows: np.ndarray,
        scores: np.ndarray,
        base: Ranking,
        pairs: PairCache,
        t0: float,
        info: dict[str, Any] | None = None,
    ) -> Ranking:
        """Scored rows first, then the base's other rows (scores below the lowest)."""
        pos = self.index.corpus.position
        seen = set(rows.tolist())
        rest = [r for r in (pos(i) for i in base.ids) if r not in seen]
        floor = float(scores.min()) if len(scores) else 0.0
        all_rows = np.concatenate([rows, np.asarray(rest, np.int64)])[:k]
        all_scores = np.concatenate([scores, floor - 1.0 - np.arange(len(rest))])[:k]

        def explain() -> list[dict[str, Any]]:  # only when asked: not on the query path
            base_rank = {pos(i): j for j, i in enumerate(base.ids, start=1)}
            return [
                {"score": float(s), "base_rank": base_rank.get(int(r)), "scored": int(r) in seen}
                for r, s in zip(all_rows.tolist(), all_scores.tolist(), strict=True)
            ]

        info = {
            "pairs": len(pairs),
            "encode_ms": pairs.encode_seconds * 1e3,
            "total_ms": (time.perf_counter() - t0) * 1e3,
            **(info or {}),
        }
        return self._ranking(query, all_rows, all_scores, explain, info)


class RerankRetriever(_CrossEncoderRetriever):
    """Retrieve-then-rerank: the base's top n rescored by a cross-encoder (``O_vs → O_m``)."""

    name = "rerank"
    Params = RerankParams
    requires = ()  # only the base's parts
    summary = "the base retriever's top 100 rescored by a cross-encoder"

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        t0 = time.perf_counter()
        p: RerankParams = self.params
        base = self._base(query, max(p.n, k), qvec)
        pos = self.index.corpus.position
        cand = np.array([pos(i) for i in base.ids[: p.n]], np.int64)
        pairs = PairCache(self.model, query, self.index.corpus)
        rows, scores = mixed_model_search(pairs, cand, np.asarray(base.scores[: p.n]), p.mix)
        return self._finish(query, k, rows, scores, base, pairs, t0)


@dataclass(frozen=True)
class GARParams(CrossEncoderParams):
    n: int = option(100, "depth of the initial ranking R0", bounds=POSITIVE)
    batch: int = option(10, "passages scored per step (b)", bounds=POSITIVE)
    b_max: int = option(100, "passages scored per query (the budget c)", bounds=POSITIVE)


class GARRetriever(_CrossEncoderRetriever):
    """GAR (MacAvaney et al. 2022, Algorithm 1): score batches alternately from the initial
    ranking and from the graph frontier of the passages scored so far, until ``b_max`` are
    scored; the scored passages by score, then the unscored rest of the initial ranking."""

    name = "gar"
    Params = GARParams
    requires = ("corpus_graph",)
    summary = "adaptive reranking: batches from the base ranking and the corpus-graph frontier"

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        t0 = time.perf_counter()
        p: GARParams = self.params
        base = self._base(query, max(p.n, k), qvec)
        pos = self.index.corpus.position
        initial = [pos(i) for i in base.ids[: p.n]]
        graph = self.index.part("corpus_graph")
        frontier = Frontier(graph.adjacency)
        pairs = PairCache(self.model, query, self.index.corpus)
        scored: dict[int, float] = {}
        from_graph = 0
        use_frontier = False
        budget = min(p.b_max, len(self.ids))
        while len(scored) < budget:
            want = min(p.batch, budget - len(scored))
            batch = frontier.pop(want) if use_frontier else []
            from_graph += len(batch)
            if not batch:  # R0's turn, or an empty frontier
                batch = [r for r in initial if r not in scored][:want]
            if not batch:
                batch = frontier.pop(want)
                from_graph += len(batch)
            if not batch:
                break
            rows = np.asarray(batch, np.int64)
            s = pairs.scores(rows)
            scored.update(zip(batch, s.tolist(), strict=True))
            frontier.mark_scored(rows, s)
            use_frontier = not use_frontier
        rows = np.fromiter(scored, np.int64, len(scored))
        order = np.lexsort((rows, -np.fromiter(scored.values(), float, len(scored))))
        scores = np.fromiter(scored.values(), float, len(scored))[order]
        return self._finish(
            query, k, rows[order], scores, base, pairs, t0, {"from_graph": from_graph}
        )


@dataclass(frozen=True)
class FastInsightParams(CrossEncoderParams):
    batch: int = option(
        15,
        "passages added per iteration (BATCH; the paper's 10 spends more pairs for less)",
        bounds=POSITIVE,
    )
    b_max: int = option(100, "passages scored per query (the budget)", bounds=POSITIVE)
    alpha: float = option(0.2, "GRanker smoothing factor", bounds=UNIT_INTERVAL)
    beta: float = option(1.0, "STeX weight of the structural score", bounds=NON_NEGATIVE)
    mix: float = option(
        3.0,
        "weight of the query-passage cosine beside GRanker's score (each z-scored over the "
        "retrieved list); 0: GRanker alone, as the paper",
        bounds=NON_NEGATIVE,
    )
    patience: int = option(
        2,
        "stop early after this many iterations in a row add nothing to the top k "
        "(0: spend the whole budget, as the paper does)",
        bounds=NON_NEGATIVE,
    )


class FastInsightRetriever(_CrossEncoderRetriever):
    """FastInsight (Algorithm 1): the top BATCH of a vector search, ranked by GRanker; then, until
    ``b_max`` passages are retrieved, STeX adds up to BATCH neighbours of the retrieved list and
    GRanker reranks it. With ``patience`` p > 0 the loop also stops once p iterations in a row
    have put none of their passages into the top k (a budget-aware early stop). When the
    retrieved list has no unretrieved neighbour, the next passages of the vector search are
    added instead (the paper's loop would not end)."""

    name = "fastinsight"
    Params = FastInsightParams
    requires = ("dense", "corpus_graph")
    uses_dense = True  # STeX's similarity term
    summary = "FastInsight: vector search, then GRanker and STeX interleaved (budget 100)"

    def __init__(self, index: Index, params: FastInsightParams):
        super().__init__(index, params)
        self.vectors = index.part("dense").embeddings

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        t0 = time.perf_counter()
        p: FastInsightParams = self.params
        assert qvec is not None
        graph = self.index.part("corpus_graph")
        budget = min(p.b_max, len(self.ids))
        base = self._base(query, max(budget, k), qvec)
        pos = self.index.corpus.position
        fallback = [pos(i) for i in base.ids]
        pairs = PairCache(self.model, query, self.index.corpus)
        ret = np.asarray(fallback[: p.batch], np.int64)
        ret, scores = self._granker(pairs, ret, graph, qvec)
        from_graph, steps, stale = 0, 0, 0
        while len(ret) < budget and not (p.patience and stale >= p.patience):
            want = min(len(ret) + p.batch, budget) - len(ret)
            add, _ = stex(graph.adjacency, graph.degree, ret, qvec, self.vectors, p.beta)
            add = add[:want]
            from_graph += len(add)
            if len(add) < want:  # no more neighbours: continue the vector search
                have = set(ret.tolist()) | set(add.tolist())
                more = [r for r in fallback if r not in have][: want - len(add)]
                add = np.concatenate([add, np.asarray(more, np.int64)])
            if len(add) == 0:
                break
            ret, scores = self._granker(pairs, np.concatenate([ret, add]), graph, qvec)
            steps += 1
            stale = 0 if np.isin(ret[:k], add).any() else stale + 1
        return self._finish(
            query,
            k,
            ret,
            scores,
            base,
            pairs,
            t0,
            {"from_graph": from_graph, "steps": steps, "stopped_early": len(ret) < budget},
        )

    def _granker(
        self, pairs: PairCache, rows: np.ndarray, graph: Any, qvec: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """GRanker over ``rows``; with ``mix``, its scores mixed with the dense cosines."""
        p: FastInsightParams = self.params
        rows, scores = graph_model_search(
            pairs, rows, graph.subgraph(rows), graph.degree[rows], p.alpha
        )
        if not p.mix:
            return rows, scores
        return sorted_by(rows, zscore(scores) + p.mix * zscore(self.vectors[rows] @ qvec))


__all__ = ["CrossEncoderParams", "FastInsightParams", "GARParams", "RerankParams"]
