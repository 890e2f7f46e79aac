"""How many hits per document a ranking of document chunks should keep (``max_per_doc``).
Table: docs/results.md, "Documents, filters, updates, serving" (hits per document). Run time on the
2-core machine: about 25 min on a first run, a few minutes once the chunked indexes are cached
(estimated: three chunkings indexed at 250–530 s each, recorded in
docs/notes/documents-filters.md).

    python benchmarks/max_per_doc.py --data-dir ../shared/data \
        [--chunks 100:20,200:40,100:0] [--methods default,bm25] [--caps none,1,2,3] \
        [--limit N] [--out benchmarks/results/max_per_doc.json] [--build-only]

SciFact (BEIR, test split) is cut into chunks of W words with O words of overlap (``W:O`` in
``--chunks``; ``hopgraph convert chunks`` does the same), every chunk carrying its abstract's
``doc_id``; the gold of a question is every chunk of its relevant abstracts. The chunked
datasets are written once under ``~/.cache/hopgraph/datasets`` and their default indexes
(the default method's parts, options detected as ``hopgraph index`` does) once under
``~/.cache/hopgraph/indexes`` (or ``$HOPGRAPH_CACHE``).

Each method searches every question with k=10 under each cap (``none`` = no limit, the
ranking as the method gives it). Reported: document recall at 5 and 10 (the share of a
question's relevant abstracts among the distinct documents of its top k; ``multi_doc_``: over
the questions with several relevant abstracts only, 12 of SciFact's 148), passage recall
R@5 / R@10 and nDCG@10 over the chunks, the mean number of distinct documents in the top 5,
and the hits skipped for crowding per question.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.cache import index_cache_dir
from hopgraph.corpus import Dataset, chunked_dataset, load_dataset, write_unified
from hopgraph.defaults import default_build
from hopgraph.eval.metrics import ndcg_at_k, recall_at_k
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever


def datasets_root() -> Path:
    return Path.home() / ".cache" / "hopgraph" / "datasets"


def chunked(data_dir: Path, words: int, overlap: int) -> tuple[Dataset, Path]:
    """SciFact cut into ``words``-word chunks sharing ``overlap`` words (written once)."""
    folder = datasets_root() / f"scifact-chunks{words}-o{overlap}"
    if not (folder / "questions.jsonl").exists():
        ds = chunked_dataset(data_dir / "scifact", split="test", max_words=words, overlap=overlap)
        write_unified(ds, folder, overwrite=True)
    return load_dataset(folder), folder


def cached_index(ds: Dataset, folder: Path) -> Index:
    """The default index of ``ds`` (built and saved once, as ``hopgraph eval`` caches it)."""
    path = index_cache_dir(folder, ds.name)
    if not (path / "manifest.json").exists():
        parts, options, detected = default_build(ds.corpus)
        t0 = time.perf_counter()
        built = Index.build(ds.corpus, parts, options)
        built.detected = detected
        built.save(path)
        print(f"built {path} ({len(ds.corpus)} passages) in {time.perf_counter() - t0:.0f} s")
    return Index.load(path)


def doc_of(index: Index) -> dict[str, str]:
    """Each passage id's document (its ``doc_id``, else itself)."""
    return {p.id: str(p.metadata.get("doc_id", p.id)) for p in index.corpus}


def distinct(ids: list[str], doc: dict[str, str], k: int) -> list[str]:
    seen: dict[str, None] = {}
    for pid in ids[:k]:
        seen.setdefault(doc[pid], None)
    return list(seen)


def measure(
    index: Index, ds: Dataset, method: str, cap: int | None, limit: int | None
) -> dict[str, Any]:
    questions = ds.questions[:limit] if limit else ds.questions
    doc = doc_of(index)
    retriever = get_retriever(index, method)
    retriever.search(questions[0].text, k=10, max_per_doc=cap or 0)  # warm-up, untimed
    t0 = time.perf_counter()
    rankings = retriever.search_batch([q.text for q in questions], 10, max_per_doc=cap or 0)
    seconds = time.perf_counter() - t0
    names = ("doc_R@5", "doc_R@10", "R@5", "R@10", "nDCG@10", "docs@5", "skipped")
    rows: dict[str, list[float]] = {k: [] for k in (*names, "multi_doc_R@5", "multi_doc_R@10")}
    for q, r in zip(questions, rankings, strict=True):
        gold_docs = {doc[g] for g in q.gold}
        for k in (5, 10):
            found = gold_docs.intersection(distinct(r.ids, doc, k))
            rows[f"doc_R@{k}"].append(len(found) / len(gold_docs))
            if len(gold_docs) > 1:  # the questions with several relevant documents
                rows[f"multi_doc_R@{k}"].append(len(found) / len(gold_docs))
            rows[f"R@{k}"].append(recall_at_k(r.ids, q.gold, k))
        rows["nDCG@10"].append(ndcg_at_k(r.ids, q.gold, 10))
        rows["docs@5"].append(len(distinct(r.ids, doc, 5)))
        rows["skipped"].append(r.info.get("crowded_out", 0))
        assert len(r) == 10, (method, cap, q.id, len(r))
    out: dict[str, Any] = {k: round(float(np.mean(v)), 4) for k, v in rows.items() if v}
    ms = round(seconds * 1000 / len(questions), 1)
    n_multi = len(rows["multi_doc_R@5"])
    return {**out, "questions": len(questions), "multi_doc_questions": n_multi, "ms_per_query": ms}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--chunks", default="100:20,200:40,100:0", help="W:O,... words:overlap")
    ap.add_argument("--methods", default="default,bm25")
    ap.add_argument("--caps", default="none,1,2,3")
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--build-only", action="store_true", help="write the datasets and indexes")
    a = ap.parse_args()
    caps = [None if c == "none" else int(c) for c in a.caps.split(",")]
    results = []
    for spec in a.chunks.split(","):
        words, overlap = (int(x) for x in spec.split(":"))
        ds, folder = chunked(a.data_dir, words, overlap)
        index = cached_index(ds, folder)
        if a.build_only:
            continue
        n_docs = len(set(doc_of(index).values()))
        for method in a.methods.split(","):
            for cap in caps:
                row = {
                    "chunk_words": words,
                    "overlap": overlap,
                    "passages": len(index),
                    "documents": n_docs,
                    "method": method,
                    "max_per_doc": cap,
                    **measure(index, ds, method, cap, a.limit),
                }
                results.append(row)
                print(json.dumps(row), flush=True)
    if a.build_only:
        return
    cols = ["doc_R@5", "doc_R@10", "multi_doc_R@5", "multi_doc_R@10", "R@5", "R@10", "nDCG@10"]
    cols += ["docs@5", "skipped"]
    print("\n| chunks | method | max_per_doc | " + " | ".join(cols) + " |")
    print("|---|---|---|" + "---|" * len(cols))
    for r in results:
        cap = "none" if r["max_per_doc"] is None else r["max_per_doc"]
        vals = " | ".join(f"{r[c]:.3f}" if c != "docs@5" else f"{r[c]:.2f}" for c in cols)
        print(f"| {r['chunk_words']}/{r['overlap']} | {r['method']} | {cap} | {vals} |")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"rows": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
