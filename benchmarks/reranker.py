"""The packaged reranker over the default pipeline: does rescoring the default's top N, mixed
with the ranker's score, raise Recall@5?
Table: docs/results.md, "Latency and memory per method and switch" (the ``rerank=50`` switch). Run
time on the 2-core machine: about 10 min (estimated: three rankers refitted set held out, against a
run of experiments/decompose.py, which takes the features once and refits a ranker for each of five
held-out sets, recorded at 2–4 min; 821 questions' top 50 through the cross-encoder at about 0.2 s
a question).

    python benchmarks/reranker.py --data-dir ../shared/data \\
        [--datasets 2wikimultihopqa,hotpotqa,musique] [--n 50] [--mixes 1,2,4,6,8,12,16] \\
        [--shipped] [--model FOLDER] [--out benchmarks/results/reranker.json]

The first stage is ``multihop`` with a ranker refitted **without the evaluated set** (as
``default_pipeline.py``'s "set held out" rows; HotpotQA and MuSiQue keep their train sets):
that is how the shipped ranker meets questions it has not seen, which is what a held-out check
asks. ``--shipped`` uses the shipped ranker instead; it was fitted on these dev questions, so its
order is in-sample and a reranker can only look worse against it. The cross-encoder never saw a
dev question (its training: the train splits and synthetic questions from the train corpora).

For each set, the first stage's top ``n`` of every question is scored once by the
cross-encoder; each mix ``m`` reorders them by ``z(cross-encoder) + m · z(ranker)``
(``rerank_mix``; the passages past ``n`` keep their place), in two designs: the cross-encoder's
scores as they are, and as path scores (``rerank_paths``: a passage reached through a first-hop
passage among the ``n`` scores at least the mean of the two; ``model_search.path_scores``). Both
run the product's operator (``mixed_model_search``) on multihop's own candidates. The report
gives R@5 and R@10 for the first stage and every design and mix, the cross-encoder's p50 per
question, and, for each design, the mix chosen on the *other* sets (leave one set out: the best
mean R@5 gain over them) with the set's result and a paired bootstrap against the first stage.
The end-to-end form of the same switch is ``hopgraph eval DATASET --set rerank=50``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from default_pipeline import held_out_rankers

from hopgraph.cache import open_cached_index
from hopgraph.corpus import load_dataset
from hopgraph.defaults import default_build
from hopgraph.eval.bootstrap import paired_bootstrap
from hopgraph.eval.metrics import recall_at_k
from hopgraph.models.rerankers import load_cross_encoder
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.model_search import PairCache, mixed_model_search, sorted_by
from hopgraph.retrieve.multihop import rescored_via, score_candidates

DESIGNS = ("", "paths, ")  # the cross-encoder's scores alone, and as path scores (rerank_paths)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument(
        "--index-dir", type=Path, default=None, help="index cache (default: hopgraph's)"
    )
    ap.add_argument("--datasets", default="2wikimultihopqa,hotpotqa,musique")
    ap.add_argument("--n", type=int, default=50, help="candidates rescored")
    ap.add_argument("--mixes", default="1,2,4,6,8,12,16")
    ap.add_argument("--shipped", action="store_true", help="first stage: the shipped ranker")
    ap.add_argument("--model", default="", help="cross-encoder folder (default: packaged)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/reranker.json"))
    args = ap.parse_args()
    mixes = [float(x) for x in args.mixes.split(",")]
    ce = load_cross_encoder(args.model)
    names = args.datasets.split(",")
    rankers: dict[str, str] = {}
    if not args.shipped:
        folder = Path(tempfile.mkdtemp(prefix="hopgraph-rankers-"))
        held = held_out_rankers(args.data_dir, args.index_dir, folder, names)
        rankers = {name: files["set"] for name, files in held.items()}
    first_stage = "shipped ranker (in-sample)" if args.shipped else "ranker without the set"
    report: dict = {
        "model": ce.name,
        "n": args.n,
        "mixes": mixes,
        "first_stage": first_stage,
        "datasets": {},
    }
    per_q: dict[str, dict[str, list[float]]] = {}
    for name in names:
        path = args.data_dir / name
        ds = load_dataset(path)
        parts, options, detected = default_build(ds.corpus)
        index = open_cached_index(ds, path, parts, options, args.index_dir, True, detected)
        default = get_retriever(index, model=rankers.get(name, ""))
        labels = ["first stage", "bi-encoder alone"]
        labels += [f"{d}mix={m:g}" for d in DESIGNS for m in mixes]
        rows = {label: {"r5": [], "r10": []} for label in labels}
        dense = index.part("dense")
        qvecs = dense.encode_queries([q.text for q in ds.questions])
        ids = index.corpus.ids
        ms = []
        for q, qvec in zip(ds.questions, qvecs, strict=True):
            # what multihop's search ranks (its candidates, ranker order), and what led there
            found = score_candidates(index, default.settings, q.text, qvec, default.ranker.score)
            order = np.lexsort((found.rows, -found.scores))
            ranked, scores = found.rows[order], found.scores[order]
            top, rest = ranked[: args.n], ranked[args.n :].tolist()
            pairs = PairCache(ce, q.text, index.corpus)
            t0 = time.perf_counter()
            pairs.scores(top)  # each pair encoded once; the mixes below reuse it
            ms.append((time.perf_counter() - t0) * 1e3)
            via = rescored_via(found, top)
            orders = {"first stage": ranked.tolist()}
            cos = dense.vectors(top) @ qvec
            orders["bi-encoder alone"] = sorted_by(top, cos)[0].tolist() + rest
            for d in DESIGNS:
                for m in mixes:
                    o = mixed_model_search(pairs, top, scores[: args.n], m, via if d else None)
                    orders[f"{d}mix={m:g}"] = o[0].tolist() + rest
            gold = set(q.gold)
            for label, o in orders.items():
                rows[label]["r5"].append(recall_at_k([ids[r] for r in o], gold, 5))
                rows[label]["r10"].append(recall_at_k([ids[r] for r in o], gold, 10))
        per_q[name] = {label: v["r5"] for label, v in rows.items()}
        out = {
            label: {
                "R@5": round(float(np.mean(v["r5"])), 4),
                "R@10": round(float(np.mean(v["r10"])), 4),
            }
            for label, v in rows.items()
        }
        report["datasets"][name] = {
            "questions": len(ds.questions),
            "cross_encoder_ms_p50": round(statistics.median(ms), 1),
            "rows": out,
        }
        print(name, json.dumps(report["datasets"][name]), flush=True)

    def gain(name: str, label: str) -> float:
        return float(np.mean(per_q[name][label]) - np.mean(per_q[name]["first stage"]))

    loso: dict = {}
    for d in DESIGNS:
        for name in names:
            others = [o for o in names if o != name] or [name]
            mean_gain = {m: np.mean([gain(o, f"{d}mix={m:g}") for o in others]) for m in mixes}
            best = max(mixes, key=lambda m: (mean_gain[m], -m))
            label = f"{d}mix={best:g}"
            test = paired_bootstrap(
                per_q[name]["first stage"], per_q[name][label], n_resamples=2000, seed=0
            )
            loso[f"{d}{name}"] = {
                "mix": best,
                **report["datasets"][name]["rows"][label],
                "R@5 vs first stage": dict(test),
            }
    report["leave_one_set_out"] = loso
    print("leave one set out:", json.dumps(loso), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
