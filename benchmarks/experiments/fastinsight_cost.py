"""FastInsight against plain reranking at the same cross-encoder: recall and cost, query by query.

    python benchmarks/experiments/fastinsight_cost.py --data-dir ../shared/data \\
        [--datasets musique_train,hotpotqa_train] [--limit 150] \\
        [--methods rerank,fastinsight,fastinsight:batch=10:patience=3] \\
        [--out benchmarks/results/fastinsight_cost.json]

Each method is a name with ``:param=value`` settings. The methods search each question in
turn, one after the other (interleaved, so a noisy machine slows them alike), with k = 10 on
the dataset's cached index (``hopgraph eval``'s cache; the dense and corpus_graph parts are
added where missing). Reported per dataset and method: R@10 (``hopgraph.eval.metrics``), the
p50 and p95 of the whole search in ms, the cross-encoder pairs per query and the encoder's ms
per pair (from the ranking's ``info``). The defaults of ``fastinsight`` were chosen on the
training sets (``musique_train``, ``hotpotqa_train``); the dev sets are the check.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.cache import index_cache_dir
from hopgraph.corpus import load_dataset
from hopgraph.eval.metrics import recall_at_k
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever

PARTS = ["dense", "corpus_graph"]


def parse_method(spec: str) -> tuple[str, dict[str, str]]:
    """``"fastinsight:batch=15:patience=2"`` → ``("fastinsight", {"batch": "15", ...})``."""
    name, *settings = spec.split(":")
    return name, dict(s.split("=", 1) for s in settings)


def measure(index: Index, questions: list[Any], methods: list[str], k: int) -> dict[str, Any]:
    retrievers = {}
    for m in methods:
        name, params = parse_method(m)
        retrievers[m] = get_retriever(index, name, **params)
    for r in retrievers.values():  # models loaded, caches warm
        r.search(questions[0].text, k)
    rows: dict[str, dict[str, list[float]]] = {
        m: {"ms": [], "recall": [], "pairs": [], "encode_ms": []} for m in methods
    }
    for q in questions:
        for m, r in retrievers.items():
            t0 = time.perf_counter()
            ranking = r.search(q.text, k)
            row = rows[m]
            row["ms"].append((time.perf_counter() - t0) * 1e3)
            row["recall"].append(recall_at_k(ranking.ids, q.gold, k))
            row["pairs"].append(float(ranking.info.get("pairs", 0)))
            row["encode_ms"].append(float(ranking.info.get("encode_ms", 0.0)))
    out = {}
    for m, row in rows.items():
        pairs = sum(row["pairs"])
        out[m] = {
            f"R@{k}": round(statistics.fmean(row["recall"]), 4),
            "p50_ms": round(float(np.percentile(row["ms"], 50)), 1),
            "p95_ms": round(float(np.percentile(row["ms"], 95)), 1),
            "pairs_per_query": round(pairs / len(questions), 1),
            "encode_ms_per_pair": round(sum(row["encode_ms"]) / pairs, 2) if pairs else None,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--datasets", default="musique_train,hotpotqa_train")
    ap.add_argument("--limit", type=int, default=150, help="first N questions of each")
    ap.add_argument("--methods", default="rerank,fastinsight")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--out", default="benchmarks/results/fastinsight_cost.json")
    args = ap.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    report: dict[str, Any] = {"command": " ".join(sys.argv), "results": {}}
    for name in args.datasets.split(","):
        path = Path(args.data_dir) / name
        ds = load_dataset(path)
        folder = index_cache_dir(path, ds.name)
        index = Index.load(folder) if (folder / "manifest.json").exists() else Index(ds.corpus)
        if index.add_parts(PARTS, progress=True):
            index.save(folder)
        questions = list(ds.questions[: args.limit])
        result = measure(index, questions, methods, args.k)
        report["results"][name] = {"questions": len(questions), "methods": result}
        print(f"\n{name} ({len(questions)} questions)")
        print(f"| method | R@{args.k} | p50 ms | p95 ms | pairs/query | encoder ms/pair |")
        print("|---|---|---|---|---|---|")
        for m, r in result.items():
            print(f"| `{m}` | {r[f'R@{args.k}']:.3f} | {r['p50_ms']} | {r['p95_ms']} | "
                  f"{r['pairs_per_query']} | {r['encode_ms_per_pair']} |")  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
