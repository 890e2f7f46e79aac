"""GRIEVER's scores (§4.4): partial triples (equation 1), triples (equation 2), multi-hop paths
and passages.

* A partial triple u of t = (s, p, o) pairs the predicate with one entity e ∈ {s, o}:
  ``s_u = (s_e + s_p) / (2 (1 + log freq(e, p)))`` with s_e, s_p the entity matcher's scores
  and freq the number of triples sharing u.
* ``s_t = max_u s_u``; the entity of the winning partial is the one the query named, the other
  (the complement) is the join entity towards the next hop.
* A path is a chain of triples, each joined to the previous one's join entity (or a synonym of
  it); its running score is the mean of its triples' scores.
* A passage scores ``max s_t · s_path`` over its triples t and the paths through t.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


def partial_score(entity: np.ndarray, predicate: np.ndarray, freq: np.ndarray) -> np.ndarray:
    """Equation (1), element-wise."""
    return (entity + predicate) / (2.0 * (1.0 + np.log(np.maximum(freq, 1))))


@dataclass
class ScoredTriples:
    """Triples of one hop with their scores (equation 2) and join entities."""

    ids: np.ndarray  # triple ids
    score: np.ndarray  # s_t
    named: np.ndarray  # entity id the query named (subject or object)
    join: np.ndarray  # the complement entity: where the next hop starts
    entity_score: np.ndarray
    predicate_score: np.ndarray

    @classmethod
    def concat(cls, pieces: list[ScoredTriples]) -> ScoredTriples:
        fields = ("ids", "score", "named", "join", "entity_score", "predicate_score")
        if not pieces:
            return cls(*(np.zeros(0, np.float64 if "score" in f else np.int64) for f in fields))
        return cls(*(np.concatenate([getattr(x, f) for x in pieces]) for f in fields))

    def order(self) -> np.ndarray:
        """Positions best first (ties by triple id)."""
        return np.lexsort((self.ids, -self.score))


def score_triples(
    ids: np.ndarray,
    triples: np.ndarray,
    of_triple: np.ndarray,
    freq: np.ndarray,
    entity_score: Callable[[np.ndarray], np.ndarray],
    predicate_score: Callable[[np.ndarray], np.ndarray],
) -> ScoredTriples:
    """Equations (1) and (2) for triples ``ids``: ``triples`` is the (n, ≥3) subject, predicate,
    object table, ``of_triple`` the (n, 2) forward/inverse partial ids, ``freq`` each partial's
    frequency; the two callables give s_e per entity id and s_p per predicate id."""
    ids = np.asarray(ids, np.int64)
    t = np.asarray(triples)[ids]
    s, p, o = t[:, 0], t[:, 1], t[:, 2]
    sp_ = predicate_score(p)
    se_s, se_o = entity_score(s), entity_score(o)
    parts = np.asarray(of_triple)[ids]
    fwd = partial_score(se_s, sp_, np.asarray(freq)[parts[:, 0]])
    inv = partial_score(se_o, sp_, np.asarray(freq)[parts[:, 1]])
    use_fwd = fwd >= inv
    return ScoredTriples(
        ids=ids,
        score=np.where(use_fwd, fwd, inv).astype(np.float64),
        named=np.where(use_fwd, s, o),
        join=np.where(use_fwd, o, s),
        entity_score=np.where(use_fwd, se_s, se_o),
        predicate_score=sp_,
    )


@dataclass(frozen=True)
class Path:
    triples: tuple[int, ...]
    scores: tuple[float, ...]
    join: int  # the last triple's join entity

    @property
    def score(self) -> float:
        return float(sum(self.scores) / len(self.scores))


def extend_paths(
    paths: list[Path],
    hop: ScoredTriples,
    triples: np.ndarray,
    same: Callable[[int], set[int]],
    max_paths: int,
) -> list[Path]:
    """Paths after adding ``hop``: every old path, each hop triple alone, and each old path
    extended by a hop triple naming the path's join entity (or one of its synonyms, ``same``).
    The best ``max_paths`` are kept (ties: shorter, then by triples)."""
    out = list(paths)
    t = np.asarray(triples)
    for i in range(len(hop.ids)):
        tid, sc = int(hop.ids[i]), float(hop.score[i])
        out.append(Path((tid,), (sc,), int(hop.join[i])))
    for path in paths:
        joinable = same(path.join) | {path.join}
        for i in range(len(hop.ids)):
            tid = int(hop.ids[i])
            if tid in path.triples:
                continue
            s, o = int(t[tid, 0]), int(t[tid, 2])
            if s in joinable or o in joinable:
                nxt = o if s in joinable else s
                out.append(Path(path.triples + (tid,), path.scores + (float(hop.score[i]),), nxt))
    out.sort(key=lambda q: (-q.score, len(q.triples), q.triples))
    return out[:max_paths]


def passage_scores(
    paths: list[Path], triple_rows: np.ndarray
) -> dict[int, tuple[float, Path, int]]:
    """Row → (max s_t · s_path, the path, the triple t) over the paths and their triples;
    ``triple_rows`` maps a triple id to its passage row."""
    best: dict[int, tuple[float, Path, int]] = {}
    for path in paths:
        ps = path.score
        for tid, st in zip(path.triples, path.scores, strict=True):
            row = int(triple_rows[tid])
            v = st * ps
            if row not in best or v > best[row][0]:
                best[row] = (v, path, tid)
    return best
