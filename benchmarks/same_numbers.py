"""Does a change meant only to be faster keep the default's numbers? Record, then compare.
No table of its own: it checked the 1M p50 of docs/results.md, "What to expect at 10k, 100k and 1M
passages". Run time on the 2-core machine: about 1 min per ``record`` at 1M (estimated: the index's
3.8 s load, then 85 searches at 35–49 ms p50).

    PYTHONPATH=src .venv/bin/python benchmarks/same_numbers.py record --index IX \
        --dataset 2wikimultihopqa [--split test] [--n 80] --out before.pkl
    (change the code)
    PYTHONPATH=src .venv/bin/python benchmarks/same_numbers.py record ... --out after.pkl
    PYTHONPATH=src .venv/bin/python benchmarks/same_numbers.py compare before.pkl after.pkl

``record`` runs the default (``multihop``, no options) on the first ``--n`` questions of the
dataset over the index, and keeps every feature matrix the ranker scores (the first round's
and the chain round's) and each final ranking (rows and scores), with each search's wall time
(after five untimed warm-up searches). ``compare`` says how many differ, to the last bit; it
exits 1 when any does. Equal feature matrices on the indexes the ranker is fitted on (the
dev and train pools, the 100k scale sets) mean the shipped ranker and its training are
untouched. Used for the 1M speed-up (docs/benchmarks.md, "The default at 1M: the same
numbers in half the time").
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np


def record(args: argparse.Namespace) -> None:
    import hopgraph.retrieve.multihop as multihop
    from hopgraph.corpus import load_dataset
    from hopgraph.index import Index
    from hopgraph.retrieve.base import get_retriever

    feats: list[np.ndarray] = []
    features = multihop.features

    def kept(*a, **kw):  # noqa: ANN002, ANN003, ANN202
        hf = features(*a, **kw)
        feats.append(hf.X.copy())
        return hf

    multihop.features = kept  # the name score_candidates and chain_round call
    index = Index.load(args.index)
    ds = load_dataset(Path(args.data_dir) / args.dataset, split=args.split)
    retriever = get_retriever(index, "multihop")
    questions = [q.text for q in ds.questions[: args.n]]
    for q in questions[:5]:
        retriever.search(q, k=10)
    feats.clear()
    rankings, secs = [], []
    for q in questions:
        t0 = time.perf_counter()
        found = retriever.search(q, k=10)
        secs.append(time.perf_counter() - t0)
        rankings.append((np.asarray(found.rows).copy(), np.asarray(found.scores).copy()))
    with open(args.out, "wb") as fh:
        pickle.dump({"rankings": rankings, "features": feats, "seconds": secs}, fh)
    print(f"{len(questions)} searches, {len(feats)} feature matrices; "
          f"p50 {1000 * float(np.median(secs)):.1f} ms (indicative: one process)")  # fmt: skip


def compare(a_path: str, b_path: str) -> int:
    with open(a_path, "rb") as fa, open(b_path, "rb") as fb:
        a, b = pickle.load(fa), pickle.load(fb)  # noqa: S301 (files this script wrote)
    if len(a["rankings"]) != len(b["rankings"]) or len(a["features"]) != len(b["features"]):
        print("the recordings cover different searches")
        return 1
    ranks = sum(
        not (np.array_equal(r1, r2) and np.array_equal(s1, s2))
        for (r1, s1), (r2, s2) in zip(a["rankings"], b["rankings"], strict=True)
    )
    feats = sum(
        not (x.shape == y.shape and np.array_equal(x, y, equal_nan=True))
        for x, y in zip(a["features"], b["features"], strict=True)
    )
    print(f"rankings differ: {ranks}/{len(a['rankings'])}; "
          f"feature matrices differ: {feats}/{len(a['features'])}")  # fmt: skip
    return 1 if ranks or feats else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--index", required=True)
    rec.add_argument("--dataset", required=True)
    rec.add_argument("--split", default="test")
    rec.add_argument("--n", type=int, default=80)
    rec.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    rec.add_argument("--out", required=True)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    args = ap.parse_args()
    if args.cmd == "record":
        record(args)
    else:
        sys.exit(compare(args.a, args.b))


if __name__ == "__main__":
    main()
