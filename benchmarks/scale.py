"""Retrieval at scale: a deterministic N-passage corpus, its index, and what they cost.
Table: docs/results.md, "What to expect at 10k, 100k and 1M passages" (the corpus; the runs:
docs/notes/scale.md). Run time on the 2-core machine, ``run``: 3.6 min at 10k and 33.7 min at 100k
as recorded in benchmarks/results/scale.json (ONNX fp32, before the passage student; a default
build of 100k now takes 9 min, ``first_search.py``), hours at 1M; ``corpus``: about a minute at
100k (estimated).

    python benchmarks/scale.py corpus --dataset 2wikimultihopqa --n 100000 --out DIR \
        [--data-dir ../shared/data] [--seed 0] [--overwrite]
    python benchmarks/scale.py run --dataset 2wikimultihopqa --n 100000 --work WORK \
        [--data-dir ../shared/data] [--methods bm25,dense,default] [--set dense.precision=int8]
    python benchmarks/scale.py plot     # docs/img/scale.png from benchmarks/results/scale.json

``run`` makes the corpus in ``WORK/<dataset>-<n>/corpus`` (unless there), builds its index with
``hopgraph index --resume`` into ``WORK/<dataset>-<n>/index`` (a stopped run continues where
it stopped: run the same command again), then measures, each step in its own process: build
seconds and passages/s per part, the build's peak RSS, disk bytes per passage (beyond the
passages' text, vectors included), load seconds and RSS after loading and after the first
query of each method, and ``hopgraph eval --index`` (recall, p50/p95 per method) against the
same questions on their own pool, and where the dense part has its HNSW graph, the graph's
recall@10 against exact search for every question. Results go to
``benchmarks/results/scale.json`` under ``<dataset>-<n>``.

``corpus`` writes ``DIR/corpus.jsonl`` (``{"idx", "title", "text"}``, idx = line number),
``DIR/questions.jsonl`` (the dataset's questions, copied unchanged) and ``DIR/scale.json`` (what
went in: passages per source, seed, sanity checks, sha256 of corpus.jsonl), so that
``hopgraph eval DIR`` and ``hopgraph index DIR/corpus.jsonl`` work on it. In order:

1. the dataset's own pool, unchanged and with its own idx, so its questions keep their gold;
2. every real passage of the other sets (2wikimultihopqa, hotpotqa, musique, hotpotqa_train,
   musique_train, scifact), exact duplicates (same title and text) of a passage already
   written left out;
3. synthetic wiki-like passages up to N: a real passage's first sentence under a new title
   (its name plus a disambiguator such as "(film)", "(1987 album)", "(footballer, born
   1961)") followed by 2-5 sentences of other real passages, so that names recur across
   many pages as in a wiki. They are made from the other QA sets' passages only: never from
   the pool (no gold sentence is copied into a distractor) nor from a BEIR set such as
   SciFact (paper titles are not names).

Below pool + real passages, the pool is kept whole and the other real passages are a
deterministic sample. The same arguments give a byte-identical corpus.jsonl; the output is
written as it is made (only the ~22k real source passages are held in memory).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

# The sets whose passages are buried with the pool (scifact is BEIR: _id, title, text).
SOURCES = ("2wikimultihopqa", "hotpotqa", "musique", "hotpotqa_train", "musique_train", "scifact")
MIN_EXTRA, MAX_EXTRA = 2, 5  # sentences of other passages after a synthetic first sentence

# Disambiguators of a synthetic title, and how a year combines with each when the plain one is
# taken: "{y} film" → "1987 film", "footballer, born {y}" → "footballer, born 1961".
KINDS: tuple[tuple[str, str], ...] = (
    ("film", "{y} film"),
    ("album", "{y} album"),
    ("song", "{y} song"),
    ("novel", "{y} novel"),
    ("TV series", "{y} TV series"),
    ("play", "{y} play"),
    ("video game", "{y} video game"),
    ("band", "band, formed {y}"),
    ("ship", "ship, launched {y}"),
    ("village", "village, founded {y}"),
    ("racehorse", "racehorse, foaled {y}"),
    ("newspaper", "newspaper, founded {y}"),
    ("footballer", "footballer, born {y}"),
    ("politician", "politician, born {y}"),
    ("painter", "painter, born {y}"),
    ("composer", "composer, born {y}"),
    ("actor", "actor, born {y}"),
    ("writer", "writer, born {y}"),
    ("cricketer", "cricketer, born {y}"),
    ("bishop", "bishop, died {y}"),
)
YEARS = range(1850, 2021)

_PAREN = re.compile(r"\s*\([^()]*\)")
# A sentence ends at . ! or ? (and any closing quotes or brackets) followed by white space and
# an upper-case letter, a digit or an opening quote/bracket.
_BOUNDARY = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_LAST_WORD = re.compile(r"(\S+)$")
# Words after which a full stop is not a sentence end.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr mt ft no nos vs co corp inc ltd bros gen col lt sgt capt cmdr adm "
    "gov sen rep rev prof fr pres hon ave blvd dept est approx ca c fl b d e.g i.e etc al "
    "jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k".split()
)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` by a regular expression: a stop, then white space, then an upper-case
    letter, digit or opening quote; not after an initial ("J. Smith"), a dotted abbreviation
    ("U.S.") or a common abbreviation ("St.", "Dr.", "Jan.")."""
    text = " ".join(text.split())
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        if text[m.start()] == ".":
            word = _LAST_WORD.search(text, start, m.start())
            w = word.group(1).lstrip("\"'“‘([") if word else ""
            if len(w) == 1 and w.isalpha() or "." in w or w.lower() in _ABBREVIATIONS:
                continue
        sentence = text[start : m.end()].strip()
        if sentence:
            out.append(sentence)
        start = m.end()
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return out


def base_name(title: str) -> str:
    """A title without its "(...)" disambiguators: "Theodred II (Bishop of Elmham)" → "Theodred
    II" (the title itself if nothing would be left)."""
    name = " ".join(_PAREN.sub("", title).split())
    return name or title.strip()


@dataclass(frozen=True)
class Source:
    """A real passage: where it comes from and its content."""

    dataset: str
    title: str
    text: str
    wiki: bool  # from a unified-layout QA set (titles are entity names), not a BEIR one


def read_set(data_dir: Path, name: str) -> list[Source]:
    """The passages of one set's ``corpus.jsonl`` (unified ``idx`` records in idx order, or
    BEIR ``_id`` records in file order)."""
    path = data_dir / name / "corpus.jsonl"
    if not path.is_file():
        raise SystemExit(f"error: no corpus at {path} (is --data-dir the shared data folder?)")
    out: list[Source] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f):
            if not line.strip():
                continue
            rec = json.loads(line)
            if "idx" in rec and rec["idx"] != lineno:
                raise SystemExit(f"error: {path}:{lineno + 1}: idx {rec['idx']} is not the line")
            out.append(Source(name, rec.get("title") or "", rec["text"], "idx" in rec))
    return out


def plan(n_pool: int, others: Sequence[Source], n: int, seed: int) -> tuple[list[Source], int]:
    """The other real passages to write (all, or a sorted sample of them when ``n`` is smaller
    than pool + others) and the number of synthetic passages to make."""
    if n < n_pool:
        raise SystemExit(f"error: --n {n} is smaller than the pool ({n_pool} passages)")
    room = n - n_pool
    if room >= len(others):
        return list(others), room - len(others)
    keep = sorted(random.Random(seed).sample(range(len(others)), room))
    return [others[i] for i in keep], 0


class Synthesizer:
    """Makes synthetic passages from real ones, each title new to the corpus."""

    def __init__(self, sources: Sequence[Source], taken: set[str], rng: random.Random):
        self.rng = rng
        self.taken = taken
        self.sentences = [split_sentences(s.text) for s in sources]
        self.names = [base_name(s.title) for s in sources]
        usable = [i for i, sents in enumerate(self.sentences) if sents and self.names[i]]
        if not usable:
            raise SystemExit("error: no source passages to make synthetic passages from")
        self.usable = usable
        # every sentence of every usable passage: (passage, sentence) pairs, for the extras
        self.flat = [(i, j) for i in usable for j in range(len(self.sentences[i]))]

    def title(self, name: str) -> str:
        rng = self.rng
        kind, with_year = KINDS[rng.randrange(len(KINDS))]
        title = f"{name} ({kind})"
        for _ in range(50):
            if title not in self.taken:
                self.taken.add(title)
                return title
            kind, with_year = KINDS[rng.randrange(len(KINDS))]
            year = YEARS[rng.randrange(len(YEARS))]
            title = f"{name} ({with_year.format(y=year)})"
        # every random pick taken (a name with thousands of pages): the first free one in order
        for _kind, with_year in KINDS:
            for year in YEARS:
                title = f"{name} ({with_year.format(y=year)})"
                if title not in self.taken:
                    self.taken.add(title)
                    return title
        k = 2
        while f"{name} ({kind} {k})" in self.taken:
            k += 1
        title = f"{name} ({kind} {k})"
        self.taken.add(title)
        return title

    def passage(self) -> tuple[str, str]:
        """``(title, text)`` of one new passage."""
        rng = self.rng
        src = self.usable[rng.randrange(len(self.usable))]
        parts = [self.sentences[src][0]]
        want = rng.randint(MIN_EXTRA, MAX_EXTRA)
        while len(parts) < want + 1:
            i, j = self.flat[rng.randrange(len(self.flat))]
            if i != src:
                parts.append(self.sentences[i][j])
        return self.title(self.names[src]), " ".join(parts)


@dataclass
class _Stats:
    count: int = 0
    chars: int = 0

    def add(self, text: str) -> None:
        self.count += 1
        self.chars += len(text)

    def to_json(self) -> dict[str, Any]:
        mean = round(self.chars / self.count, 1) if self.count else 0.0
        return {"passages": self.count, "mean_chars": mean}


def make_corpus(
    dataset: str,
    n: int,
    out: str | os.PathLike[str],
    data_dir: str | os.PathLike[str],
    seed: int = 0,
    *,
    sources: Sequence[str] = SOURCES,
    overwrite: bool = False,
    progress: bool = True,
    skip_pool_titles: bool = False,
) -> dict[str, Any]:
    """Write the ``n``-passage corpus of ``dataset`` (a set under ``data_dir`` with
    ``corpus.jsonl`` and ``questions.jsonl``) to the folder ``out``; returns what
    ``out/scale.json`` records. ``sources``: the sets buried with the pool (the dataset itself
    is skipped among them). ``skip_pool_titles``: leave out every other passage whose title a
    pool passage has (not only exact duplicates), so no distractor is another version of a
    pool page (the realistic pools of benchmarks/realistic_pools.py)."""
    data, folder = Path(data_dir), Path(out)
    if n < 1:
        raise SystemExit(f"error: --n must be >= 1, got {n}")
    questions = data / dataset / "questions.jsonl"
    if not questions.is_file():
        raise SystemExit(f"error: no questions at {questions}")
    if (folder / "corpus.jsonl").exists() and not overwrite:
        raise SystemExit(f"error: {folder / 'corpus.jsonl'} exists; pass --overwrite")
    pool = read_set(data, dataset)
    seen = {(p.title, p.text) for p in pool}
    pool_titles = {p.title for p in pool} if skip_pool_titles else set()
    others: list[Source] = []
    duplicates: dict[str, int] = {}
    title_skips: dict[str, int] = {}
    for name in sources:
        if name == dataset:
            continue
        for p in read_set(data, name):
            if (p.title, p.text) in seen:
                duplicates[name] = duplicates.get(name, 0) + 1
                continue
            if p.title in pool_titles:
                title_skips[name] = title_skips.get(name, 0) + 1
                continue
            seen.add((p.title, p.text))
            others.append(p)
    del seen
    chosen, n_synthetic = plan(len(pool), others, n, seed)
    # synthetic passages come from every real passage of the other QA sets, written or not
    makers = [p for p in others if p.wiki]
    real_titles = {p.title for p in pool} | {p.title for p in others}
    taken = set(real_titles)
    synth = Synthesizer(makers, taken, random.Random(f"synthetic-{seed}")) if n_synthetic else None

    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "corpus.jsonl.tmp"
    digest = hashlib.sha256()
    by_source: dict[str, _Stats] = {}
    written_titles: dict[str, int] = {}
    shared_titles = 0  # real passages whose title an earlier real passage has
    total_chars = 0
    bar = tqdm(total=n, desc=f"{dataset} x{n}", unit="passage", disable=not progress)

    def rows() -> Iterator[tuple[str, str, str]]:
        for p in pool:
            yield "pool:" + dataset, p.title, p.text
        for p in chosen:
            yield p.dataset, p.title, p.text
        for _ in range(n_synthetic):
            assert synth is not None
            title, text = synth.passage()
            yield "synthetic", title, text

    t0 = time.perf_counter()
    collisions = 0  # synthetic titles equal to a title already written: none by construction
    with open(tmp, "wb") as f:
        buf: list[str] = []

        def flush() -> None:
            chunk = "".join(buf).encode("utf-8")
            digest.update(chunk)
            f.write(chunk)
            bar.update(len(buf))
            buf.clear()

        for idx, (src, title, text) in enumerate(rows()):
            line = json.dumps({"idx": idx, "title": title, "text": text}, ensure_ascii=False)
            buf.append(line + "\n")
            by_source.setdefault(src, _Stats()).add(text)
            total_chars += len(text)
            if title in written_titles:
                if src == "synthetic":
                    collisions += 1
                else:
                    shared_titles += 1
            written_titles[title] = written_titles.get(title, 0) + 1
            if len(buf) >= 4096:
                flush()
        flush()
    bar.close()
    seconds = time.perf_counter() - t0
    os.replace(tmp, folder / "corpus.jsonl")
    shutil.copyfile(questions, folder / "questions.jsonl")

    written = sum(s.count for s in by_source.values())
    info: dict[str, Any] = {
        "dataset": dataset,
        "n": n,
        "seed": seed,
        "passages": written,
        "order": ["pool:" + dataset, *[s for s in sources if s != dataset], "synthetic"],
        "by_source": {k: v.to_json() for k, v in by_source.items()},
        "duplicates_skipped": duplicates,
        "pool_titles_skipped": title_skips if skip_pool_titles else None,
        "real_passages_available": len(pool) + len(others),
        "synthetic_made_from": sorted({p.dataset for p in makers}),
        "checks": {
            "distinct_titles": len(written_titles),
            "titles_unique": len(written_titles) == written,
            # real sets share some titles (the same article in two sets, different text);
            # every synthetic title is new
            "real_passages_with_an_earlier_real_title": shared_titles,
            "synthetic_title_collisions": collisions,
            "mean_chars": round(total_chars / written, 1),
        },
        "sha256": digest.hexdigest(),
    }
    (folder / "scale.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    info["seconds"] = round(seconds, 1)
    return info


def corpus_cmd(args: argparse.Namespace) -> None:
    data_dir = args.data_dir or os.environ.get("HOPGRAPH_DATA")
    if not data_dir:
        raise SystemExit("error: give --data-dir or set HOPGRAPH_DATA")
    t0 = time.perf_counter()
    info = make_corpus(
        args.dataset, args.n, args.out, data_dir, args.seed, overwrite=args.overwrite,
        progress=not args.quiet,
    )  # fmt: skip
    secs = time.perf_counter() - t0
    size = (Path(args.out) / "corpus.jsonl").stat().st_size
    print(f"wrote {args.out}: {info['passages']} passages, {size / 1e6:.1f} MB, {secs:.1f}s")
    for src, s in info["by_source"].items():
        print(f"  {src:<24} {s['passages']:>9} passages, mean {s['mean_chars']} chars")
    if info["duplicates_skipped"]:
        print(f"  duplicates skipped: {info['duplicates_skipped']}")
    print(f"  checks: {json.dumps(info['checks'])}")
    print(f"  sha256 {info['sha256']}")


# --------------------------------------------------------------------------- run: build + measure
RESULTS = Path(__file__).resolve().parent / "results" / "scale.json"
PLOT = Path(__file__).resolve().parents[1] / "docs" / "img" / "scale.png"
_MEASURED = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
rc = subprocess.run(sys.argv[1:]).returncode
print(json.dumps({"rc": rc, "seconds": time.perf_counter() - t0,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""
_LOADED = """
import json, sys, time
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
t0 = time.perf_counter()
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever
index = Index.load(sys.argv[1])
out = {"load_seconds": time.perf_counter() - t0, "rss_loaded_mb": rss()}
for method in sys.argv[3].split(","):
    get_retriever(index, method).search(sys.argv[2], k=10)
    out[f"rss_after_{method}_mb"] = rss()
print(json.dumps(out))
"""


_ANN_RECALL = """
import json, sys
import numpy as np
from hopgraph.index import Index
from hopgraph.retrieve.dense import DenseParams
dense = Index.load(sys.argv[1]).part("dense")
questions = [json.loads(line)["question"] for line in open(sys.argv[2])]
qvecs = dense.encode_queries(questions)
hits = []
for q in qvecs:
    exact = np.argsort(-dense.scores(q), kind="stable")[:10]
    approx, _ = dense.search_ann(q, 10, DenseParams().ef_search)  # the dense method's default
    hits.append(len(set(exact.tolist()) & set(approx.tolist())) / 10)
print(json.dumps({"ann_recall_at_10": float(np.mean(hits)), "questions": len(hits),
    "ef_search": DenseParams().ef_search}))
"""


def _measured(cmd: list[str]) -> dict[str, Any]:
    """Run ``cmd`` in a fresh process; its wall seconds and peak RSS (its own children's)."""
    r = subprocess.run(
        [sys.executable, "-c", _MEASURED, *cmd], stdout=subprocess.PIPE, text=True, check=False
    )
    out = json.loads(r.stdout.strip().splitlines()[-1])
    if out["rc"] != 0:
        raise SystemExit(f"failed ({out['rc']}): {' '.join(cmd)}")
    return out


def _hopgraph(*args: str) -> list[str]:
    return [sys.executable, "-m", "hopgraph.cli", *args]


def machine() -> dict[str, Any]:
    """CPU model and the flags that decide encoder speed, cores, memory."""
    info: dict[str, Any] = {"cores": os.cpu_count()}
    try:
        text = Path("/proc/cpuinfo").read_text()
        model = re.search(r"model name\s*:\s*(.+)", text)
        flags = set(re.search(r"flags\s*:\s*(.+)", text).group(1).split())  # type: ignore[union-attr]
        info["cpu"] = model.group(1).strip() if model else ""
        info["flags"] = sorted(
            f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags
        )
        mem = re.search(r"MemTotal:\s*(\d+)", Path("/proc/meminfo").read_text())
        info["mem_gb"] = round(int(mem.group(1)) / 2**20, 1) if mem else None
    except (OSError, AttributeError):
        pass
    return info


def disk_usage(index_dir: Path, n: int) -> dict[str, Any]:
    """Bytes per passage: all files but passages.jsonl (the text), per part, and vectors."""
    per_part: dict[str, int] = {}
    for f in (index_dir / "parts").rglob("*"):
        if f.is_file():
            part = f.relative_to(index_dir / "parts").parts[0]
            per_part[part] = per_part.get(part, 0) + f.stat().st_size
    other = sum(
        f.stat().st_size for f in index_dir.iterdir() if f.is_file() and f.name != "passages.jsonl"
    )
    total = sum(per_part.values()) + other
    return {
        "bytes_per_passage": round(total / n, 1),
        "text_bytes_per_passage": round((index_dir / "passages.jsonl").stat().st_size / n, 1),
        "by_part": {k: round(v / n, 1) for k, v in sorted(per_part.items())},
    }


def _eval(
    dataset: str,
    data_dir: str,
    methods: str,
    index: Path | None,
    tmp: Path,
    extra: list[str] | None = None,
) -> dict:
    out = tmp / f"eval-{'index' if index else 'pool'}.json"
    cmd = _hopgraph("eval", dataset, "--data-dir", data_dir, "--method", methods, "-q")
    cmd += ["--json", str(out)] + (["--index", str(index)] if index else []) + (extra or [])
    _measured(cmd)
    rows = json.loads(out.read_text())
    rows = rows if isinstance(rows, list) else [rows]
    keys = ("recall@5", "recall@10", "latency_ms_p50", "latency_ms_p95")
    return {r["base_method"]: {k: round(r[k], 4) for k in keys} for r in rows}


def built_index(
    dataset: str,
    n: int,
    work: str | os.PathLike[str],
    data_dir: str | os.PathLike[str],
    seed: int = 0,
    sets: Sequence[str] = (),
    batch_size: int | None = None,
    sources: Sequence[str] = SOURCES,
) -> tuple[Path, Path]:
    """``WORK/<dataset>-<n>/corpus`` and its default index ``…/index``, each made where missing:
    the corpus by :func:`make_corpus`, the index by ``hopgraph index --resume`` in its own
    process (a stopped build continues where it stopped), its wall seconds and peak RSS in
    ``…/build.json``. The scale benchmark's corpora, and the ranker recipe's scale training sets
    (benchmarks/default_ranker.py)."""
    root = Path(work).resolve() / f"{dataset}-{n}"
    corpus, index = root / "corpus", root / "index"
    if not (corpus / "scale.json").exists():
        make_corpus(dataset, n, corpus, data_dir, seed, sources=sources, progress=True)
    if not (index / "manifest.json").exists():
        cmd = _hopgraph("index", str(corpus), "-o", str(index), "--resume")
        cmd += ["--batch-size", str(batch_size)] if batch_size else []  # None: the CLI's
        for s in sets:
            cmd += ["--set", s]
        build = _measured(cmd)
        summary = {"wall_seconds": round(build["seconds"], 1),
                   "peak_rss_mb": round(build["peak_rss_mb"])}  # fmt: skip
        (root / "build.json").write_text(json.dumps(summary))
    return corpus, index


def run_cmd(args: argparse.Namespace) -> None:
    data_dir = args.data_dir or os.environ.get("HOPGRAPH_DATA")
    if not data_dir:
        raise SystemExit("error: give --data-dir or set HOPGRAPH_DATA")
    key = f"{args.dataset}-{args.n}"
    root = Path(args.work).resolve() / key
    corpus, index = built_index(
        args.dataset, args.n, args.work, data_dir, args.seed, args.sets, args.batch_size
    )
    result: dict[str, Any] = {"dataset": args.dataset, "n": args.n, "machine": machine()}
    result["index_options"] = list(args.sets)
    if (root / "build.json").exists():
        result["build"] = json.loads((root / "build.json").read_text())
    manifest = json.loads((index / "manifest.json").read_text())
    parts = {
        name: {
            "seconds": round(meta["build_seconds"], 1),
            "passages_per_second": round(args.n / max(meta["build_seconds"], 1e-9), 1),
            "options": meta["options"],
        }
        for name, meta in manifest["parts"].items()
    }
    result.setdefault("build", {})["parts"] = parts
    result["disk"] = disk_usage(index, args.n)
    questions = [json.loads(line)["question"] for line in open(corpus / "questions.jsonl")]
    r = subprocess.run(
        [sys.executable, "-c", _LOADED, str(index), questions[0], args.methods],
        stdout=subprocess.PIPE, text=True, check=True,
    )  # fmt: skip
    result["load"] = {k: round(v, 2) for k, v in json.loads(r.stdout).items()}
    if manifest["parts"].get("dense", {}).get("stats", {}).get("ann"):
        r = subprocess.run(
            [sys.executable, "-c", _ANN_RECALL, str(index), str(corpus / "questions.jsonl")],
            stdout=subprocess.PIPE, text=True, check=True,
        )  # fmt: skip
        result["ann"] = json.loads(r.stdout)
    result["eval"] = _eval(args.dataset, data_dir, args.methods, index, root)
    result["eval_pool"] = _eval(args.dataset, data_dir, args.methods, None, root)
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results[key] = result
    RESULTS.write_text(json.dumps(dict(sorted(results.items())), indent=2) + "\n")
    print(json.dumps(result, indent=2))


def plot_cmd(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = json.loads(RESULTS.read_text())
    by_set: dict[str, list[dict[str, Any]]] = {}
    for r in results.values():
        by_set.setdefault(r["dataset"], []).append(r)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for name, rows in sorted(by_set.items()):
        rows.sort(key=lambda r: r["n"])
        ns = [r["n"] for r in rows]
        axes[0].plot(ns, [r["build"]["wall_seconds"] / 60 for r in rows], "o-", label=name)
        axes[1].plot(ns, [r["build"]["peak_rss_mb"] / 1024 for r in rows], "o-", label="build")
        axes[1].plot(ns, [r["load"]["rss_loaded_mb"] / 1024 for r in rows], "s--", label="loaded")
        for method in rows[0]["eval"]:
            axes[2].plot(
                ns, [r["eval"][method]["latency_ms_p50"] for r in rows], "o-", label=method
            )
    titles = ("build, minutes", "peak RSS, GB", "query p50, ms")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("passages")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)
    print(f"wrote {PLOT}")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("corpus", help="write a deterministic N-passage corpus (unified layout)")
    c.add_argument("--dataset", required=True, help="the set whose pool and questions are kept")
    c.add_argument("--n", type=int, required=True, help="passages in the corpus")
    c.add_argument("--out", required=True, help="folder to write (outside the repository)")
    c.add_argument("--data-dir", default=None, help="shared data folder (or $HOPGRAPH_DATA)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--overwrite", action="store_true", help="replace an existing corpus.jsonl")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=corpus_cmd)
    r = sub.add_parser("run", help="make the corpus, build its index (resumable), measure it")
    r.add_argument("--dataset", required=True, help="the set whose pool and questions are kept")
    r.add_argument("--n", type=int, required=True, help="passages in the corpus")
    r.add_argument(
        "--work", required=True, help="folder for corpora and indexes (outside the repo)"
    )
    r.add_argument("--data-dir", default=None, help="shared data folder (or $HOPGRAPH_DATA)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--methods", default="bm25,dense,default", help="methods to evaluate")
    r.add_argument("--batch-size", type=int, default=10_000, help="hopgraph index --batch-size")
    r.add_argument("--set", dest="sets", action="append", default=[], help="index part option")
    r.set_defaults(func=run_cmd)
    pl = sub.add_parser("plot", help="draw docs/img/scale.png from benchmarks/results/scale.json")
    pl.set_defaults(func=plot_cmd)
    args = ap.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    sys.exit(main())
