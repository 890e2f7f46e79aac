"""The default without passage vectors against the full default (issue 38, "searchable first").
Table: docs/results.md, "Latency and memory per method and switch" (without passage vectors). Run
time on the 2-core machine: about 15 min (estimated against a run of experiments/decompose.py,
which takes the features once and refits a ranker for each of five held-out sets, recorded at 2–4
min: per set, rankers refitted with and without vectors, set and family held out; the searches at
5–13 ms p50 take seconds); ``--query-vectors`` adds about 10 min.

    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/no_vectors.py \
        --data-dir ../shared/data [--sets 2wikimultihopqa,hotpotqa,musique,scifact] \
        [--repeats 3] [--query-vectors] [--out benchmarks/results/no_vectors.json]

An index whose dense part is missing (built with ``--parts sparse,entities``, or a staged build
still encoding its vectors) is searched by ``multihop`` with every dense signal absent and the
ranker models fitted for that (``*_no_vectors`` in the shipped file). For each set: its default
index (cached), and the same index without its dense part; rankers fitted as the shipped file is
(``train_both``) without the evaluated set (``set held out``: its questions and the
pseudo-queries drawn from its corpus) and without its family (dev + train). Rows: ``bm25`` and
``rrf`` (the baselines, and what a search without a method used on such an index before), the
default without vectors, the full default; Recall@2/5/10, nDCG@10, and the p50 latency (the
median over ``--repeats`` runs of the whole question set). SciFact: its test qrels. With
``--query-vectors``, the no-vector default with its top 20 encoded at query time too
(``multihop.query_vectors``), its reranker fitted without the set and without its family
(``no_vector_rerank.py``'s recipe) on the entity-titled sets.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

import chain_protocol as protocol
from default_pipeline import held_out_rankers
from default_ranker import set_corpus

from hopgraph.eval import MethodSpec, evaluate
from hopgraph.eval.report import markdown_table
from hopgraph.index import Index
from hopgraph.retrieve.query_vectors import TOP
from hopgraph.training.ranker import train_both

ROOT = Path(__file__).resolve().parents[1]
SPLITS = {"2wikimultihopqa": "test", "hotpotqa": "test", "musique": "test", "scifact": "test"}


def without_vectors(index: Index) -> Index:
    """The same index, its dense part left out (the other parts shared, not copied)."""
    bare = Index(index.corpus, {k: v for k, v in index.parts.items() if k != "dense"})
    bare.detected, bare.profile = index.detected, index.profile
    return bare


def run_set(
    name: str, rankers: dict[str, str], data_dir: Path, repeats: int, rerankers: dict[str, str]
) -> dict:
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
            if held in rerankers:
                qv = {"query_vectors": TOP, "query_vectors_model": rerankers[held]}
                res += evaluate(
                    bare,
                    c.dataset,
                    [
                        MethodSpec(
                            "multihop",
                            {**model, **qv},
                            label=f"default, no vectors, top {TOP} encoded at query time "
                            f"({held} held out)",
                        )
                    ],  # fmt: skip
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


def query_vector_rerankers(data_dir: Path, folder: Path, names: list[str]) -> dict:
    """Query-vector reranker files fitted without each entity-titled evaluated set (``set``)
    and without its family (``family``: a dev set and its train set)."""
    from no_vector_rerank import first_rounds, ship

    C, _ = protocol.training_sets(data_dir, None)
    nv = first_rounds(C, False)
    out: dict[str, dict] = {}
    for name in (n for n in names if n in C):
        family = [n for n in C if n in (name, f"{name}_train")]
        out[name] = {"set": folder / f"{name}-qv-set.json", "family": folder / f"{name}-qv.json"}
        ship(C, nv, out[name]["set"], (name,))
        ship(C, nv, out[name]["family"], family)
        out[name] = {k: str(v) for k, v in out[name].items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--sets", default=",".join(SPLITS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/no_vectors.json"))
    ap.add_argument(
        "--query-vectors", action="store_true",
        help="rows of the no-vector default with its top encoded at query time (the reranker "
        "held out as the rankers are: benchmarks/no_vector_rerank.py)",
    )  # fmt: skip
    args = ap.parse_args()
    data_dir = Path(args.data_dir)
    names = args.sets.split(",")
    folder = Path(tempfile.mkdtemp(prefix="hopgraph-novec-"))
    held = held_out_rankers(data_dir, None, folder, names, trainer=train_both)
    rerankers = query_vector_rerankers(data_dir, folder, names) if args.query_vectors else {}
    report = {
        name: run_set(name, held[name], data_dir, args.repeats, rerankers.get(name, {}))
        for name in names
    }
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
