"""What a metadata filter costs: per-query latency of filtered against unfiltered searches.
Table: docs/results.md, "Documents, filters, updates, serving" (metadata filters). Run time on the
2-core machine: about 5 min (estimated: the HotpotQA index built once, about a minute; 243
questions × 5 filter settings × 4 methods × 3 repeats at 0.2–13 ms p50).

    python benchmarks/filters.py --data-dir ../shared/data --dataset hotpotqa \
        [--methods bm25,dense,default,rrf] [--repeats 3] [--work /tmp/hopgraph-filters] \
        [--out benchmarks/results/filters.json]

The dataset's passages get synthetic metadata derived from their ids (crc32, so the same on
every run): ``bucket`` in 0..99 and ``year`` in 1990..2019. The index (the default parts) is
built once into ``--work`` and reused. Every question is searched one at a time (k=10) with no
filter and with filters keeping about 50 %, 10 %, 3 % and 1 % of the passages, the settings
interleaved query by query; the table gives the
median over ``--repeats`` runs of each setting's p50 and p95, and checks that every hit
matches its filter.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import zlib
from pathlib import Path

import numpy as np

from hopgraph.corpus import Corpus, Passage, load_dataset
from hopgraph.defaults import default_build
from hopgraph.filters import matching_rows
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever

FILTERS = {
    "none": None,
    "50%": {"bucket": {"$lt": 50}},
    "10%": {"bucket": {"$lt": 10}},
    "1%": {"bucket": 0},
    "year=2001": {"year": 2001},
}


def with_metadata(corpus: Corpus) -> Corpus:
    out = []
    for p in corpus:
        h = zlib.crc32(p.id.encode("utf-8"))
        out.append(Passage(p.id, p.title, p.text, {"bucket": h % 100, "year": 1990 + h % 30}))
    return Corpus(out)


def load_or_build(data_dir: Path, dataset: str, work: Path) -> tuple[Index, list[str]]:
    ds = load_dataset(data_dir / dataset)
    folder = work / f"{dataset}-meta"
    if not (folder / "manifest.json").exists():
        corpus = with_metadata(ds.corpus)
        parts, options, detected = default_build(corpus)
        t0 = time.perf_counter()
        built = Index.build(corpus, parts, options)
        built.detected = detected
        built.save(folder)
        print(f"built {folder} in {time.perf_counter() - t0:.0f} s")
    return Index.load(folder), [q.text for q in ds.questions]


def run(index: Index, queries: list[str], methods: list[str], repeats: int) -> list[dict]:
    """Every query is searched under each filter in turn (interleaved, so a noisy machine
    slows every setting alike); p50/p95 per setting and repeat, the median of the repeats."""
    rows = []
    masks = {label: matching_rows(index.corpus, spec) for label, spec in FILTERS.items()}
    for method in methods:
        r = get_retriever(index, method)
        for spec in FILTERS.values():  # warm: lazy structures, the encoder, the masks
            r.search(queries[0], k=10, filter=spec)
        p50s: dict[str, list[float]] = {label: [] for label in FILTERS}
        p95s: dict[str, list[float]] = {label: [] for label in FILTERS}
        for _ in range(repeats):
            times: dict[str, list[float]] = {label: [] for label in FILTERS}
            for q in queries:
                for label, spec in FILTERS.items():
                    t0 = time.perf_counter()
                    hits = r.search(q, k=10, filter=spec)
                    times[label].append((time.perf_counter() - t0) * 1000)
                    allowed = masks[label]
                    if allowed is not None:
                        pos = [index.corpus.position(i) for i in hits.ids]
                        assert all(allowed[pos]), (method, label, q)
            for label in FILTERS:
                p50s[label].append(float(np.percentile(times[label], 50)))
                p95s[label].append(float(np.percentile(times[label], 95)))
        for label in FILTERS:
            allowed = masks[label]
            rows.append(
                {
                    "method": method,
                    "filter": label,
                    "matching": 1.0 if allowed is None else round(float(allowed.mean()), 4),
                    "p50_ms": round(statistics.median(p50s[label]), 2),
                    "p95_ms": round(statistics.median(p95s[label]), 2),
                }
            )
            print(json.dumps(rows[-1]))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--dataset", default="hotpotqa")
    ap.add_argument("--methods", default="bm25,dense,default,rrf")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("/tmp/hopgraph-filters"))
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    index, queries = load_or_build(a.data_dir, a.dataset, a.work)
    rows = run(index, queries, a.methods.split(","), a.repeats)
    print("\n| method | filter | matching | p50 ms | p95 ms |\n|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['method']} | {r['filter']} | {r['matching']:.1%} | {r['p50_ms']} | "
            f"{r['p95_ms']} |"
        )
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        meta = {"dataset": a.dataset, "passages": len(index), "questions": len(queries)}
        a.out.write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
