"""``multihop`` (alias ``default``): the recommended pipeline, every cheap signal in one ranker.

Stages, each a shared operator:

1. **First hop.** BM25 and dense cosine over every passage, their RRF, and SPRIG's PPR over the
   entity–passage graph seeded by the query's entities and the RRF top 5 (title aliases and the
   own-page boost where the corpus has entity-like titles).
2. **Candidates.** The union of the BM25, dense and PPR top ``depth``, plus the **bridge pages**:
   the own pages of the entities that the best first-hop passages (the anchors) mention.
3. **Second-hop signals.** For each candidate: is it the page of an entity an anchor mentions
   (question → anchor → this page), does it mention an anchor's own entity, and its cosine with
   the query *rewritten in vector space* through each anchor (``normalise(q + v_anchor)``: the
   dense analogue of GRIEVER's query rewrite, with no second encoder pass).
4. **Ranking.** A small linear model over these features (``hopgraph.models.ranker``), fitted on
   the training and dev questions of the benchmark data by ``benchmarks/default_ranker.py`` and
   shipped in the package; a hit's explanation names the signals that lifted it.

Passages outside the candidates follow in RRF order, so any ``k`` is answered.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from hopgraph.config import in_unit_interval, option, positive
from hopgraph.graph.ppr import ppr_power
from hopgraph.index import Index
from hopgraph.models.ranker import LinearRanker, load_ranker
from hopgraph.retrieve.base import Retriever, register_method
from hopgraph.retrieve.operators import reciprocal_rank_fusion
from hopgraph.retrieve.ranking import Ranking, top_k
from hopgraph.retrieve.seeds import entity_weights, mix_seeds, passage_weights

FEATURES: tuple[str, ...] = (
    "bm25",  # BM25 / the best BM25 of the query
    "cosine",  # dense cosine
    "cosine_gap",  # cosine − the best cosine of the query
    "ppr",  # PPR / the best PPR of the query
    "bm25_rank",  # −log(1 + rank), 1-based, in each list (absent: rank = n)
    "dense_rank",
    "ppr_rank",
    "rrf_rank",
    "title_in_query",  # the passage's own entity is one of the query's entities
    "query_entities",  # share of the query's entities the passage mentions
    "title_overlap",  # share of the title's words found in the query
    "bridge",  # own page of an entity an anchor mentions: max over anchors of 1/anchor rank
    "backlink",  # mentions an anchor's own entity: max over anchors of 1/anchor rank
    "hop_cosine",  # max over anchors of cos(passage, normalise(q + v_anchor))
    "hop_gain",  # hop_cosine − cosine
    "bridge_cosine",  # bridge × cosine: a bridge page that also looks like the question
)


@dataclass(frozen=True)
class MultihopParams:
    depth: int = option(30, "candidates taken from each of BM25, dense and PPR")
    anchors: int = option(5, "first-hop passages whose entities and vectors lead the second hop")
    bridge_cap: int = option(20, "most bridge pages taken from one anchor (rarest entities first)")
    k_rrf: float = option(60.0, "RRF constant")
    alpha: float = option(0.15, "PPR restart probability")
    max_iter: int = option(5, "PPR power iterations")
    hub_penalty: float = option(0.5, "passage→entity edges scaled by df^-p")
    entity_q: float = option(0.5, "query-entity seeds weighted df^-q")
    seed_k: int = option(5, "RRF top passages seeding PPR")
    own_page_boost: float = option(10.0, "entity→own-page edge boost (with title aliases)")
    model: str = option(
        "", "linear ranker JSON (empty = the one shipped with hopgraph)"
    )  # fmt: skip

    def validate(self) -> None:
        for name in ("depth", "anchors", "bridge_cap", "max_iter", "seed_k", "own_page_boost"):
            positive(name, getattr(self, name))
        in_unit_interval("alpha", self.alpha)


@dataclass
class Candidates:
    """One query's candidate rows, their feature matrix and what explains them."""

    rows: np.ndarray
    X: np.ndarray
    fallback: np.ndarray  # every row in RRF order, to fill a ranking past the candidates
    anchors: np.ndarray
    query_entities: list[int]
    bridge_via: dict[int, tuple[int, int]]  # row → (anchor row, entity) that made it a bridge
    backlink_via: dict[int, int]  # row → anchor row whose own entity it mentions


class _EntityMaps:
    """Entity → own page, per passage → own entity: derived once per entities part."""

    def __init__(self, entities: Any, n: int):
        owns = entities.owns
        if owns is None or owns.nnz == 0:
            self.own_page = np.full(len(entities.names), -1, np.int64)
            self.page_entity = np.full(n, -1, np.int64)
        else:
            coo = sp.coo_matrix(owns)
            self.own_page = np.full(owns.shape[1], -1, np.int64)
            self.own_page[coo.col] = coo.row
            self.page_entity = np.full(n, -1, np.int64)
            self.page_entity[coo.row] = coo.col


_MAPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def entity_maps(entities: Any, n: int) -> _EntityMaps:
    m = _MAPS.get(entities)
    if m is None:
        m = _MAPS[entities] = _EntityMaps(entities, n)
    return m


def _neg_log_rank(order: np.ndarray, n: int) -> np.ndarray:
    """−log(1 + rank) per row for a ranked list (rank from 1); rows not listed get rank n."""
    out = np.full(n, -np.log1p(n), np.float64)
    out[order] = -np.log1p(np.arange(1, len(order) + 1))
    return out


def _words(text: str) -> list[str]:
    return [w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split()]


def candidates(
    index: Index, params: MultihopParams, query: str, qvec: np.ndarray
) -> Candidates:
    """The candidates of ``query`` and their features (columns in :data:`FEATURES` order)."""
    p = params
    sparse, dense, ents = index.part("sparse"), index.part("dense"), index.part("entities")
    n = len(index.corpus)
    bm25 = np.asarray(sparse.scores(query), np.float64)
    cos = np.asarray(dense.scores(qvec), np.float64)
    deep = min(n, max(100, p.depth))
    b_list = top_k(bm25, deep, positive_only=True)
    d_list = top_k(cos, deep)
    fused, _ = reciprocal_rank_fusion([b_list, d_list], p.k_rrf)

    # PPR seeded by the query's entities and the RRF top seed_k (SPRIG graph_rrf, sprig-plus)
    maps = entity_maps(ents, n)
    boost = p.own_page_boost if ents.owns is not None else 1.0
    g = ents.graph(p.hub_penalty, 0.0, 0, boost)
    q_ents = np.asarray(ents.query_entities(query), np.int64)
    q_ents = q_ents[g.kept[q_ents]] if q_ents.size else q_ents
    s_e = np.zeros(g.n_nodes)
    s_e[n + q_ents] = entity_weights(g.df[q_ents], p.entity_q)
    s_d = np.zeros(g.n_nodes)
    seeds = fused[: p.seed_k]
    s_d[seeds] = passage_weights(np.zeros(len(seeds)), "rank")
    s = mix_seeds(s_e, s_d, "l1", 0.5)
    ppr = ppr_power(g.PT, s, p.alpha, p.max_iter)[:n] if s.sum() > 0 else np.zeros(n)
    p_list = top_k(ppr, deep, positive_only=True)

    # anchors: the first hop's best passages, by PPR (graph_rrf) then RRF
    anchors: list[int] = []
    for r in [*p_list[: p.anchors].tolist(), *fused[: p.anchors].tolist()]:
        if r not in anchors:
            anchors.append(r)
    anchors = anchors[: p.anchors]
    anchor_rank = {a: i for i, a in enumerate(anchors, 1)}

    rows_set: dict[int, None] = {}
    for lst in (b_list[: p.depth], d_list[: p.depth], p_list[: p.depth]):
        for r in lst.tolist():
            rows_set[r] = None
    bridge_via: dict[int, tuple[int, int]] = {}
    df = ents.df
    for a in anchors:
        a_ents = ents.passage_entities(a)
        pages = maps.own_page[a_ents]
        ok = (pages >= 0) & (pages != a)
        a_ents, pages = a_ents[ok], pages[ok]
        order = np.lexsort((a_ents, df[a_ents]))[: p.bridge_cap]
        for e, pg in zip(a_ents[order].tolist(), pages[order].tolist(), strict=True):
            rows_set.setdefault(pg, None)
            if pg not in bridge_via or anchor_rank[a] < anchor_rank[bridge_via[pg][0]]:
                bridge_via[pg] = (a, e)
    rows = np.fromiter(rows_set.keys(), np.int64, len(rows_set))

    # features
    X = np.zeros((len(rows), len(FEATURES)), np.float64)
    col = {f: i for i, f in enumerate(FEATURES)}
    bmax = bm25.max(initial=0.0)
    X[:, col["bm25"]] = bm25[rows] / bmax if bmax > 0 else 0.0
    c = cos[rows]
    X[:, col["cosine"]] = c
    X[:, col["cosine_gap"]] = c - cos.max(initial=0.0)
    pmax = ppr.max(initial=0.0)
    X[:, col["ppr"]] = ppr[rows] / pmax if pmax > 0 else 0.0
    X[:, col["bm25_rank"]] = _neg_log_rank(b_list, n)[rows]
    X[:, col["dense_rank"]] = _neg_log_rank(d_list, n)[rows]
    X[:, col["ppr_rank"]] = _neg_log_rank(p_list, n)[rows]
    X[:, col["rrf_rank"]] = _neg_log_rank(fused, n)[rows]
    own = maps.page_entity[rows]
    qset = set(q_ents.tolist())
    X[:, col["title_in_query"]] = [1.0 if e in qset else 0.0 for e in own.tolist()]
    if qset:
        qe = np.zeros(len(ents.names), bool)
        qe[q_ents] = True
        sub = ents.mentions[rows]
        hits = np.add.reduceat(
            np.append(qe[sub.indices], False).astype(np.float64), sub.indptr[:-1]
        ) * (np.diff(sub.indptr) > 0)
        X[:, col["query_entities"]] = hits / len(qset)
    qwords = set(_words(query))
    titles = [index.corpus[r].title for r in rows.tolist()]
    X[:, col["title_overlap"]] = [
        (sum(w in qwords for w in tw) / len(tw)) if (tw := _words(t)) else 0.0 for t in titles
    ]
    backlink_via: dict[int, int] = {}
    anchor_own = {a: int(maps.page_entity[a]) for a in anchors if maps.page_entity[a] >= 0}
    for i, r in enumerate(rows.tolist()):
        if r in bridge_via:
            X[i, col["bridge"]] = 1.0 / anchor_rank[bridge_via[r][0]]
        if anchor_own:
            mentioned = set(ents.passage_entities(r).tolist())
            for a, e in anchor_own.items():
                if a != r and e in mentioned:
                    w = 1.0 / anchor_rank[a]
                    if w > X[i, col["backlink"]]:
                        X[i, col["backlink"]] = w
                        backlink_via[r] = a
    if anchors:
        A = np.asarray(dense.embeddings[np.asarray(anchors)], np.float64)
        H = A + np.asarray(qvec, np.float64)[None, :]
        H /= np.maximum(np.linalg.norm(H, axis=1, keepdims=True), 1e-12)
        V = np.asarray(dense.embeddings[rows], np.float64)
        hop = V @ H.T  # candidates × anchors
        hop[rows[:, None] == np.asarray(anchors)[None, :]] = -1.0  # not through itself
        X[:, col["hop_cosine"]] = hop.max(axis=1)
    X[:, col["hop_gain"]] = X[:, col["hop_cosine"]] - c
    X[:, col["bridge_cosine"]] = X[:, col["bridge"]] * c
    return Candidates(
        rows=rows,
        X=X,
        fallback=np.concatenate([fused, np.setdiff1d(np.arange(n), fused)]),
        anchors=np.asarray(anchors, np.int64),
        query_entities=q_ents.tolist(),
        bridge_via=bridge_via,
        backlink_via=backlink_via,
    )


_RANKERS: dict[str, LinearRanker] = {}


def ranker_for(path: str) -> LinearRanker:
    r = _RANKERS.get(path)
    if r is None:
        r = _RANKERS[path] = load_ranker(path or None)
        r.check_features(FEATURES)
    return r


@register_method
class MultihopRetriever(Retriever):
    name = "multihop"
    Params = MultihopParams
    requires = ("sparse", "dense", "entities")
    uses_dense = True
    summary = (
        "the recommended default: BM25, dense, entity-graph PPR and second-hop signals (bridge "
        "pages, back links, query rewritten through the first hop) in one learned ranker"
    )

    def __init__(self, index: Index, params: MultihopParams):
        super().__init__(index, params)
        self.ranker = ranker_for(params.model)

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        assert qvec is not None
        cand = candidates(self.index, self.params, query, qvec)
        score = self.ranker.score(cand.X)
        order = np.lexsort((cand.rows, -score))
        rows, scores = cand.rows[order], score[order]
        if k > len(rows):
            seen = np.zeros(len(self.ids), bool)
            seen[rows] = True
            rest = cand.fallback[~seen[cand.fallback]][: k - len(rows)]
            floor = float(scores.min(initial=0.0)) - 1.0
            rows = np.concatenate([rows, rest])
            scores = np.concatenate([scores, floor - np.arange(1, len(rest) + 1) * 1e-6])
        rows, scores = rows[:k], scores[:k]
        X = cand.X[order][: len(rows)]
        return self._ranking(
            query,
            rows,
            scores,
            lambda: self._explain(cand, rows, X),
            info={"candidates": int(len(cand.rows)), "anchors": len(cand.anchors)},
        )

    def _search_many(
        self, queries: list[str], k: int, qvecs: Sequence[np.ndarray | None]
    ) -> list[Ranking]:
        return [self._search(q, k, v) for q, v in zip(queries, qvecs, strict=True)]

    def _explain(self, cand: Candidates, rows: np.ndarray, X: np.ndarray) -> list[dict[str, Any]]:
        from hopgraph.retrieve.explain import explain_multihop

        return explain_multihop(self.index, self.ranker, FEATURES, cand, rows, X)
