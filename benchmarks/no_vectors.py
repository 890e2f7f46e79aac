"""The default without passage vectors against the full default (issue 38, "searchable first").

    PYTHONPATH=src .venv/bin/python benchmarks/no_vectors.py --data-dir ../shared/data \
        [--sets 2wikimultihopqa,hotpotqa,musique,scifact] [--repeats 3] \
        [--out benchmarks/results/no_vectors.json]

An index whose dense part is missing (built with ``--parts sparse,entities``, or a staged build
still encoding its vectors) is searched by ``multihop`` with every dense signal absent and the
ranker models fitted for that (``*_no_vectors`` in the shipped file). For each set: its default
index (cached), and the same index without its dense part; rankers fitted as the shipped file is
(``train_both``) without the evaluated set (``set held out``: its questions and the
pseudo-queries drawn from its corpus) and without its family (dev + train). Rows: ``bm25`` and
``rrf`` (the baselines, and what a search without a method used on such an index before), the
default without vectors, the full default; Recall@2/5/10, nDCG@10, and the p50 latency (the
median over ``--repeats`` runs of the whole question set). SciFact: its test qrels.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from default_pipeline import held_out_rankers
from default_ranker import set_corpus

from hopgraph.eval import MethodSpec, evaluate
from hopgraph.eval.report import markdown_table
from hopgraph.index import Index
from hopgraph.training.ranker import train_both

ROOT = Path(__file__).resolve().parents[1]
SPLITS = {"2wikimultihopqa": "test", "hotpotqa": "test", "musique": "test", "scifact": "test"}


def without_vectors(index: Index) -> Index:
    """The same index, its dense part left out (the other parts shared, not copied)."""
    bare = Index(index.corpus, {k: v for k, v in index.parts.items() if k != "dense"})
    bare.detected, bare.profile = index.detected, index.profile
    return bare


def run_set(name: str, rankers: dict[str, str], data_dir: Path, repeats: int) -> dict:
    c = set_corpus(name, SPLITS[name], data_dir, None)
    full, bare = c.index, without_vectors(c.index)
    runs = []
    for _ in range(repeats):
        res = evaluate(full, c.dataset, [MethodSpec("bm25"), MethodSpec("rrf")], progress=False)
        for held in ("set", "family"):
            model = {"model": rankers[held]}
            res += evaluate(
                bare,
                c.dataset,
                [MethodSpec("multihop", model, label=f"default, no vectors ({held} held out)")],
                progress=False,
            )
            res += evaluate(
                full,
                c.dataset,
                [MethodSpec("multihop", model, label=f"default ({held} held out)")],
                progress=False,
            )
        runs.append(res)
    final = runs[-1]
    for i, r in enumerate(final):
        r.latency["latency_ms_p50"] = statistics.median(run[i].latency["latency_ms_p50"]
                                                        for run in runs)  # fmt: skip
    print(f"## {name}: {len(c.dataset.corpus)} passages, {len(c.dataset.questions)} questions")
    print(markdown_table(final, (2, 5, 10)), flush=True)
    return {
        "passages": len(c.dataset.corpus),
        "questions": len(c.dataset.questions),
        "methods": {
            r.label: {**r.metrics, "latency_ms_p50": r.latency["latency_ms_p50"]} for r in final
        },  # fmt: skip
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--sets", default=",".join(SPLITS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/no_vectors.json"))
    args = ap.parse_args()
    data_dir = Path(args.data_dir)
    names = args.sets.split(",")
    folder = Path(tempfile.mkdtemp(prefix="hopgraph-novec-"))
    held = held_out_rankers(data_dir, None, folder, names, trainer=train_both)
    report = {name: run_set(name, held[name], data_dir, args.repeats) for name in names}
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
