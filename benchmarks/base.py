"""Base retrievers on the multi-hop sets: quality, latency, index time, memory, embedding speed.
Table: docs/results.md, "Latency and memory per method and switch" (``make bench``). Run time on
the 2-core machine: about 15 min on a first run, about 5 min with the indexes cached (estimated
from benchmarks/results/base.json: the dense parts built in 174 + 275 + 96 s; 821 questions × 7
methods × 3 repeats at 0.2–22 ms p50).

    python benchmarks/base.py --data-dir ../shared/data \
        [--datasets 2wikimultihopqa,hotpotqa,musique] [--repeats 3] [--limit N] \
        [--out benchmarks/results/base.json]

Indexes are cached (see ``hopgraph.cache``); the first run embeds every corpus. Latency numbers
are the median over ``--repeats`` runs of each method's per-query p50/p95.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hopgraph.cache import index_cache_dir
from hopgraph.corpus import load_dataset
from hopgraph.eval import MethodSpec, evaluate
from hopgraph.eval.report import markdown_table
from hopgraph.index import Index

METHODS = [
    MethodSpec("bm25"),
    MethodSpec("bm25_rm3"),
    MethodSpec("dense"),
    MethodSpec("dense", {"mode": "hnsw"}),
    MethodSpec("rrf"),
    MethodSpec("hybrid"),
    MethodSpec("composed"),
]
INDEX_OPTIONS = {"dense": {"hnsw": True}}


def rows_table(title: str, cols: list[str], rows: list[dict]) -> str:
    """A Markdown table of ``rows`` (dicts) under a ``###`` title; missing cells stay empty."""
    out = [f"\n### {title}\n", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    return "\n".join(out)


def open_index(path: Path, ds, parts=("sparse", "dense"), options=None) -> Index:
    """The cached index of this corpus with ``parts`` built with ``options`` (default: HNSW on)."""
    options = INDEX_OPTIONS if options is None else options
    folder = index_cache_dir(path, ds.name)
    index = Index.load(folder) if (folder / "manifest.json").exists() else Index(ds.corpus)
    if index.add_parts(parts, options, progress=True, rebuild_changed=True):
        index.save(folder)
    return index


def embedding_speed(path: Path, n: int = 256) -> dict:
    from hopgraph.models import load_embedder

    ds = load_dataset(path)
    texts = [p.content for p in ds.corpus][:n]
    emb = load_embedder()
    emb.encode(texts[:32])
    out = {"bf16": emb.bf16, "passages": len(texts)}
    for bs in (16, 32, 64):
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            emb.encode(texts, batch_size=bs)
            runs.append(len(texts) / (time.perf_counter() - t0))
        out[f"batch{bs}_passages_per_s"] = round(statistics.median(runs), 1)
    return out


RSS_PROBE = """
import json, sys, psutil
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever
index = Index.load(sys.argv[1])
after_load = psutil.Process().memory_info().rss / 2**20
for m in sys.argv[2].split(","):
    get_retriever(index, m).search("Who directed the film Kiss and Tell?", k=10)
rss = psutil.Process().memory_info().rss / 2**20
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child of a big benchmark
# process would report the parent's peak.
peak = int(next(x for x in open("/proc/self/status") if x.startswith("VmHWM")).split()[1]) / 1024
print(json.dumps({"rss_after_load_mb": round(after_load, 1),
                  "rss_after_queries_mb": round(rss, 1), "peak_rss_mb": round(peak, 1)}))
"""


def loaded_rss(index_dir: Path, methods: str = "bm25,dense,rrf") -> dict:
    """RSS of a fresh process that loads the index (index RSS) and runs ``methods`` once each
    (query RSS): SPRIG's Table A.7 split."""
    out = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, str(index_dir), methods],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--datasets", default="2wikimultihopqa,hotpotqa,musique")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", default="benchmarks/results/base.json")
    args = ap.parse_args()
    report: dict = {"datasets": {}, "command": " ".join(sys.argv)}
    for name in args.datasets.split(","):
        path = Path(args.data_dir) / name
        ds = load_dataset(path)
        index = open_index(path, ds)
        runs = [evaluate(index, ds, METHODS, limit=args.limit) for _ in range(args.repeats)]
        final = runs[-1]
        for i, res in enumerate(final):  # latency: median over repeats
            for key in ("latency_ms_p50", "latency_ms_p95", "latency_ms_p99"):
                res.latency[key] = statistics.median(r[i].latency[key] for r in runs)
        print(f"\n## {name}: {len(ds.corpus)} passages, {final[0].n_questions} questions\n")
        print(markdown_table(final))
        report["datasets"][name] = {
            "passages": len(ds.corpus),
            "results": [r.to_json() for r in final],
            "index_build_seconds": index.build_seconds,
            "loaded_index_rss": loaded_rss(index.path),
        }
        print("loaded index RSS:", report["datasets"][name]["loaded_index_rss"])
    first = Path(args.data_dir) / args.datasets.split(",")[0]
    report["embedding"] = embedding_speed(
        Path(args.data_dir) / "hotpotqa" if (Path(args.data_dir) / "hotpotqa").exists() else first
    )
    print("\nembedding:", report["embedding"])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
