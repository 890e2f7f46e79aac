"""Explanations of ``multihop`` hits in words: the path that reached a passage and the signals
that lifted it (the ranker's per-feature contributions, grouped by signal)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hopgraph.index import Index
from hopgraph.models.ranker import HopRanker
from hopgraph.retrieve.hop_features import COL, entity_maps

if TYPE_CHECKING:
    from hopgraph.retrieve.final_fusion import Weights
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
    "bridge": ("the page of an entity a best passage so far mentions", ("bridge", "bridge_cosine")),
    "backlink": ("mentions the subject of a best passage so far", ("backlink",)),
    "rewrite": (
        "matches the question rewritten through a first-hop passage",
        ("hop_cosine", "hop_gain", "bm25_hop"),
    ),
    "shared": (
        "shares rare entities with a best passage so far",
        ("anchor_shared", "gcs_lift"),
    ),
    "hop_encoder": (
        "reads as the next hop after a best passage so far (the hop encoder)",
        ("hop_encoder", "hop_encoder_gain"),
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
    q_ents = found.fh.query_entities.tolist()
    out: list[dict[str, Any]] = []
    for j, i in enumerate(picked.tolist()):
        row = int(found.rows[i])
        x = found.feats.X[i]
        by_signal = {
            key: float(sum(contrib[j, ranker.features.index(f)] for f in feats))
            for key, (_, feats) in SIGNALS.items()
            if feats[0] in ranker.features  # the hop encoder's: with hop_encoder on only
        }
        lifted = [k for k, v in sorted(by_signal.items(), key=lambda kv: -kv[1]) if v > 0][:3]
        path, route = _path(index, found, row, x)
        words = [path] if path else []
        if lifted:
            words.append("lifted by: " + "; ".join(SIGNALS[k][0] for k in lifted))
        has = set(ents.passage_entities(row).tolist())
        mentioned = [_entity_label(index, e) for e in q_ents if e in has]
        out.append(
            {
                "summary": ". ".join(words),
                "path": path,
                "route": route,
                "lifted_by": lifted,
                "signals": {k: round(v, 4) for k, v in by_signal.items()},
                "bm25": float(found.fh.bm25[row]),
                "cosine": float(found.fh.cos[row]),
                "ppr": float(found.fh.ppr[row]),
                "query_entities": mentioned,
                "hop": _hop(corpus, found, row, x),
            }
        )
    order = "BM25 order" if found.fh.qvec is None else "RRF order (BM25 and dense)"
    filled = f"{order}, after multihop's {len(picked)} candidate hits"
    for _ in range(len(picked), n_hits):
        out.append({"summary": "after the candidates, in RRF order (BM25 and dense)",
                    "filled": filled})  # fmt: skip
    return out


_LIST = {"bm25": "BM25", "dense": "dense"}  # a fused list, as a hit's summary names it


def note_fusion(
    hits: list[dict[str, Any]], found: Scored, picked: np.ndarray, weights: Weights
) -> None:
    """Say in each candidate hit that the ranker's order was fused with BM25's and dense's at
    ``weights`` (:mod:`hopgraph.retrieve.final_fusion`), and where each list put it."""
    ranks = {name: {r: i for i, r in enumerate(rows.tolist(), 1)}
             for name, rows in (("bm25", found.fh.b_list), ("dense", found.fh.d_list))}  # fmt: skip
    ranker = {p: i for i, p in enumerate(np.lexsort((found.rows, -found.scores)).tolist(), 1)}
    used = [n for n, w in (("bm25", weights.bm25), ("dense", weights.dense)) if w > 0]
    for hit, pos in zip(hits, picked.tolist(), strict=False):
        row = int(found.rows[pos])
        hit["fusion"] = {"weights": {"bm25": weights.bm25, "dense": weights.dense},
                         "ranker_rank": ranker[pos],
                         **{f"{n}_rank": ranks[n].get(row) for n in used}}  # fmt: skip
        where = ", ".join(
            f"{_LIST[n]}'s #{ranks[n][row]}" if row in ranks[n] else f"not in {_LIST[n]}'s list"
            for n in used
        )
        said = f"the ranker's #{ranker[pos]} fused with {where}"
        hit["summary"] = f"{hit['summary']}. {said}" if hit["summary"] else said


def note_rerank(hit: dict[str, Any], place: int, ranker_place: int) -> None:
    """Say in ``hit`` that the cross-encoder rescored it (the default's ``rerank=N``), and where
    the ranker alone had put it when that differs."""
    hit["ranker_rank"] = ranker_place
    if ranker_place != place:
        moved = "up" if ranker_place > place else "down"
        hit["summary"] += f". moved {moved} by the cross-encoder (the ranker's #{ranker_place})"


def note_query_vectors(hit: dict[str, Any], place: int, before: int) -> None:
    """Say in ``hit`` that the vectors encoded at query time moved it (an index without passage
    vectors: ``multihop.query_vectors``), from the no-vector order's place ``before``."""
    hit["no_vector_rank"] = before
    if before != place:
        moved = "up" if before > place else "down"
        hit["summary"] += f". moved {moved} by vectors encoded at query time (#{before} without)"


def _entity_label(index: Index, entity: int) -> str:
    """An entity as a reader knows it: the title of its own page, else its indexed name."""
    ents = index.part("entities")
    own = entity_maps(ents, len(index.corpus)).own_page[entity]
    return index.corpus[int(own)].title if own >= 0 else ents.names[entity]


def _path(
    index: Index, found: Scored, row: int, x: np.ndarray
) -> tuple[str, dict[str, Any] | None]:
    """How the passage was reached, as a reader would say it, and the same as data (``route``:
    ``hops``, ``kind`` = named / direct / bridge / backlink, and for two hops or more the
    passage it was reached through, ``via`` (title) and ``via_id``, and ``chain``: every
    passage on the way, in order, each ``{"title", "id"}``). A passage that is itself one of the
    first hop's best (an anchor ranked above the anchor that leads to it) was found by the
    question directly. With a chain round (``found.before``), the first round's path where it
    has one, else the path through the chain anchor that leads here, one hop longer."""
    if found.before is not None:
        path, route = _path(index, found.before, row, x)
        return (path, route) if path else _chained(index, found, row)
    corpus = index.corpus
    rank = {a: i for i, a in enumerate(found.anchors)}
    via = found.feats.bridge_via.get(row)
    back = found.feats.backlink_via.get(row)
    through = via[0] if via is not None else back
    named = {"hops": 1, "kind": "named"}
    if row in rank and (through is None or rank[row] < rank.get(through, len(rank))):
        if x[COL["title_in_query"]] > 0 or x[COL["title_overlap"]] >= 0.5:
            return f"1-hop: the question names *{corpus[row].title}*", named
        direct = {"hops": 1, "kind": "direct"}
        return "1-hop: found by the question itself (words, meaning, its entities)", direct
    if through is not None:
        return _hop_path(index, [through], row, via)
    if x[COL["title_in_query"]] > 0:
        return f"1-hop: the question names *{corpus[row].title}*", named
    return "", None


def _chained(index: Index, found: Scored, row: int) -> tuple[str, dict[str, Any] | None]:
    """The path to ``row`` through the chain anchor it is a bridge page or back link of: that
    anchor's own path (from the first round), one hop longer."""
    via = found.feats.bridge_via.get(row)
    lead = via[0] if via is not None else found.feats.backlink_via.get(row)
    if lead is None or lead == row:
        return "", None
    assert found.before is not None
    at = np.flatnonzero(found.rows == lead)  # the chain anchors are candidates
    _, lead_route = _path(index, found.before, lead, found.feats.X[int(at[0])])
    way = [index.corpus.position(c["id"]) for c in (lead_route or {}).get("chain", [])]
    if row in way:  # the chain would come back to this page
        return "", None
    return _hop_path(index, [*way, lead], row, via)


def _hop_path(
    index: Index, chain: list[int], row: int, via: tuple[int, int] | None
) -> tuple[str, dict[str, Any]]:
    """``N-hop: question → *A* → *B* → this page``: ``chain`` the passages on the way; the last
    one leads here, naming this page's entity (``via``: (that passage, the entity)) or, without
    ``via``, mentioned by this page (a back link)."""
    corpus = index.corpus
    last = chain[-1]
    steps = " → ".join(f"*{corpus[r].title}*" for r in chain)
    route: dict[str, Any] = {
        "hops": len(chain) + 1, "kind": "bridge" if via is not None else "backlink",
        "via": corpus[last].title, "via_id": corpus[last].id,
        "chain": [{"title": corpus[r].title, "id": corpus[r].id} for r in chain],
    }  # fmt: skip
    if via is None:
        return f"{len(chain) + 1}-hop: question → {steps} ← this page mentions it", route
    label = _entity_label(index, via[1])
    route["entity"] = label
    names = "" if label == corpus[row].title else f" (it names *{label}*)"
    return f"{len(chain) + 1}-hop: question → {steps} → this page{names}", route


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
