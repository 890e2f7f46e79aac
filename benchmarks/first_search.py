"""Time to the first search: a staged build of a scale corpus, searched as soon as it can be.
Table: docs/results.md, "What to expect at 10k, 100k and 1M passages". Run time on the 2-core
machine, as recorded in benchmarks/results/first_search.json: 100k built to its end 9 min, 1M 98
min (``--encode-seconds 0``); with the default ``--encode-seconds 600``, about 20 min at any size
(the first search 42 s at 100k, 7.6 min at 1M, then 10 min of encoding).

    python benchmarks/scale.py corpus --dataset 2wikimultihopqa --n 1000000 --out C1M \
        --data-dir ../shared/data
    PYTHONPATH=src .venv/bin/python benchmarks/first_search.py --corpus C1M --work WORK \
        --data-dir ../shared/data [--limit 489] [--encode-seconds 600] [--keep]

``hopgraph index CORPUS -o WORK/index`` starts (no options: from 50,000 passages the build is
staged) in a fresh process; when it logs ``searchable:`` (its sparse and entity parts saved),
``hopgraph search WORK/index QUESTION`` runs at once, and the time from the build's start to
that search's answer is the time to the first search. Then the build is paused (SIGSTOP, so the
machine is quiet) while ``hopgraph eval`` runs ``bm25`` and the default (without vectors: what
a search gets now) on the dataset's questions buried in the corpus, and on its own pool indexed
the same way (sparse and entities); then the build resumes for ``--encode-seconds`` to measure
the vector stage's rate from ``hopgraph info`` (passage vectors done over time), and is
stopped with Ctrl-C's signal (its batches kept: ``hopgraph index ... --resume`` goes on), or
left to finish with ``--encode-seconds 0``. Peak RSS of the build up to the first search (the
process's VmHWM) and over the whole build (sampled); with ``--encode-seconds 0`` the build runs
to its end and the complete index is measured too (disk, load and RSS after a search with
``bm25``, ``dense`` and the default, and ``hopgraph eval`` of the three). Results:
``benchmarks/results/first_search.json``, keyed by dataset and size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from scale import _LOADED, _eval, _hopgraph, disk_usage, machine

RESULTS = Path(__file__).resolve().parent / "results" / "first_search.json"


def vm_hwm_mb(pid: int) -> float:
    """Peak resident memory of process ``pid`` so far, MB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class PeakRss:
    """The highest VmHWM of process ``pid``, sampled every few seconds until :meth:`stop`."""

    def __init__(self, pid: int, every: float = 2.0):
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)
        self._thread.start()

    def _run(self, every: float) -> None:
        while not self._stop.wait(every):
            self.peak = max(self.peak, vm_hwm_mb(self.pid))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


def vectors_done(index: Path) -> int:
    r = subprocess.run(_hopgraph("info", str(index)), capture_output=True, text=True, check=True)
    build = json.loads(r.stdout).get("build") or {}
    return int(build.get("vectors_done", 0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True, help="a folder written by scale.py corpus")
    ap.add_argument("--work", required=True)
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--limit", type=int, default=0, help="questions evaluated (0: all)")
    ap.add_argument("--encode-seconds", type=float, default=600.0)
    ap.add_argument("--staged", default="auto", help="hopgraph index --staged (on: below 50k)")
    args = ap.parse_args()
    corpus = Path(args.corpus).resolve()
    meta = json.loads((corpus / "scale.json").read_text())
    dataset, n = meta["dataset"], int(meta["n"])
    work = Path(args.work).resolve()
    index = work / "index"
    for p in (index, index.with_name("index.partial")):
        shutil.rmtree(p, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    question = json.loads((corpus / "questions.jsonl").open().readline())["question"]
    result: dict[str, Any] = {"dataset": dataset, "n": n, "machine": machine()}

    t0 = time.perf_counter()
    build = subprocess.Popen(
        _hopgraph("index", str(corpus), "-o", str(index), "-q", "--staged", args.staged),
        stderr=subprocess.PIPE, text=True,
        # Ctrl-C's signal stops it as at a terminal, even where this script runs in the
        # background (whose children start with SIGINT ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    log = []
    assert build.stderr is not None
    peak = PeakRss(build.pid)
    for line in build.stderr:
        log.append(line.rstrip())
        print(f"[{time.perf_counter() - t0:7.1f}s] {line.rstrip()}", file=sys.stderr, flush=True)
        if line.startswith("searchable:"):
            break
    else:
        raise SystemExit("the build ended without a searchable stage:\n" + "\n".join(log))
    t_searchable = time.perf_counter() - t0
    r = subprocess.run(_hopgraph("search", str(index), question, "-k", "5"),
                       capture_output=True, text=True, check=True)  # fmt: skip
    t_first = time.perf_counter() - t0
    result["searchable_seconds"] = round(t_searchable, 1)
    result["first_search_seconds"] = round(t_first, 1)
    result["first_search_note"] = r.stderr.strip().splitlines()[-1:] if r.stderr else []
    result["build_peak_rss_mb_to_first_search"] = round(vm_hwm_mb(build.pid))
    os.kill(build.pid, signal.SIGSTOP)  # quiet while the searches are measured
    t_stopped = time.perf_counter()
    try:
        result["disk_searchable"] = disk_usage(index, n)
        methods = "bm25,default"
        limit = ["--limit", str(args.limit)] if args.limit else []
        result["eval"] = _eval(dataset, args.data_dir, methods, index, work, limit)
        pool = work / "pool"
        if not (pool / "manifest.json").exists():
            subprocess.run(
                _hopgraph("index", str(Path(args.data_dir) / dataset), "-o", str(pool),
                          "--parts", "sparse,entities", "-q", "--force"),
                check=True,
            )  # fmt: skip
        result["eval_pool"] = _eval(dataset, args.data_dir, methods, pool, work, limit)
    finally:
        os.kill(build.pid, signal.SIGCONT)
    result["paused_seconds"] = round(time.perf_counter() - t_stopped, 1)
    if args.encode_seconds > 0:  # the vector stage's rate, then stop it (resumable)
        start, t_start = vectors_done(index), time.perf_counter()
        time.sleep(args.encode_seconds)
        done, secs = vectors_done(index), time.perf_counter() - t_start
        result["vectors"] = {"done": done, "in_seconds": round(secs), "passages_per_second":
                             round((done - start) / secs, 1)}  # fmt: skip
        build.send_signal(signal.SIGINT)
    for line in build.stderr:  # (to its end: the pipe never fills)
        log.append(line.rstrip())
    build.wait()
    result["build_rc"] = build.returncode
    result["build_wall_seconds"] = round(time.perf_counter() - t0, 1)
    result["build_peak_rss_mb"] = round(peak.stop())
    if build.returncode == 0:  # it ran to the end: the complete index, measured as above
        # the build's own time: from its start to its end, less the pause
        result["complete_seconds"] = round(
            result["build_wall_seconds"] - result["paused_seconds"], 1
        )
        result["disk_complete"] = disk_usage(index, n)
        manifest = json.loads((index / "manifest.json").read_text())
        result["parts_seconds"] = {k: round(v["build_seconds"], 1)
                                   for k, v in manifest["parts"].items()}  # fmt: skip
        loaded = [sys.executable, "-c", _LOADED, str(index), question, "bm25,dense,default"]
        r = subprocess.run(loaded, stdout=subprocess.PIPE, text=True, check=True)
        result["load_complete"] = {k: round(v, 2) for k, v in json.loads(r.stdout).items()}
        limit = ["--limit", str(args.limit)] if args.limit else []
        result["eval_complete"] = _eval(dataset, args.data_dir, "bm25,dense,default", index,
                                        work, limit)  # fmt: skip
    result["log_tail"] = log[-6:]
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results[f"{dataset}-{n}"] = result
    RESULTS.write_text(json.dumps(dict(sorted(results.items())), indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
