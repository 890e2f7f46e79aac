"""GRIEVER (Melo et al.): multi-step retrieval over passages, partial triples and synonyms,
without an LLM (Algorithms 1 and 2 of the paper).

Per iteration i (default 2):

1. **passages** — iteration 1: the question and its relative-clause sub-queries (§4.2.1), each
   by composed retrieval (BM25 candidates ranked by cosine, §4.2.2; here plus ``first_bm25``
   times their normalised BM25), combined by best cosine;
   later iterations: RRF of BM25 and cosine for the rewritten query, *filtered* to new passages
   naming a join entity of the sub-graph so far.
2. **shortlist** (Algorithm 2) — the retrieved passages' triples are kept when one of their
   partial triples is among the ``t_max`` best (RRF of BM25 and cosine over the
   ``partial_triples`` index, restricted to those passages' partials).
3. **score** (§4.3–4.4) — the n-gram entity matcher scores entities (and their ``same_as``
   synonyms found in the retrieved passages) and predicates against the query; equations (1)
   and (2) score the triples; paths are extended through join entities.
4. **rewrite** (§4.5) — the best triple's named entity (and its predicate, when matched) is
   replaced in the query by the triple's other entity: "Who married the publisher of The North
   Star?" → "Who married Frederick Douglass?".

Passages are finally ranked by their retrieval cosine plus ``w_path`` times their path score
(s_t · s_path); the paper ranks by path scores alone, which leaves passages without an
extracted triple unranked (docs/methods.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hopgraph.config import NON_NEGATIVE, POSITIVE, option
from hopgraph.errors import ConfigError
from hopgraph.index.partial_triples import PartialTriplesPart
from hopgraph.index.same_as import SameAsPart
from hopgraph.index.triples import TriplesPart, entity_key
from hopgraph.models.embedder import Embedder, TokenVectors, load_embedder
from hopgraph.retrieve.base import Retriever
from hopgraph.retrieve.entity_matcher import NGramMatcher
from hopgraph.retrieve.operators import (
    composed_search,
    filtered_rrf,
    lexical_search,
    reciprocal_rank_fusion,
    vector_search,
)
from hopgraph.retrieve.ranking import Ranking, top_k
from hopgraph.retrieve.triple_paths import (
    Path,
    ScoredTriples,
    extend_paths,
    passage_scores,
    score_triples,
)
from hopgraph.text.clauses import split_relative_clauses


@dataclass(frozen=True)
class GrieverParams:
    iterations: int = option(2, "retrieval iterations n_i (1: no second hop)", bounds=POSITIVE)
    step_k: int = option(
        0,
        "passages retrieved per iteration (0: the k asked for, at most max_step)",
        bounds=NON_NEGATIVE,
    )
    max_step: int = option(
        20, "step_k=0: at most this many per iteration; a longer ranking ends with composed's"
    )
    first: str = option(
        "composed",
        "first-iteration retriever (rrf: the paper's ablation)",
        ("composed", "rrf"),
    )
    c: int = option(
        10, "composed: dense scoring of the top step_k*c BM25 candidates", bounds=POSITIVE
    )
    first_bm25: float = option(
        0.1,
        "iteration 1, composed: rank candidates by cosine + this * BM25/max (0: the paper)",
        bounds=NON_NEGATIVE,
    )
    min_candidates: int = option(
        100, "composed: at least this many BM25 candidates", bounds=POSITIVE
    )
    k_rrf: float = option(60.0, "RRF constant", bounds=NON_NEGATIVE)
    split_clauses: bool = option(True, "also search the relative-clause sub-queries (§4.2.1)")
    shortlist: str = option(
        "partial",
        "triple shortlisting: partial triples (the paper), full triples or none (ablations)",
        ("partial", "full", "none"),
    )
    t_max: int = option(
        20, "partial triples (or triples) shortlisted per iteration", bounds=POSITIVE
    )
    synonyms: bool = option(True, "expand entities with their same_as synonyms")
    rewrite: bool = option(True, "rewrite the query between iterations (§4.5)")
    max_n: int = option(4, "entity matcher: longest query n-gram in words", bounds=POSITIVE)
    join_entities: int = option(
        10, "join entities (of the best triples) searched next iteration", bounds=NON_NEGATIVE
    )
    rewrites: int = option(
        3,
        "the best join entities that get their own rewritten query (1: the paper's one)",
        bounds=POSITIVE,
    )
    min_entity_score: float = option(0.6, "rewrite only when the named entity matches this well")
    min_predicate_score: float = option(0.4, "rewrite the predicate's words too above this")
    max_paths: int = option(200, "paths kept per iteration", bounds=POSITIVE)
    w_path: float = option(
        1.0, "final score: retrieval cosine + w_path * path score", bounds=NON_NEGATIVE
    )
    w_bm25: float = option(
        0.25,
        "final score: + w_bm25 * the question's BM25 / its maximum over the passages",
        bounds=NON_NEGATIVE,
    )


@dataclass
class _Query:
    """A query of one iteration: its text, vectors and matcher results."""

    text: str
    vec: np.ndarray  # for passage retrieval
    tv: TokenVectors  # for partial triples and the entity matcher
    matcher: NGramMatcher | None = None
    e_at: dict[int, int] | None = None  # entity id → the n-gram it matched
    p_at: dict[int, int] | None = None


@dataclass
class _Hop:
    queries: list[_Query]
    rows: np.ndarray
    retrieval: np.ndarray  # cosine of each row with the query that retrieved it
    query_of: np.ndarray  # index into queries, per row
    scored: ScoredTriples | None = None
    beam_of: np.ndarray | None = None  # index into queries, per scored triple


class GrieverRetriever(Retriever):
    name = "griever"
    Params = GrieverParams
    fill_from = "dense"  # past the walk and the question's composed ranking: cosine
    fill_label = "vector search"
    requires = ("sparse", "dense", "triples", "partial_triples", "same_as")
    summary = "GRIEVER: multi-step retrieval over partial triples and synonyms (no LLM)"

    @classmethod
    def parts_for(cls, params: GrieverParams) -> tuple[str, ...]:
        if params.synonyms:
            return cls.requires
        return tuple(p for p in cls.requires if p != "same_as")

    def __init__(self, index: Any, params: GrieverParams):
        super().__init__(index, params)
        self.sparse = index.part("sparse")
        self.dense = index.part("dense")
        self.tp: TriplesPart = index.part("triples")
        self.pt: PartialTriplesPart = index.part("partial_triples")
        self.sa: SameAsPart | None = index.part("same_as") if params.synonyms else None
        if params.shortlist == "full" and self.pt.full_vectors is None:
            raise ConfigError(
                "shortlist=full needs whole triples in the index: rebuild it with "
                "--set partial_triples.full_triples=true"
            )
        self._triple_rows = np.asarray(self.tp.triples[:, 3])

    # -- encoders -------------------------------------------------------------------------
    def _matcher_embedder(self) -> Embedder:
        o, d = self.pt.options, self.dense.options
        if (o.model, o.backend) == (d.model, d.backend):
            return self.dense.embedder  # one encoder pass gives both retrieval and n-grams
        return load_embedder(o.model, max_seq_length=o.max_seq_length, backend=o.backend)

    def _encode(self, texts: list[str]) -> list[_Query]:
        """Each text's retrieval vector and token vectors, in one encoder pass when the dense
        part and the matcher share their model."""
        emb = self._matcher_embedder()
        tvs = emb.encode_tokens(texts)
        if emb is self.dense.embedder:
            vecs = [tv.sentence for tv in tvs]
        else:
            vecs = list(self.dense.encode_queries(texts))
        return [_Query(t, v, tv) for t, v, tv in zip(texts, vecs, tvs, strict=True)]

    def _first_passages(
        self, queries: list[_Query], n: int, k: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Iteration 1: each (sub-)query by composed (or RRF) retrieval; a passage keeps its
        best cosine; the best ``n`` are kept. Also the question's own top ``max(n, k)``."""
        p: GrieverParams = self.params
        best: dict[int, float] = {}
        tail = np.zeros(0, np.int64)
        for i, q in enumerate(queries):
            depth = max(n, k) if i == 0 else n
            if p.first == "composed":
                rows, cos, _, _ = composed_search(
                    self.sparse, self.dense, q.text, q.vec, max(depth * p.c, p.min_candidates),
                    depth, p.first_bm25,
                )  # fmt: skip
            else:
                b_rows, _ = lexical_search(self.sparse, q.text, max(depth, 100))
                d_rows, _ = vector_search(self.dense, q.vec, max(depth, 100))
                rows = reciprocal_rank_fusion([b_rows, d_rows], p.k_rrf)[0][:depth]
                cos = self.dense.scores_for(q.vec, rows)
            if i == 0:
                tail, rows, cos = rows, rows[:n], cos[:n]
            for r, c in zip(rows.tolist(), cos.tolist(), strict=True):
                if c > best.get(r, -np.inf):
                    best[r] = c
        rows = np.fromiter(best, np.int64, len(best))
        scores = np.fromiter(best.values(), np.float64, len(best))
        keep = top_k(scores, n)
        return rows[keep], scores[keep], tail

    def _next_passages(
        self, beams: list[tuple[np.ndarray, _Query]], seen: set[int], n: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Later iterations: for each (join entities, rewritten query), RRF of BM25 and cosine
        over the unseen passages naming one of the entities; a passage keeps its best cosine
        (and that query); the best ``n`` are kept."""
        p: GrieverParams = self.params
        seen_arr = np.fromiter(seen, np.int64, len(seen))
        best: dict[int, tuple[float, int]] = {}
        for b, (ents, q) in enumerate(beams):
            cand = self.tp.passages_naming(ents)
            cand = cand[~np.isin(cand, seen_arr)]
            rows, _, cos = filtered_rrf(self.sparse, self.dense, q.text, q.vec, cand, n, p.k_rrf)
            for r, c in zip(rows.tolist(), cos.tolist(), strict=True):
                if r not in best or c > best[r][0]:
                    best[r] = (float(c), b)
        rows = np.fromiter(best, np.int64, len(best))
        cos = np.asarray([best[r][0] for r in rows.tolist()], np.float64)
        beam = np.asarray([best[r][1] for r in rows.tolist()], np.int64)
        keep = top_k(cos, n)
        return rows[keep], cos[keep], beam[keep]

    def _shortlist(self, query: str, qvec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Algorithm 2: the triples of ``rows`` whose partial triple is among the best t_max."""
        p: GrieverParams = self.params
        triples = self.tp.triples_of(rows)
        if p.shortlist == "none" or len(triples) == 0:
            return triples
        pt = self.pt
        if p.shortlist == "full":
            ids, vectors, bm25 = triples, pt.full_vectors, pt.full_bm25
        else:
            ids, vectors, bm25 = np.unique(pt.of_triple[triples].ravel()), pt.vectors, pt.bm25
        lex = bm25.scores(query)[ids]
        cos = np.asarray(vectors[ids]) @ qvec
        fused, _ = reciprocal_rank_fusion(
            [ids[top_k(lex, len(ids), positive_only=True)], ids[top_k(cos, len(ids))]], p.k_rrf
        )
        chosen = fused[: p.t_max]
        if p.shortlist == "full":
            return np.sort(chosen)
        parts = pt.of_triple[triples]
        return triples[np.isin(parts[:, 0], chosen) | np.isin(parts[:, 1], chosen)]

    def _score(self, q: _Query, triples: np.ndarray, rows: np.ndarray) -> ScoredTriples:
        """Equations (1)–(2) for ``triples`` against query ``q``; records on ``q`` the n-gram
        each entity and predicate matched (for rewriting)."""
        p: GrieverParams = self.params
        matcher = q.matcher = q.matcher or NGramMatcher(q.text, q.tv, max_n=p.max_n)
        t = np.asarray(self.tp.triples)[triples]
        ents = np.unique(np.concatenate([t[:, 0], t[:, 2]])) if len(t) else np.zeros(0, np.int64)
        preds = np.unique(t[:, 1]) if len(t) else np.zeros(0, np.int64)
        e_sim, e_gram = matcher.match(np.asarray(self.pt.entity_vectors[ents]))
        e_best = dict(zip(ents.tolist(), e_sim.tolist(), strict=True))
        e_at = dict(zip(ents.tolist(), e_gram.tolist(), strict=True))
        if self.sa is not None and len(ents):
            names = [self.tp.entities[e] for e in ents.tolist()]
            expanded = self.sa.expand(names, rows.tolist())
            for e, name in zip(ents.tolist(), names, strict=True):
                aliases = expanded.get(name)
                if aliases:
                    a_sim, a_gram = matcher.match(np.asarray(self.sa.vectors[aliases]))
                    j = int(np.argmax(a_sim))
                    if a_sim[j] > e_best[e]:
                        e_best[e], e_at[e] = float(a_sim[j]), int(a_gram[j])
        p_sim, p_gram = matcher.match(np.asarray(self.pt.predicate_vectors[preds]))
        p_best = dict(zip(preds.tolist(), p_sim.tolist(), strict=True))
        q.e_at = {**(q.e_at or {}), **e_at}
        q.p_at = {**(q.p_at or {}), **dict(zip(preds.tolist(), p_gram.tolist(), strict=True))}
        return score_triples(
            triples,
            self.tp.triples,
            self.pt.of_triple,
            self.pt.freq,
            lambda ids: np.asarray([e_best[int(i)] for i in ids], np.float64),
            lambda ids: np.asarray([p_best[int(i)] for i in ids], np.float64),
        )

    def _hop_triples(self, hop: _Hop) -> None:
        """Shortlist and score the triples of a hop's passages, each against the query that
        retrieved its passage."""
        pieces: list[ScoredTriples] = []
        beams: list[np.ndarray] = []
        for b, q in enumerate(hop.queries):
            rows = hop.rows[hop.query_of == b]
            if len(rows) == 0:
                continue
            scored = self._score(q, self._shortlist(q.text, q.tv.sentence, rows), rows)
            pieces.append(scored)
            beams.append(np.full(len(scored.ids), b, np.int64))
        hop.scored = ScoredTriples.concat(pieces)
        hop.beam_of = np.concatenate(beams) if beams else np.zeros(0, np.int64)

    def _rewrite(self, q: _Query, scored: ScoredTriples, i: int) -> str:
        """§4.5: in ``q``, replace triple ``i``'s named entity (with its predicate's words, when
        matched) by the triple's other entity. Unchanged when the entity is not named well."""
        p: GrieverParams = self.params
        if scored.entity_score[i] < p.min_entity_score or q.matcher is None:
            return q.text
        gram = (q.e_at or {}).get(int(scored.named[i]), -1)
        if gram < 0:
            return q.text
        a, b = (int(x) for x in q.matcher.spans[gram])
        pred = int(self.tp.triples[int(scored.ids[i]), 1])
        pg = (q.p_at or {}).get(pred, -1)
        if pg >= 0 and scored.predicate_score[i] >= p.min_predicate_score:
            pa, pb = (int(x) for x in q.matcher.spans[pg])
            if pb <= a or pa >= b:  # not overlapping the entity: cover both
                a, b = min(a, pa), max(b, pb)
        join = self.tp.entities[int(scored.join[i])]
        return " ".join(f"{q.text[:a]}{join}{q.text[b:]}".split())

    def _synonym_entities(self, entity: int) -> set[int]:
        if self.sa is None:
            return set()
        name = self.tp.entities[entity]
        out = set()
        for a in self.sa.expand([name], None).get(name, ()):
            e = self.tp.entity_index.get(entity_key(self.sa.aliases[a]))
            if e is not None:
                out.add(e)
        return out

    def _next_queries(self, hop: _Hop) -> list[tuple[np.ndarray, str]]:
        """The next iteration's (join entities, query text) pairs: the join entities of the best
        triples (with their synonyms); the best ``rewrites`` each get their own rewritten query,
        the rest share the first one's."""
        p: GrieverParams = self.params
        scored = hop.scored
        if scored is None or len(scored.ids) == 0:
            return []
        out: list[tuple[list[int], str]] = []
        chosen: set[int] = set()
        for i in scored.order().tolist():
            if len(chosen) >= p.join_entities:
                break
            j = int(scored.join[i])
            if j in chosen:
                continue
            chosen.add(j)
            ents = [j, *sorted(self._synonym_entities(j) - {j})]
            q = hop.queries[int(hop.beam_of[i])]  # type: ignore[index]
            if len(out) < p.rewrites:
                out.append((ents, self._rewrite(q, scored, i) if p.rewrite else q.text))
            else:
                out[0][0].extend(ents)
        return [(np.asarray(e, np.int64), text) for e, text in out]

    # -- Algorithm 1 ----------------------------------------------------------------------
    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        p: GrieverParams = self.params
        n = p.step_k or min(k, p.max_step)
        texts = split_relative_clauses(query) if p.split_clauses else [query]
        queries = self._encode(texts)
        rows, cos, tail = self._first_passages(queries, n, k)
        hops = [_Hop(queries[:1], rows, cos, np.zeros(len(rows), np.int64))]
        seen = set(rows.tolist())
        self._hop_triples(hops[0])
        paths = extend_paths(
            [], hops[0].scored, self.tp.triples, self._synonym_entities, p.max_paths
        )
        joins: list[list[str]] = []
        for _ in range(1, p.iterations):
            nxt = self._next_queries(hops[-1])
            if not nxt:
                break
            joins.append([self.tp.entities[int(e)] for ents, _ in nxt for e in ents])
            unique = list(dict.fromkeys(text for _, text in nxt))
            encoded = dict(zip(unique, self._encode(unique), strict=True))
            beams = [(ents, encoded[text]) for ents, text in nxt]
            rows, cos, beam = self._next_passages(beams, seen, n)
            if len(rows) == 0:
                break
            hop = _Hop([q for _, q in beams], rows, cos, beam)
            seen.update(rows.tolist())
            self._hop_triples(hop)
            paths = extend_paths(
                paths, hop.scored, self.tp.triples, self._synonym_entities, p.max_paths
            )
            hops.append(hop)
        return self._rank(query, k, hops, paths, texts, joins, tail)

    def _rank(
        self,
        query: str,
        k: int,
        hops: list[_Hop],
        paths: list[Path],
        sub_queries: list[str],
        join_names: list[list[str]],
        tail: np.ndarray,
    ) -> Ranking:
        p: GrieverParams = self.params
        by_path = passage_scores(paths, self._triple_rows)
        retrieval: dict[int, tuple[float, int, str]] = {}
        for it, hop in enumerate(hops):
            for r, s, b in zip(
                hop.rows.tolist(), hop.retrieval.tolist(), hop.query_of.tolist(), strict=True
            ):
                retrieval.setdefault(r, (s, it, hop.queries[b].text))
        rows = np.fromiter(retrieval, np.int64, len(retrieval))
        final = np.asarray(
            [retrieval[r][0] + p.w_path * by_path.get(r, (0.0,))[0] for r in rows.tolist()]
        )
        bm25 = np.zeros(len(rows))
        if p.w_bm25 and len(rows):
            bm25 = self.sparse.scores(query)[rows]
            bm25 = bm25 / max(float(bm25.max()), 1e-9)
            final = final + p.w_bm25 * bm25
        order = top_k(final, k)
        rows, scores = rows[order], final[order]
        bm25_of = dict(zip(rows.tolist(), bm25[order].tolist(), strict=True))
        if len(rows) < k and len(tail):  # the first query's composed ranking fills the rest
            more = tail[~np.isin(tail, rows)][: k - len(rows)]
            low = float(scores.min()) if len(scores) else 0.0
            rows = np.concatenate([rows, more])
            scores = np.concatenate([scores, low - 1.0 - np.arange(len(more)) / max(len(more), 1)])
        tp = self.tp

        def triple(tid: int) -> list[str]:
            s, pr, o = (int(x) for x in tp.triples[tid, :3])
            return [tp.entities[s], tp.predicates[pr], tp.entities[o]]

        def explain() -> list[dict[str, Any]]:
            out = []
            for r, s in zip(rows.tolist(), scores.tolist(), strict=True):
                if r not in retrieval:
                    out.append({"score": float(s), "after_walk": "the question's composed rank"})
                    continue
                ret, it, text = retrieval[r]
                e: dict[str, Any] = {
                    "score": float(s),
                    "iteration": it + 1,
                    "query": text,
                    "retrieval_cosine": float(ret),
                    "bm25_normalised": float(bm25_of[r]),
                }
                if r in by_path:
                    v, path, tid = by_path[r]
                    e.update(
                        path_score=float(v),
                        triple=triple(tid),
                        path=[triple(t) for t in path.triples],
                    )
                out.append(e)
            return out

        return self._ranking(
            query,
            rows,
            scores,
            explain,
            info={
                "queries": [[q.text for q in h.queries] for h in hops],
                "sub_queries": sub_queries,
                "join_entities": join_names,
                "passages_considered": len(retrieval),
            },
        )
