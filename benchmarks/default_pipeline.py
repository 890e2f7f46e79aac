"""The default pipeline (``multihop``) against the baselines: quality, latency, build cost.
Table: docs/results.md, "Every method on every set" (and docs/notes/any-corpus.md, issue 35). Run
time on the 2-core machine: about 10 min, plus about 4 min to index the four sets where not cached
(estimated: 8 rankers refitted, set and family held out, against a run of experiments/decompose.py,
which takes the features once and refits a ranker for each of five held-out sets, recorded at 2–4
min; 969 questions × 5 methods × 3 repeats at 0.2–13 ms p50, about 2 min); ``--build-cost`` about 4
min (recorded: 109 s and 104 s builds in benchmarks/results/default_pipeline.json).

    .venv/bin/python benchmarks/default_pipeline.py --data-dir ../shared/data [--repeats 3]
    .venv/bin/python benchmarks/default_pipeline.py --data-dir ../shared/data --build-cost

For each set (dev questions; SciFact's test qrels): ``bm25``, ``dense``, ``rrf``, ``graph_rrf``
and ``multihop`` on the default index (sparse + dense + entities, settings detected from the
corpus, no preset), each compared with ``rrf`` by a paired bootstrap of Recall@5, Recall@10 and
nDCG@10. The shipped ranker was fitted on these dev questions too, so ``multihop`` is also run
with rankers refitted without them: ``multihop (set held out)`` without the evaluated corpus
(HotpotQA and MuSiQue keep their train sets), ``multihop (family held out)`` without its whole
family (no HotpotQA, MuSiQue or 2Wiki question at all): the transfer to a corpus never seen.
Latencies are the median over ``--repeats`` runs of each run's p50/p95. Also: batch search
against one query at a time, and a per-type breakdown (2Wiki's ``type``, MuSiQue's hop count).
``--build-cost`` builds 2Wiki's corpus from scratch twice, sparse + dense and the default parts,
and records seconds per part and disk bytes per passage beyond text and vectors. Results:
``benchmarks/results/default_pipeline.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
from default_ranker import corpus_name, set_corpus, training_corpora

from hopgraph.eval import MethodSpec, evaluate
from hopgraph.eval.bootstrap import paired_bootstrap
from hopgraph.eval.report import markdown_table
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.multihop import MultihopParams
from hopgraph.training.ranker import train

ROOT = Path(__file__).resolve().parents[1]
SETS = [  # (name, split)
    ("2wikimultihopqa", "test"),
    ("hotpotqa", "test"),
    ("musique", "test"),
    ("scifact", "test"),
    ("spider", "test"),  # serialised tables (benchmarks/grapher.py converts them)
    ("bird", "test"),
]
METHODS = ["rrf", "bm25", "dense", "graph_rrf", "multihop"]  # rrf first: the comparisons' base


def question_type(name: str, q) -> str | None:
    """2Wiki's question type; MuSiQue's hop count (from the id, e.g. ``3hop1__...``)."""
    if name == "2wikimultihopqa":
        return str(q.metadata.get("type", "?"))
    if name == "musique":
        return q.id.split("hop")[0] + "-hop"
    return None


def by_type(name: str, ds, results) -> dict[str, dict[str, dict[str, float]]]:
    """Mean Recall@5 and @10 per question type, per method."""
    types = {q.id: question_type(name, q) for q in ds.questions}
    if not any(types.values()):
        return {}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for r in results:
        groups: dict[str, list[dict]] = defaultdict(list)
        for row in r.per_query:
            groups[types[row["id"]]].append(row)
        out[r.label] = {
            t: {
                "n": len(rows),
                "recall@5": float(np.mean([x["recall@5"] for x in rows])),
                "recall@10": float(np.mean([x["recall@10"] for x in rows])),
            }
            for t, rows in sorted(groups.items())
        }
    return out


def batch_vs_single(index: Index, ds, methods: list[str], n: int = 64) -> dict[str, dict]:
    """ms per query, one at a time and as one batch (the same queries, warm)."""
    qs = [q.text for q in ds.questions[:n]]
    out = {}
    for m in methods:
        r = get_retriever(index, m)
        r.search_batch(qs[:4], k=10)
        t0 = time.perf_counter()
        single = [r.search(q, k=10).ids for q in qs]
        t1 = time.perf_counter()
        batch = [x.ids for x in r.search_batch(qs, k=10)]
        t2 = time.perf_counter()
        out[m] = {
            "queries": len(qs),
            "single_ms_per_query": 1000 * (t1 - t0) / len(qs),
            "batch_ms_per_query": 1000 * (t2 - t1) / len(qs),
            "same_rankings": single == batch,
        }
    return out


def comparisons(results, key: str) -> dict[str, dict]:
    base = [r[key] for r in results[0].per_query]
    out = {}
    for r in results[1:]:
        other = [x[key] for x in r.per_query]
        out[r.label] = paired_bootstrap(base, other, seed=0, n_resamples=2000)
    return out


def held_out_rankers(
    data_dir: Path,
    index_dir: Path | None,
    folder: Path,
    names: list[str] | None = None,
    trainer=train,
) -> dict[str, dict]:
    """Ranker files fitted without each evaluated set (``set``) and without its family
    (``family``), as :mod:`default_ranker` fits the shipped one (``trainer``: ``train``, or
    ``train_both`` for the models without passage vectors too); for ``names`` (default: every
    evaluated set)."""
    corpora = training_corpora(data_dir, index_dir)
    s = MultihopParams().settings()
    cache: dict = {}
    out: dict[str, dict] = {}
    # hold out one corpus only (with the pseudo-queries drawn from it)
    by_name = [replace(c, family=c.source or c.name) for c in corpora]
    for name in names or [n for n, _ in SETS]:
        family = trainer(corpora, s, exclude=name, progress=False, cache=cache)
        alone = trainer(by_name, s, exclude=corpus_name(name), progress=False, cache=cache)
        out[name] = {
            "family": str(family.save(folder / f"{name}-family.json")),
            "set": str(alone.save(folder / f"{name}-set.json")),
        }
    return out


def quality(args, data_dir: Path, index_dir: Path | None) -> dict:
    report: dict = {}
    folder = Path(tempfile.mkdtemp(prefix="hopgraph-rankers-"))
    held = held_out_rankers(data_dir, index_dir, folder)
    for name, split in SETS:
        c = set_corpus(name, split, data_dir, index_dir)
        index, ds = c.index, c.dataset
        specs = [MethodSpec(m) for m in METHODS] + [
            MethodSpec("multihop", {"model": held[name]["set"]}, label="multihop (set held out)"),
            MethodSpec(
                "multihop", {"model": held[name]["family"]}, label="multihop (family held out)"
            ),
        ]
        runs = [evaluate(index, ds, specs, progress=False) for _ in range(args.repeats)]
        final = runs[-1]
        for i, res in enumerate(final):
            for key in ("latency_ms_p50", "latency_ms_p95", "latency_ms_p99"):
                res.latency[key] = statistics.median(run[i].latency[key] for run in runs)
        print(f"## {name}: {len(ds.corpus)} passages, {len(ds.questions)} questions")
        print(markdown_table(final, (2, 5, 10)))
        entry = {
            "passages": len(ds.corpus),
            "questions": len(ds.questions),
            "detected": index.detected,
            "methods": {r.label: {**r.metrics, **r.latency} for r in final},
            "vs_rrf": {
                "recall@5": comparisons(final, "recall@5"),
                "recall@10": comparisons(final, "recall@10"),
                "ndcg@10": comparisons(final, "ndcg@10"),
            },
            "by_type": by_type(name, ds, final),
            "batch": batch_vs_single(index, ds, ["rrf", "multihop"]),
        }
        report[name] = entry
        print(json.dumps({k: entry[k] for k in ("vs_rrf", "by_type", "batch")}, indent=1))
        sys.stdout.flush()
    return report


def folder_bytes(folder: Path) -> dict[str, int]:
    """Bytes on disk per part folder, and of the passages file."""
    out = {"passages": sum(f.stat().st_size for f in folder.glob("passages*"))}
    for part in sorted((folder / "parts").iterdir()):
        out[part.name] = sum(f.stat().st_size for f in part.rglob("*") if f.is_file())
    return out


def build_cost(data_dir: Path, name: str = "2wikimultihopqa") -> dict:
    """Fresh builds of ``name``'s corpus: sparse + dense, then the default parts."""
    from hopgraph.corpus import load_dataset

    ds = load_dataset(data_dir / name)
    n = len(ds.corpus)
    out: dict = {"dataset": name, "passages": n}
    with tempfile.TemporaryDirectory() as tmp:
        for label, build in (
            ("sparse+dense", lambda: Index.build(ds.corpus, ["sparse", "dense"], progress=False)),
            ("default", lambda: Index.build(ds.corpus, progress=False)),
        ):
            t0 = time.perf_counter()
            index = build()
            seconds = time.perf_counter() - t0
            folder = index.save(Path(tmp) / label)
            size = folder_bytes(folder)
            beyond = sum(v for k, v in size.items() if k not in ("passages", "dense"))
            out[label] = {
                "seconds": seconds,
                "part_seconds": dict(index.build_seconds),
                "bytes": size,
                "kb_per_passage_beyond_text_and_vectors": beyond / n / 1024,
                "dense_kb_per_passage": size.get("dense", 0) / n / 1024,
            }
            print(f"{label}: {seconds:.1f}s {json.dumps(out[label])}", file=sys.stderr)
    out["ratio"] = out["default"]["seconds"] / out["sparse+dense"]["seconds"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--index-dir", default=None, help="index cache (default: hopgraph's)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build-cost", action="store_true", help="only the build-cost comparison")
    ap.add_argument("--results", default=str(ROOT / "benchmarks/results/default_pipeline.json"))
    args = ap.parse_args()
    data_dir = Path(args.data_dir)
    index_dir = Path(args.index_dir) if args.index_dir else None
    out_path = Path(args.results)
    results = json.loads(out_path.read_text()) if out_path.exists() else {}
    if args.build_cost:
        results["build_cost"] = build_cost(data_dir)
    else:
        results["quality"] = quality(args, data_dir, index_dir)
    out_path.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out_path}", file=sys.stderr)


if __name__ == "__main__":
    main()
