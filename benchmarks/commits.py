"""What an update costs on a large index, as a user runs it: `hopgraph add` / `hopgraph delete`
as whole processes (load, replay of earlier deltas, update, commit), the bytes each commit
writes, the same updates inside a long-running writer (no load), and searches while commits
stream in.
Table: docs/results.md, "Documents, filters, updates, serving" (live updates). Run time on the
2-core machine: about 5 min on a 100k index (estimated from benchmarks/results/commits-100k.json:
each CLI update 2–9 s, 3 repeats, then the in-process and streaming phases); longer at 1M, where
every repeat copies the index.

    python benchmarks/commits.py INDEX_DIR [--add 100] [--delete 100] [--repeats 3] \
        [--queries-from DATASET_DIR] [--out benchmarks/results/commits.json]

INDEX_DIR is copied to a scratch folder for every repeat (it is never changed). The added
passages are copies of random passages of the index under new ids and titles (so they bring
new title aliases, as real new pages do); the deleted ones are random.

1. CLI, per repeat on a fresh copy: add N, delete N, delete N more (each a whole process,
   timed from outside); the bytes each commit wrote (its delta folder and the manifest)
   against the folder's bytes.
2. In one process, as `hopgraph serve`'s writer: the same updates on the loaded index,
   `Index.updated` + save (a delta commit), timed.
3. Searches during writes: `default` and `bm25` searches in a loop, idle and then while the
   writer commits updates one after another, and a reader following with `reloaded()`: p50 /
   p99 of each phase, errors, whether the reader served every committed generation, and how
   long each commit took. The writer runs at `--writer-nice` and the reader's replaying thread
   at `--replay-nice`, by default the niceness `hopgraph add` and `hopgraph serve` give them
   (hopgraph.priority); `--writer-nice 0 --replay-nice 0` measures them at the searches'.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from hopgraph.corpus import Passage
from hopgraph.index import Index
from hopgraph.priority import WRITER_NICE, lower_priority
from hopgraph.retrieve import get_retriever


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _cli(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(Path(sys.executable).parent / "hopgraph"), *args, "-q"], check=True)
    return time.perf_counter() - t0


def _delta_bytes(folder: Path, before: set[str]) -> int:
    new = [d for d in (folder / "deltas").iterdir() if d.name not in before]
    return sum(_bytes(d) for d in new) + (folder / "manifest.json").stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("index_dir")
    ap.add_argument("--add", type=int, default=100)
    ap.add_argument("--delete", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--search-seconds", type=float, default=30.0)
    ap.add_argument("--queries-from", help="a dataset folder whose questions are searched")
    ap.add_argument(
        "--pin", action="store_true",
        help="searches and the reader on CPU 0, the writer on CPU 1: a reader whose writer runs "
        "on another machine (phase 3)",
    )  # fmt: skip
    ap.add_argument("--skip-cli", action="store_true", help="phases 2 and 3 only")
    ap.add_argument(
        "--switch-interval", type=float, default=None,
        help="sys.setswitchinterval for the searching process (phase 3; Python's default 0.005)",
    )  # fmt: skip
    ap.add_argument(
        "--writer-nice", type=int, default=WRITER_NICE,
        help="the writer's CPU niceness (phase 3; as `hopgraph add --nice` and serve's "
        "--writer-nice set it; 0: the writer at the searches' priority)",
    )  # fmt: skip
    ap.add_argument(
        "--replay-nice", type=int, default=WRITER_NICE,
        help="the niceness of the reader's replaying thread (phase 3; serve's reload thread "
        "runs at --writer-nice)",
    )  # fmt: skip
    ap.add_argument(
        "--writer-threads", type=int, default=0,
        help="the writer's encoder threads ($HOPGRAPH_THREADS; 0: hopgraph's default)",
    )  # fmt: skip
    ap.add_argument("--out", default="benchmarks/results/commits.json")
    args = ap.parse_args()
    src = Path(args.index_dir).resolve()
    scratch = Path(tempfile.mkdtemp(prefix="hopgraph-commits-"))
    work = scratch / "ix"

    index = Index.load(src, verify=False)
    rng = random.Random(0)
    rows = rng.sample(range(len(index)), args.add + 2 * args.delete)
    add = [
        Passage(f"new-{index.corpus[r].id}", f"{index.corpus[r].title} (revised)",
                index.corpus[r].text)
        for r in rows[: args.add]
    ]  # fmt: skip
    dels = [index.corpus.ids[r] for r in rows[args.add :]]
    del1, del2 = dels[: args.delete], dels[args.delete :]
    (scratch / "add.jsonl").write_text("".join(json.dumps(p.to_dict()) + "\n" for p in add))
    (scratch / "del1.txt").write_text("\n".join(del1) + "\n")
    (scratch / "del2.txt").write_text("\n".join(del2) + "\n")
    total = _bytes(src)
    result: dict = {
        "index": str(src), "passages": len(index), "bytes": total, "cli": [], "pin": args.pin,
        "writer_nice": args.writer_nice, "replay_nice": args.replay_nice,
    }  # fmt: skip
    print(f"{src}: {len(index)} passages, {total / 1e6:.0f} MB", file=sys.stderr)

    # 1. the CLI, whole processes
    for rep in range(args.repeats if not args.skip_cli else 0):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(src, work)
        run = {}
        for name, cmd in (
            ("add", ["add", str(work), str(scratch / "add.jsonl")]),
            ("delete", ["delete", str(work), "--ids-file", str(scratch / "del1.txt")]),
            ("delete_again", ["delete", str(work), "--ids-file", str(scratch / "del2.txt")]),
        ):
            before = (
                {d.name for d in (work / "deltas").iterdir()}
                if (work / "deltas").exists()
                else set()
            )
            secs = _cli(*cmd)
            written = _delta_bytes(work, before)
            run[name] = {"seconds": secs, "bytes_written": written, "share": written / total}
            print(f"  repeat {rep}: {name} {secs:.2f} s, wrote {written / 1e3:.0f} KB "
                  f"({100 * written / total:.3f} %)", file=sys.stderr)  # fmt: skip
        result["cli"].append(run)
    if result["cli"]:
        result["cli_median_seconds"] = {
            k: statistics.median(r[k]["seconds"] for r in result["cli"]) for k in result["cli"][0]
        }

    # 2. the writer of a server: the index stays loaded
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    writer = Index.load(work, verify=False)
    inproc = {}
    for name, kw in (
        ("add", {"add": add}),
        ("delete", {"delete": del1}),
        ("delete_again", {"delete": del2}),
    ):
        t0 = time.perf_counter()
        writer = writer.updated(**kw)
        writer.save(work, compact=False)
        inproc[name] = time.perf_counter() - t0
        print(f"  in-process {name}: {inproc[name]:.2f} s", file=sys.stderr)
    result["in_process_seconds"] = inproc

    # 3. searches while commits stream in
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    writer = Index.load(work, verify=False)
    reader = Index.load(work, verify=False)
    if args.queries_from:
        from hopgraph.corpus import load_dataset

        queries = [q.text for q in load_dataset(Path(args.queries_from)).questions][:200]
    else:
        queries = [index.corpus[r].title for r in rows[:200]]
    state = {"reader": reader, "errors": 0, "stale": 0}

    def search_phase(seconds: float) -> dict[str, list[float]]:
        lat: dict[str, list[float]] = {"default": [], "bm25": []}
        end = time.perf_counter() + seconds
        i = 0
        while time.perf_counter() < end:
            ix = state["reader"]
            for method in lat:
                t0 = time.perf_counter()
                try:
                    get_retriever(ix, method).search(queries[i % len(queries)], 10)
                except Exception:  # noqa: BLE001 - counted, the benchmark goes on
                    state["errors"] += 1
                lat[method].append(1000 * (time.perf_counter() - t0))
            i += 1
        return lat

    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    if args.pin:
        os.sched_setaffinity(0, {0})
    for m in ("default", "bm25"):  # warm the retrievers
        get_retriever(reader, m).search(queries[0], 10)
    idle = search_phase(args.search_seconds)
    # the writer is another process (as a writing server is), committing 10 passages at a
    # time; this process follows it as a reader does (a thread replays each new delta, and
    # the retrievers of the new generation are built before it is served)
    (scratch / "stream.json").write_text(json.dumps([p.to_dict() for p in add]))
    pin = "import os; os.sched_setaffinity(0, {1})" if args.pin else ""
    nice = (
        "from hopgraph.priority import lower_priority; "
        f"lower_priority({args.writer_nice}, whole_process=True)"
    )
    writer_script = f"""
{pin}
{nice}
import json, time
from hopgraph.corpus import Passage
from hopgraph.index import Index
rows = json.load(open({str(scratch / "stream.json")!r}))
add = [Passage(d["id"], d["title"], d["text"]) for d in rows]
ix = Index.load({str(work)!r}, verify=False)
end, k, took, parts = time.time() + {args.search_seconds!r}, 0, [], []
while time.time() < end:
    chunk = add[k % len(add): k % len(add) + 10]
    t0 = time.perf_counter()
    ix = ix.updated(add=[Passage(f"{{p.id}}-{{k}}", p.title, p.text) for p in chunk])
    ix.save({str(work)!r}, compact=False)
    took.append(round(time.perf_counter() - t0, 3))
    parts.append({{n: round(v, 3) for n, v in ix.update_seconds.items()}})
    k += 10
print(json.dumps({{"generation": ix.generation, "commit_seconds": took, "parts": parts}}))
"""
    stop = threading.Event()
    served: list[int] = []

    def follow() -> None:
        lower_priority(args.replay_nice)  # as serve's reload thread
        while not stop.is_set():
            ix = state["reader"]
            try:
                new = ix.reloaded()
            except Exception:  # noqa: BLE001 - mid-commit: next time
                time.sleep(0.2)
                continue
            if new.generation != ix.generation:
                for m in ("default", "bm25"):  # what serve does before publishing
                    get_retriever(new, m).search(queries[0], 10)
                state["reader"] = new
                served.append(new.generation)
            time.sleep(0.2)

    env = dict(os.environ)
    if args.writer_threads:
        env["HOPGRAPH_THREADS"] = str(args.writer_threads)
    proc = subprocess.Popen(
        [sys.executable, "-c", writer_script], stdout=subprocess.PIPE, text=True, env=env
    )
    t = threading.Thread(target=follow)
    t.start()
    busy = search_phase(args.search_seconds)
    wrote = json.loads(proc.communicate()[0].strip().splitlines()[-1])
    last = int(wrote["generation"])
    time.sleep(1.0)
    stop.set()
    t.join()
    final = state["reader"].reloaded()
    state["stale"] = int(
        final.generation != last or len(final) != len(Index.load(work, verify=False))
    )
    generations = list(range(1, last + 1))

    def pct(xs: list[float], q: float) -> float:
        return float(np.percentile(xs, q)) if xs else float("nan")

    result["searches"] = {
        phase: {
            m: {"n": len(v), "p50_ms": pct(v, 50), "p99_ms": pct(v, 99)} for m, v in lat.items()
        }
        for phase, lat in (("idle", idle), ("during_commits", busy))
    }
    result["searches"]["commits"] = len(generations)
    result["searches"]["commit_seconds"] = wrote["commit_seconds"]
    result["searches"]["commit_part_seconds"] = wrote["parts"]
    result["searches"]["generations_served"] = len(served)
    result["searches"]["errors"] = state["errors"]
    result["searches"]["stale_after_reopen"] = state["stale"]
    print(json.dumps(result["searches"], indent=1), file=sys.stderr)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
