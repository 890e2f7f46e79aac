"""Why GraphER-PPR regresses: the mean candidate-graph degree of the top 10 under the base
ranking, GCS and PPR (GraphER §2.2: PPR lifts hubs whatever their relevance).

    python benchmarks/experiments/grapher_hubs.py --data-dir ../shared/data \
        [--datasets hotpotqa,...]

Uses each method's defaults; SciFact chunks come from the folder benchmarks/grapher.py writes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from base import open_index  # noqa: E402
from grapher import QA_INDEX_OPTIONS, QA_PARTS, converted  # noqa: E402

from hopgraph.corpus import load_dataset
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.grapher import candidate_graph


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--datasets", default="2wikimultihopqa,hotpotqa,musique,scifact")
    args = ap.parse_args()
    data = Path(args.data_dir)
    print("| set | all candidates | base top 10 | GCS top 10 | PPR top 10 |")
    print("|---|---|---|---|---|")
    for name in args.datasets.split(","):
        path = converted(data, name) if name == "scifact" else data / name
        ds = load_dataset(path)
        index = open_index(path, ds, QA_PARTS, QA_INDEX_OPTIONS)
        gcs, ppr = get_retriever(index, "grapher_gcs"), get_retriever(index, "grapher_ppr")
        qvecs = index.part("dense").encode_queries([q.text for q in ds.questions])
        deg: dict[str, list[float]] = {"all": [], "base": [], "gcs": [], "ppr": []}
        for q, v in zip(ds.questions, qvecs, strict=True):
            g = candidate_graph(index, gcs.params, gcs.base._search(q.text, gcs.params.n, v))
            d = (g.adjacency > 0).sum(axis=1)
            deg["all"].append(d.mean())
            deg["base"].append(d[:10].mean())
            for key, r in (("gcs", gcs), ("ppr", ppr)):
                deg[key].append(d[np.argsort(-r.rerank(g, v), kind="stable")[:10]].mean())
        m = {k: float(np.mean(v)) for k, v in deg.items()}
        print(f"| {name} | {m['all']:.2f} | {m['base']:.2f} | {m['gcs']:.2f} | {m['ppr']:.2f} |")


if __name__ == "__main__":
    main()
