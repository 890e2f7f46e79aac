"""`hopgraph index --engine ray` against the local build: wall time per number of workers, and
whether the Ray-built index ranks as the local one.
Table: docs/results.md, "Documents, filters, updates, serving" (building on Ray). Run time on the
2-core machine, as recorded in benchmarks/results/ray_build-*.json: about 11 min at 20k (local, 1
and 2 workers: 183 + 290 + 177 s), about 60 min at 100k (1,022 + 1,634 + 898 s).

    python benchmarks/ray_build.py CORPUS.jsonl --work WORK [--workers 1,2] [--questions Q.jsonl]
        [--limit 200] [--batch-size N] [--local LOCAL_INDEX] [--out RESULT.json]

Each build is a whole `hopgraph index` process (default parts, the same `--batch-size` for all),
timed from outside; the Ray builds start a local cluster of their own (`ray.init` with no
address: this machine's CPUs), `--workers N` actors of one CPU each. Then the default method's
top 10 of each question (the questions file's `question` or `text` field; by default the
titles of the first passages) on every Ray index is compared with the local index's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from hopgraph.index import Index
from hopgraph.retrieve import get_retriever


def _build(corpus: Path, out: Path, batch: int | None, *ray_args: str) -> float:
    shutil.rmtree(out, ignore_errors=True)
    hopgraph = str(Path(sys.executable).with_name("hopgraph"))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    t0 = time.perf_counter()
    subprocess.run(
        [hopgraph, "index", str(corpus), "-o", str(out), "-q", *ray_args,
         *(["--batch-size", str(batch)] if batch else [])],
        check=True, env=env,
    )  # fmt: skip
    return time.perf_counter() - t0


def _queries(path: Path | None, index: Index, limit: int) -> list[str]:
    if path is None:
        return [index.corpus[i].title for i in range(min(limit, len(index)))]
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out.append(d.get("question") or d.get("text"))
    return out[:limit]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--work", type=Path, required=True, help="folder for the indexes")
    ap.add_argument("--workers", default="1,2", help="Ray actor counts to build with")
    ap.add_argument("--batch-size", type=int, default=None, help="[hopgraph index's default]")
    ap.add_argument(
        "--local", type=Path, default=None,
        help="a local build of CORPUS made before (not rebuilt; its time is not measured)",
    )  # fmt: skip
    ap.add_argument("--questions", type=Path, default=None)
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--out", default="benchmarks/results/ray_build.json")
    args = ap.parse_args()
    n = sum(1 for line in args.corpus.open(encoding="utf-8") if line.strip())
    result: dict = {"corpus": str(args.corpus), "passages": n, "cpus": os.cpu_count(),
                    "batch_size": args.batch_size, "builds": {}}  # fmt: skip
    local = args.local or args.work / "local"
    if args.local is None:
        secs = _build(args.corpus, local, args.batch_size)
        result["builds"]["local"] = {
            "seconds": round(secs, 1),
            "passages_per_s": round(n / secs, 1),
        }
        print(f"local: {secs:.1f} s", file=sys.stderr)
    else:
        result["builds"]["local"] = {"index": str(local), "seconds": None}
    ref = Index.load(local)
    queries = _queries(args.questions, ref, args.limit)
    want = [get_retriever(ref, "default").search(q, 10).ids for q in queries]
    for w in (int(x) for x in args.workers.split(",")):
        out = args.work / f"ray-{w}"
        secs = _build(args.corpus, out, args.batch_size, "--engine", "ray", "--workers", str(w))
        got = Index.load(out)
        same = sum(get_retriever(got, "default").search(q, 10).ids == ids
                   for q, ids in zip(queries, want, strict=True))  # fmt: skip
        result["builds"][f"ray-{w}"] = {
            "workers": w, "seconds": round(secs, 1), "passages_per_s": round(n / secs, 1),
            "same_top10": same, "questions": len(queries),
        }  # fmt: skip
        print(f"ray, {w} worker(s): {secs:.1f} s, same top 10 {same}/{len(queries)}",
              file=sys.stderr)  # fmt: skip
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
