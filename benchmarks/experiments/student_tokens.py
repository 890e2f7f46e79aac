"""How many tokens the passage student reads in a large build (issue 62): the build's time
against the default's recall, one whole build per setting.

    .venv/bin/python benchmarks/experiments/student_tokens.py --corpus C100K \\
        --dataset 2wikimultihopqa --data-dir ../shared/data --work WORK \\
        [--tokens 256,192,128] [--student FOLDER] [--out FILE.json]

``C100K`` is ``benchmarks/scale.py corpus --dataset 2wikimultihopqa --n 100000``'s folder (or
another dataset's). For each N of ``--tokens``: ``/usr/bin/time -v hopgraph index
C100K/corpus.jsonl -o WORK/ix-N --set dense.student_max_seq_length=N`` (kept: a folder already
there is reused with the log beside it, so the run resumes where it stopped; N = 0 is the
teacher's build, ``--set dense.passage_encoder=torch-bf16`` into WORK/ix-teacher), then
``hopgraph eval DATASET --index WORK/ix-N --method bm25,dense,multihop --per-query``. Printed:
the build's seconds and peak memory, what encoded the passages (the build's log line), R@2/5/10
of each method, and the paired bootstrap (:func:`hopgraph.eval.bootstrap.paired_bootstrap`) of
the default's ΔR@5 against each earlier N.
About 10 to 16 minutes a build on 2 cores (the teacher's 20 to 25), 3 minutes an evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HOPGRAPH = [sys.executable, "-m", "hopgraph.cli"]


def build(corpus: Path, folder: Path, tokens: int, student: str = "") -> dict:
    """Build (where ``folder`` is missing) and read the build's record from its log; ``tokens``
    0: the teacher's build (``dense.passage_encoder=torch-bf16``, no student)."""
    log = folder.with_name(folder.name + ".log")
    if not (folder / "manifest.json").exists():
        cmd = ["/usr/bin/time", "-v", *HOPGRAPH, "index", str(corpus), "-o", str(folder)]
        if tokens:
            cmd += ["--set", f"dense.student_max_seq_length={tokens}"]
        else:
            cmd += ["--set", "dense.passage_encoder=torch-bf16"]
        if student:
            cmd += ["--set", f"dense.student={student}"]
        with log.open("w") as f:
            subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=True)
    text = log.read_text(errors="replace")
    built = re.search(r"built \d+ passages in ([\d.]+)s", text)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    encoder = re.search(r"^dense: passages encoded by [^\n]*", text, re.M)
    return {
        "built_seconds": float(built.group(1)) if built else None,
        "peak_rss_mb": int(rss.group(1)) // 1024 if rss else None,
        "passage_encoder": encoder.group(0) if encoder else "the query encoder",
    }


def evaluate(dataset: str, data_dir: str, folder: Path) -> list[dict]:
    out = folder.with_name(folder.name + "-eval.json")
    if not out.exists():
        methods = "bm25,dense,multihop"
        cmd = [*HOPGRAPH, "eval", dataset, "--data-dir", data_dir, "--index", str(folder),
               "--method", methods, "--per-query", "--json", str(out), "-q"]  # fmt: skip
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    rows = json.loads(out.read_text())
    return rows if isinstance(rows, list) else [rows]


def per_query_r5(rows: list[dict], method: str) -> list[float]:
    row = next(r for r in rows if r["method"] == method)
    return [q["recall@5"] for q in row["per_query"]]


def main() -> None:
    from hopgraph.eval.bootstrap import paired_bootstrap

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, help="a scale corpus folder (corpus.jsonl)")
    ap.add_argument("--dataset", default="2wikimultihopqa")
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--work", required=True)
    ap.add_argument(
        "--tokens", default="256,192,128",
        help="N of each build, comma-separated; 0 is the teacher's build (torch-bf16), ix-teacher",
    )  # fmt: skip
    ap.add_argument("--out", default="")
    ap.add_argument(
        "--student", default="",
        help="a student folder (dense.student; default: the bundled one); the builds' folders "
        "are then ix-N-NAME, NAME the folder's name",
    )  # fmt: skip
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    corpus = Path(args.corpus) / "corpus.jsonl"
    report: dict = {"command": " ".join(sys.argv), "settings": {}}
    bases: list[tuple[int, list[float]]] = []
    for n in (int(t) for t in args.tokens.split(",")):
        folder = work / (f"ix-{n}-{Path(args.student).name}" if args.student else f"ix-{n}")
        folder = folder if n else work / "ix-teacher"
        rec = build(corpus, folder, n, args.student)
        rows = evaluate(args.dataset, args.data_dir, folder)
        rec["recall"] = {r["method"]: {k: round(r[k], 4) for k in ("recall@2", "recall@5",
                                                                    "recall@10")}
                         for r in rows}  # fmt: skip
        r5 = per_query_r5(rows, "multihop")
        for m, earlier in bases:
            b = paired_bootstrap(earlier, r5, seed=0)
            keys = ("delta", "ci_low", "ci_high", "wins", "ties", "losses")
            rec[f"default_delta_r5_vs_{m or 'teacher'}"] = {k: round(b[k], 4) for k in keys}
        bases.append((n, r5))
        report["settings"][str(n) if n else "teacher"] = rec
        print(n or "teacher", json.dumps(rec), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
