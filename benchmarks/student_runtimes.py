"""The default with its passages encoded by the passage student in ONNX Runtime (float32, what
an install without PyTorch runs, :mod:`hopgraph.models.student_onnx`) against the student in
PyTorch fp32 (the same arithmetic) and bf16 (what an install with PyTorch runs on a CPU with
bf16): per question, whether the top 10 is the same, recall, and the passages' cosine between
the two (issue 62). Table:
docs/notes/cli-startup.md, "The student and the hop encoder without PyTorch".

    PYTHONPATH=src python benchmarks/student_runtimes.py --data-dir ../shared/data \\
        [--sets hotpotqa,musique,2wikimultihopqa] [--out benchmarks/results/student_runtimes.json]

Each side builds the set's default index with ``dense.passage_encoder=student`` (the sets are
under the 20,000 passages from which ``auto`` takes it), each in its own cache folder under
``$HOPGRAPH_CACHE``; queries use the ONNX query encoder on each. Needs ``hopgraph[dense]`` and a
CPU with native bf16 for the PyTorch side. About 7 minutes a set on 2 cores.

    PYTHONPATH=src python benchmarks/student_runtimes.py --data-dir ../shared/data --speed \\
        [--out benchmarks/results/student_runtimes_speed.json]

``--speed`` instead times the encoders (:func:`speed`): passages/s of the teacher and the
student in each runtime, and a hop-encoder round in each precision. About 3 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
from shipped_encoder import SETS, per_query, same_top10

import hopgraph.index.dense_options as dense_options
from hopgraph.cache import cache_root

STUDENT = {"passage_encoder": "student"}
SIDES = {"onnx": ("onnx", "fp32"), "torch-fp32": ("torch", "fp32"), "torch-bf16": ("torch", "bf16")}


def side(name: str, data_dir: Path, runtime: str, root: Path) -> dict:
    """The default on ``name`` with the student run by ``runtime`` (a key of SIDES)."""
    os.environ["HOPGRAPH_CACHE"] = str(root / runtime)
    dense_options.student_backend = lambda: SIDES[runtime]
    out = per_query(name, data_dir, None, STUDENT)
    from hopgraph.corpus.loaders import load_dataset

    texts = [p.content for p in load_dataset(data_dir / name).corpus][:512]
    out["vectors"] = dense_options.DenseOptions(**STUDENT).embedder_for("student").encode(texts)
    return out


def compare(name: str, data_dir: Path, root: Path) -> dict:
    """The ONNX side against each PyTorch side on set ``name``."""
    runs = {runtime: side(name, data_dir, runtime, root) for runtime in SIDES}
    a = runs["onnx"]
    row: dict = {"set": name, "questions": len(a["top10"]), "recall_onnx": a["recall"]}
    for runtime in ("torch-fp32", "torch-bf16"):
        b = runs[runtime]
        cos = np.sum(a["vectors"] * b["vectors"], axis=1)
        row[runtime] = {
            **same_top10(a["top10"], b["top10"]),
            "recall": b["recall"],
            "passage_cosine_mean": float(cos.mean()),
            "passage_cosine_min": float(cos.min()),
        }
    return row


def speed(data_dir: Path, passages: int, rounds: int, repeats: int) -> dict:
    """Passages/s of the teacher and the student in each runtime (HotpotQA's first
    ``passages`` passages, one ``encode`` call each, the encoders interleaved in each of
    ``repeats`` rounds after a warm-up), and the milliseconds of a hop-encoder round (3
    ``question [SEP] passage`` texts, as a search encodes them) in each precision, ``rounds``
    questions a block, ``repeats`` blocks each: medians."""
    import statistics
    import time

    from hopgraph.corpus.loaders import load_dataset
    from hopgraph.models import load_embedder
    from hopgraph.models.hop_encoder import hop_text, load_hop_encoder
    from hopgraph.models.student import BUNDLED_STUDENT

    ds = load_dataset(data_dir / "hotpotqa")
    texts = [p.content for p in ds.corpus][:passages]
    student = str(BUNDLED_STUDENT)
    encoders = {
        "teacher onnx fp32": load_embedder(),
        "student onnx fp32": load_embedder(student=student, precision="fp32"),
        "student onnx int8": load_embedder(student=student, precision="int8"),
        "student torch bf16": load_embedder(student=student, backend="torch", precision="bf16"),
    }
    rates: dict[str, list[float]] = {k: [] for k in encoders}
    for e in encoders.values():
        e.encode(texts[:32], batch_size=32)
    for _ in range(repeats):
        for k, e in encoders.items():
            t = time.perf_counter()
            e.encode(texts, batch_size=32)
            rates[k].append(len(texts) / (time.perf_counter() - t))
    hops = {p: load_hop_encoder(precision=p).embedder for p in ("bf16", "fp32", "int8")}
    qs = [q.text for q in ds.questions][:rounds]
    work = [[hop_text(ds.corpus, q, 3 * i + j) for j in range(3)] for i, q in enumerate(qs)]
    ms: dict[str, list[float]] = {p: [] for p in hops}
    vecs: dict[str, list] = {p: [] for p in hops}
    # each precision's rounds in a block, the blocks in turn (ONNX Runtime's threads spin for a
    # while after a run: interleaved round by round, one session's spinning slows the next)
    for rep in range(repeats):
        for p, e in hops.items():
            e.encode(work[0])
            for texts3 in work:
                t = time.perf_counter()
                v = e.encode(texts3)
                ms[p].append(1000 * (time.perf_counter() - t))
                if rep == 0:
                    vecs[p].append(v)
    ref = np.concatenate(vecs["fp32"])
    return {
        "passages": len(texts),
        "passages_per_s": {k: statistics.median(v) for k, v in rates.items()},
        "hop_round_ms": {p: statistics.median(v) for p, v in ms.items()},
        "hop_cosine_to_fp32": {
            p: float(np.sum(np.concatenate(vecs[p]) * ref, axis=1).mean()) for p in ("bf16", "int8")
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--speed", action="store_true", help="only the speed rounds (speed())")
    args = ap.parse_args()
    if args.speed:
        out = speed(args.data_dir, passages=400, rounds=60, repeats=3)
        print(json.dumps(out, indent=1))
        if args.out:
            args.out.write_text(json.dumps(out, indent=1) + "\n", "utf-8")
        return
    root = cache_root() / "student-runtimes"
    rows = []
    for name in args.sets.split(","):
        rows.append(compare(name, args.data_dir, root))
        r = rows[-1]
        for runtime in ("torch-fp32", "torch-bf16"):
            t = r[runtime]
            print(
                f"{name}, onnx against {runtime}: top 10 the same in order "
                f"{t['same_order']}/{r['questions']}, as a set {t['same_set']}/{r['questions']}; "
                f"recall@2/5/10 onnx {r['recall_onnx']} {runtime} {t['recall']}; passages' "
                f"cosine mean {t['passage_cosine_mean']:.7f} min {t['passage_cosine_min']:.7f}",
                flush=True,
            )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", "utf-8")


if __name__ == "__main__":
    main()
