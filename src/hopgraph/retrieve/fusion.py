"""Hybrids of lexical and vector search: ``rrf``, ``hybrid`` (GraphER's base) and ``composed``
(GRIEVER §4.2.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hopgraph.config import NON_NEGATIVE, POSITIVE, option
from hopgraph.errors import ConfigError
from hopgraph.retrieve.base import Retriever, allowed_rows
from hopgraph.retrieve.operators import (
    composed_search,
    lexical_search,
    max_normalize,
    rank_of,
    reciprocal_rank_fusion,
    vector_search,
)
from hopgraph.retrieve.ranking import Ranking, top_k


@dataclass(frozen=True)
class RRFParams:
    k_rrf: float = option(60.0, "RRF constant k in 1/(k + rank)", bounds=NON_NEGATIVE)
    depth: int = option(100, "candidates taken from each of BM25 and dense", bounds=POSITIVE)
    dense_mode: str = option(
        "auto", "dense search: exact, hnsw, or auto (hnsw when the index has the graph)",
        ("auto", "exact", "hnsw"),
    )  # fmt: skip
    ef_search: int = option(256, "HNSW efSearch (dense_mode=hnsw)", bounds=POSITIVE)


class RRFRetriever(Retriever):
    name = "rrf"
    Params = RRFParams
    requires = ("sparse", "dense")
    uses_dense = True
    summary = "reciprocal-rank fusion of BM25 and dense (k=60)"
    filters_natively = True  # both lists drawn from the matching passages

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        p: RRFParams = self.params
        depth = max(p.depth, k)
        allowed = allowed_rows()
        b_rows, _ = lexical_search(self.index.part("sparse"), query, depth, allowed)
        d_rows, _ = vector_search(
            self.index.part("dense"),
            qvec,
            depth,
            mode=p.dense_mode,
            ef_search=p.ef_search,
            allowed=allowed,
        )
        rows, scores = reciprocal_rank_fusion([b_rows, d_rows], p.k_rrf)
        rows, scores = rows[:k], scores[:k]

        def explain() -> list[dict]:
            br, dr = rank_of(b_rows), rank_of(d_rows)
            return [
                {"rrf": float(s), "bm25_rank": br.get(r), "dense_rank": dr.get(r)}
                for r, s in zip(rows.tolist(), scores.tolist(), strict=True)
            ]

        return self._ranking(query, rows, scores, explain)


@dataclass(frozen=True)
class HybridParams:
    w_sparse: float = option(0.3, "weight of the normalised BM25 score", bounds=NON_NEGATIVE)
    w_dense: float = option(0.7, "weight of the cosine similarity", bounds=NON_NEGATIVE)

    # the rule between the options, as validate() checks it and the HTTP schema states it
    json_schema_rules: ClassVar[dict[str, Any]] = {
        "not": {
            "required": ["w_sparse", "w_dense"],
            "properties": {"w_sparse": {"const": 0}, "w_dense": {"const": 0}},
        }
    }

    def validate(self) -> None:
        if self.w_sparse + self.w_dense == 0:
            raise ConfigError("hybrid weights must not both be 0")


class HybridRetriever(Retriever):
    """GraphER's base: w_sparse · BM25/max(BM25) + w_dense · cosine, over every passage."""

    name = "hybrid"
    Params = HybridParams
    requires = ("sparse", "dense")
    uses_dense = True
    summary = "0.3 x normalised BM25 + 0.7 x cosine (GraphER's base)"
    filters_natively = True  # the same scores, the best matching ones

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        p: HybridParams = self.params
        bm25 = self.index.part("sparse").scores(query)
        norm = max_normalize(bm25)
        cos = self.index.part("dense").scores(qvec)
        scores = p.w_sparse * norm + p.w_dense * cos
        allowed = allowed_rows()
        pick = scores if allowed is None else np.where(allowed, scores, -np.inf)
        rows = top_k(pick, k)

        def explain() -> list[dict]:
            return [
                {
                    "hybrid": float(scores[r]),
                    "bm25": float(bm25[r]),
                    "bm25_normalised": float(norm[r]),
                    "cosine": float(cos[r]),
                }
                for r in rows.tolist()
            ]

        return self._ranking(query, rows, scores[rows], explain)


@dataclass(frozen=True)
class ComposedParams:
    c: int = option(10, "dense scoring over the top k·c BM25 candidates", bounds=POSITIVE)
    min_candidates: int = option(100, "at least this many BM25 candidates", bounds=POSITIVE)


class ComposedRetriever(Retriever):
    """GRIEVER's composed retrieval: BM25 picks max(k·c, min_candidates) candidates, dense
    similarity ranks them. Only those candidates' vectors are touched."""

    name = "composed"
    filters_natively = True  # BM25 candidates drawn from the matching passages
    fill_from = "dense"  # past the BM25 candidates: the rest by cosine
    fill_label = "vector search"
    Params = ComposedParams
    requires = ("sparse", "dense")
    uses_dense = True
    summary = "dense scoring of the top k*c BM25 candidates (GRIEVER 4.2.2)"

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        p: ComposedParams = self.params
        rows, scores, order, n_cand = composed_search(
            self.index.part("sparse"),
            self.index.part("dense"),
            query,
            qvec,
            max(k * p.c, p.min_candidates),
            k,
            allowed=allowed_rows(),
        )
        return self._ranking(
            query,
            rows,
            scores,
            lambda: [
                {"cosine": float(s), "bm25_rank": int(o) + 1}
                for s, o in zip(scores.tolist(), order.tolist(), strict=True)
            ],
            info={"candidates": n_cand},
        )
