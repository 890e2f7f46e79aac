"""Experiment (issue 37): the question taken apart into its parts, as features, set held out.

    PYTHONPATH=src .venv/bin/python benchmarks/experiments/decompose.py --data-dir ../shared/data \
        --held-out musique_train,hotpotqa_train,musique,hotpotqa,2wikimultihopqa \
        [--use part_best,...] [--dense] [--gate] [--bag 8] [--no-scale] [--out F.json]

A composed question ("the famous bridge in the birthplace of Gloria in D Major's composer")
names one hop per part: split at its relative connectors, at "of" (not inside a name: "Age of
Ultron") and at possessives, it gives "What is the name" | "the famous bridge in the
birthplace" | "Gloria in D Major" | "composer". CoopRAG has an LLM answer the parts in order.
Without one, the parts still say which passage answers which part: each candidate's
idf-weighted share of each part's terms, and the same of the round's anchors. Features (per
candidate, in each round, its top three anchors weighted 1/rank):

- ``part_best``: the best share of one part the candidate covers;
- ``part_new``: max over anchors of the candidate's share of a part the anchor does not cover
  (Σ_j share(c, j) · (1 − share(a, j)), / parts);
- ``part_linked_new``: the same, over the anchors the candidate is linked to (the own page of
  an entity the anchor mentions, a passage mentioning the anchor's own entity, or a rare
  entity in common): the next part answered by a hop from the last (the order CoopRAG follows);
- ``pair_cover``: max over anchors of the share of the question's terms the anchor and the
  candidate cover together, and ``pair_gain`` the same minus the anchor's alone.

``--use`` picks among them (empty: none). ``--dense`` adds ``part_best``, ``part_new`` and
``part_linked_new`` again with each part's cosine (its query vector, encoded at search time)
in place of its share of terms; ``--gate`` sets them all to 0 for comparison questions
(``text/questions.py``); ``--bag K`` adds rows of K rankers averaged (row and column sampling
``--bag-fraction``, seeds 0..K−1). The ranker with and without them is fitted as
``chain_protocol`` fits (set held out, both rounds; with the recipe's scale training sets
unless ``--no-scale``); rows on the held-out set's own pool and, for MuSiQue and HotpotQA,
the grown pool.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from chain_protocol import (  # noqa: E402
    each_held_out,
    evaluate,
    fit_ranker,
    pools,
    protocol_args,
    scale_args,
    scale_work,
    set_of,
    training_sets,
    two_rounds,
)

from hopgraph.retrieve.hop_features import entity_maps  # noqa: E402
from hopgraph.text.questions import is_comparison  # noqa: E402

ANCHORS = 3
NAMES = ("part_best", "part_new", "part_linked_new", "pair_cover", "pair_gain")
_SPLIT = re.compile(r"\b(?:who|whom|whose|which|that|where|when|of)\b|['’]s\b|,", re.IGNORECASE)


def parts(question: str) -> list[str]:
    """The question's parts: its text split at relative connectors, "of", possessives and
    commas (empty pieces dropped); an "of" between two capitalised words is part of a name
    ("Age of Ultron") and does not split."""
    q = " ".join(question.split()).rstrip("?. ")
    out, start = [], 0
    for m in _SPLIT.finditer(q):
        if m.group(0).lower() == "of":
            before = q[: m.start()].split()[-1:]
            after = q[m.end() :].split()[:1]
            if before and after and before[0][:1].isupper() and after[0][:1].isupper():
                continue
        out.append(q[start : m.start()])
        start = m.end()
    out.append(q[start:])
    return [p.strip() for p in out if p.strip()]


class Parts:
    """One question's parts as term ids and idf weights over one index."""

    def __init__(self, index: Any, question: str):
        sparse = index.part("sparse")
        n = sparse.n_docs
        idf = np.log((n + 1.0) / (sparse._doc_freqs() + 1.0))
        self.sets = []
        seen: set[tuple[int, ...]] = set()
        for p in parts(question):
            ids = tuple(sorted(set(sparse.term_ids(p))))
            if ids and ids not in seen:
                seen.add(ids)
                self.sets.append(np.asarray(ids, np.int64))
        allq = sorted(set(sparse.term_ids(question)))
        self.q = np.asarray(allq, np.int64)
        self.idf = idf
        self.doc_terms = sparse.doc_terms

    def shares(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows × parts) idf-weighted share of each part's terms each row contains, and
        (rows × question terms) 0/1 presence of each of the question's terms."""
        if not len(self.q):
            return np.zeros((len(rows), 0)), np.zeros((len(rows), 0))
        D = self.doc_terms[rows][:, self.q].toarray() > 0
        col = {t: i for i, t in enumerate(self.q.tolist())}
        S = np.zeros((len(rows), len(self.sets)))
        for j, ids in enumerate(self.sets):
            cols = [col[t] for t in ids.tolist() if t in col]
            w = self.idf[ids]
            S[:, j] = (D[:, cols] * self.idf[self.q[cols]][None, :]).sum(axis=1) / w.sum()
        return S, D.astype(np.float64)


def linked(index: Any, rows: np.ndarray, A: list[int]) -> np.ndarray:
    """(rows × anchors) 1 where a row is a hop from the anchor: the own page of an entity the
    anchor mentions, a mention of the anchor's own entity, or a shared entity rarer than 1 in
    100 passages."""
    ents = index.part("entities")
    n = len(index.corpus)
    maps = entity_maps(ents, n)
    M = maps.binary[rows]
    L = np.zeros((len(rows), len(A)))
    rare = np.asarray(ents.df) < max(2.0, n / 100.0)
    for k, a in enumerate(A):
        a_ents = ents.passage_entities(a)
        pages = maps.own_page[a_ents]
        L[:, k] = np.isin(rows, pages[pages >= 0])
        own = maps.page_entity[a]
        if own >= 0:
            L[:, k] = np.maximum(L[:, k], M[:, [own]].toarray().ravel() > 0)
        shared = a_ents[rare[a_ents]]
        if len(shared):
            L[:, k] = np.maximum(L[:, k], np.asarray(M[:, shared].sum(axis=1)).ravel() > 0)
        L[rows == a, k] = 0.0
    return L


def columns(index: Any, P: Parts, found: Any) -> np.ndarray:
    """The five features of a round's candidates (its top :data:`ANCHORS` anchors)."""
    rows = found.rows
    A = [int(a) for a in found.anchors[:ANCHORS]]
    out = np.zeros((len(rows), len(NAMES)))
    if not len(P.sets):
        return out
    S, D = P.shares(rows)
    out[:, 0] = S.max(axis=1)
    if not A:
        return out
    SA, DA = P.shares(np.asarray(A, np.int64))
    w = 1.0 / np.arange(1, len(A) + 1)
    new = S @ (1.0 - SA).T / S.shape[1]  # rows × anchors
    self_hit = rows[:, None] == np.asarray(A)[None, :]
    new[self_hit] = 0.0
    out[:, 1] = (new * w[None, :]).max(axis=1)
    L = linked(index, rows, A)
    out[:, 2] = (new * L * w[None, :]).max(axis=1)
    qi = P.idf[P.q]
    tot = qi.sum()
    both = np.maximum(D[:, None, :], DA[None, :, :]) @ qi / tot  # rows × anchors
    alone = DA @ qi / tot
    both[self_hit] = 0.0
    out[:, 3] = (both * w[None, :]).max(axis=1)
    gain = (both - alone[None, :]) * w[None, :]
    gain[self_hit] = 0.0
    out[:, 4] = gain.max(axis=1)
    return out


DENSE_NAMES = ("part_best_cos", "part_new_cos", "part_linked_new_cos")
_PART_VECS: dict[str, np.ndarray] = {}


def part_vectors(index: Any, question: str) -> np.ndarray:
    """The query vectors of the question's parts (cached by text)."""
    v = _PART_VECS.get(question)
    if v is None:
        ps = parts(question) or [question]
        v = _PART_VECS[question] = np.asarray(index.part("dense").encode_queries(ps), np.float64)
    return v


def dense_columns(index: Any, question: str, found: Any) -> np.ndarray:
    """``part_best``, ``part_new`` and ``part_linked_new`` with each part's cosine (clipped at
    0) in place of its share of terms: relation words ("birthplace", "composer") match what
    a passage says in other words ("was born in")."""
    dense = index.part("dense")
    rows = found.rows
    A = [int(a) for a in found.anchors[:ANCHORS]]
    V = part_vectors(index, question)
    S = np.clip(np.asarray(dense.vectors(rows), np.float64) @ V.T, 0.0, None)
    out = np.zeros((len(rows), len(DENSE_NAMES)))
    out[:, 0] = S.max(axis=1)
    if not A:
        return out
    SA = np.clip(np.asarray(dense.vectors(np.asarray(A, np.int64)), np.float64) @ V.T, 0.0, None)
    w = 1.0 / np.arange(1, len(A) + 1)
    new = np.clip(S[:, None, :] - SA[None, :, :], 0.0, None).sum(axis=2) / S.shape[1]
    new[rows[:, None] == np.asarray(A)[None, :]] = 0.0
    out[:, 1] = (new * w[None, :]).max(axis=1)
    out[:, 2] = (new * linked(index, rows, A) * w[None, :]).max(axis=1)
    return out


def held_out(E: str, C: dict, rounds: dict, X_extra: dict, added: Any, args: Any) -> dict:
    """Set ``E`` held out: the rankers with and without the part features (and their bags,
    ``--bag``), and the rows on ``E``'s pools."""
    train_items = [it for it in rounds if set_of(it[0]) != E]

    def base(it: tuple) -> np.ndarray:
        return rounds[it].found.feats.X

    def wide(it: tuple) -> np.ndarray:
        return np.column_stack([base(it), X_extra[it]])

    boosters = {
        "default": ([fit_ranker(rounds, train_items, base, {})], False),
        "parts": ([fit_ranker(rounds, train_items, wide, {})], True),
    }
    if args.bag:
        bag = [{"bagging_fraction": args.bag_fraction, "bagging_freq": 1,
                "feature_fraction": args.bag_fraction, "random_state": k}
               for k in range(args.bag)]  # fmt: skip
        boosters["default bag"] = ([fit_ranker(rounds, train_items, base, p) for p in bag], False)
        boosters["parts bag"] = ([fit_ranker(rounds, train_items, wide, p) for p in bag], True)

    def runs(pool: Any, text: str, v: np.ndarray, first: Any) -> dict[str, Any]:
        Pq = Parts(pool.index, text)

        def score(label: str) -> Any:
            models, extra = boosters[label]

            def f(found: Any) -> np.ndarray:
                X = found.feats.X
                if extra:
                    X = np.column_stack([X, added(pool.index, Pq, text, found)])
                return sum(m.predict(X, num_threads=1) for m in models) / len(models)

            return f

        return {f"{label}, chain": two_rounds(pool, first, score(label)) for label in boosters}

    where = pools(E, C, Path(args.data_dir), Path(args.work), args.index_dir)
    return {name: evaluate(pool, runs) for name, pool in where.items()}


def main() -> None:
    ap = protocol_args(__doc__)
    scale_args(ap)
    ap.add_argument("--use", default=",".join(NAMES), help="the features added (comma list)")
    ap.add_argument("--dense", action="store_true", help="add the parts' cosine features")
    ap.add_argument("--gate", action="store_true", help="0 for comparison questions")
    ap.add_argument("--bag", type=int, default=0, help="also rows of K rankers averaged")
    ap.add_argument("--bag-fraction", type=float, default=0.8)
    args = ap.parse_args()
    unknown = [u for u in args.use.split(",") if u and u not in NAMES]
    if unknown:
        ap.error(f"--use: unknown feature(s) {', '.join(unknown)}; choose from {', '.join(NAMES)}")
    use = [NAMES.index(u) for u in args.use.split(",") if u]

    def added(index: Any, P: Parts, text: str, found: Any) -> np.ndarray:
        X = columns(index, P, found)[:, use]
        X = np.column_stack([X, dense_columns(index, text, found)]) if args.dense else X
        return X * 0.0 if args.gate and is_comparison(text) else X

    C, rounds = training_sets(Path(args.data_dir), args.index_dir, scale_work=scale_work(args))
    t0 = time.time()
    X_extra = {it: added(C[it[0]].index, Parts(C[it[0]].index, r.text), r.text, r.found)
               for it, r in rounds.items()}  # fmt: skip
    print(f"part features: {time.time() - t0:.0f} s", file=sys.stderr)
    each_held_out(args, lambda E: held_out(E, C, rounds, X_extra, added, args))


if __name__ == "__main__":
    main()
