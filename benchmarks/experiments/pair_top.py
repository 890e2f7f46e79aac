"""The top two chosen as a pair, set held out (issue 37): does a joint choice lift Recall@2?

    PYTHONPATH=src .venv/bin/python benchmarks/experiments/pair_top.py --data-dir ../shared/data \
        [--held-out musique,hotpotqa,2wikimultihopqa] [--k 6] [--out FILE.json]

The default ranks each candidate on its own; Recall@2 of a 2-hop question needs the anchor *and*
its hop in the first two places. Here, after the default's two rounds, every pair of the top
``--k`` passages is scored by a LambdaRank model over pair features: both passages' final scores
and ranks, a few of their own features, whether one's title is named in the other's text (the
link a chain follows), how much of the question's terms each and both together cover, and the
cosines between question, both passages and their sum. The best pair takes places 1 and 2 (in
its own order); the rest follow in the default's order.

Set held out, nested: the default's ranker for the held-out set is fitted on the other sets'
first rounds (``chain_protocol.py``); the pair model is fitted on the other sets' pairs, each
set's pairs ranked by a ranker fitted without that set *and* the held-out one, so the pair model
never sees scores of questions their ranker was trained on.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
import chain_protocol as protocol  # noqa: E402
from hop_encoder import summary  # noqa: E402

from hopgraph.eval.metrics import compute_all  # noqa: E402
from hopgraph.retrieve.final_fusion import corpus_weights, final_order
from hopgraph.retrieve.hop_features import FEATURES, entity_maps  # noqa: E402
from hopgraph.retrieve.multihop import (
    # noqa: E402
    MultihopParams,
    score_candidates,
)
from hopgraph.text.ner import strip_disambiguator  # noqa: E402
from hopgraph.text.tokenize import Tokenizer  # noqa: E402
from hopgraph.training.ranker import Candidates, fit  # noqa: E402

OWN = ("title_in_query", "title_overlap", "query_entities", "bridge", "backlink", "hop_cosine",
       "anchor_shared", "bm25", "cosine")  # fmt: skip
COL = {f: i for i, f in enumerate(FEATURES)}
TOKENS = Tokenizer()


def _norm(text: str) -> str:
    return " " + " ".join("".join(c.lower() if c.isalnum() else " " for c in text).split()) + " "


class Ranked:
    """One question's final top ``k`` after the default's two rounds: rows, final scores, their
    own features, texts, vectors."""

    def __init__(self, index: Any, text: str, qvec: np.ndarray, last: Any, k: int):
        s = MultihopParams().settings()
        pos, fused = final_order(last, corpus_weights(index, True), s.k_rrf)
        self.order = last.rows[pos]
        top = pos[:k]
        self.rows = last.rows[top]
        self.scores = fused[top]
        self.own = last.feats.X[top][:, [COL[f] for f in OWN]]
        docs = [index.corpus[int(r)] for r in self.rows]
        self.texts = [_norm(f"{d.title} {d.text}") for d in docs]
        self.titles = [_norm(strip_disambiguator(d.title)) for d in docs]
        q = set(TOKENS(text))
        self.q_terms = max(len(q), 1)
        self.cover = [q & set(TOKENS(f"{d.title} {d.text}")) for d in docs]
        V = np.asarray(index.part("dense").vectors(self.rows), np.float64)
        self.V, self.qv = V, np.asarray(qvec, np.float64)
        ents = index.part("entities")
        maps = entity_maps(ents, len(index.corpus))
        self.ents = [set(ents.passage_entities(int(r)).tolist()) for r in self.rows]
        self.pages = [set(maps.own_page[list(e)].tolist()) if e else set() for e in self.ents]
        self.idf = maps.idf

    def pairs(self) -> tuple[list[tuple[int, int]], np.ndarray]:
        """Every pair (i < j) of the top and its feature row."""
        out, X = [], []
        top = self.scores[0] if len(self.scores) else 0.0
        qcos = self.V @ self.qv
        for i, j in combinations(range(len(self.rows)), 2):
            union = len(self.cover[i] | self.cover[j]) / self.q_terms
            ci, cj = len(self.cover[i]) / self.q_terms, len(self.cover[j]) / self.q_terms
            s = self.V[i] + self.V[j]
            X.append([
                i, j, self.scores[i] - top, self.scores[j] - top, self.scores[i] - self.scores[j],
                float(len(self.titles[j]) > 3 and self.titles[j] in self.texts[i]),
                float(len(self.titles[i]) > 3 and self.titles[i] in self.texts[j]),
                float(int(self.rows[j]) in self.pages[i]),
                float(int(self.rows[i]) in self.pages[j]),
                float(sum(self.idf[e] for e in self.ents[i] & self.ents[j])),
                ci, cj, union, union - max(ci, cj),
                qcos[i], qcos[j], float(self.V[i] @ self.V[j]),
                float(s @ self.qv / max(np.linalg.norm(s), 1e-9)),
                *self.own[i], *self.own[j],
            ])  # fmt: skip
            out.append((i, j))
        return out, np.asarray(X, np.float64)

    def by_pairs(self, pairs: list[tuple[int, int]], scores: np.ndarray) -> list[int]:
        """The top re-ordered by each passage's best pair score (the best pair first), the rest
        after it in the default's order."""
        best = np.full(len(self.rows), -np.inf)
        for (i, j), v in zip(pairs, scores, strict=True):
            best[i], best[j] = max(best[i], v), max(best[j], v)
        top = [int(self.rows[i]) for i in np.lexsort((np.arange(len(best)), -best))]
        return top + [int(r) for r in self.order if int(r) not in set(top)]

    def reorder(self, pair: tuple[int, int]) -> list[int]:
        first = [int(self.rows[pair[0]]), int(self.rows[pair[1]])]
        return first + [int(r) for r in self.order if int(r) not in first]


def ranked_set(pool: Any, booster: Any, k: int) -> list[tuple[Ranked, list[int]]]:
    """Each question of ``pool`` ranked by the default's two rounds under ``booster``."""
    one = replace(MultihopParams().settings(), chain=0)

    def score(found: Any) -> np.ndarray:
        return booster.predict(found.feats.X, num_threads=1)

    out = []
    for q, v, gold in zip(pool.dataset.questions, pool.qvecs, pool.gold_rows, strict=True):
        first = score_candidates(pool.index, one, q.text, v, None)
        last = protocol.two_rounds(pool, first, score)
        out.append((Ranked(pool.index, q.text, v, last, k), list(gold)))
    return out


def pair_data(ranked: list[tuple[Ranked, list[int]]]) -> Candidates:
    Xs, ys, gs = [], [], []
    for r, gold in ranked:
        pairs, X = r.pairs()
        if not pairs:
            continue
        g = np.isin(r.rows, gold)
        Xs.append(X)
        ys.append(np.asarray([int(g[i]) + int(g[j]) for i, j in pairs], np.int32))
        gs.append(len(pairs))
    return Candidates(np.concatenate(Xs), np.concatenate(ys), np.asarray(gs))


def scores_of(ranked: list[tuple[Ranked, list[int]]], pool: Any, pair_model: Any | None) -> dict:
    ids = pool.index.corpus.ids
    base, paired, oracle, marginal = [], [], [], []
    for (r, gold), q in zip(ranked, pool.dataset.questions, strict=True):
        g = np.isin(r.rows, gold)
        pairs = r.pairs()[0]
        if pairs:
            best = max(pairs, key=lambda p: int(g[p[0]]) + int(g[p[1]]))
            order = r.reorder(best)
            oracle.append((len(q.gold), compute_all([ids[i] for i in order], q.gold, [2, 5, 10])))
        base.append((len(q.gold), compute_all([ids[i] for i in r.order], q.gold, [2, 5, 10])))
        if pair_model is not None:
            pairs, X = r.pairs()
            p = pair_model.predict(X, num_threads=1) if pairs else np.zeros(0)
            order = r.reorder(pairs[int(np.argmax(p))]) if pairs else [int(i) for i in r.order]
            paired.append((len(q.gold), compute_all([ids[i] for i in order], q.gold, [2, 5, 10])))
            order = r.by_pairs(pairs, p) if pairs else [int(i) for i in r.order]
            marginal.append((len(q.gold), compute_all([ids[i] for i in order], q.gold, [2, 5, 10])))
    out = {"default": summary(base)}
    if paired:
        out["pair"] = summary(paired)
        out["best pair per passage"] = summary(marginal)
    if oracle:
        out["oracle pair"] = summary(oracle)
    return out


def main() -> None:
    ap = protocol.protocol_args(__doc__)
    ap.set_defaults(held_out="musique,hotpotqa,2wikimultihopqa")
    ap.add_argument("--k", type=int, default=6, help="pairs among the final top k")
    ap.add_argument("--params", default="{}", help="LightGBM settings of the pair model (JSON)")
    args = ap.parse_args()
    data = Path(args.data_dir)
    C, rounds = protocol.training_sets(data, args.index_dir)
    params = json.loads(args.params)
    report: dict[str, Any] = {"k": args.k, "params": params}

    def features(it: tuple) -> np.ndarray:
        return rounds[it].found.feats.X

    for E in args.held_out.split(","):
        t0 = time.time()
        others = [n for n in C if n != E]
        train = []
        for T in others:
            items = [it for it in rounds if it[0] not in (E, T)]
            booster = protocol.fit_ranker(rounds, items, features, {})
            train.append(pair_data(ranked_set(C[T], booster, args.k)))
        pair_model = fit(train, params)
        booster = protocol.fit_ranker(rounds, [it for it in rounds if it[0] != E], features, {})
        for name, pool in protocol.pools(E, C, data, Path(args.work), args.index_dir).items():
            row = scores_of(ranked_set(pool, booster, args.k), pool, pair_model)
            report[f"{E}/{name}"] = row
            print(E, name, json.dumps(row), f"{time.time() - t0:.0f} s", flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
