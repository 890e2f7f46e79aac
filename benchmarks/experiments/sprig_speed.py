"""SPRIG speed checks: entity-graph indexing (regex and spaCy NER) and batch vs single search.

    PYTHONPATH=benchmarks python benchmarks/experiments/sprig_speed.py --data-dir ../shared/data \\
        [--dataset hotpotqa] [--spacy-passages 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from base import loaded_rss, open_index  # noqa: E402

from hopgraph.corpus import Corpus, load_dataset
from hopgraph.index.entities import EntityOptions, EntityPart
from hopgraph.retrieve import get_retriever
from hopgraph.text.ner import normalize_entity
from hopgraph.text.spacy_ner import SpacyNER


def rate(fn, n: int, repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append(n / (time.perf_counter() - t0))
    return round(statistics.median(runs), 1)


def cold_build(corpus: Corpus, options: EntityOptions) -> None:
    """Build the entity part with an empty normalisation cache (as a fresh process would)."""
    normalize_entity.cache_clear()
    EntityPart.build(corpus, options, progress=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--dataset", default="hotpotqa")
    ap.add_argument("--spacy-passages", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="benchmarks/results/sprig_speed.json")
    args = ap.parse_args()
    path = Path(args.data_dir) / args.dataset
    ds = load_dataset(path)
    corpus = ds.corpus
    out: dict = {"command": " ".join(sys.argv), "dataset": args.dataset, "passages": len(corpus)}
    for ner_opts in ({"normalize": "simple"}, {"normalize": "simple", "title_aliases": True}):
        o = EntityOptions(ner="regex", **ner_opts)
        key = "regex" + ("+EL" if o.title_aliases else "")
        out[f"{key}_entity_part_passages_per_s"] = rate(
            lambda o=o: cold_build(corpus, o), len(corpus), args.repeats
        )
    sub = Corpus(list(corpus)[: args.spacy_passages])
    texts = [p.content for p in sub]
    for n_process in (1, 2):  # the NER alone (what the target is about), median of repeats
        ner = SpacyNER(n_process=n_process)
        ner.extract(texts[:300])
        out[f"spacy_ner_only_n_process{n_process}_passages_per_s"] = rate(
            lambda ner=ner: ner.extract(texts), len(texts), args.repeats
        )
    for n_process in (1, 2):
        o = EntityOptions(ner="spacy", n_process=n_process)
        EntityPart.build(Corpus(list(corpus)[:300]), o, progress=False)  # load the model first
        out[f"spacy_n_process{n_process}_passages_per_s"] = rate(
            lambda o=o: EntityPart.build(sub, o, progress=False), len(sub), 1
        )
    index = open_index(path, ds, ("sparse", "dense", "entities"))
    queries = [q.text for q in ds.questions]
    for method in ("graph_hybrid", "graph_rrf"):
        r = get_retriever(index, method)
        r.search(queries[0], k=10)
        single = rate(lambda r=r: [r.search(q, k=10) for q in queries], len(queries), args.repeats)
        batch = rate(lambda r=r: r.search_batch(queries, k=10), len(queries), args.repeats)
        out[f"{method}_single_queries_per_s"] = single
        out[f"{method}_batch_queries_per_s"] = batch
    for method in ("bm25", "graph_hybrid", "graph_rrf"):
        out[f"rss_{method}"] = loaded_rss(index.path, method)
    print(json.dumps(out, indent=2))
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
