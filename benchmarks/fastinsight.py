"""FastInsight against its baselines (the paper's Table 3 and Figure 4 shape): vector search,
retrieve-then-rerank (Re2), GAR and FastInsight, with R@10 (capped), nDCG@10, Topological Recall,
MissTR and query time; and a QPT–R@10 curve over the budget b_max.
Table: docs/results.md, "The published methods against their papers" (FastInsight). Run time on the
2-core machine: about 45 min as recorded in benchmarks/results/fastinsight.json (80 questions a
set, a 6-layer cross-encoder at 2–3 s a query); with the packaged reranker (0.2–0.4 s a query)
about 15 min for ``--limit 150`` (estimated from those per-query times).

    python benchmarks/fastinsight.py --data-dir ../shared/data \\
        [--model FOLDER] [--mix 3] [--patience 3] [--limit 150] \\
        [--datasets scifact,2wikimultihopqa,hotpotqa,musique] [--latency-limit 20] \\
        [--curve hotpotqa --budgets 10,20,30,50,70,100 --curve-limit 60] \\
        [--out benchmarks/results/fastinsight.json] [--plot docs/img/fastinsight_qpt.png]

The corpus graph of every set is the ``corpus_graph`` part with its defaults: title mentions
(the ``links`` part) and each passage's 5 nearest neighbours by embedding. The cross-encoder is
the packaged reranker unless ``--model`` names another (e.g. from ``hopgraph train-reranker``);
``--mix`` is ``rerank``'s and ``fastinsight``'s ``mix`` (the first stage's score beside the
cross-encoder's), ``--patience`` FastInsight's early stop.
Latency: the per-query p50 of the quality run, and the median over ``--repeats`` runs of the
p50 over the first ``--latency-limit`` questions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from base import open_index, rows_table

from hopgraph.corpus import load_dataset
from hopgraph.eval import MethodResult, MethodSpec, evaluate

PARTS = ("sparse", "dense", "links", "corpus_graph")
SPLITS = {"scifact": "test"}


def specs(
    model: str, budget: int = 100, max_length: int = 0, mix: float = 3.0, patience: int = 3
) -> list[MethodSpec]:
    ce = {"model": model, "max_length": max_length}
    return [
        MethodSpec("dense", {}, "vector search"),
        MethodSpec("rerank", {**ce, "n": budget, "mix": mix}, "rerank"),
        MethodSpec("gar", {**ce, "b_max": budget}, "gar"),
        MethodSpec(
            "fastinsight", {**ce, "b_max": budget, "mix": mix, "patience": patience}, "fastinsight"
        ),
    ]


def row(r: MethodResult) -> dict:
    m = r.metrics
    return {
        "method": r.label,
        "n": r.n_questions,
        "R@10": round(m["capped_recall@10"], 4),
        "nDCG@10": round(m["ndcg@10"], 4),
        "TR@10": round(m["tr@10"], 4),
        "MissTR@10": round(m["misstr@10"], 4),
        "recall@10": round(m["recall@10"], 4),
        "p50_ms": round(r.latency["latency_ms_p50"], 1),
        "encode_ms_p50": round(r.latency.get("encode_ms_p50", 0.0), 1),
    }


def table(title: str, rows: list[dict]) -> str:
    cols = ["method", "n", "R@10", "nDCG@10", "TR@10", "MissTR@10", "p50_ms", "latency_p50_ms"]
    return rows_table(title, cols, rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--model", default="", help="cross-encoder folder (default: packaged)")
    ap.add_argument("--mix", type=float, default=3.0, help="rerank's and fastinsight's mix")
    ap.add_argument("--patience", type=int, default=3, help="fastinsight's early stop")
    ap.add_argument("--max-length", type=int, default=0, help="tokens per pair (0: model's)")
    ap.add_argument("--datasets", default="scifact,2wikimultihopqa,hotpotqa,musique")
    ap.add_argument("--limit", type=int, default=150, help="questions per dataset (0: all)")
    ap.add_argument("--latency-limit", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--curve", default="hotpotqa", help="dataset of the QPT–R@10 curve ('' off)")
    ap.add_argument("--budgets", default="10,20,30,50,70,100")
    ap.add_argument("--curve-limit", type=int, default=60)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/fastinsight.json"))
    ap.add_argument("--plot", type=Path, default=Path("docs/img/fastinsight_qpt.png"))
    args = ap.parse_args()
    model = str(Path(args.model).expanduser()) if args.model else ""
    report: dict = {
        "model": model or "packaged",
        "mix": args.mix,
        "patience": args.patience,
        "limit": args.limit,
        "datasets": {},
        "curve": {},
    }
    indexes = {}
    for name in args.datasets.split(","):
        path = args.data_dir / name
        ds = load_dataset(path, split=SPLITS.get(name, "test"))
        index = indexes[name] = open_index(path, ds, PARTS, {})
        limit = args.limit or None
        chosen = specs(model, 100, args.max_length, args.mix, args.patience)
        results = evaluate(index, ds, chosen, ks=(10,), limit=limit, n_resamples=1000)
        rows = [row(r) for r in results]
        for r, res in zip(rows, results, strict=True):
            r["vs_first"] = res.comparison
        lat_ds = ds
        lat_ds.questions = ds.questions[: args.latency_limit]
        for i, spec in enumerate(chosen):
            p50s = []
            for _ in range(args.repeats):
                res = evaluate(index, lat_ds, [spec], ks=(10,), progress=False)[0]
                p50s.append(res.latency["latency_ms_p50"])
            rows[i]["latency_p50_ms"] = round(statistics.median(p50s), 1)
        graph = index.part("corpus_graph").stats()
        report["datasets"][name] = {"graph": graph, "rows": rows}
        print(table(f"{name} (graph: {graph})", rows), flush=True)
        write(report, args.out)  # after each set, so a long run leaves partial results
    if args.curve:
        name = args.curve
        path = args.data_dir / name
        ds = load_dataset(path, split=SPLITS.get(name, "test"))
        index = indexes.get(name) or open_index(path, ds, PARTS, {})
        curve: dict[str, list] = {}
        for b in [int(x) for x in args.budgets.split(",")]:
            for spec in specs(model, b, args.max_length, args.mix, args.patience)[1:]:
                res = evaluate(index, ds, [spec], ks=(10,), limit=args.curve_limit, progress=False)
                curve.setdefault(spec.label, []).append(
                    {"b_max": b, **{k: v for k, v in row(res[0]).items() if k != "method"}}
                )
                print(spec.label, b, curve[spec.label][-1], flush=True)
        report["curve"] = {"dataset": name, "limit": args.curve_limit, "points": curve}
        plot(curve, name, args.plot)
    write(report, args.out)
    print(f"wrote {args.out}", file=sys.stderr)


def write(report: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


def plot(curve: dict[str, list], name: str, dest: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for label, points in curve.items():
        xs = [p["p50_ms"] / 1e3 for p in points]
        ys = [p["R@10"] for p in points]
        ax.plot(xs, ys, marker="o", label=label)
        for p, x, y in zip(points, xs, ys, strict=True):
            ax.annotate(
                str(p["b_max"]), (x, y), fontsize=7, xytext=(3, -8), textcoords="offset points"
            )
    ax.set_xlabel("query processing time, p50 (s, 2-core CPU)")
    ax.set_ylabel("R@10")
    ax.set_title(f"QPT vs R@10 over the budget b_max ({name})")
    ax.grid(alpha=0.3)
    ax.legend()
    dest.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(dest, dpi=120)
    print(f"wrote {dest}", file=sys.stderr)


if __name__ == "__main__":
    main()
