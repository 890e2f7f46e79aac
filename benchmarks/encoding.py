"""Passage encoding speed and quality per encoder configuration (the scale issue's "fast encoding").
Table: docs/results.md, "Documents, filters, updates, serving" (encoding speed). Run time on the
2-core machine: about 25 min (estimated from benchmarks/results/encoding.json: 3,000 passages × 5
encoders at 54–104 passages/s, a warm-up and 3 rounds, about 16 min; dense rebuilds for recall, 496
s recorded).

    python benchmarks/encoding.py --data-dir ../shared/data \
        [--passages 3000] [--repeats 3] [--datasets 2wikimultihopqa,hotpotqa,musique] \
        [--out benchmarks/results/encoding.json] [--no-recall]

Speed: the first ``--passages`` passages of 2wikimultihopqa (title + text, as the index encodes
them: ``Passage.content``) are encoded by each configuration; one untimed warm-up call, then
``--repeats`` rounds that each time one whole ``encode`` call per configuration (configurations
interleaved within a round, so a load change on the machine hits them all alike); passages/s is
the median over rounds. CPU seconds per wall second during the calls show how many cores were
busy. Cosine: each configuration's vectors against ONNX fp32 batch 16 (today's default).
Tokenisation alone (the fast tokenizer, whole list) is timed for comparison.

Recall: dense retrieval Recall@5 (and @10) on each dataset's questions, with the dense part built
by the ONNX fp32, ONNX int8 and static configurations (indexes cached in the index cache under
``<dataset>-enc-<config>``, so a rerun only re-evaluates).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.cache import index_cache_dir
from hopgraph.corpus import load_dataset
from hopgraph.eval import MethodSpec, evaluate
from hopgraph.index import Index
from hopgraph.models.embedder import Embedder, cpu_has_bf16

BASELINE = "onnx fp32 b16"
# label -> (backend, precision, batch size); the torch bf16 row only where the CPU has bf16
CONFIGS: dict[str, tuple[str, str, int]] = {
    "torch fp32 b16": ("torch", "fp32", 16),
    "torch bf16 b16": ("torch", "bf16", 16),
    BASELINE: ("onnx", "fp32", 16),
    "onnx fp32 b64": ("onnx", "fp32", 64),
    "onnx int8 b16": ("onnx", "int8", 16),
    "static": ("static", "auto", 1024),
}
# configurations whose recall is measured, with their dense part options
RECALL_CONFIGS: dict[str, dict[str, Any]] = {
    "onnx fp32": {"backend": "onnx", "precision": "fp32"},
    "onnx int8": {"backend": "onnx", "precision": "int8"},
    "static": {"backend": "static", "precision": "auto"},
}


def cpu_flags() -> dict[str, Any]:
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        info = ""
    flags = set()
    model = ""
    for line in info.splitlines():
        if line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
        if line.startswith("model name") and not model:
            model = line.split(":", 1)[1].strip()
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
    return {
        "model": model or platform.processor(),
        "cores": len(os.sched_getaffinity(0)),
        **{f: f in flags for f in wanted},
        "hopgraph_cpu_has_bf16": cpu_has_bf16(),
    }


def read_passages(data_dir: Path, n: int) -> list[str]:
    ds = load_dataset(data_dir / "2wikimultihopqa")
    return [p.content for p in ds.corpus][:n]


def speed(texts: list[str], repeats: int) -> dict[str, Any]:
    encoders: dict[str, tuple[Embedder, int]] = {}
    for label, (backend, precision, batch) in CONFIGS.items():
        if precision == "bf16" and not cpu_has_bf16():
            print(f"skip {label}: this CPU has no native bf16 (avx512_bf16/AMX)")
            continue
        emb = Embedder(backend=backend, precision=precision)
        emb.encode(texts[:64], batch_size=batch)  # warm-up: loads, first allocations
        encoders[label] = (emb, batch)
    runs: dict[str, list[float]] = {k: [] for k in encoders}
    busy: dict[str, list[float]] = {k: [] for k in encoders}
    vectors: dict[str, np.ndarray] = {}
    for r in range(repeats):
        for label, (emb, batch) in encoders.items():
            c0, t0 = time.process_time(), time.perf_counter()
            out = emb.encode(texts, batch_size=batch)
            wall = time.perf_counter() - t0
            runs[label].append(len(texts) / wall)
            busy[label].append((time.process_time() - c0) / wall)
            vectors.setdefault(label, out)
            print(f"round {r + 1} {label}: {len(texts) / wall:.1f} passages/s", flush=True)
    base = vectors[BASELINE]
    rows = {}
    for label, (emb, batch) in encoders.items():
        v = vectors[label]
        cos = np.sum(base * v, axis=1) if v.shape == base.shape else None
        rows[label] = {
            "backend": emb.backend,
            "precision": emb.precision,
            "bf16": emb.bf16,
            "batch_size": batch,
            "dim": emb.dim,
            "passages_per_s": round(statistics.median(runs[label]), 1),
            "runs_passages_per_s": [round(x, 1) for x in runs[label]],
            "speedup_vs_baseline": None,
            "cores_busy": round(statistics.median(busy[label]), 2),
            "cosine_mean": None if cos is None else round(float(cos.mean()), 5),
            "cosine_min": None if cos is None else round(float(cos.min()), 5),
        }
    for row in rows.values():
        row["speedup_vs_baseline"] = round(
            row["passages_per_s"] / rows[BASELINE]["passages_per_s"], 2
        )
    onnx = encoders[BASELINE][0]._onnx
    tok = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        onnx.tokenizer.encode_batch(texts)
        tok.append(len(texts) / (time.perf_counter() - t0))
    return {
        "configs": rows,
        "tokenize_passages_per_s": round(statistics.median(tok), 1),
        "onnx_intra_op_threads": onnx.session.get_session_options().intra_op_num_threads,
    }


def recall(data_dir: Path, datasets: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in datasets:
        path = data_dir / name
        ds = load_dataset(path)
        out[name] = {"passages": len(ds.corpus), "questions": len(ds.questions)}
        for label, opts in RECALL_CONFIGS.items():
            slug = label.replace(" ", "-")
            folder = index_cache_dir(path, f"{ds.name}-enc-{slug}")
            if (folder / "manifest.json").exists():
                index = Index.load(folder)
            else:
                index = Index.build(ds.corpus, ["dense"], {"dense": opts}, progress=True)
                index.save(folder)
            (res,) = evaluate(index, ds, [MethodSpec("dense")], progress=False)
            m = res.metrics
            out[name][label] = {
                "recall@5": round(m["recall@5"], 4),
                "recall@10": round(m["recall@10"], 4),
                "dense_build_s": round(index.build_seconds.get("dense", float("nan")), 1),
            }
            print(f"{name} {label}: R@5 {m['recall@5']:.4f} R@10 {m['recall@10']:.4f}")
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| encoder | batch | passages/s | × onnx fp32 b16 | cores busy | cos mean | cos min |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, r in result["speed"]["configs"].items():
        cos = ("–", "–") if r["cosine_mean"] is None else (r["cosine_mean"], r["cosine_min"])
        lines.append(
            f"| {label.rsplit(' b', 1)[0]} | {r['batch_size']} | {r['passages_per_s']} | "
            f"{r['speedup_vs_baseline']} | {r['cores_busy']} | {cos[0]} | {cos[1]} |"
        )
    if result.get("recall"):
        labels = list(RECALL_CONFIGS)
        lines += ["", "| dataset | " + " | ".join(f"R@5 {x}" for x in labels) + " |"]
        lines.append("|---|" + "---|" * len(labels))
        for name, r in result["recall"].items():
            cells = " | ".join(str(r[x]["recall@5"]) for x in labels)
            lines.append(f"| {name} ({r['questions']} q) | {cells} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_data = os.environ.get("HOPGRAPH_DATA", "../shared/data")
    ap.add_argument("--data-dir", type=Path, default=Path(default_data))
    ap.add_argument("--passages", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--datasets", default="2wikimultihopqa,hotpotqa,musique")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/encoding.json"))
    ap.add_argument("--no-recall", action="store_true", help="speed and cosine only")
    args = ap.parse_args()
    texts = read_passages(args.data_dir, args.passages)
    result: dict[str, Any] = {
        "machine": cpu_flags(),
        "load_average_before": list(os.getloadavg()),
        "passages": len(texts),
        "repeats": args.repeats,
        "speed": speed(texts, args.repeats),
        "load_average_after_speed": list(os.getloadavg()),
    }
    if not args.no_recall:
        result["recall"] = recall(args.data_dir, args.datasets.split(","))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.part")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(args.out)
    print(markdown(result))


if __name__ == "__main__":
    main()
