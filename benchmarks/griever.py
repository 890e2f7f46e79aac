"""GRIEVER against its baselines, the paper's Tables 1 and 3 in shape, and the two triple
sources (LLM-free spaCy extraction vs. HippoRAG's GPT-3.5 OpenIE file) on musique_train.
Table: docs/results.md, "The published methods against their papers" (GRIEVER). Run time on the
2-core machine: about 20 min on a first run, a few minutes with the indexes cached (estimated:
2Wiki's indexing recorded at about 8 min in docs/notes/griever.md, the other two sets scaled by
their passages; 821 questions at 14–22 ms p50).

    python benchmarks/griever.py --data-dir ../shared/data \
        [--datasets 2wikimultihopqa,hotpotqa,musique] [--repeats 3] [--limit N] \
        [--out benchmarks/results/griever.json]

As in the paper, GRIEVER is called with k (5, 10 and 15 passages per iteration) and R@k is read
from the run with that k; single-step baselines are ranked once and cut at 5, 10 and 15.
Latency is the per-query p50, the median over ``--repeats`` runs for ``griever`` (one run for
the rest). ``griever`` is compared with ``rrf`` and ``composed`` per question by a paired
bootstrap of R@5 and R@10 (95% CI, 1000 resamples). Indexes are cached: the first run parses
every corpus with spaCy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from base import open_index, rows_table

from hopgraph.cache import index_cache_dir
from hopgraph.corpus import load_dataset
from hopgraph.eval import MethodSpec, evaluate
from hopgraph.eval.bootstrap import paired_bootstrap
from hopgraph.index import Index

KS = (5, 10, 15)
PARTS = ("sparse", "dense", "triples", "partial_triples", "same_as")
TRIPLE_OPTIONS = {"triples": {"n_process": 2}, "partial_triples": {"full_triples": True}}
BASELINES = [MethodSpec("bm25"), MethodSpec("dense"), MethodSpec("rrf"), MethodSpec("composed")]
COMPARED = ("rrf", "composed")  # griever against these, per question
# label → parameters: the paper's Table 3 ablations, then ours
VARIANTS = {
    "griever": {},
    "w/ full_triples": {"shortlist": "full"},
    "w/o shortlisting": {"shortlist": "none"},
    "w/o composed (rrf)": {"first": "rrf"},
    "one rewrite (paper)": {"rewrites": 1},
    "hop 1 by cosine only (paper: first_bm25=0)": {"first_bm25": 0.0},
    "final: cosine + path (w_bm25=0)": {"w_bm25": 0.0},
    "w/o synonyms": {"synonyms": False},
    "w/o clause splitting": {"split_clauses": False},
    "1 iteration": {"iterations": 1},
}


def per_query(res, k: int) -> list[float]:
    return [q[f"recall@{k}"] for q in res.per_query]


def baseline_rows(index, ds, limit: int | None) -> tuple[list[dict], dict[str, dict]]:
    """The baselines' rows, and each one's per-question recall at every k."""
    results = evaluate(index, ds, BASELINES, ks=KS, depth=max(KS), limit=limit, progress=False)
    rows = [
        {
            "method": r.label,
            **{f"R@{k}": round(r.metrics[f"recall@{k}"], 3) for k in KS},
            **{f"ms@{k}": round(r.latency["latency_ms_p50"], 1) for k in KS},
        }
        for r in results
    ]
    return rows, {r.label: {k: per_query(r, k) for k in KS} for r in results}


def griever_row(
    index, ds, label: str, params: dict, limit: int | None, repeats: int
) -> tuple[dict, dict[int, list[float]]]:
    """One variant's row (called with step_k = k for each k) and its per-question recall."""
    row: dict = {"method": label, "params": params}
    recalls: dict[int, list[float]] = {}
    for k in KS:
        spec = MethodSpec("griever", {**params, "step_k": k})
        p50s = []
        for _ in range(repeats):
            res = evaluate(index, ds, [spec], ks=(k,), depth=k, limit=limit, progress=False)[0]
            recalls[k] = per_query(res, k)
            p50s.append(res.latency["latency_ms_p50"])
        row[f"R@{k}"] = round(statistics.mean(recalls[k]), 3)
        row[f"ms@{k}"] = round(statistics.median(p50s), 1)
    return row, recalls


def significance(base: dict[str, dict], griever: dict[int, list[float]]) -> list[dict]:
    """griever − baseline per question, R@5 and R@10: paired bootstrap 95% CI."""
    out = []
    for against in COMPARED:
        for k in (5, 10):
            b = paired_bootstrap(base[against][k], griever[k], n_resamples=1000, seed=0)
            out.append(
                {
                    "vs": against,
                    "metric": f"R@{k}",
                    "delta": round(b["delta"], 3),
                    "95% CI": f"[{b['ci_low']:+.3f}, {b['ci_high']:+.3f}]",
                    "wins/ties/losses": f"{b['wins']}/{b['ties']}/{b['losses']}",
                }
            )
    return out


def table(title: str, rows: list[dict]) -> str:
    return rows_table(title, ["method", *(f"R@{k}" for k in KS), *(f"ms@{k}" for k in KS)], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--datasets", default="2wikimultihopqa,hotpotqa,musique")
    ap.add_argument("--limit", type=int, default=0, help="questions per dataset (0: all)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS), help="GRIEVER variants to run")
    ap.add_argument(
        "--sources",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also compare spaCy and OpenIE triples on musique_train",
    )
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/griever.json"))
    args = ap.parse_args()
    limit = args.limit or None
    report: dict = {"limit": args.limit, "datasets": {}, "sources": {}}
    for name in args.datasets.split(","):
        path = args.data_dir / name
        ds = load_dataset(path)
        index = open_index(path, ds, PARTS, TRIPLE_OPTIONS)
        rows, base = baseline_rows(index, ds, limit)
        vs: list[dict] = []
        for label in args.variants.split(","):
            repeats = args.repeats if label == "griever" else 1
            row, recalls = griever_row(index, ds, label, VARIANTS[label], limit, repeats)
            rows.append(row)
            print(row, flush=True)
            if label == "griever":
                vs = significance(base, recalls)
        stats = {p: index.part(p).stats() for p in PARTS[2:]}
        report["datasets"][name] = {"index": stats, "rows": rows, "significance": vs}
        n = min(limit or len(ds.questions), len(ds.questions))
        print(table(f"{name} ({n} questions; {stats})", rows), flush=True)
        if vs:
            cols = ["vs", "metric", "delta", "95% CI", "wins/ties/losses"]
            print(rows_table(f"{name}: griever against rrf and composed", cols, vs), flush=True)
        write(report, args.out)
    if args.sources:
        name = "musique_train"
        path = args.data_dir / name
        ds = load_dataset(path)
        openie = {"extractor": "openie", "openie_file": str(path / "openie_gpt-3.5-turbo.json")}
        rows = []
        for source, options in (("spacy", TRIPLE_OPTIONS), ("openie", {"triples": openie})):
            folder = index_cache_dir(path, f"{name}-{source}")  # one cached index per source
            index = Index.load(folder) if (folder / "manifest.json").exists() else Index(ds.corpus)
            if index.add_parts(PARTS, {**TRIPLE_OPTIONS, **options}, rebuild_changed=True):
                index.save(folder)
            if not rows:
                rows = [r for r in baseline_rows(index, ds, None)[0] if r["method"] == "composed"]
            rows.append(griever_row(index, ds, f"griever ({source} triples)", {}, None, 1)[0])
            rows[-1]["index"] = index.part("triples").stats()
            print(rows[-1], flush=True)
        report["sources"] = {"dataset": name, "rows": rows}
        print(table(f"{name}: triples from spaCy vs GPT-3.5 OpenIE", rows), flush=True)
    write(report, args.out)
    print(f"wrote {args.out}", file=sys.stderr)


def write(report: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
