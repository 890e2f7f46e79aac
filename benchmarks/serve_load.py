"""Load test of ``hopgraph serve``: concurrent clients searching (and optionally updating) a
served index, with throughput, latency percentiles, errors and the server's RSS over time.
Table: docs/results.md, "Documents, filters, updates, serving" (serving under load). Run time on
the 2-core machine: about 2 min by default (30 s per client count, recorded in
benchmarks/results/serve_load.json, beside indexing); the soak: 60 min (soak.json).

    python benchmarks/serve_load.py [--data-dir ../shared/data --dataset hotpotqa] \\
        [--clients 4,16] [--seconds 30] [--max-requests N] [--methods bm25,dense,rrf] \\
        [--update-every S] [--k 10] [--parts sparse] [--out benchmarks/results/serve_load.json]

Without ``--data-dir`` the built-in demo corpus is indexed. With it, the dataset's cached index
(``hopgraph.cache``, as ``hopgraph eval`` keeps it; missing parts are built and cached) is
copied, with only the parts the methods need, to a temporary folder: the server updates that
copy, never the cache. The server is ``hopgraph serve`` in its own process on a free loopback
port; the clients are threads of this process (one ``httpx.Client`` each), each sending one
dataset question at a time with a method chosen at random (``default``: a request that names
no method). ``--parts`` serves an index with just those parts (default: the methods' parts;
``--parts sparse --methods default,bm25``: searches without a method on a partial index, which
use the best method its parts support). ``--update-every S`` also adds a passage every S
seconds and deletes it at the next tick. Any error (a status other than
200/201, a failed connection) makes the script exit with status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import psutil

from hopgraph.cache import index_cache_dir
from hopgraph.corpus import load_dataset
from hopgraph.data import demo_dataset_path
from hopgraph.index import Index
from hopgraph.retrieve.base import method_parts


def served_copy(dataset_path: Path, name: str, parts: list[str], out: Path) -> tuple[Index, list]:
    """Save an index of the dataset with just ``parts`` to ``out``; return it and the questions.
    The cached index is reused (missing parts are built and cached, existing ones kept)."""
    ds = load_dataset(dataset_path)
    folder = index_cache_dir(dataset_path, ds.name)
    cached = Index.load(folder) if (folder / "manifest.json").exists() else Index(ds.corpus)
    if cached.add_parts(parts, progress=True):
        cached.save(folder)
    index = Index(cached.corpus, {p: cached.parts[p] for p in parts})
    index.save(out)
    print(f"{name}: {len(index)} passages, parts {parts}, served from {out}", file=sys.stderr)
    return index, [q.text for q in ds.questions]


def request(query: str, method: str, k: int = 10) -> dict:
    """A search body; ``default`` names no method (the server chooses)."""
    body = {"query": query, "k": k}
    return body if method == "default" else {**body, "method": method}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_growth(samples: list[tuple[float, float]]) -> dict[str, float]:
    """How the server's RSS moved over the second half of a run, from (seconds, MB) samples.
    RSS saw-tooths by tens of MB within minutes (freed pages go back to the system after each
    update), so growth compares the mean of the half's first and last quarters, and the slope
    is a least-squares fit; the half's peak over its first sample (what this reported before,
    as ``rss_growth_second_half``) measures the saw-tooth, not a trend, and is kept beside."""
    half = samples[len(samples) // 2 :]
    t = np.array([x for x, _ in half], dtype=np.float64)
    m = np.array([y for _, y in half], dtype=np.float64)
    q = max(1, len(m) // 4)
    slope = float(np.polyfit(t, m, 1)[0]) * 3600 if len(m) > 1 and np.ptp(t) > 0 else 0.0
    return {
        "rss_growth_second_half": round(float(m[-q:].mean() / m[:q].mean() - 1), 4),
        "rss_slope_mb_per_hour_second_half": round(slope, 2),
        "rss_peak_over_first_sample_second_half": round(float(m.max() / m[0] - 1), 4),
    }


def start_server(index_dir: Path, port: int) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "hopgraph.cli", "serve", str(index_dir), "--port", str(port),
        "--log-level", "warning", "--no-verify",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {proc.stderr.read()}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not answer /health within 120 s")


class RssSampler(threading.Thread):
    """The server's resident memory every ``every`` seconds."""

    def __init__(self, pid: int, every: float = 0.5):
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.every = every
        self.samples: list[tuple[float, float]] = []  # (seconds since start, MB)
        self.stop = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                rss = self.proc.memory_info().rss / 2**20
            except psutil.Error:
                return
            self.samples.append((round(time.monotonic() - self.t0, 2), round(rss, 1)))
            self.stop.wait(self.every)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q / 100 * len(s)))], 2)


def run_phase(
    url: str,
    clients: int,
    seconds: float,
    max_requests: int | None,
    queries: list[str],
    methods: list[str],
    k: int,
    update_every: float | None,
    seed: int,
    window: float | None = None,
) -> dict:
    """``clients`` threads searching until ``seconds`` pass or ``max_requests`` are sent;
    with ``window``, latencies and errors are also reported per window of that many seconds."""
    lock = threading.Lock()
    sent = 0
    results: list[tuple[str, float, float | None]] = []  # (method, client ms, server ms)
    stamps: list[float] = []  # when each result came back (seconds from the start)
    errors: list[str] = []
    stop = threading.Event()

    def take() -> bool:
        nonlocal sent
        with lock:
            if stop.is_set() or (max_requests is not None and sent >= max_requests):
                return False
            sent += 1
            return True

    def client(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        with httpx.Client(base_url=url, timeout=60) as http:
            while take():
                method = rng.choice(methods)
                body = request(rng.choice(queries), method, k)
                t0 = time.perf_counter()
                try:
                    r = http.post("/search", json=body)
                except httpx.HTTPError as exc:
                    errors.append(f"{method}: {exc!r}")
                    continue
                ms = (time.perf_counter() - t0) * 1000
                if r.status_code != 200:
                    errors.append(f"{method}: {r.status_code} {r.text[:200]}")
                    continue
                with lock:
                    results.append((method, ms, r.json()["latency_ms"]))
                    stamps.append(time.perf_counter() - t_start)

    updates: list[dict] = []

    def updater() -> None:
        n = 0
        with httpx.Client(base_url=url, timeout=300) as http:
            while not stop.wait(update_every):
                pid = f"serve-load-{seed}-{n // 2}"
                t0 = time.perf_counter()
                try:
                    if n % 2 == 0:
                        text = f"{rng_text.choice(queries)} (added by the load test, {pid})"
                        r = http.post("/passages", json={"passages": [{"id": pid, "text": text}]})
                        ok = r.status_code == 201
                    else:
                        r = http.delete(f"/passages/{pid}")
                        ok = r.status_code == 200
                except httpx.HTTPError as exc:
                    errors.append(f"update: {exc!r}")
                    continue
                if not ok:
                    errors.append(f"update: {r.status_code} {r.text[:200]}")
                else:
                    updates.append(
                        {"kind": "add" if n % 2 == 0 else "delete",
                         "ms": round((time.perf_counter() - t0) * 1000, 1),
                         "generation": r.json()["generation"]}
                    )  # fmt: skip
                n += 1

    rng_text = random.Random(seed)
    t_start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    if update_every:
        threads.append(threading.Thread(target=updater))
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    while time.perf_counter() - t0 < seconds:
        if max_requests is not None and sent >= max_requests:
            break
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    lat = [ms for _, ms, _ in results]
    out = {
        "clients": clients,
        "seconds": round(elapsed, 2),
        "requests": len(results),
        "errors": len(errors),
        "error_samples": errors[:5],
        "throughput_rps": round(len(results) / elapsed, 1),
        "latency_ms": {"p50": pct(lat, 50), "p90": pct(lat, 90), "p99": pct(lat, 99)},
        "server_latency_ms_p50": pct([s for *_, s in results if s is not None], 50),
        "per_method": {
            m: {
                "requests": len(v := [ms for mm, ms, _ in results if mm == m]),
                "p50": pct(v, 50),
                "p99": pct(v, 99),
            }
            for m in methods
        },
    }
    if window:
        out["windows"] = []
        for lo in range(0, int(elapsed), int(window)):
            hi = lo + window
            w = [results[i][1] for i, t in enumerate(stamps) if lo <= t < hi]
            out["windows"].append(
                {"from_s": lo, "to_s": hi, "requests": len(w), "p50": pct(w, 50),
                 "p99": pct(w, 99)}
            )  # fmt: skip
    if update_every:
        out["updates"] = {
            "count": len(updates),
            "ms_p50": pct([u["ms"] for u in updates], 50),
            "ms_max": max((u["ms"] for u in updates), default=None),
            "last_generation": updates[-1]["generation"] if updates else None,
        }
    return out


def markdown(report: dict) -> str:
    lines = [
        f"\n### `hopgraph serve` load: {report['dataset']} ({report['passages']} passages, "
        f"methods {', '.join(report['methods'])}, k={report['k']})\n",
        "| clients | s | requests | req/s | p50 ms | p90 ms | p99 ms | errors | updates "
        "(p50 ms) | server RSS MB (start → max) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["runs"]:
        up = r.get("updates")
        upd = f"{up['count']} ({up['ms_p50']})" if up else "–"
        lat = r["latency_ms"]
        rss = r["rss_mb"]
        lines.append(
            f"| {r['clients']} | {r['seconds']} | {r['requests']} | {r['throughput_rps']} | "
            f"{lat['p50']} | {lat['p90']} | {lat['p99']} | {r['errors']} | {upd} | "
            f"{rss['start']} → {rss['max']} |"
        )
    lines.append(
        "\n| clients | " + " | ".join(f"{m} p50 / p99 ms" for m in report["methods"]) + " |"
    )
    lines.append("|---|" + "---|" * len(report["methods"]))
    for r in report["runs"]:
        cells = [
            f"{r['per_method'][m]['p50']} / {r['per_method'][m]['p99']}" for m in report["methods"]
        ]
        lines.append(f"| {r['clients']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", default=None, help="datasets folder (default: the demo corpus)")
    ap.add_argument("--dataset", default="hotpotqa")
    ap.add_argument("--clients", default="4,16", help="comma-separated: one phase each")
    ap.add_argument("--seconds", type=float, default=30.0, help="per phase")
    ap.add_argument("--max-requests", type=int, default=None, help="per phase")
    ap.add_argument("--methods", default="bm25,dense,rrf")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--parts", default=None, help="index parts served (default: the methods')")
    ap.add_argument("--update-every", type=float, default=None, help="seconds between updates")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--window", type=float, default=None,
        help="also report p50/p99 and RSS per window of this many seconds (a soak)",
    )  # fmt: skip
    ap.add_argument("--out", default="benchmarks/results/serve_load.json")
    args = ap.parse_args()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    parts = (
        [p.strip() for p in args.parts.split(",") if p.strip()]
        if args.parts
        else list(dict.fromkeys(p for m in methods for p in method_parts(m)))
    )
    if args.data_dir:
        path, name = Path(args.data_dir) / args.dataset, args.dataset
    else:
        path, name = demo_dataset_path(), "demo"

    tmp = Path(tempfile.mkdtemp(prefix="serve-load-"))
    try:
        index, queries = served_copy(path, name, parts, tmp / "index")
        port = free_port()
        proc = start_server(tmp / "index", port)
        url = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(base_url=url, timeout=120) as http:  # load models, build retrievers
                for m in methods:
                    r = http.post("/search", json=request(queries[0], m))
                    r.raise_for_status()
            rss = RssSampler(proc.pid)
            rss.start()
            runs = []
            for i, c in enumerate(int(x) for x in args.clients.split(",")):
                start = len(rss.samples)
                t_rss = rss.samples[-1][0] if rss.samples else 0.0
                run = run_phase(url, c, args.seconds, args.max_requests, queries, methods,
                                args.k, args.update_every, args.seed + i, args.window)  # fmt: skip
                mb = [m for _, m in rss.samples[start:]] or [rss.samples[-1][1]]
                run["rss_mb"] = {"start": mb[0], "max": max(mb), "end": mb[-1]}
                for w in run.get("windows", []):
                    inside = [m for t, m in rss.samples[start:]
                              if w["from_s"] <= t - t_rss < w["to_s"]]  # fmt: skip
                    w["rss_mb_max"] = max(inside) if inside else None
                if args.window and len(mb) > 1:  # growth over the second half of the run
                    run.update(rss_growth(rss.samples[start:]))
                runs.append(run)
                print(f"{c} clients: {run['throughput_rps']} req/s, {run['errors']} errors",
                      file=sys.stderr)  # fmt: skip
            rss.stop.set()
            rss.join()
            health = httpx.get(f"{url}/health").json()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    report = {
        "command": " ".join(sys.argv),
        "dataset": name,
        "passages": len(index),
        "parts": parts,
        "methods": methods,
        "k": args.k,
        "update_every": args.update_every,
        "cpus": os.cpu_count(),
        "runs": runs,
        "final_generation": health["generation"],
        "rss_samples_mb": rss.samples,
    }
    print(markdown(report))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    saved = json.loads(out.read_text()) if out.exists() else {}
    key = name + (f"+updates{args.update_every:g}s" if args.update_every else "")
    saved[key] = report
    out.write_text(json.dumps(saved, indent=2) + "\n")
    print(f"wrote {out} [{key}]", file=sys.stderr)
    errors = sum(r["errors"] for r in runs)
    if errors:
        print(f"{errors} errors; first: {runs[0]['error_samples'] or runs[-1]['error_samples']}",
              file=sys.stderr)  # fmt: skip
        sys.exit(1)
    if statistics.fmean(r["requests"] for r in runs) == 0:
        sys.exit("no request completed")


if __name__ == "__main__":
    main()
