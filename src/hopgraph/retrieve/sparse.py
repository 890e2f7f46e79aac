"""Lexical methods: ``bm25`` and ``bm25_rm3`` (RM3 pseudo-relevance feedback)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hopgraph.config import POSITIVE, UNIT_INTERVAL, option
from hopgraph.retrieve.base import Retriever, allowed_rows, masked
from hopgraph.retrieve.operators import lexical_search
from hopgraph.retrieve.ranking import Ranking, top_k


@dataclass(frozen=True)
class NoParams:
    pass


class BM25Retriever(Retriever):
    name = "bm25"
    Params = NoParams
    summary = "BM25 (bm25s, Lucene variant; k1/b are index options of the sparse part)"
    filters_natively = True

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        sparse = self.index.part("sparse")
        rows, scores = lexical_search(sparse, query, k, allowed_rows())
        return self._ranking(query, rows, scores, lambda: self._explain(query, rows, scores))

    def _explain(self, query: str, rows: np.ndarray, scores: np.ndarray) -> list[dict]:
        sparse = self.index.part("sparse")
        qterms = set(sparse.term_ids(query))
        terms = sparse.id_to_term()
        out = []
        for r, s in zip(rows.tolist(), scores.tolist(), strict=True):
            row = sparse.doc_terms.indices[
                sparse.doc_terms.indptr[r] : sparse.doc_terms.indptr[r + 1]
            ]
            matched = sorted(terms[t] for t in qterms.intersection(row.tolist()))
            out.append({"bm25": s, "matched_terms": matched})
        return out


@dataclass(frozen=True)
class RM3Params:
    fb_docs: int = option(10, "feedback passages (top BM25 hits)", bounds=POSITIVE)
    fb_terms: int = option(10, "expansion terms kept", bounds=POSITIVE)
    orig_weight: float = option(
        0.5, "weight of the original query (λ); 1 - λ goes to feedback", bounds=UNIT_INTERVAL
    )


class RM3Retriever(Retriever):
    """RM3 as in Anserini: feedback model Σ_D score(D)·tf(w,D)/|D| over the top ``fb_docs``,
    top ``fb_terms`` terms L1-normalised, interpolated with the (L1-normalised) query."""

    name = "bm25_rm3"
    filters_natively = True  # feedback from every passage, the matching ones ranked
    Params = RM3Params
    summary = "BM25 with RM3 pseudo-relevance feedback"

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        p: RM3Params = self.params
        sparse = self.index.part("sparse")
        qids = np.asarray(sparse.term_ids(query), dtype=np.int64)
        if qids.size == 0:
            return self._ranking(query, np.zeros(0, np.int64), np.zeros(0), info={"expansion": {}})
        fb_rows, fb_scores = lexical_search(sparse, query, p.fb_docs)
        # Original query model: term frequencies in the query, L1-normalised.
        uq, cq = np.unique(qids, return_counts=True)
        weights = dict(zip(uq.tolist(), (cq / cq.sum()).tolist(), strict=True))
        weights = {t: p.orig_weight * w for t, w in weights.items()}
        fb = _feedback_model(sparse, fb_rows, fb_scores, p.fb_terms)
        for t, w in fb.items():
            weights[t] = weights.get(t, 0.0) + (1.0 - p.orig_weight) * w
        ids = np.fromiter(weights.keys(), dtype=np.int64, count=len(weights))
        ws = np.fromiter(weights.values(), dtype=np.float64, count=len(weights))
        scores = sparse.weighted_scores(ids, ws)
        rows = top_k(masked(scores, allowed_rows(), 0.0), k, positive_only=True)
        terms = sparse.id_to_term()
        expansion = {terms[t]: round(w, 4) for t, w in sorted(fb.items(), key=lambda x: -x[1])}
        return self._ranking(
            query,
            rows,
            scores[rows],
            lambda: [{"bm25_rm3": float(s)} for s in scores[rows]],
            info={"expansion": expansion},
        )


def _feedback_model(sparse, rows: np.ndarray, scores: np.ndarray, n_terms: int) -> dict[int, float]:
    acc: dict[int, float] = {}
    dt = sparse.doc_terms
    for r, s in zip(rows.tolist(), scores.tolist(), strict=True):
        lo, hi = dt.indptr[r], dt.indptr[r + 1]
        tf = np.asarray(dt.data[lo:hi], dtype=np.float64)
        length = tf.sum()
        if length == 0:
            continue
        for t, v in zip(dt.indices[lo:hi].tolist(), (s * tf / length).tolist(), strict=True):
            acc[t] = acc.get(t, 0.0) + v
    if not acc:
        return {}
    # ties broken by the term itself, not its id: ids depend on the order passages arrived in
    terms = sparse.id_to_term()
    top = sorted(acc.items(), key=lambda x: (-x[1], terms[x[0]]))[:n_terms]
    total = sum(v for _, v in top)
    return {t: v / total for t, v in top} if total > 0 else {}
