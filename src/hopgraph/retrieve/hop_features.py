"""Per-passage features for the ``multihop`` ranker: first-hop signals, candidates, second hop.

Every signal is a shared operator of the project: BM25 (``sparse``), cosine (``dense``), RRF,
SPRIG's PPR over the entity–passage graph, GraphER's cohesive smoothing. What is new here is how
the second hop is found without an LLM: the *anchors* (the best passages so far) lead to

- **bridge pages**: the own pages (title aliases) of the entities an anchor mentions,
- **back links**: passages that mention an anchor's own entity,
- **shared entities**: rare entities a passage shares with an anchor,
- **rewritten queries**: the query plus an anchor, as a vector (``normalise(q + v_anchor)``) and
  as words (the query plus the anchor's title, for BM25).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from hopgraph.graph.cohesion import graph_cohesive_smoothing, shared_entity_adjacency
from hopgraph.graph.ppr import ppr_local, ppr_power
from hopgraph.index import Index
from hopgraph.jit import has_numba
from hopgraph.ranks import top_rows
from hopgraph.retrieve.operators import reciprocal_rank_fusion
from hopgraph.retrieve.ranking import top_k
from hopgraph.retrieve.seeds import entity_weights, l1_at, passage_weights

ANN_EF = 256  # HNSW candidates per dense list where the graph replaces exact search (recall@10
# against exact search 0.99 at 100k passages, 0.97 at 128: docs/benchmarks.md)

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
    "anchor_shared",  # entities shared with an anchor (idf-weighted share), × 1/anchor rank
    "bm25_hop",  # BM25 of the query + an anchor's title / its best, max over the top anchors
    "gcs_lift",  # GraphER's cohesive smoothing over shared entities: smoothed − own score
    "entity_titles",  # 1 when the corpus's titles are entity names (title aliases detected on)
)
COL = {f: i for i, f in enumerate(FEATURES)}
DENSE_FEATURES: tuple[str, ...] = (
    "cosine", "cosine_gap", "dense_rank", "hop_cosine", "hop_gain", "bridge_cosine",
)  # fmt: skip
"""The features read from passage vectors: 0 on an index without them (the dense list's
absent rank, −log(1 + n), would tell the ranker the corpus's size and nothing else)."""


@dataclass(frozen=True)
class HopSettings:
    """The knobs of feature extraction (the method's parameters pass them through)."""

    depth: int = 50
    anchors: int = 8
    bridge_cap: int = 30
    k_rrf: float = 60.0
    alpha: float = 0.15
    max_iter: int = 5
    ppr: str = "auto"
    ppr_eps: float = 1e-7
    ppr_local_min_passages: int = 100_000
    hub_penalty: float = 0.5
    entity_q: float = 0.5
    seed_k: int = 5
    own_page_boost: float = 10.0
    rewrite_anchors: int = 3
    rewrite_entities: int = 5
    rewrite_k: int = 0
    gcs_alpha: float = 0.5
    ngram_entities: bool = True
    chain: int = 3  # the chain round's anchors (0: one round); used at search, not in training
    drop: tuple[str, ...] = ()  # features zeroed (ablations)
    vectors: bool = True  # False: no dense signal at all (an index without passage vectors)


class EntityMaps:
    """Entity → own page and passage → own entity (title aliases), derived once per part."""

    def __init__(self, entities: Any, n: int):
        self.own_page = np.full(len(entities.names), -1, np.int64)
        self.page_entity = np.full(n, -1, np.int64)
        if entities.owns is not None and entities.owns.nnz:
            coo = sp.coo_matrix(entities.owns)
            self.own_page[coo.col] = coo.row
            self.page_entity[coo.row] = coo.col
        df = np.asarray(entities.df, np.float64)
        self.idf = np.log((n + 1.0) / (df + 1.0))
        m = sp.csr_matrix(entities.mentions)
        # ones in float32: exact, and every product with them is taken in float64 (the other
        # operand's dtype), so the features are the same as with float64 ones; at 1M passages
        # (17M mentions) it holds 69 MB less for as long as the index is searched
        self.binary = sp.csr_matrix((np.ones(m.nnz, np.float32), m.indices, m.indptr), m.shape)


_MAPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def entity_maps(entities: Any, n: int) -> EntityMaps:
    m = _MAPS.get(entities)
    if m is None:
        m = _MAPS[entities] = EntityMaps(entities, n)
    return m


class CosineScores:
    """One query's cosine with every passage, computed for the rows asked for.

    Where the dense part has an HNSW graph (large corpora), a full matrix product per query
    (and per rewritten query) is what a query cannot afford; the graph gives the top list, and
    the features read the cosine of a few hundred candidates, exactly, from the stored vectors.
    Behaves as the full array for what the pipeline asks of it: ``[rows]``, ``max``, ``top``.
    """

    def __init__(self, dense: Any, qvec: np.ndarray, depth: int, ef: int):
        self.dense, self.qvec = dense, qvec
        self.rows, self.sims = dense.search_ann(qvec, depth, ef)

    def __getitem__(self, rows: Any) -> Any:
        if isinstance(rows, (int, np.integer)):
            return float(self.dense.scores_for(self.qvec, np.asarray([rows]))[0])
        return np.asarray(self.dense.scores_for(self.qvec, np.asarray(rows)), np.float64)

    def max(self, initial: float = -np.inf) -> float:
        return max(float(self.sims[0]) if len(self.sims) else initial, initial)

    def top(self, k: int, *, positive_only: bool = False) -> np.ndarray:
        keep = self.sims > 0 if positive_only else np.ones(len(self.rows), bool)
        return self.rows[keep][:k]


def cosines(dense: Any, qvec: np.ndarray, depth: int) -> Any:
    """The cosine of ``qvec`` with every passage: the full array, or a :class:`CosineScores`
    over the HNSW graph when the dense part has one."""
    if dense.ann is not None:
        return CosineScores(dense, qvec, depth, max(depth, ANN_EF))
    return np.asarray(dense.scores(qvec), np.float64)


class NoCosine:
    """The cosine signal of an index without passage vectors: 0 for every passage, no top list
    (behaves as :class:`CosineScores` does)."""

    def __getitem__(self, rows: Any) -> Any:
        if isinstance(rows, (int, np.integer)):
            return 0.0
        return np.zeros(len(np.asarray(rows)), np.float64)

    def max(self, initial: float = -np.inf) -> float:
        return initial

    def top(self, k: int, *, positive_only: bool = False) -> np.ndarray:
        return np.zeros(0, np.int64)


NO_COSINE = NoCosine()


def top_of(scores: Any, k: int, *, positive_only: bool = False) -> np.ndarray:
    """:func:`top_k` of a full score array, a :class:`CosineScores` or :data:`NO_COSINE`."""
    if isinstance(scores, CosineScores | NoCosine):
        return scores.top(k, positive_only=positive_only)
    return top_k(scores, k, positive_only=positive_only)


@dataclass
class FirstHop:
    """One query's first-hop signals over the whole corpus."""

    query: str
    qvec: np.ndarray | None  # None without passage vectors (``HopSettings.vectors`` off)
    bm25: np.ndarray  # float32, as the sparse part scores (features widen the rows they read)
    cos: Any  # an array, CosineScores, or NO_COSINE
    ppr: np.ndarray
    b_list: np.ndarray
    d_list: np.ndarray
    p_list: np.ndarray
    fused: np.ndarray
    query_entities: np.ndarray
    ppr_peak: float  # the best PPR (0 when none), known from the touched nodes on large graphs

    @cached_property
    def bm25_peak(self) -> float:
        return float(self.bm25.max(initial=0.0))

    def rank_features(self, rows: np.ndarray) -> np.ndarray:
        """(len(rows), 4): −log(1 + rank) of each row in the bm25, dense, PPR and RRF lists
        (−log(1 + n) when it is not in one), computed for these rows only: no n-sized arrays
        per query, which at a million passages cost more than the rest of the features."""
        n = len(self.bm25)
        return np.stack(
            [_neg_log_ranks(order, rows, n) for order in
             (self.b_list, self.d_list, self.p_list, self.fused)],
            axis=1,
        )  # fmt: skip


def _neg_log_ranks(order: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    out = np.full(len(rows), -np.log1p(n), np.float64)
    if len(order) and len(rows):
        hit = np.asarray(rows)[:, None] == np.asarray(order)[None, :]  # rows × list
        found = hit.any(axis=1)
        out[found] = -np.log1p(hit[found].argmax(axis=1) + 1)
    return out


def corpus_kind(index: Index) -> str:
    """``entity_titles`` when the index's entities part has title aliases (titles detected as
    entity names), else ``plain_titles``: the ranker has one model for each."""
    return "entity_titles" if index.part("entities").owns is not None else "plain_titles"


def first_hop(index: Index, s: HopSettings, query: str, qvec: np.ndarray | None) -> FirstHop:
    """BM25, cosine, their RRF and PPR seeded by the query's entities and the RRF top
    ``seed_k`` (SPRIG's graph_rrf with the own-page boost where titles are aliases). Without
    vectors (``s.vectors`` off), BM25 alone stands for the RRF and the cosine is 0."""
    return first_hops(index, s, [query], [qvec])[0]


def first_hops(
    index: Index, s: HopSettings, queries: Sequence[str], qvecs: Sequence[np.ndarray | None]
) -> list[FirstHop]:
    """:func:`first_hop` of several queries. On a graph solved by power iteration their PPR
    runs as one block (one sparse × dense product per step), which gives each query exactly the
    vector it gets alone; on a large one (``ppr`` local) each runs over its seeds'
    neighbourhood, from the seed's entries."""
    sparse, ents = index.part("sparse"), index.part("entities")
    dense = index.part("dense") if s.vectors else None
    n = len(index.corpus)
    deep = min(n, max(100, s.depth))
    boost = s.own_page_boost if ents.owns is not None else 1.0
    g = ents.graph(s.hub_penalty, 0.0, 0, boost)
    local = s.ppr == "local" or (
        s.ppr == "auto" and n >= s.ppr_local_min_passages and has_numba()
    )  # without numba (hopgraph[large]) the local push would run in Python: power iteration
    firsts, seeds = [], []
    for query, qvec in zip(queries, qvecs, strict=True):
        qvec = None if dense is None else qvec
        bm25 = sparse.scores(query)  # float32: a float64 copy costs more than the feature reads
        cos = NO_COSINE if dense is None else cosines(dense, qvec, deep)
        b_list = top_k(bm25, deep, positive_only=True)
        d_list = top_of(cos, deep)
        fused, _ = reciprocal_rank_fusion([b_list, d_list], s.k_rrf)
        found = ents.query_entities(query)
        if s.ngram_entities:  # n-gram lookup finds names whatever their capitalisation
            found = list(dict.fromkeys([*found, *ents.query_entities(query, "ngram")]))
        q_ents = np.asarray(found, np.int64)
        q_ents = q_ents[g.kept[q_ents]] if q_ents.size else q_ents
        top = fused[: s.seed_k]
        # the seed vector (query entities, then the RRF top), L1-normalised, as its non-zeros
        rows = np.concatenate([np.asarray(top, np.int64), n + q_ents])
        vals = np.concatenate(
            [passage_weights(np.zeros(len(top)), "rank"), entity_weights(g.df[q_ents], s.entity_q)]
        )
        order = np.argsort(rows)
        rows, vals = rows[order], vals[order]
        seeds.append((rows, l1_at(rows, vals, g.n_nodes)))
        firsts.append((query, qvec, bm25, cos, b_list, d_list, fused, q_ents))
    if local:  # query by query, over the seeds' neighbourhood only
        pprs = []
        for rows, vals in seeds:
            nz = vals != 0
            sup, val, whole = ppr_local(g.P, rows[nz], vals[nz], s.alpha, s.max_iter, s.ppr_eps)
            mine = sup < n
            peak = float(val[mine].max(initial=0.0))
            pprs.append((whole[:n], top_rows(sup[mine], val[mine], deep), peak))
    else:  # one block, one sparse × dense product per step (a zero seed stays zero)
        block = np.zeros((g.n_nodes, len(queries)))
        for j, (rows, vals) in enumerate(seeds):
            block[rows, j] = vals
        ppr_all = ppr_power(g.PT, block, s.alpha, s.max_iter)[:n]
        pprs = []
        for j in range(len(queries)):
            ppr = np.ascontiguousarray(ppr_all[:, j])
            pprs.append((ppr, top_k(ppr, deep, positive_only=True), float(ppr.max(initial=0.0))))
    return [
        FirstHop(query, qvec, bm25, cos, ppr, b_list, d_list, p_list, fused, q_ents, peak)
        for (query, qvec, bm25, cos, b_list, d_list, fused, q_ents), (ppr, p_list, peak)
        in zip(firsts, pprs, strict=True)
    ]  # fmt: skip


def first_anchors(fh: FirstHop, k: int) -> list[int]:
    """The first hop's best passages: PPR's top ``k``, then RRF's, without repeats."""
    out: list[int] = []
    for r in [*fh.p_list[:k].tolist(), *fh.fused[:k].tolist()]:
        if r not in out:
            out.append(r)
    return out[:k]


def first_candidates(fh: FirstHop, s: HopSettings) -> list[int]:
    """The union of the BM25, dense and PPR top ``depth``, in that order."""
    return list(
        dict.fromkeys(
            [*fh.b_list[: s.depth].tolist(), *fh.d_list[: s.depth].tolist(),
             *fh.p_list[: s.depth].tolist()]
        )
    )  # fmt: skip


def bridges(index: Index, s: HopSettings, anchors: list[int]) -> dict[int, tuple[int, int]]:
    """Bridge page → (anchor, entity): the own pages of the entities each anchor mentions
    (rarest ``bridge_cap`` per anchor), kept for the best-ranked anchor."""
    ents = index.part("entities")
    maps = entity_maps(ents, len(index.corpus))
    via: dict[int, tuple[int, int]] = {}
    for a in anchors:
        a_ents = ents.passage_entities(a)
        pages = maps.own_page[a_ents]
        ok = (pages >= 0) & (pages != a)
        a_ents, pages = a_ents[ok], pages[ok]
        order = np.lexsort((a_ents, ents.df[a_ents]))[: s.bridge_cap]
        for e, pg in zip(a_ents[order].tolist(), pages[order].tolist(), strict=True):
            via.setdefault(pg, (a, e))
    return via


@dataclass
class Rewrites:
    """The query rewritten through the top anchors: BM25 of the query plus the anchor's title and
    rarest new entities (GRIEVER's rewrite through the join entity, without an LLM), and the
    cosine with ``normalise(q + v_anchor)``; each over the whole corpus.

    The features read the BM25 arrays only (the hop cosine is taken from the candidates'
    vectors), so the cosines are computed when first read: by ``top`` where ``rewrite_k`` takes
    candidates from them, and by the explanations."""

    anchors: list[int]
    texts: list[str]
    bm25: list[np.ndarray]  # float32, as the sparse part scores
    cosines_of: Callable[[], list[Any]]  # makes ``cos``
    peaks: list[float] = field(init=False)  # each BM25 array's best score

    def __post_init__(self) -> None:
        self.peaks = [float(b.max(initial=0.0)) for b in self.bm25]

    @cached_property
    def cos(self) -> list[Any]:
        """Each rewritten query's cosines (NO_COSINE without passage vectors)."""
        return self.cosines_of()

    def top(self, k: int) -> list[int]:
        """Each rewritten query's top ``k`` by BM25 and by cosine (the anchor itself left out)."""
        out: list[int] = []
        if k <= 0:
            return out
        for a, b, c in zip(self.anchors, self.bm25, self.cos, strict=True):
            for arr in (b, c):
                out += [r for r in top_of(arr, k + 1, positive_only=True).tolist() if r != a][:k]
        return out


def rewrites(index: Index, s: HopSettings, fh: FirstHop, anchors: list[int]) -> Rewrites:
    sparse, ents = index.part("sparse"), index.part("entities")
    qset = set(fh.query_entities.tolist())
    use = anchors[: s.rewrite_anchors]
    texts, bm = [], []
    for a in use:
        a_ents = [e for e in ents.passage_entities(a).tolist() if e not in qset]
        a_ents.sort(key=lambda e: (ents.df[e], e))
        text = " ".join(
            [index.corpus[a].title, *(ents.names[e] for e in a_ents[: s.rewrite_entities])]
        )
        texts.append(text)
        bm.append(sparse.scores(f"{fh.query} {text}"))
    if fh.qvec is None:  # no passage vectors
        return Rewrites(use, texts, bm, lambda: [NO_COSINE] * len(use))
    dense, q = index.part("dense"), np.asarray(fh.qvec, np.float64)

    def cosines_of() -> list[Any]:
        cs = []
        for a in use:
            h = q + np.asarray(dense.vectors(a), np.float64)
            h /= max(float(np.linalg.norm(h)), 1e-12)
            cs.append(cosines(dense, h.astype(np.float32), s.rewrite_k + 2))
        return cs

    return Rewrites(use, texts, bm, cosines_of)


@dataclass
class HopFeatures:
    X: np.ndarray
    bridge_via: dict[int, tuple[int, int]]
    backlink_via: dict[int, int]


def features(
    index: Index,
    s: HopSettings,
    fh: FirstHop,
    rows: np.ndarray,
    anchors: list[int],
    via: dict[int, tuple[int, int]],
    rw: Rewrites | None = None,
) -> HopFeatures:
    """The feature matrix of ``rows`` (columns in :data:`FEATURES` order) given the anchors and
    their bridge pages ``via`` (from :func:`bridges`)."""
    ents = index.part("entities")
    n = len(index.corpus)
    maps = entity_maps(ents, n)
    X = np.zeros((len(rows), len(FEATURES)), np.float64)
    bmax = fh.bm25_peak
    X[:, COL["bm25"]] = _wide(fh.bm25, rows) / bmax if bmax > 0 else 0.0
    c = fh.cos[rows]
    X[:, COL["cosine"]] = c
    X[:, COL["cosine_gap"]] = c - fh.cos.max(initial=0.0)
    pmax = fh.ppr_peak
    X[:, COL["ppr"]] = _wide(fh.ppr, rows) / pmax if pmax > 0 else 0.0
    X[:, COL["bm25_rank"] : COL["rrf_rank"] + 1] = fh.rank_features(rows)
    q_ents = fh.query_entities
    M = maps.binary[rows]
    if q_ents.size:
        own = maps.page_entity[rows]
        X[:, COL["title_in_query"]] = np.isin(own, q_ents) & (own >= 0)
        qe = np.zeros(M.shape[1])
        qe[q_ents] = 1.0
        X[:, COL["query_entities"]] = (M @ qe) / len(q_ents)
    qwords = set(_words(fh.query))
    titles = title_words(index.corpus)
    X[:, COL["title_overlap"]] = [_overlap(titles[r], qwords) for r in rows.tolist()]

    rank = {a: i for i, a in enumerate(anchors, 1)}
    backlink_via: dict[int, int] = {}
    if anchors:
        A = np.asarray(anchors, np.int64)
        w = 1.0 / np.arange(1, len(A) + 1)
        self_hit = rows[:, None] == A[None, :]
        for i, r in enumerate(rows.tolist()):
            if r in via:
                X[i, COL["bridge"]] = 1.0 / rank[via[r][0]]
        own_a = maps.page_entity[A]
        has = own_a >= 0
        if has.any():
            link = M[:, own_a[has]].toarray() * w[has][None, :]  # candidate mentions anchor's page
            link[self_hit[:, has]] = 0.0
            best = link.max(axis=1)
            X[:, COL["backlink"]] = best
            arg = link.argmax(axis=1)
            for i in np.flatnonzero(best > 0).tolist():
                backlink_via[int(rows[i])] = int(A[has][arg[i]])
        if fh.qvec is not None:  # (without passage vectors the hop cosine stays 0)
            X[:, COL["hop_cosine"]] = _hop_cosine(index.part("dense"), fh.qvec, rows, A, self_hit)
        idf_q = maps.idf.copy()
        idf_q[q_ents] = 0.0  # sharing the question's own entities says nothing about a hop
        shared = (M.multiply(idf_q[None, :]).tocsr() @ maps.binary[A].T).toarray()
        own_w = M @ maps.idf
        shared = np.divide(
            shared, own_w[:, None], out=np.zeros_like(shared), where=own_w[:, None] > 0
        )
        shared[self_hit] = 0.0
        X[:, COL["anchor_shared"]] = (shared * w[None, :]).max(axis=1)
        hop_b = np.zeros(len(rows))
        if rw is not None:
            for a, sb, peak in zip(rw.anchors, rw.bm25, rw.peaks, strict=True):
                v = _wide(sb, rows) / peak if peak > 0 else np.zeros(len(rows))
                v[rows == a] = 0.0
                hop_b = np.maximum(hop_b, v)
        X[:, COL["bm25_hop"]] = hop_b
    X[:, COL["hop_gain"]] = X[:, COL["hop_cosine"]] - c
    X[:, COL["bridge_cosine"]] = X[:, COL["bridge"]] * c
    base = 0.3 * X[:, COL["bm25"]] + 0.7 * c  # GraphER's hybrid base score
    smoothed, _ = graph_cohesive_smoothing(
        shared_entity_adjacency(ents.mentions, rows), base, s.gcs_alpha
    )
    X[:, COL["gcs_lift"]] = smoothed - base
    X[:, COL["entity_titles"]] = 1.0 if ents.owns is not None else 0.0
    drop = (*s.drop, *(DENSE_FEATURES if fh.qvec is None else ()))
    if drop:
        X[:, [COL[f] for f in drop]] = 0.0
    return HopFeatures(X, {r: v for r, v in via.items()}, backlink_via)


def _wide(scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``scores[rows]`` in float64 (the feature arithmetic's precision)."""
    return np.asarray(scores[rows], np.float64)


def _hop_cosine(
    dense: Any, qvec: np.ndarray, rows: np.ndarray, A: np.ndarray, self_hit: np.ndarray
) -> np.ndarray:
    """Each row's best cosine with ``normalise(q + v_anchor)`` over the anchors ``A`` (an
    anchor itself excluded)."""
    H = np.asarray(dense.vectors(A), np.float64) + np.asarray(qvec, np.float64)[None, :]
    H /= np.maximum(np.linalg.norm(H, axis=1, keepdims=True), 1e-12)
    hop = np.asarray(dense.vectors(rows), np.float64) @ H.T
    hop[self_hit] = -1.0
    return hop.max(axis=1)


def _words(text: str) -> list[str]:
    return "".join(c.lower() if c.isalnum() else " " for c in text).split()


_TITLE_WORDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_TITLE_CACHE = 1 << 17  # rows whose title words are kept (the candidates of many queries)


class _TitleWords:
    """Each passage's title as lowercase words, computed when a row is first asked for: a
    query looks at a few hundred candidates, and the corpus may be read from disk."""

    def __init__(self, corpus: Any):
        # weakly: this is the value of a WeakKeyDictionary keyed by the corpus, and a strong
        # reference would keep every corpus (one per served generation) alive for good
        self._corpus = weakref.ref(corpus)
        self.cache: dict[int, list[str]] = {}

    def __getitem__(self, row: int) -> list[str]:
        words = self.cache.get(row)
        if words is None:
            if len(self.cache) >= _TITLE_CACHE:
                self.cache.clear()
            corpus = self._corpus()
            assert corpus is not None  # the entry dies with its corpus
            words = self.cache[row] = _words(corpus[row].title)
        return words


def title_words(corpus: Any) -> _TitleWords:
    """Every passage title as lowercase words, by row (one accessor per corpus)."""
    words = _TITLE_WORDS.get(corpus)
    if words is None:
        words = _TITLE_WORDS[corpus] = _TitleWords(corpus)
    return words


def _overlap(tw: list[str], qwords: set[str]) -> float:
    return sum(w in qwords for w in tw) / len(tw) if tw else 0.0
