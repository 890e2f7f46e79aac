"""What the query-time vectors cost a search (issue 38): p50/p95 of one process's searches.
Table: docs/results.md, "Latency and memory per method and switch" (the cost of query-time
vectors). Run time on the 2-core machine: about 10 min (estimated: 100 questions × 3 sets, each
searched by ``rrf``, the default and the no-vector default with its top 10, 20 and 30 encoded at
0.3–0.7 s a search).

    PYTHONPATH=src .venv/bin/python benchmarks/query_vectors_cost.py --data-dir ../shared/data \
        [--sets musique,hotpotqa,2wikimultihopqa] [--limit 100] [--top 10,20,30] \
        [--encode-batch 4,20]

On each set's default index (cached, as ``hopgraph eval`` builds it) and the same index without
its dense part, every question is searched by each of: ``rrf`` and the full default (on the full
index), the default without vectors and the same with its top N encoded at query time
(``multihop.query_vectors=N``, the shipped models), interleaved question by question so that
the machine's drift falls on all of them alike. Wall-clock per search, milliseconds, after one
warm-up search each (the encoders load on the first). ``--encode-batch`` times the top-N rows
with each number of passages a forward pass (``query_vectors.ENCODE_BATCH``, 4 as shipped).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from default_ranker import default_index
from no_vectors import without_vectors

import hopgraph.retrieve.query_vectors as qv
from hopgraph.retrieve import get_retriever


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--sets", default="musique,hotpotqa,2wikimultihopqa")
    ap.add_argument("--limit", type=int, default=100, help="questions per set")
    ap.add_argument("--top", default="20", help="query_vectors values (comma-separated)")
    ap.add_argument("--encode-batch", default=str(qv.ENCODE_BATCH),
                    help="passages a forward pass (comma-separated)")  # fmt: skip
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    report = {}
    for name in args.sets.split(","):
        c = default_index(name, name, Path(args.data_dir), None, "test")
        bare = without_vectors(c.index)
        methods = {
            "rrf": get_retriever(c.index, "rrf"),
            "default": get_retriever(c.index),
            "default, no vectors": get_retriever(bare, "multihop", query_vectors=0),
        }
        batches = [int(x) for x in args.encode_batch.split(",")]
        batch_of: dict[str, int] = {}
        for n in (int(x) for x in args.top.split(",")):
            for b in batches:
                label = f"default, no vectors, top {n} encoded" + (
                    f", {b} a pass" if len(batches) > 1 else ""
                )
                methods[label] = get_retriever(bare, "multihop", query_vectors=n)
                batch_of[label] = b
        qs = [q.text for q in c.dataset.questions[: args.limit]]
        times: dict[str, list[float]] = {m: [] for m in methods}
        for r in methods.values():
            r.search(qs[0], k=10)  # warm-up: the encoders load
        for q in qs:
            for m, r in methods.items():
                qv.ENCODE_BATCH = batch_of.get(m, qv.ENCODE_BATCH)
                t = time.perf_counter()
                r.search(q, k=10)
                times[m].append((time.perf_counter() - t) * 1000)
        report[name] = {m: {"p50_ms": round(float(np.percentile(v, 50)), 1),
                            "p95_ms": round(float(np.percentile(v, 95)), 1)}
                        for m, v in times.items()}  # fmt: skip
        print(name, json.dumps(report[name]), file=sys.stderr, flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
