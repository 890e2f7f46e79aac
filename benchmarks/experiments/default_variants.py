"""Issue 17 experiments on the default ranker (none is shipped): how well the shipped recipe
should do on new questions of a set, and two tries at the MuSiQue gap.

    .venv/bin/python benchmarks/experiments/default_variants.py --data-dir ../shared/data \\
        [--only cv,synthetic,sentence] [--out benchmarks/results/default_variants.json]

Every row is measured on a set's dev questions with a ranker that never saw them:

- ``cv``: 5-fold cross-validation over the set's dev questions, the other folds *in* the
  training data with every other corpus (the shipped recipe fits on all dev questions, so this
  is its estimate for new questions of the set), beside "set held out" (no dev question of the
  set; the rows of docs/benchmarks.md).
- ``synthetic``: the ranker also fitted on synthetic questions made from each training corpus
  (``training/synthetic.py``, 600 a corpus; never from the evaluated set's corpus).
- ``sentence``: four more features from each top-3 first-hop anchor's best sentence (the one
  sharing the most question words, IDF-weighted, its own title's words left out): BM25 of the
  question plus that sentence, the cosine with ``normalise(q + e(sentence))``, with
  ``e(sentence)``, and the first minus the plain cosine; max over the anchors.

The entity-titled corpora's ranker only (as ``multihop`` uses on these sets); LightGBM as
shipped (``training/ranker.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from default_ranker import TRAINING, default_index  # noqa: E402

from hopgraph.eval.metrics import compute_all
from hopgraph.retrieve.hop_features import FEATURES, _words, corpus_kind
from hopgraph.retrieve.multihop import MultihopParams, score_candidates
from hopgraph.training.ranker import Candidates, fit
from hopgraph.training.synthetic import sentences, synthetic_questions

ROOT = Path(__file__).resolve().parents[2]
SETS = ["musique", "hotpotqa", "2wikimultihopqa"]
KS = ("recall@2", "recall@5", "recall@10")


def candidates(items: list, extra: list | None = None) -> Candidates:
    """``items``: (Scored, gold rows) per question; ``extra``: more feature columns each."""
    X = [
        s.feats.X if extra is None else np.column_stack([s.feats.X, e])
        for (s, _), e in zip(items, extra or [None] * len(items), strict=True)
    ]
    y = [np.isin(s.rows, g).astype(int) for s, g in items]
    return Candidates(
        np.concatenate(X), np.concatenate(y), np.asarray([len(s.rows) for s, _ in items])
    )


def recalls(booster, items: list, ids: list[str], golds: list, extra: list | None = None) -> list:
    out = []
    for i, (s, _) in enumerate(items):
        X = s.feats.X if extra is None else np.column_stack([s.feats.X, extra[i]])
        order = s.rows[np.lexsort((s.rows, -booster.predict(X)))]
        out.append(compute_all([ids[r] for r in order], golds[i], [2, 5, 10]))
    return [round(float(np.mean([m[k] for m in out])), 3) for k in KS]


class Best:
    """Each anchor's sentence that shares the most question words (IDF-weighted)."""

    def __init__(self, corpus) -> None:
        df = Counter(w for p in corpus for w in set(_words(p.text)))
        self.idf = {w: math.log(len(corpus) / c) for w, c in df.items()}
        self.corpus = corpus

    def __call__(self, query: str, row: int) -> str:
        p = self.corpus[row]
        qw = set(_words(query)) - set(_words(p.title))
        sents = sentences(p.text) or [p.text]
        scores = [sum(self.idf.get(w, 0.0) for w in set(_words(s)) & qw) for s in sents]
        return sents[int(np.argmax(scores))]


def sentence_features(c, scored, best: Best, query: str, qvec: np.ndarray) -> np.ndarray:
    dense, sparse = c.index.part("dense"), c.index.part("sparse")
    rows, anchors = scored.rows, scored.rewrites.anchors
    F = np.full((len(rows), 3), -1.0)
    F[:, 0] = 0.0
    if anchors:
        sents = [best(query, a) for a in anchors]
        E = np.asarray(dense.encode_queries(sents), np.float64)
        V = np.asarray(dense.vectors(rows), np.float64)
        for a, s, e in zip(anchors, sents, E, strict=True):
            b = np.asarray(sparse.scores(f"{query} {s}"), np.float64)
            fb = b[rows] / b.max() if b.max() > 0 else np.zeros(len(rows))
            h = np.asarray(qvec, np.float64) + e
            fh, fs = V @ (h / np.linalg.norm(h)), V @ (e / np.linalg.norm(e))
            me = rows == a
            fb[me], fh[me], fs[me] = 0.0, -1.0, -1.0
            F = np.maximum(F, np.column_stack([fb, fh, fs]))
    return np.column_stack([F, F[:, 1] - scored.feats.X[:, FEATURES.index("cosine")]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data-dir", type=Path, default=os.environ.get("HOPGRAPH_DATA", "../shared/data")
    )
    ap.add_argument(
        "--index-dir", type=Path, default=None, help="index cache (default: hopgraph's)"
    )
    ap.add_argument("--only", default="cv,synthetic,sentence")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/default_variants.json")
    args = ap.parse_args()
    todo = set(args.only.split(","))
    s = MultihopParams().settings()
    corpora = [default_index(n, f, args.data_dir, args.index_dir, sp) for n, sp, f in TRAINING]
    named = [c for c in corpora if corpus_kind(c.index) == "entity_titles"]
    items, golds, extra = {}, {}, {}
    for c in named:
        items[c.name] = [
            (score_candidates(c.index, s, q.text, v, None), g)
            for q, v, g in zip(c.dataset.questions, c.qvecs, c.gold_rows, strict=True)
        ]
        golds[c.name] = [q.gold for q in c.dataset.questions]
        if "sentence" in todo:
            best = Best(c.index.corpus)
            extra[c.name] = [
                sentence_features(c, sc, best, q.text, v)
                for (sc, _), q, v in zip(items[c.name], c.dataset.questions, c.qvecs, strict=True)
            ]
        print(f"{c.name}: features", file=sys.stderr, flush=True)
    report: dict = {}
    for name in SETS:
        c = next(x for x in named if x.name == name)
        ids = c.index.corpus.ids
        others = [x.name for x in named if x.name != name]
        base = fit([candidates(items[o]) for o in others])
        row = {"set held out": recalls(base, items[name], ids, golds[name])}
        if "cv" in todo:
            fold = np.arange(len(items[name])) % 5
            np.random.default_rng(0).shuffle(fold)
            out = np.zeros((len(items[name]), 3))
            for f in range(5):
                train = [i for i in range(len(fold)) if fold[i] != f]
                test = [i for i in range(len(fold)) if fold[i] == f]
                b = fit(
                    [candidates(items[o]) for o in others]
                    + [candidates([items[name][i] for i in train])]
                )
                for i in test:
                    out[i] = recalls(b, [items[name][i]], ids, [golds[name][i]])
            row["5-fold cv"] = [round(float(x), 3) for x in out.mean(axis=0)]
        if "synthetic" in todo:
            syn = []
            for o in others:
                oc = next(x for x in named if x.name == o)
                qs = synthetic_questions(oc.index.corpus, 600, seed=1)
                V = oc.index.part("dense").encode_queries([q.text for q in qs])
                pos = oc.index.corpus.position
                syn.append(
                    candidates(
                        [
                            (
                                score_candidates(oc.index, s, q.text, v, None),
                                [pos(i) for i in q.gold],
                            )
                            for q, v in zip(qs, V, strict=True)
                        ]
                    )
                )
            b = fit([candidates(items[o]) for o in others] + syn)
            row["+ synthetic questions"] = recalls(b, items[name], ids, golds[name])
        if "sentence" in todo:
            b = fit([candidates(items[o], extra[o]) for o in others])
            row["+ best-sentence features"] = recalls(b, items[name], ids, golds[name], extra[name])
        report[name] = row
        print(name, json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"R@2, R@5, R@10": report}, indent=1) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
