"""SPRIG on the multi-hop sets: the paper's Tables 1/2 (methods), 4 (EL/PRUNE/MIX), 5 (RRF
variants), A.5/A.6 (latency, seed vs PPR time), A.18–A.21 (paired bootstrap against bm25 and rrf).
Table: docs/results.md, "The published methods against their papers" (SPRIG). Run time on the
2-core machine: about 10 min with base.py's dense parts cached (estimated from
benchmarks/results/sprig.json: 25 rows per set over 821 questions at 2–24 ms p50, entity parts
built in about 1 s).

    python benchmarks/sprig.py --data-dir ../shared/data \\
        [--datasets 2wikimultihopqa,hotpotqa,musique] [--ner regex] [--limit N] \\
        [--out benchmarks/results/sprig.json]

Settings are the paper's §4.4 defaults (α = 0.15, 5 power iterations, p = 0.5, rank-weighted
seeds) with the per-dataset presets of ``hopgraph.presets``; nothing here is tuned on the
questions it reports.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from base import open_index

from hopgraph.corpus import load_dataset
from hopgraph.eval import MethodSpec, evaluate
from hopgraph.eval.bootstrap import paired_bootstrap
from hopgraph.eval.report import markdown_table
from hopgraph.presets import load_preset


def methods_for(preset: dict) -> list[MethodSpec]:
    g = preset.get("graph", {})
    seeds = preset.get("seed_k", {})

    def spec(method: str, label: str | None = None, **extra) -> MethodSpec:
        params = {**g, **extra}
        if method in seeds and "seed_k" not in extra:
            params["seed_k"] = seeds[method]
        return MethodSpec(method, params, label or method)

    return [
        MethodSpec("bm25"),
        MethodSpec("bm25_rm3"),
        MethodSpec("bm25_2step"),
        MethodSpec("dense"),
        MethodSpec("rrf"),
        MethodSpec("tfidf_graph"),
        spec("graph"),
        spec("graph_bm25_fallback"),
        spec("graph_hybrid"),
        spec("graph_dense"),
        spec("graph_rrf"),
        spec("rrf_ppr_fusion"),
        spec("graph_hybrid", "graph_hybrid+PRUNE", prune_top_pct=1.0),
        spec("graph_hybrid", "graph_hybrid+MIX", mixing="adaptive"),
        spec("graph_rrf", "graph_rrf+PRUNE+MIX", prune_top_pct=1.0, mixing="adaptive"),
    ]


def el_methods(preset: dict) -> list[MethodSpec]:
    """The same graph methods on the SPRIG-EL entity graph, and +ALL (EL + PRUNE + MIX)."""
    g, seeds = preset.get("graph", {}), preset.get("seed_k", {})
    out = []
    for m in ("graph", "graph_hybrid", "graph_dense", "graph_rrf"):
        params = {**g, **({"seed_k": seeds[m]} if m in seeds else {})}
        out.append(MethodSpec(m, params, f"{m}+EL"))
    for m in ("graph_hybrid", "graph_rrf"):
        params = {**g, **({"seed_k": seeds[m]} if m in seeds else {})}
        params.update(prune_top_pct=1.0, mixing="adaptive")
        out.append(MethodSpec(m, params, f"{m}+ALL"))
    # hopgraph's own addition (preset sprig-plus): EL + own-page boost, tuned on the train sets
    boost = load_preset("sprig-plus")["graph"]["own_page_boost"]
    for m in ("graph", "graph_hybrid", "graph_dense", "graph_rrf"):
        params = {**g, **({"seed_k": seeds[m]} if m in seeds else {}), "own_page_boost": boost}
        out.append(MethodSpec(m, params, f"{m}+EL+OWN"))
    return out


def bootstrap_table(results, against: str) -> str:
    base = next(r for r in results if r.label == against)
    a = [q["recall@10"] for q in base.per_query]
    lines = [
        f"ΔRecall@10 against `{against}` (paired bootstrap, 1000 resamples, seed 0):\n",
        "| method | ΔR@10 | 95% CI | W/T/L |",
        "|---|---|---|---|",
    ]
    out = {}
    for r in results:
        if r.label == against:
            continue
        c = paired_bootstrap(a, [q["recall@10"] for q in r.per_query], n_resamples=1000, seed=0)
        out[r.label] = c
        lines.append(
            f"| `{r.label}` | {c['delta']:+.3f} | [{c['ci_low']:+.3f}, {c['ci_high']:+.3f}] "
            f"| {c['wins']}/{c['ties']}/{c['losses']} |"
        )
    return "\n".join(lines), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--datasets", default="2wikimultihopqa,hotpotqa,musique")
    ap.add_argument("--ner", default=None, help="override the preset's NER (regex or spacy)")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", default="benchmarks/results/sprig.json")
    args = ap.parse_args()
    report: dict = {"command": " ".join(sys.argv), "datasets": {}}
    for name in args.datasets.split(","):
        path = Path(args.data_dir) / name
        ds = load_dataset(path)
        tuned = name in ("2wikimultihopqa", "hotpotqa")  # the paper's two datasets
        preset = load_preset(f"sprig-{name}" if tuned else "sprig")
        ent_opts = dict(preset.get("entities", {}))
        if args.ner:
            ent_opts["ner"] = args.ner
        options = {"dense": {"hnsw": True}, "entities": ent_opts}
        index = open_index(path, ds, ("sparse", "dense", "entities"), options)
        results = evaluate(index, ds, methods_for(preset), limit=args.limit, n_resamples=1000)
        # SPRIG-EL (Table 4): rebuild the entity part with title aliases, in memory only
        index.add_parts(
            ["entities"], {"entities": {**ent_opts, "title_aliases": True}}, progress=False,
            rebuild_changed=True,
        )  # fmt: skip
        results += evaluate(index, ds, el_methods(preset), limit=args.limit, progress=True)
        table = markdown_table(results)
        vs_bm25, c_bm25 = bootstrap_table(results, "bm25")
        vs_rrf, c_rrf = bootstrap_table(results, "rrf")
        stages = [
            f"| `{r.label}` | {r.latency['seed_ms_p50']:.2f} | {r.latency['ppr_ms_p50']:.2f} "
            f"| {r.latency['latency_ms_p50']:.2f} |"
            for r in results
            if "ppr_ms_p50" in r.latency
        ]
        stage_table = "| method | seed ms p50 | PPR ms p50 | total ms p50 |\n|---|---|---|---|\n"
        stage_table += "\n".join(stages)
        ents = index.part("entities").stats()
        print(f"\n## {name}: {len(ds.corpus)} passages, {results[0].n_questions} questions")
        print(f"entities: {ents}, entity options: {ent_opts}\n")
        print(table.split("\nΔRecall")[0])
        print("\n" + vs_bm25 + "\n\n" + vs_rrf + "\n\n" + stage_table)
        report["datasets"][name] = {
            "preset": preset,
            "entity_stats": ents,
            "entity_build_seconds": index.build_seconds.get("entities"),
            "results": [r.to_json() for r in results],
            "bootstrap_vs_bm25": c_bm25,
            "bootstrap_vs_rrf": c_rrf,
        }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
