"""The default's last step: the ranker's order fused with BM25's and dense's (weighted RRF).

The ranker (:mod:`hopgraph.models.ranker`) was fitted on Wikipedia questions and a few other
sets; on a corpus unlike them one of its signals can mislead it, and a baseline then finds more
than it does. Fusing its order with the two baselines' (over the same candidates) keeps what
each list gets right, so that no single weak signal drags it under them. The weights go by the
kind of corpus (:func:`fusion_kind`: titles that are entity names, database tables, other text)
and, for BM25's, by the query: the more BM25's top hit stands out from its second
(:func:`bm25_margin`), the more its order counts. Every number was chosen by
``benchmarks/any_corpus.py`` with each collection of ``../shared/data`` left out in turn
(docs/notes/any-corpus.md). The corpus profile's BM25 lead, the whole rule from issue 35 to 60,
was measured there as a further part of BM25's weight and not chosen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from hopgraph.corpus.convert import TABLE_KIND
from hopgraph.index.detect import MAX_TABLES
from hopgraph.models.ranker import NO_VECTORS
from hopgraph.ranks import reciprocal_rank_fusion
from hopgraph.retrieve.hop_features import corpus_kind

if TYPE_CHECKING:
    from hopgraph.index import Index
    from hopgraph.retrieve.hop_features import FirstHop
    from hopgraph.retrieve.multihop import Scored


class Weights(NamedTuple):
    """The weights of BM25's and dense's orders beside the ranker's (weight 1) in the RRF;
    BM25's is ``bm25 + margin ×`` the query's :func:`bm25_margin`."""

    bm25: float
    dense: float
    margin: float = 0.0

    @property
    def any(self) -> bool:
        return self.bm25 > 0 or self.dense > 0 or self.margin > 0

    def for_query(self, fh: FirstHop) -> Weights:
        """The weights of one query: BM25's with its margin's part added (``margin`` 0)."""
        if not self.margin:
            return self
        return Weights(round(self.bm25 + self.margin * bm25_margin(fh), 4), self.dense)

    def describe(self) -> str:
        if not self.any:
            return "the ranker's order alone"
        bm25 = f"{self.bm25:g}"
        if self.margin:
            bm25 = f"{bm25} + {self.margin:g} × its top hit's lead over the second"
        return f"the ranker's order (1), BM25's ({bm25}) and dense's ({self.dense:g}), fused"


WEIGHTS: dict[str, Weights] = {
    "entity_titles": Weights(0.0, 0.0),
    "tables": Weights(0.0, 1.0),
    "plain_titles": Weights(0.25, 0.25, 1.0),
    "entity_titles_no_vectors": Weights(0.0, 0.0),
    "tables_no_vectors": Weights(1.0, 0.0),
    "plain_titles_no_vectors": Weights(1.0, 0.0),
}
"""The weights per fusion kind (:func:`fusion_kind`). With vectors: chosen by
``benchmarks/any_corpus.py`` (of a grid, per kind, the weights with the least mean loss in
nDCG@10 below the best of ``bm25``, ``dense`` and ``rrf`` over that kind's collections; each
collection left out in turn for its own row). Without vectors dense is absent; BM25's weight
there was chosen on SciFact's train questions (plain titles: R@10 0.793 at 0, 0.819 at 1; tables
take the same, not measured apart) and the multi-hop train sets (entity titles: every weight
above 0 lost recall)."""


def bm25_margin(fh: FirstHop) -> float:
    """How far BM25's top hit stands out: (s₁ − s₂) / s₁ of its two best scores, in [0, 1]
    (0 with fewer than two hits). A query whose words single out one passage has a high one."""
    if len(fh.b_list) < 2:
        return 0.0
    top, second = (float(fh.bm25[r]) for r in fh.b_list[:2].tolist())
    return (top - second) / top if top > 0 else 0.0


def chosen_weights(kind: str, bm25: float = -1.0, dense: float = -1.0) -> Weights:
    """The weights for fusion kind ``kind``: :data:`WEIGHTS`'s, each replaced where given (≥ 0;
    a BM25 weight given is fixed, without the margin's part); dense's is 0 without vectors
    whatever is asked."""
    base = WEIGHTS[kind]
    fixed = bm25 >= 0
    return Weights(
        float(bm25) if fixed else base.bm25,
        0.0 if kind.endswith(NO_VECTORS) else (base.dense if dense < 0 else float(dense)),
        0.0 if fixed else base.margin,
    )


def fusion_kind(index: Index, vectors: bool) -> str:
    """``entity_titles`` where the index has title aliases, ``tables`` where most documents are
    database tables (``hopgraph convert tables``), else ``plain_titles``; ``_no_vectors`` added
    when the ranking reads no passage vectors."""
    kind = corpus_kind(index)
    if kind == "plain_titles" and is_tables(index):
        kind = "tables"
    return kind if vectors else kind + NO_VECTORS


def is_tables(index: Index, sample: int = 2000) -> bool:
    """Whether most of the corpus is database tables: from what the build detected where it
    did (``index.detected``), else from up to ``sample`` passages spread over the corpus."""
    why = (getattr(index, "detected", None) or {}).get("why") or {}
    if "table_share" in why:
        return float(why["table_share"]) >= MAX_TABLES
    corpus = index.corpus
    n = len(corpus)
    if n == 0:
        return False
    rows = np.unique(np.linspace(0, n - 1, min(n, sample)).astype(np.int64))
    tables = sum((corpus[int(r)].metadata or {}).get("kind") == TABLE_KIND for r in rows)
    return tables >= MAX_TABLES * len(rows)


def corpus_weights(index: Index, vectors: bool) -> Weights:
    """The default's weights on ``index`` (ranked with passage vectors or without)."""
    return chosen_weights(fusion_kind(index, vectors))


def final_order(
    found: Scored, weights: Weights | float, k_rrf: float
) -> tuple[np.ndarray, np.ndarray]:
    """The candidates' order (positions in ``found.rows``) and final scores: the ranker's,
    fused with BM25's and dense's orders of the candidates at ``weights`` (for this query:
    :meth:`Weights.for_query`; a bare number: BM25's weight, dense's 0) when any is above 0."""
    w = weights if isinstance(weights, Weights) else Weights(float(weights), 0.0)
    order = np.lexsort((found.rows, -found.scores))
    if w.any:
        return with_baselines(found, order, w.for_query(found.fh), k_rrf)
    return order, found.scores


def with_baselines(
    found: Scored, order: np.ndarray, w: Weights, k_rrf: float
) -> tuple[np.ndarray, np.ndarray]:
    """The candidates (``order``: positions in ``found.rows``, the ranker's order) re-ordered by
    RRF of the ranker's order (weight 1) and BM25's and dense's orders of the candidates (a
    candidate outside a list has no part from it; ``w.margin`` is not read: see
    :meth:`Weights.for_query`). Returns the new order and every candidate's fused score, by
    position."""
    where = {r: i for i, r in enumerate(found.rows.tolist())}
    lists, ws = [found.rows[order]], [1.0]
    for rows, weight in ((found.fh.b_list, w.bm25), (found.fh.d_list, w.dense)):
        if weight > 0:
            lists.append(np.asarray([r for r in rows.tolist() if r in where], np.int64))
            ws.append(weight)
    rows, scores = reciprocal_rank_fusion(lists, k_rrf, ws)
    fused = np.zeros(len(found.rows))
    pos = np.asarray([where[r] for r in rows.tolist()], np.int64)
    fused[pos] = scores
    return pos, fused
