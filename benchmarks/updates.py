"""Cost of live updates on a real corpus: adding and deleting passages in place, part by part,
against building the index again.
Table: docs/results.md, "Documents, filters, updates, serving" (live updates). Run time on the
2-core machine: about 20 min with the eight parts (recorded in docs/notes/updates.md).

    python benchmarks/updates.py --data-dir ../shared/data [--dataset hotpotqa] \
        [--parts sparse,dense,entities,links,corpus_graph,triples,partial_triples,same_as] \
        [--holdout 200] [--repeats 3] [--out benchmarks/results/updates.json]

The index is built (in a temporary folder, not the cache: it must hold the per-passage records
updates need) on the corpus without its last ``--holdout`` passages. Each update (add 1, 10,
100 of the held-out passages; delete 10, 100 random passages) is applied to that same index
``--repeats`` times (``Index.updated`` leaves its input unchanged); the table gives the median
seconds per part, of the atomic save, and of the whole. Finally, after adding 100 and deleting
100, bm25 and graph rankings of 50 questions are checked against a rebuild of those parts.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hopgraph.corpus import Corpus, load_dataset
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever

ALL = "sparse,dense,entities,links,corpus_graph,triples,partial_triples,same_as"
OPTIONS = {
    "entities": {"title_aliases": True},
    "triples": {"n_process": 2},
    "corpus_graph": {"shared_entities": True},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--dataset", default="hotpotqa")
    ap.add_argument("--parts", default=ALL)
    ap.add_argument("--holdout", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="benchmarks/results/updates.json")
    args = ap.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    options = {k: v for k, v in OPTIONS.items() if k in parts}

    ds = load_dataset(Path(args.data_dir) / args.dataset)
    corpus = list(ds.corpus)
    base, held = corpus[: -args.holdout], corpus[-args.holdout :]
    rng = random.Random(0)
    print(f"{args.dataset}: building {parts} on {len(base)} passages", file=sys.stderr)
    t0 = time.perf_counter()
    index = Index.build(Corpus(base), parts, options, progress=True)
    build_s = time.perf_counter() - t0
    tmp = Path(tempfile.mkdtemp(prefix="hopgraph-updates-"))
    t0 = time.perf_counter()
    index.save(tmp / "ix")
    save_s = time.perf_counter() - t0
    index = Index.load(tmp / "ix")
    index.updated(add=held[:1])  # load the models once, as a running service has them
    victims = rng.sample([p.id for p in base], 100)
    cases = {
        "add 1": ([*held[:1]], []),
        "add 10": (held[1:11], []),
        "add 100": (held[11:111], []),
        "delete 10": ([], victims[:10]),
        "delete 100": ([], victims),
    }
    rows = []
    for label, (add, delete) in cases.items():
        runs: list[dict[str, float]] = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            new = index.updated(add=add, delete=delete)
            total = time.perf_counter() - t0
            t1 = time.perf_counter()
            new.save(tmp / "next")
            runs.append({**new.update_seconds, "total": total, "save": time.perf_counter() - t1})
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append({"update": label, **{k: round(v, 3) for k, v in med.items()}})
        print(json.dumps(rows[-1]), file=sys.stderr)

    # the same rankings as a rebuild, on real data (for the parts cheap to rebuild)
    updated = index.updated(add=held[11:111], delete=victims)
    cheap = [p for p in ("sparse", "entities") if p in parts]
    rebuilt = Index.build(updated.corpus, cheap, {"entities": OPTIONS["entities"]}, progress=False)
    checked, differ = 0, []
    methods = ["bm25"] + (["graph"] if "entities" in cheap else [])
    for m in methods:
        a, b = get_retriever(updated, m), get_retriever(rebuilt, m)
        for q in ds.questions[:50]:
            ra, rb = a.search(q.text, 10), b.search(q.text, 10)
            checked += 1
            if ra.ids != rb.ids:
                differ.append({"method": m, "query": q.text, "updated": ra.ids, "rebuilt": rb.ids})
                print(json.dumps(differ[-1] | {"scores": [ra.scores, rb.scores]}), file=sys.stderr)

    result = {
        "dataset": args.dataset,
        "passages": len(base),
        "parts": parts,
        "build_seconds": round(build_s, 1),
        "build_seconds_per_part": {k: round(v, 1) for k, v in index.build_seconds.items()},
        "save_seconds": round(save_s, 2),
        "index_mb": round(sum(f.stat().st_size for f in (tmp / "ix").rglob("*")) / 2**20, 1),
        "repeats": args.repeats,
        "updates": rows,
        "rankings_checked_against_rebuild": checked,
        "rankings_differing_from_rebuild": differ,
    }
    print(markdown(result))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


def markdown(r: dict) -> str:
    cols = ["update", *r["parts"], "total", "save"]
    head = ["update", *r["parts"], "all parts", "save"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in r["updates"]:
        cells = [row["update"]] + [f"{row.get(c, 0):.3f}" for c in cols[1:]]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        f"\n{r['dataset']}: {r['passages']} passages, {r['index_mb']} MB; full build "
        f"{r['build_seconds']} s ({r['build_seconds_per_part']}), save {r['save_seconds']} s; "
        f"{r['rankings_checked_against_rebuild']} rankings checked against a rebuild, "
        f"{len(r['rankings_differing_from_rebuild'])} differ"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
