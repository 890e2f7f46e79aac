"""``multihop`` (alias ``default``): the recommended pipeline, every cheap signal in one ranker.

1. **First hop** (:func:`~hopgraph.retrieve.hop_features.first_hop`): BM25 and dense cosine over
   every passage, their RRF, and SPRIG's PPR over the entity–passage graph seeded by the query's
   entities and the RRF top 5 (title aliases and the own-page boost where the corpus has
   entity-like titles, detected at index time).
2. **Anchors and second hop**: the first hop's best passages (the anchors) lead to their bridge
   pages (own pages of the entities they mention) and to the query rewritten through them (as
   words for BM25, as a vector for cosine).
3. **Candidates**: the union of the BM25, dense and PPR top ``depth``, the bridge pages and the
   rewritten queries' top ``rewrite_k``.
4. **Ranking**: a learned ranker (LightGBM LambdaRank, shipped in the package,
   :mod:`hopgraph.models.ranker`; one model for corpora whose titles are entity names, one for
   the rest) scores the candidates from their features.

5. **The baselines' say** (:mod:`hopgraph.retrieve.final_fusion`): on a corpus whose titles
   are not entity names the ranker's order is fused with BM25's and dense's (weighted RRF, the
   weights chosen with each collection left out in turn), so that no signal the ranker
   over-trusts on an unfamiliar corpus drags it under the baselines.

Without passage vectors (no dense part: sparse and entities only, or a staged build still
encoding them) every dense signal is absent, ranker models fitted so rank the candidates, and
BM25's weight goes by corpus kind (:data:`~hopgraph.retrieve.final_fusion.WEIGHTS`).

Two switches, off by default, cost more: ``rerank=N`` (the packaged cross-encoder over the top
N) and ``hop_encoder`` (a trained query tower reads the question with each round's top passages
and adds two features, :mod:`hopgraph.models.hop_encoder`; comparison questions keep the
default's ranking, :mod:`hopgraph.text.questions`).

Passages outside the candidates follow in RRF order, so any ``k`` is answered. Explanations
name the signals that lifted each hit, in words (:mod:`hopgraph.retrieve.explain`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from hopgraph.config import NON_NEGATIVE, POSITIVE, UNIT_INTERVAL, Bounds, option
from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.models.hop_encoder import Columns
from hopgraph.models.ranker import NO_VECTORS, RankerSet, load_ranker, ranker_kind
from hopgraph.retrieve.base import Retriever, allowed_rows
from hopgraph.retrieve.final_fusion import chosen_weights, final_order, fusion_kind
from hopgraph.retrieve.hop_features import (
    FEATURES,
    FirstHop,
    HopFeatures,
    HopSettings,
    Rewrites,
    bridges,
    corpus_kind,
    features,
    first_anchors,
    first_candidates,
    first_hop,
    first_hops,
    rewrites,
)
from hopgraph.retrieve.model_search import PairCache, mixed_model_search
from hopgraph.retrieve.operators import filtered_rrf
from hopgraph.retrieve.query_vectors import TOP as QV_TOP
from hopgraph.retrieve.query_vectors import QueryVectors
from hopgraph.retrieve.ranking import Ranking
from hopgraph.text.questions import is_comparison


@dataclass(frozen=True)
class MultihopParams:
    depth: int = option(50, "candidates taken from each of BM25, dense and PPR", bounds=POSITIVE)
    anchors: int = option(
        8, "first-hop passages whose entities and vectors lead the second hop", bounds=POSITIVE
    )
    bridge_cap: int = option(
        30, "most bridge pages taken from one anchor (rarest entities first)", bounds=POSITIVE
    )
    k_rrf: float = option(60.0, "RRF constant", bounds=NON_NEGATIVE)
    alpha: float = option(0.15, "PPR restart probability", bounds=UNIT_INTERVAL)
    max_iter: int = option(5, "PPR power iterations", bounds=POSITIVE)
    ppr: str = option(
        "auto",
        "PPR solver: power = every step over the whole graph; local = only nodes whose mass "
        "exceeds ppr_eps x their degree spread it (cost independent of the graph's size); "
        "auto = local from ppr_local_min_passages passages on",
        choices=("auto", "power", "local"),
    )
    ppr_eps: float = option(
        1e-7, "local PPR: a node spreads its mass while above eps x degree", bounds=NON_NEGATIVE
    )
    ppr_local_min_passages: int = option(
        100_000,
        "ppr=auto solves locally from this many (with numba, hopgraph[large])",
        bounds=POSITIVE,
    )
    hub_penalty: float = option(0.5, "passage→entity edges scaled by df^-p")
    entity_q: float = option(0.5, "query-entity seeds weighted df^-q")
    seed_k: int = option(5, "RRF top passages seeding PPR", bounds=POSITIVE)
    own_page_boost: float = option(
        10.0, "entity→own-page edge boost (with title aliases)", bounds=POSITIVE
    )
    rewrite_anchors: int = option(3, "anchors the query is rewritten through", bounds=POSITIVE)
    rewrite_entities: int = option(
        5, "rarest new entities of an anchor added to its rewrite", bounds=NON_NEGATIVE
    )
    rewrite_k: int = option(
        0, "candidates taken from each rewritten query (0 = none)", bounds=NON_NEGATIVE
    )
    chain: int = option(
        3,  # chosen on the train sets (docs/benchmarks.md, issue 37)
        "a second round: the ranker's top N lead the next hop (their bridge pages join the "
        "candidates, every hop feature is taken again from them, the ranker scores again; 0: one "
        "round)",
        bounds=NON_NEGATIVE,
    )
    ngram_entities: bool = option(True, "also find query entities by n-gram lookup")
    gcs_alpha: float = option(
        0.5, "cohesive smoothing: weight of a passage's own score", bounds=UNIT_INTERVAL
    )
    model: str = option("", "ranker file (empty = the one shipped with hopgraph)", server_only=True)
    rerank: int = option(
        0,
        "rescore the top N with the cross-encoder, mixed with the ranker's score (0: off)",
        bounds=NON_NEGATIVE,
    )
    rerank_mix: float = option(
        6.0,  # chosen leaving each multi-hop set out in turn (docs/benchmarks.md, issue 22)
        "weight of the ranker's score beside the cross-encoder's",
        bounds=NON_NEGATIVE,
    )
    rerank_paths: bool = option(
        True,
        "a rescored passage reached through another (a first-hop passage's bridge page or back "
        "link) scores at least the mean of the two cross-encoder scores",
    )
    rerank_model: str = option(
        "", "cross-encoder for rerank (empty: the packaged reranker)", server_only=True
    )
    hop_encoder: bool = option(
        False,
        "a trained hop query encoder reads the question with each round's top passages and "
        "gives the ranker two more features (is this the next hop?); on corpora with entity-name "
        "titles and passage vectors, comparison questions keep the default's ranking; costs "
        "65-110 ms more a search on 2 cores in bf16 (75-155 in fp32) and ~450 MB "
        "(docs/benchmarks.md)",
    )
    hop_encoder_model: str = option(
        "", "hop encoder folder (empty: the packaged one)", server_only=True
    )
    hop_encoder_precision: str = option(
        "auto",
        "the hop encoder's arithmetic: bf16 = PyTorch with bf16 weights (needs native bf16 "
        "and hopgraph[dense]; 1.9x faster than fp32 here, hop vectors within cosine 0.9999 of "
        "fp32's); fp32 = ONNX Runtime (as trained; no PyTorch needed); int8 = ONNX Runtime, "
        "dynamically quantised; auto = bf16 where it can run, else fp32",
        choices=("auto", "bf16", "fp32", "int8"),
    )
    hop_encoder_rounds: str = option(
        "all",
        "where the hop encoder's features are taken: all = in the first round and the chain "
        "round (as trained); chain = in the chain round only (the first round is the default's "
        "own ranking, so one round of hop texts is encoded: the cheaper form, issue 63; needs "
        "chain > 0)",
        choices=("all", "chain"),
    )
    query_vectors: int = option(
        -1,
        "on an index without passage vectors (entity-name titles): encode the question and the "
        "no-vector order's top N passages at query time and rerank them by their cosine; costs "
        "the encoding of N passages a search (hundreds of ms on 2 cores, docs/benchmarks.md); "
        "-1: 20 while a staged build is still encoding the index's vectors, else 0 (off)",
        bounds=Bounds(minimum=-1),
    )
    query_vectors_model: str = option(
        "", "reranker file for query_vectors (empty: the packaged)", server_only=True
    )
    vectors: str = option(
        "auto",
        "passage vectors in the ranking: auto = where the index has them and its encoder speaks "
        "the corpus's language (the bundled MiniLM: English only; any other model is taken to "
        "speak it), else the ranking without them; on; off",
        choices=("auto", "on", "off"),
    )
    lexical_weight: float = option(
        -1.0,
        "weight of BM25's ranking fused (RRF) with the ranker's (weight 1); -1: the default's for "
        "the kind of corpus, raised where its profile shows BM25 leading (final_fusion.WEIGHTS; "
        "0 on entity-name titles); 0: none",
        bounds=Bounds(minimum=0, also=(-1,)),
    )
    dense_weight: float = option(
        -1.0,
        "weight of dense's ranking fused (RRF) with the ranker's (weight 1); -1: the default's "
        "for the kind of corpus (final_fusion.WEIGHTS); 0: none",
        bounds=Bounds(minimum=0, also=(-1,)),
    )

    def settings(self) -> HopSettings:
        """The feature-extraction knobs: every parameter of the same name (all but ``model``)."""
        return HopSettings(**{f.name: getattr(self, f.name) for f in fields(HopSettings)
                              if f.name not in ("drop", "vectors")})  # fmt: skip


@dataclass
class Scored:
    """One query's candidates: rows, their features, the ranker's scores, and what led there
    (``before``: the first round, when these are the chain round's)."""

    fh: FirstHop
    rows: np.ndarray
    feats: HopFeatures
    scores: np.ndarray
    anchors: list[int]
    rewrites: Rewrites
    before: Scored | None = None


def score_candidates(
    index: Index,
    s: HopSettings,
    query: str,
    qvec: np.ndarray,
    scorer: Callable[[np.ndarray], np.ndarray] | None,
    fh: FirstHop | None = None,
    extra: Columns | None = None,
    chain_with: tuple[Callable[[np.ndarray], np.ndarray], Columns | None] | None = None,
) -> Scored:
    """First hop (``fh`` when already computed), anchors, bridge pages, rewritten queries,
    features, and ``scorer``'s scores of every candidate of ``query`` (zeros without a scorer:
    training collects features); then, with a scorer and ``s.chain``, the chain round
    (:func:`chain_round`). ``extra``: more feature columns, from each round's candidates and
    anchors (the hop encoder's), appended to the features the scorer reads. ``chain_with``: the
    chain round's own (scorer, extra) in place of ``scorer`` and ``extra`` (the hop encoder in
    the chain round only)."""
    fh = fh if fh is not None else first_hop(index, s, query, qvec)
    anchors = first_anchors(fh, s.anchors)
    via = bridges(index, s, anchors)
    rw = rewrites(index, s, fh, anchors)
    rows = list(dict.fromkeys([*first_candidates(fh, s), *via, *rw.top(s.rewrite_k)]))
    rows_a = np.asarray(rows, np.int64)
    hf = widened(features(index, s, fh, rows_a, anchors, via, rw), rows_a, anchors, extra)
    if scorer is None:
        return Scored(fh, rows_a, hf, np.zeros(len(rows_a)), anchors, rw)
    first = Scored(fh, rows_a, hf, np.asarray(scorer(hf.X), np.float64), anchors, rw)
    if s.chain <= 0:
        return first
    then, then_extra = chain_with if chain_with is not None else (scorer, extra)
    return chain_round(index, s, first, then, then_extra)


def widened(
    hf: HopFeatures, rows: np.ndarray, anchors: list[int], extra: Columns | None
) -> HopFeatures:
    """``hf`` with ``extra``'s columns after the :data:`FEATURES` ones (unchanged without)."""
    if extra is None:
        return hf
    return replace(hf, X=np.column_stack([hf.X, extra(rows, anchors, hf.X)]))


def chain_round(
    index: Index,
    s: HopSettings,
    first: Scored,
    scorer: Callable[[np.ndarray], np.ndarray],
    extra: Columns | None = None,
) -> Scored:
    """The next hop anchored on the ranker's own top ``s.chain`` candidates (a passage the first
    round ranks high is often the second hop, whose entities lead to the third): their bridge
    pages join the candidates, every feature is taken again with them as the anchors (the
    rewritten queries stay the first round's), and the same ranker scores the candidates again.
    The ranker is fitted on first-round features only: the chain round asks it the same
    question ("is this a hop from one of the best passages?") about better anchors."""
    top = first.rows[np.lexsort((first.rows, -first.scores))[: s.chain]].tolist()
    via = bridges(index, s, top)
    rows = np.asarray(list(dict.fromkeys([*first.rows.tolist(), *via])), np.int64)
    hf = widened(features(index, s, first.fh, rows, top, via, first.rewrites), rows, top, extra)
    scores = np.asarray(scorer(hf.X), np.float64)
    return Scored(first.fh, rows, hf, scores, top, first.rewrites, first)


PPR_BLOCK = 16  # queries whose PPR runs as one (nodes × queries) block in a batch


class MultihopRetriever(Retriever):
    name = "multihop"
    Params = MultihopParams
    requires = ("sparse", "entities")
    optional = ("dense",)  # without it, every dense signal is absent (see __init__)
    uses_dense = True
    summary = (
        "the recommended default: BM25, dense, entity-graph PPR and second-hop signals (bridge "
        "pages, back links, queries rewritten through the first hop) in a learned ranker"
    )
    filters_natively = True  # the candidates that match, then the matching rest by RRF

    def __init__(self, index: Index, params: MultihopParams):
        super().__init__(index, params)
        # without passage vectors (no dense part: sparse and entities only, or a staged build
        # still encoding them) every dense signal is absent and a ranker fitted so ranks
        self.vectors, self.vectors_off = use_vectors(index, params.vectors)
        self.uses_dense = self.vectors  # type: ignore[misc]
        kind = ranker_kind(corpus_kind(index), self.vectors)
        self.ranker = shared_ranker(params.model).for_kind(kind)
        self.settings = replace(params.settings(), vectors=self.vectors)
        self.kind = fusion_kind(index, self.vectors)
        self.weights = chosen_weights(self.kind, params.lexical_weight, params.dense_weight)
        self.hop = None  # the hop encoder, where the switch is on and it applies to this index
        self.hop_off = "" if params.hop_encoder else "off"
        if params.hop_encoder and kind != "entity_titles":
            self.hop_off = ("no passage vectors" if not self.vectors
                            else "corpus titles are not entity names")  # fmt: skip
        elif params.hop_encoder and params.hop_encoder_rounds == "chain" and params.chain <= 0:
            self.hop_off = "hop_encoder_rounds=chain and chain=0: no chain round to run it in"
        elif params.hop_encoder:
            from hopgraph.models.hop_encoder import load_hop_encoder

            self.hop = load_hop_encoder(params.hop_encoder_model, params.hop_encoder_precision)
        self.query_vectors, self.qv_off = None, ""
        n = params.query_vectors
        if n < 0:
            n = QV_TOP if getattr(index, "pending", None) else 0
        if n > 0 and self.vectors:
            self.qv_off = "the index has passage vectors"
        elif n > 0 and kind != ranker_kind("entity_titles", False):
            self.qv_off = "corpus titles are not entity names"
        elif n > 0:
            self.query_vectors = QueryVectors(index, n, params.query_vectors_model)
        self.cross_encoder = None
        if params.rerank:
            from hopgraph.models.rerankers import load_cross_encoder

            self.cross_encoder = load_cross_encoder(params.rerank_model)

    def trusted(self) -> str:
        """The ranker model this corpus gets and how its order is fused with the baselines'."""
        why = {
            "entity_titles": "titles are entity names (the ranker fitted on Wikipedia-like pages)",
            "tables": "database tables (the ranker for other corpora)",
            "plain_titles": "titles are not entity names (the ranker for other corpora)",
        }[self.kind.removesuffix(NO_VECTORS)]
        vectors = "with vectors" if self.vectors else f"without vectors ({self.vectors_off})"
        asked = self.params.lexical_weight >= 0 or self.params.dense_weight >= 0
        how = "as asked" if asked else "the default for this kind of corpus"
        return f"{why}, {vectors}; final order: {self.weights.describe()} ({how})"

    def _search_many(
        self, queries: list[str], k: int, qvecs: Sequence[np.ndarray | None]
    ) -> list[Ranking]:
        """The first hops of a batch share one PPR block (``PPR_BLOCK`` queries at a time, so
        the block stays small on large graphs); the rest is per query."""
        out: list[Ranking] = []
        for i in range(0, len(queries), PPR_BLOCK):
            part = queries[i : i + PPR_BLOCK]
            fhs = first_hops(self.index, self.settings, part, list(qvecs[i : i + PPR_BLOCK]))
            out += [self._rank(q, k, fh) for q, fh in zip(part, fhs, strict=True)]
        return out

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        assert qvec is not None or not self.vectors
        return self._rank(query, k, first_hop(self.index, self.settings, query, qvec))

    def _rank(self, query: str, k: int, fh: FirstHop) -> Ranking:
        ranker, extra, chain_with, hop = self.ranker, None, None, self.hop_off
        if self.hop is not None and is_comparison(query):
            hop = "comparison question: the default's ranking"
        elif self.hop is not None and self.params.hop_encoder_rounds == "chain":
            # the first round is the default's own; the chain round scores with the encoder's
            # features, so the one round of hop texts encoded is the chain round's anchors
            chain_with = (self.hop.ranker.score, self.hop.columns(self.index, query))
            ranker, hop = self.hop.ranker, "on: chain round"
        elif self.hop is not None:
            ranker, extra, hop = self.hop.ranker, self.hop.columns(self.index, query), "on"
        first_scorer = self.ranker.score if chain_with else ranker.score
        last = score_candidates(
            self.index, self.settings, query, fh.qvec, first_scorer, fh, extra, chain_with
        )
        weights = self.weights.for_query(last.fh)  # BM25's with this query's margin
        order, final = final_order(last, weights, self.params.k_rrf)
        allowed = allowed_rows()
        if allowed is not None:  # a metadata filter: the candidates that match, in order
            order = order[allowed[last.rows[order]]]
        rows, scores = last.rows[order], final[order]
        before: dict[int, int] = {}  # reranked by query-time vectors: their no-vector place
        if self.query_vectors is not None:
            n = min(self.query_vectors.n, len(order))
            before = {r: i for i, r in enumerate(rows[:n].tolist(), 1)}
            perm = self.query_vectors.apply(query, rows, scores, last.feats.X[order])
            order = np.concatenate([order[:n][perm], order[n:]])
            rows = last.rows[order]  # (the scores stay: the top's, descending, in its new order)
        was: dict[int, int] = {}  # rescored passages: their place in the ranker's order
        if self.cross_encoder is not None:
            was = {r: i for i, r in enumerate(rows[: self.params.rerank].tolist(), 1)}
            order, rows, scores = self._rescored(query, order, rows, scores, last)
        if k > len(rows) and allowed is not None:  # the matching passages past them: their RRF
            seen = np.zeros(len(self.ids), bool)
            seen[rows] = True
            rest = filtered_rrf(
                self.index.part("sparse"),
                self.index.part("dense") if self.vectors else None,
                query,
                fh.qvec,
                np.flatnonzero(allowed & ~seen),
                k - len(rows),
                self.params.k_rrf,
            )[0]
        elif k > len(rows):  # past the candidates: RRF order, then corpus order
            seen = np.zeros(len(self.ids), bool)
            seen[rows] = True
            fused = last.fh.fused[~seen[last.fh.fused]]
            seen[fused] = True
            rest = np.concatenate([fused, np.flatnonzero(~seen)])[: k - len(rows)]
        if k > len(rows):
            floor = float(scores.min(initial=0.0)) - 1.0
            rows = np.concatenate([rows, rest])
            scores = np.concatenate([scores, floor - np.arange(1, len(rest) + 1) * 1e-6])
        rows, scores = rows[:k], scores[:k]
        picked = order[: min(k, len(order))]

        def explain() -> list[dict[str, Any]]:
            from hopgraph.retrieve.explain import (
                explain_hits,
                note_fusion,
                note_query_vectors,
                note_rerank,
            )

            hits = explain_hits(self.index, ranker, last, picked, len(rows))
            if weights.any:
                note_fusion(hits, last, picked, weights)
            for place, (hit, row) in enumerate(zip(hits, rows.tolist(), strict=True), 1):
                if row in before:
                    note_query_vectors(hit, place, before[row])
                if row in was:
                    note_rerank(hit, place, was[row])
            return hits

        first = last.before or last  # the first round (the chain round's anchors are its top)
        info = {"candidates": int(len(last.rows)), "anchors": len(first.anchors),
                "chain_anchors": len(last.anchors) if last.before is not None else 0,
                "weights": {"bm25": weights.bm25, "dense": weights.dense},
                "vectors": "on" if self.vectors else f"off: {self.vectors_off}"}  # fmt: skip
        if hop != "off":
            info["hop_encoder"] = hop
        if self.query_vectors is not None:
            info["query_vectors"] = len(before)  # the passages reranked
        elif self.qv_off:
            info["query_vectors"] = f"off: {self.qv_off}"
        return self._ranking(query, rows, scores, explain, info)

    def _rescored(
        self, query: str, order: np.ndarray, rows: np.ndarray, scores: np.ndarray, found: Scored
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The top ``rerank`` candidates reordered by ``z(cross-encoder) + rerank_mix ·
        z(ranker)`` (with ``rerank_paths``, the cross-encoder's part scores paths:
        :func:`~hopgraph.retrieve.model_search.path_scores`); their new scores sit above the
        rest's, which keep theirs."""
        n = min(self.params.rerank, len(rows))
        if n < 2:
            return order, rows, scores
        pairs = PairCache(self.cross_encoder, query, self.index.corpus)
        via = rescored_via(found, rows[:n]) if self.params.rerank_paths else None
        top, mixed = mixed_model_search(pairs, rows[:n], scores[:n], self.params.rerank_mix, via)
        where = {r: i for i, r in enumerate(rows[:n].tolist())}
        perm = np.array([where[r] for r in top.tolist()], np.int64)
        rest = scores[n:]
        lift = (float(rest.max()) + 1.0 - float(mixed.min())) if len(rest) else 0.0
        return (
            np.concatenate([order[:n][perm], order[n:]]),
            np.concatenate([top, rows[n:]]),
            np.concatenate([mixed + lift, rest]),
        )


def use_vectors(index: Index, choice: str = "auto") -> tuple[bool, str]:
    """Whether the ranking reads passage vectors on ``index`` (``choice``: auto, on, off), and
    why not when it does not: the index has none, or (auto) its encoder was trained on other
    languages than the corpus's (:func:`~hopgraph.models.resolve.encoder_languages`): the
    cosine of a query and a passage in a language the encoder never saw says little, and the
    ranker, fitted on English corpora, would trust it."""
    if not index.has("dense"):
        if choice == "on":
            raise ConfigError("option 'vectors' is on but the index has no dense part")
        why = ((index.detected or {}).get("why") or {}).get("dense")  # left out at build
        return False, why or "the index has no passage vectors"
    if choice == "off":
        return False, "vectors=off"
    if choice == "on":
        return True, ""
    from hopgraph.text.language import encoder_gap

    model = index.part("dense").options.model
    gap = encoder_gap(model, index.part("sparse").options.language)
    if gap is not None:
        langs, speaks = gap
        return False, (
            f"the encoder ({model}) was trained on {', '.join(sorted(speaks))} text, "
            f"the corpus is in {', '.join(langs)}"
        )
    return True, ""


def rescored_via(found: Scored, rows: np.ndarray) -> np.ndarray:
    """For each of ``rows``: the position among ``rows`` of the first-hop passage it was reached
    through (it is that passage's bridge page, else it links back to it), −1 for none or when
    that passage is not among ``rows``."""
    rows_l = np.asarray(rows).tolist()
    where = {r: i for i, r in enumerate(rows_l)}
    out = np.full(len(rows_l), -1, np.int64)
    for i, r in enumerate(rows_l):
        bridge = found.feats.bridge_via.get(r)
        anchor = bridge[0] if bridge is not None else found.feats.backlink_via.get(r)
        if anchor is not None:
            out[i] = where.get(anchor, -1)
    return out


_RANKERS: dict[str, RankerSet] = {}


def shared_ranker(path: str) -> RankerSet:
    """The rankers at ``path`` ("" = the bundled ones), loaded once per process."""
    r = _RANKERS.get(path)
    if r is None:
        r = load_ranker(path or None)
        r.check_features(FEATURES)
        _RANKERS[path] = r
    return r
