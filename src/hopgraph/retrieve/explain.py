"""Explanations of ``multihop`` hits in words: the path that reached a passage and the signals
that lifted it (the ranker's per-feature contributions, grouped by signal)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hopgraph.index import Index
from hopgraph.models.ranker import HopRanker
from hopgraph.retrieve.hop_features import COL

if TYPE_CHECKING:
    from hopgraph.retrieve.multihop import Scored

# signal → (words for a reader, the features that carry it)
SIGNALS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bm25": ("shares words with the question (BM25)", ("bm25", "bm25_rank")),
    "dense": ("close in meaning to the question (dense)", ("cosine", "cosine_gap", "dense_rank")),
    "graph": ("reached by a walk on the entity graph (PPR)", ("ppr", "ppr_rank")),
    "fusion": ("ranked high by BM25 and dense together (RRF)", ("rrf_rank",)),
    "names": (
        "names what the question names",
        ("title_in_query", "query_entities", "title_overlap"),
    ),
    "bridge": ("the page of an entity a first-hop passage mentions", ("bridge", "bridge_cosine")),
    "backlink": ("mentions the subject of a first-hop passage", ("backlink",)),
    "rewrite": (
        "matches the question rewritten through a first-hop passage",
        ("hop_cosine", "hop_gain", "bm25_hop"),
    ),
    "shared": (
        "shares rare entities with a first-hop passage",
        ("anchor_shared", "gcs_lift"),
    ),
}


def explain_hits(
    index: Index, ranker: HopRanker, found: Scored, picked: np.ndarray, n_hits: int
) -> list[dict[str, Any]]:
    """One explanation per hit: ``picked`` are the positions (in ``found.rows``) of the hits
    taken from the candidates; hits past them (filled in RRF order) get a short note."""
    ents = index.part("entities")
    corpus = index.corpus
    X = found.feats.X[picked]
    contrib = ranker.contributions(X)[:, :-1] if len(picked) else np.zeros((0, 0))
    names = [ents.names[e] for e in found.fh.query_entities.tolist()]
    out: list[dict[str, Any]] = []
    for j, i in enumerate(picked.tolist()):
        row = int(found.rows[i])
        x = found.feats.X[i]
        by_signal = {
            key: float(sum(contrib[j, ranker.features.index(f)] for f in feats))
            for key, (_, feats) in SIGNALS.items()
        }
        lifted = [k for k, v in sorted(by_signal.items(), key=lambda kv: -kv[1]) if v > 0][:3]
        path = _path(index, found, row)
        words = [path] if path else []
        if lifted:
            words.append("lifted by: " + "; ".join(SIGNALS[k][0] for k in lifted))
        mentioned = [n for n in names if n in _entity_names(ents, row)]
        out.append(
            {
                "summary": ". ".join(words),
                "path": path,
                "lifted_by": lifted,
                "signals": {k: round(v, 4) for k, v in by_signal.items()},
                "bm25": float(found.fh.bm25[row]),
                "cosine": float(found.fh.cos[row]),
                "ppr": float(found.fh.ppr[row]),
                "query_entities": mentioned,
                "hop": _hop(corpus, found, row, x),
            }
        )
    for _ in range(len(picked), n_hits):
        out.append({"summary": "after the candidates, in RRF order (BM25 and dense)"})
    return out


def _entity_names(ents: Any, row: int) -> set[str]:
    return {ents.names[e] for e in ents.passage_entities(row).tolist()}


def _path(index: Index, found: Scored, row: int) -> str:
    """How the passage was reached, as a reader would say it."""
    corpus, ents = index.corpus, index.part("entities")
    via = found.feats.bridge_via.get(row)
    if via is not None:
        anchor, entity = via
        return (
            f"2-hop: question → *{corpus[anchor].title}* → this page "
            f"(it mentions *{ents.names[entity]}*)"
        )
    back = found.feats.backlink_via.get(row)
    if back is not None:
        return f"2-hop: question → *{corpus[back].title}* ← this page mentions it"
    x = found.feats.X[found.rows.tolist().index(row)]
    if x[COL["title_in_query"]] > 0:
        return f"1-hop: the question names *{corpus[row].title}*"
    return ""


def _hop(corpus: Any, found: Scored, row: int, x: np.ndarray) -> dict[str, Any] | None:
    """The rewritten query that matched best, when that signal is strong."""
    if x[COL["hop_gain"]] <= 0 and x[COL["bm25_hop"]] < 0.5:
        return None
    rw = found.rewrites
    best, best_v = None, -np.inf
    for a, c in zip(rw.anchors, rw.cos, strict=True):
        if a != row and c[row] > best_v:
            best, best_v = a, float(c[row])
    if best is None:
        return None
    return {"through": corpus[best].title, "cosine": best_v}
