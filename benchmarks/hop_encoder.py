"""Experiment toward issue 17 (MuSiQue): does a trained hop *query* encoder add to the default?

    .venv/bin/python benchmarks/hop_encoder.py --held-out musique --data-dir ../shared/data \
        [--epochs 2] [--anchors 3] [--models-dir WORK/hop-encoders]

Not part of the product: it measures whether the next step is worth building. The encoder is
the bundled MiniLM fine-tuned as a query tower only: its input is the question plus one gold
passage (``question [SEP] title. text``), its target the fixed index vector of another gold
passage of the same question (every ordered pair), against the 8 best non-gold candidates of
the shipped pipeline (fixed vectors; InfoNCE, temperature 0.05, AdamW 3e-5, batch 16, 160
tokens). The index and its passage vectors do not change.

Protocol, "set held out" as docs/benchmarks.md's default-pipeline table: the training
questions are every entity-titled training set but ``--held-out`` (dev questions of the other
sets, and both train sets). They are split in two halves; an encoder trained on one half gives
the features of the other, so the LightGBM ranker (the shipped ranker's settings) is fitted on
out-of-fold features; the held-out questions get the mean of both encoders' features. Two new
features per candidate: the best cosine of its vector with the hop vectors of the first hop's
top ``--anchors`` anchors (an anchor itself excluded), and that minus its plain cosine. Printed:
Recall@2/5/10 on the held-out set's dev questions without and with them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from default_ranker import TRAINING, default_index  # noqa: E402

from hopgraph.eval.metrics import compute_all  # noqa: E402
from hopgraph.models.embedder import DEFAULT_EMBEDDER, resolve_model  # noqa: E402
from hopgraph.retrieve.hop_features import FEATURES, corpus_kind  # noqa: E402
from hopgraph.retrieve.multihop import MultihopParams, score_candidates  # noqa: E402
from hopgraph.training.ranker import LGB_PARAMS  # noqa: E402

NEGATIVES, TAU, MAX_LEN, BATCH = 8, 0.05, 160, 16


def passage_text(c, row: int) -> str:  # noqa: ANN001
    p = c.index.corpus[row]
    return f"{p.title}. {p.text}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--held-out", default="musique")
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--anchors", type=int, default=3)
    ap.add_argument("--models-dir", default=None, help="keep (and reuse) the trained encoders")
    args = ap.parse_args()

    import lightgbm as lgb
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    random.seed(0)
    torch.set_num_threads(2)
    data = Path(args.data_dir)
    sets = [default_index(n, f, data, args.index_dir, split) for n, split, f in TRAINING]
    C = {c.name: c for c in sets if corpus_kind(c.index) == "entity_titles"}
    E = args.held_out
    s = MultihopParams().settings()
    cands = {}  # (set, question) → (scored candidates, gold rows, question text)
    for n, c in C.items():
        for qi, (q, v, g) in enumerate(zip(c.dataset.questions, c.qvecs, c.gold_rows, strict=True)):
            cands[(n, qi)] = (score_candidates(c.index, s, q.text, v, None), list(g), q.text)

    def pairs_of(items):  # noqa: ANN001, ANN202
        out = []
        for it in items:
            sc, gold, text = cands[it]
            order = sc.rows[np.argsort(-sc.scores)]
            negs = [int(r) for r in order if int(r) not in set(gold)][:NEGATIVES]
            if len(negs) < NEGATIVES:
                continue
            for a, b in itertools.permutations(gold, 2):
                out.append((it[0], f"{text} [SEP] {passage_text(C[it[0]], a)}", b, negs))
        return out

    def train(items, path: Path | None):  # noqa: ANN001, ANN202
        if path is not None and path.exists():
            m = SentenceTransformer(str(path), device="cpu")
            m.max_seq_length = MAX_LEN
            return m.eval()
        model = SentenceTransformer(resolve_model(DEFAULT_EMBEDDER), device="cpu")
        model.max_seq_length = MAX_LEN
        opt = torch.optim.AdamW(model.parameters(), lr=3e-5)
        pairs = pairs_of(items)
        for epoch in range(args.epochs):
            random.shuffle(pairs)
            model.train()
            total, t0 = 0.0, time.time()
            for lo in range(0, len(pairs), BATCH):
                batch = pairs[lo : lo + BATCH]
                hq = model(model.tokenize([b[1] for b in batch]))["sentence_embedding"]
                hq = torch.nn.functional.normalize(hq, dim=-1)
                targets = np.stack(
                    [
                        C[n].index.part("dense").vectors(np.asarray([t, *ng]))
                        for n, _, t, ng in batch
                    ]
                )
                logits = torch.einsum("bd,bkd->bk", hq, torch.from_numpy(targets)) / TAU
                loss = torch.nn.functional.cross_entropy(
                    logits, torch.zeros(len(batch), dtype=torch.long)
                )
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(batch)
            print(f"epoch {epoch}: {len(pairs)} pairs, loss {total / len(pairs):.3f}, "
                  f"{time.time() - t0:.0f} s", file=sys.stderr, flush=True)  # fmt: skip
        model.eval()
        if path is not None:
            model.save(str(path))
        return model

    @torch.no_grad()
    def extra(model, it) -> np.ndarray:  # noqa: ANN001
        sc, _, text = cands[it]
        c = C[it[0]]
        A = sc.anchors[: args.anchors]
        V = model.encode([f"{text} [SEP] {passage_text(c, a)}" for a in A],
                         normalize_embeddings=True, batch_size=8)  # fmt: skip
        S = c.index.part("dense").vectors(sc.rows) @ V.T
        S[sc.rows[:, None] == np.asarray(A)[None, :]] = -1
        best = S.max(axis=1)
        return np.column_stack([best, best - sc.feats.X[:, FEATURES.index("cosine")]])

    train_items = [it for it in cands if it[0] != E]
    random.shuffle(train_items)
    folds = [train_items[0::2], train_items[1::2]]
    models_dir = Path(args.models_dir) if args.models_dir else None
    if models_dir:
        models_dir.mkdir(parents=True, exist_ok=True)
    X_extra, models = {}, []
    for k in range(2):
        path = models_dir / f"{E}-fold{k}" if models_dir else None
        models.append(train(folds[1 - k], path))
        X_extra.update({it: extra(models[k], it) for it in folds[k]})
    held = [it for it in cands if it[0] == E]
    X_extra.update({it: (extra(models[0], it) + extra(models[1], it)) / 2 for it in held})

    def fit(cols):  # noqa: ANN001, ANN202
        X = [np.column_stack([cands[it][0].feats.X, X_extra[it]])[:, cols] for it in train_items]
        y = [np.isin(cands[it][0].rows, cands[it][1]).astype(int) for it in train_items]
        groups = [len(cands[it][0].rows) for it in train_items]
        ranker = lgb.LGBMRanker(**LGB_PARAMS)
        ranker.fit(np.concatenate(X), np.concatenate(y), group=groups)
        return ranker.booster_

    nf = len(FEATURES)
    results = {}
    for label, cols in (
        ("default features", list(range(nf))),
        ("+ hop encoder", list(range(nf + 2))),
    ):
        booster, ms = fit(cols), []
        for it in held:
            sc, gold, _ = cands[it]
            score = booster.predict(np.column_stack([sc.feats.X, X_extra[it]])[:, cols])
            ids = C[E].index.corpus.ids
            order = sc.rows[np.lexsort((sc.rows, -score))]
            ms.append(
                compute_all([ids[r] for r in order], C[E].dataset.questions[it[1]].gold, [2, 5, 10])
            )
        results[label] = {
            k: round(float(np.mean([m[f"recall@{k}"] for m in ms])), 3) for k in (2, 5, 10)
        }
        print(E, label, json.dumps(results[label]), flush=True)


if __name__ == "__main__":
    main()
