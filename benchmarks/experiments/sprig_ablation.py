"""SPRIG ablations (the paper's Tables A.1–A.3 shape) on the tuning sets only.

    python benchmarks/experiments/sprig_ablation.py --data-dir ../shared/data \\
        [--datasets hotpotqa_train,musique_train] [--methods graph_hybrid,graph_dense] \\
        [--ner regex,spacy] [--out benchmarks/results/sprig_ablation.json]

One knob at a time around the §4.4 defaults: seed size k, seed weighting, (α, iterations),
hub penalty p, seed-entity q, PPR mode, seed mixing, pruning, and the NER backend. These sets
are never used for the reported dev numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from base import open_index  # noqa: E402

from hopgraph.corpus import load_dataset
from hopgraph.eval import MethodSpec, evaluate

DEFAULTS = {"alpha": 0.15, "max_iter": 5, "hub_penalty": 0.5, "entity_q": 0.5, "seed_k": 5}
SWEEPS: dict[str, list[dict]] = {
    "seed k": [{"seed_k": k} for k in (1, 3, 5, 10, 20)],
    "seed weighting": [{"seed_weighting": w} for w in ("rank", "raw", "softmax")],
    "alpha, iterations": [
        {"alpha": a, "max_iter": t} for a in (0.1, 0.15, 0.2, 0.3, 0.5) for t in (5, 10, 20)
    ],
    "hub penalty p": [{"hub_penalty": p} for p in (0.0, 0.25, 0.5, 1.0)],
    "seed-entity q": [{"entity_q": q} for q in (0.0, 0.5, 1.0)],
    "PPR mode": [{"ppr": "power"}, {"ppr": "push", "eps": 1e-5}, {"ppr": "push", "eps": 1e-7}],
    "seed mixing": [{"mixing": m} for m in ("l1", "fixed", "adaptive")],
    "hub pruning": [{"prune_top_pct": x} for x in (0.0, 1.0, 5.0)],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--datasets", default="hotpotqa_train,musique_train")
    ap.add_argument("--methods", default="graph_hybrid,graph_dense")
    ap.add_argument("--ner", default="regex,spacy")
    ap.add_argument("--out", default="benchmarks/results/sprig_ablation.json")
    args = ap.parse_args()
    report: dict = {"command": " ".join(sys.argv), "runs": []}
    for name in args.datasets.split(","):
        path = Path(args.data_dir) / name
        ds = load_dataset(path)
        for ner in args.ner.split(","):
            opts = {"dense": {"hnsw": True}, "entities": {"ner": ner, "normalize": "simple"}}
            index = open_index(path, ds, ("sparse", "dense", "entities"), opts)
            ner_s = index.build_seconds.get("entities")
            print(f"\n## {name} — NER {ner} ({len(ds.corpus)} passages, entities built in "
                  f"{ner_s:.1f}s)" if ner_s else f"\n## {name} — NER {ner}")  # fmt: skip
            for method in args.methods.split(","):
                for knob, variants in SWEEPS.items():
                    if ner != "regex" and knob != "seed k":
                        continue  # NER comparison on the seed-size sweep only
                    specs = [MethodSpec(method, {**DEFAULTS, **v}) for v in variants]
                    res = evaluate(index, ds, specs, progress=False, n_resamples=10)
                    print(f"\n{method} — {knob}\n")
                    print("| setting | R@5 | R@10 | MRR | p50 ms |\n|---|---|---|---|---|")
                    for v, r in zip(variants, res, strict=True):
                        setting = ", ".join(f"{k}={x}" for k, x in v.items())
                        m = r.metrics
                        print(f"| {setting} | {m['recall@5']:.3f} | {m['recall@10']:.3f} | "
                              f"{m['mrr']:.3f} | {r.latency['latency_ms_p50']:.1f} |")  # fmt: skip
                        report["runs"].append(
                            {"dataset": name, "ner": ner, "method": method, "knob": knob,
                             "setting": v, **r.to_json()}
                        )  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
