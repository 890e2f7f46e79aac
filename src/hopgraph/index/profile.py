"""What a corpus supports: how well each first-stage signal finds passages of *this* corpus,
measured on pseudo-queries drawn from the corpus itself (no labels, no LLM).

A pseudo-query is a sentence held out of a sampled passage (the inverse cloze task of ORQA and
Contriever), or, for a passage of one sentence, a cropped span of a quarter of its words. The
source passage is scored as its *rest* (its title and text without the held-out words), as if
the rest were the indexed passage: BM25 with the index's own statistics
(:meth:`~hopgraph.index.sparse.SparsePart.scores_unindexed`), the cosine with the rest's vector
(:meth:`~hopgraph.index.dense.DensePart.encode_passages`); every other passage keeps its
indexed score. The rank of the source among all passages gives, per signal (BM25, dense and
their RRF), the mean reciprocal rank and the share found in the top 10.

On a corpus where the bundled encoder is weak (a domain it never saw), dense finds fewer of its
own passages than BM25 does; on Wikipedia-like pages dense finds more. The profile describes
that (``hopgraph info``). From issue 35 to 60 the default took BM25's weight from its lead; a
held-out sentence asks "which passage is about this?", and real queries went the other way on
PubMedQA, MED and Spider, so the default's weights now go by the kind of corpus and the query
(:mod:`hopgraph.retrieve.final_fusion`; docs/notes/any-corpus.md).

The profile is kept in the index's manifest (``profile``), measured when the sparse and dense
parts are built, and measured again when a live update leaves the index more than
:data:`STALE_SHARE` larger or smaller than when it was measured (about when a compaction is
due): the cost is :data:`PSEUDO_QUERIES` encodings and searches, a few seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hopgraph import heap
from hopgraph.ranks import reciprocal_rank_fusion, top_k
from hopgraph.text.sentences import sentences

PSEUDO_QUERIES = 200
SEED = 0
STALE_SHARE = 0.1
K_RRF = 60.0
MIN_WORDS = 12  # passages shorter than this give no pseudo-query
SIGNALS = ("bm25", "dense", "rrf")


@dataclass(frozen=True)
class PseudoQuery:
    """A query cut out of passage ``row``; ``rest`` is that passage's content without it."""

    row: int
    query: str
    rest: str
    kind: str  # "sentence" or "span"
    text: str = ""  # the passage's text without the query (``rest`` without the title)


def held_out(text: str, rng: np.random.Generator) -> tuple[str, str, str] | None:
    """``(query, rest, kind)`` cut out of ``text``: a sentence of 5–40 words when the text has
    two or more, else a span of a quarter of its words; None for a text under
    :data:`MIN_WORDS` words."""
    words = text.split()
    if len(words) < MIN_WORDS:
        return None
    sents = sentences(text)
    usable = [i for i, s in enumerate(sents) if 5 <= len(s.split()) <= 40]
    if len(sents) >= 2 and usable:
        i = usable[int(rng.integers(len(usable)))]
        return sents[i], " ".join(sents[:i] + sents[i + 1 :]), "sentence"
    span = min(30, max(5, len(words) // 4))
    start = int(rng.integers(len(words) - span + 1))
    rest = words[:start] + words[start + span :]
    return " ".join(words[start : start + span]), " ".join(rest), "span"


def pseudo_queries(corpus: Any, n: int = PSEUDO_QUERIES, seed: int = SEED) -> list[PseudoQuery]:
    """Up to ``n`` pseudo-queries from passages drawn at random (fixed ``seed``) from
    ``corpus``; passages too short for one are passed over (at most ``20 n`` are looked at)."""
    rng = np.random.default_rng(seed)
    size = len(corpus)
    tries = min(size, 20 * n)
    rows = rng.choice(size, tries, replace=False) if size > tries else rng.permutation(size)
    out: list[PseudoQuery] = []
    for row in rows.tolist():
        p = corpus[row]
        cut = held_out(p.text, rng)
        if cut is None:
            continue
        query, rest, kind = cut
        content = f"{p.title}\n{rest}" if p.title else rest
        out.append(PseudoQuery(row, query, content, kind, rest))
        if len(out) >= n:
            break
    return out


def _rank_of(scores: np.ndarray, row: int, own: float) -> int:
    """0-based rank of a passage scoring ``own`` among the others of ``scores`` (ties: after)."""
    return int(np.count_nonzero(scores >= own)) - int(scores[row] >= own)  # no copy of scores


def source_ranks(index: Any, queries: list[PseudoQuery]) -> dict[str, np.ndarray]:
    """For each signal of :data:`SIGNALS`: the 0-based rank of each pseudo-query's source
    passage (scored as its rest) among every passage of ``index``."""
    sparse, dense = index.part("sparse"), index.part("dense")
    qv = dense.encode_queries([q.query for q in queries]) if queries else np.zeros((0, 1))
    rv = dense.encode_passages([q.rest for q in queries])
    out = {s: np.zeros(len(queries), np.int64) for s in SIGNALS}
    tops: dict[str, list[np.ndarray]] = {"bm25": [], "dense": []}

    def scan(signal: str, scores: Callable[[int], np.ndarray], own: Callable[[int], float]) -> None:
        for i, q in enumerate(queries):
            x = np.asarray(scores(i), np.float64)
            out[signal][i] = rank = _rank_of(x, q.row, own(i))
            tops[signal].append(_with_source(_top_others(x, q.row), q.row, rank))
        # full scans read the whole part through its maps (at 1M: 1.5 GB of vectors, 0.9 GB
        # of postings); give those pages back before the next signal's and the build's save
        heap.release_mapped_files()

    scan(
        "bm25",
        lambda i: sparse.scores(queries[i].query),
        lambda i: float(sparse.scores_unindexed(queries[i].query, [queries[i].rest])[0]),
    )
    scan(
        "dense",
        lambda i: dense.scores(np.asarray(qv[i], np.float32)),
        lambda i: float(np.dot(rv[i], qv[i])),
    )
    for i, q in enumerate(queries):  # RRF of the two rankings, the source at its rank in each
        fused = reciprocal_rank_fusion([tops["bm25"][i], tops["dense"][i]], K_RRF)[0]
        out["rrf"][i] = int(np.flatnonzero(fused == q.row)[0])
    return out


def _top_others(scores: np.ndarray, row: int, depth: int = 1000) -> np.ndarray:
    """The ``depth`` best rows other than ``row``, best first (ties by row): passages past
    them add less to RRF than any source within that depth."""
    scores = scores.copy()
    scores[row] = -np.inf
    return top_k(scores, min(depth, len(scores) - 1))


def _with_source(others: np.ndarray, row: int, rank: int) -> np.ndarray:
    return np.insert(others, min(rank, len(others)), row)


def measure(ranks: np.ndarray) -> dict[str, float]:
    if len(ranks) == 0:
        return {"mrr": 0.0, "recall@10": 0.0}
    return {
        "mrr": round(float(np.mean(1.0 / (ranks + 1.0))), 4),
        "recall@10": round(float(np.mean(ranks < 10)), 4),
    }


def corpus_profile(index: Any, n: int = PSEUDO_QUERIES, seed: int = SEED) -> dict[str, Any]:
    """The profile of ``index`` (it needs the ``sparse`` and ``dense`` parts): per signal, the
    mean reciprocal rank and recall@10 of the source passages of ``n`` pseudo-queries, with
    what it was measured on (passages, queries, dense model)."""
    queries = pseudo_queries(index.corpus, n, seed)
    ranks = source_ranks(index, queries)
    dense = index.part("dense")
    return {
        "signals": {s: measure(ranks[s]) for s in SIGNALS},
        "passages": len(index.corpus),
        "queries": len(queries),
        "sentence_queries": sum(q.kind == "sentence" for q in queries),
        "seed": seed,
        "dense_model": dense.options.model,
    }


def describe_profile(profile: dict[str, Any] | None) -> str:
    """One line: how often each signal ranks a pseudo-query's passage in its top 10."""
    if not profile:
        return "no profile (the index lacks the sparse or dense part)"
    sig = profile.get("signals", {})
    shares = ", ".join(f"{s} {sig[s]['recall@10']:.0%}" for s in SIGNALS if s in sig)
    return f"a pseudo-query's own passage in the top 10: {shares}"


def is_stale(profile: dict[str, Any] | None, index: Any) -> bool:
    """Whether ``profile`` no longer describes ``index``: none, another dense model, or a
    passage count more than :data:`STALE_SHARE` away from the one it was measured on."""
    if not profile or not index.has("dense") or not index.has("sparse"):
        return bool(index.has("dense") and index.has("sparse"))
    if profile.get("dense_model") != index.part("dense").options.model:
        return True
    was = max(int(profile.get("passages", 0)), 1)
    return abs(len(index.corpus) - was) > STALE_SHARE * was
