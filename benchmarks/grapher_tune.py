"""GraphER α grid (§A.3: 0.1 to 0.9 by 0.1, tuned on one dataset, then fixed) on the tuning sets.
Table: docs/results.md, "The published methods against their papers": the α ``grapher.py`` reads.
Run time on the 2-core machine: about 5 min (estimated: 9 α values on two train sets of 994 and
1,890 passages, GraphER's reranking at the tens of ms per question of grapher.json).

    python benchmarks/grapher_tune.py --data-dir ../shared/data \
        [--datasets hotpotqa_train,musique_train] [--out benchmarks/results/grapher_tune.json]

The paper tuned α on Bird_train, which is not available here; we tune on ``hotpotqa_train``
(selection) and report ``musique_train`` next to it. Evaluation questions are never used.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from base import open_index
from grapher import QA_INDEX_OPTIONS, QA_PARTS

from hopgraph.corpus import load_dataset
from hopgraph.eval import MethodSpec, evaluate

ALPHAS = [round(0.1 * i, 1) for i in range(1, 10)]
EDGES = {  # which proximities make the candidate graph
    "conceptual": {"w_conceptual": 1.0, "w_structural": 0.0},
    "structural": {"w_conceptual": 0.0, "w_structural": 1.0},
    "both": {"w_conceptual": 1.0, "w_structural": 1.0},
    "both_s5": {"w_conceptual": 1.0, "w_structural": 5.0},
}
SELECT_ON = "hotpotqa_train"


def choose(grid: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per method and edge set, the α with the best PR@10 (then Recall@10, then PR@5; a tie
    goes to the smaller α)."""
    chosen: dict[str, dict[str, float]] = {}
    for method in ("grapher_gcs", "grapher_ppr"):
        for edges in EDGES:
            cands = [(a, grid[f"{method}[{edges},alpha={a}]"]) for a in ALPHAS]
            best = max(cands, key=lambda c: (c[1]["pr@10"], c[1]["recall@10"], c[1]["pr@5"], -c[0]))
            chosen.setdefault(method, {})[edges] = best[0]
    return chosen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--datasets", default="hotpotqa_train,musique_train")
    ap.add_argument("--out", default="benchmarks/results/grapher_tune.json")
    args = ap.parse_args()
    out: dict = {}
    for name in args.datasets.split(","):
        path = Path(args.data_dir) / name
        ds = load_dataset(path)
        index = open_index(path, ds, QA_PARTS, QA_INDEX_OPTIONS)
        specs = [MethodSpec("hybrid")]
        for method in ("grapher_gcs", "grapher_ppr"):
            for edges, weights in EDGES.items():
                specs += [
                    MethodSpec(method, {"alpha": a, **weights}, f"{method}[{edges},alpha={a}]")
                    for a in ALPHAS
                ]
        res = evaluate(index, ds, specs, progress=False, n_resamples=10)
        out[name] = {
            r.label: {k: round(r.metrics[k], 4) for k in ("pr@5", "pr@10", "recall@5", "recall@10")}
            for r in res
        }
        for label, m in out[name].items():
            print(f"{name:16s} {label:44s} " + " ".join(f"{k} {v:.3f}" for k, v in m.items()))
    report = {"selected_on": SELECT_ON, "grid": out}
    if SELECT_ON in out:
        report["chosen_alpha"] = choose(out[SELECT_ON])
        print("chosen α:", report["chosen_alpha"])
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
