"""The segments stage of a streaming build (:mod:`hopgraph.index.streaming`): the batches not
written yet, each part's segment of each (:func:`~hopgraph.index.segment.write_batch`) in this
process or on a Ray cluster (:mod:`hopgraph.index.ray_engine`), committed one by one, with the
indexing bar.

A batch's folder, ``<work>/<under>/<batch>/``, is written under a temporary name and renamed
when complete (with ``segment.json``: its rows and the seconds each part took), so it is there
whole or not at all, and a stopped build resumes at the first batch missing.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from hopgraph.atomic import fsync_tree, write_synced
from hopgraph.corpus import Corpus
from hopgraph.corpus.filecorpus import FileCorpus
from hopgraph.errors import HopgraphError
from hopgraph.index.segment import write_batch

ENGINES = ("local", "ray")


@dataclass(frozen=True)
class EngineOptions:
    """Where the segments' per-passage work runs: ``local`` (this process) or ``ray``
    (Ray Data on the cluster at ``address``, a local one when None; ``workers`` actors of
    ``cpus_per_worker`` CPUs, default as many as the cluster holds)."""

    engine: str = "local"
    address: str | None = None
    workers: int | None = None
    cpus_per_worker: int = 1

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise HopgraphError(f"engine must be one of {list(ENGINES)}, got {self.engine!r}")


@dataclass(frozen=True)
class BuildJob:
    """What every stage of one build works with (``say``: the build's log, a line at a time)."""

    corpus: FileCorpus
    work: Path
    classes: dict[str, Any]
    options: dict[str, Any]
    batch_size: int
    progress: bool
    engine: EngineOptions
    say: Any


class _BatchBar:
    """Moves the indexing bar within a batch as its parts report passages done. Each part
    stands for its share of the seconds the parts took on the batch before (equal shares
    before any), so that the bar moves at an even pace; a batch adds exactly its passages."""

    def __init__(self, bar: Any, names: list[str], seconds: dict[str, float]) -> None:
        self.bar, self.names = bar, names
        self.weigh(seconds)

    def weigh(self, seconds: dict[str, float]) -> None:
        """Each part's (start, share) of a batch, from the seconds the parts took on one."""
        total = sum(seconds.get(n, 0.0) for n in self.names)
        self.span: dict[str, tuple[float, float]] = {}
        start = 0.0
        for n in self.names:
            share = seconds.get(n, 0.0) / total if total > 0 else 1 / len(self.names)
            self.span[n] = (start, share)
            start += share

    def write(
        self, batch: Corpus, options: dict[str, Any], contexts: dict[str, Any], dest: Path
    ) -> dict[str, float]:
        """:func:`write_batch`, the bar moving as it goes."""
        size, shown = len(batch), 0

        def report(name: str, done: int) -> None:
            nonlocal shown
            start, share = self.span[name]
            at = min(size, int(size * (start + share * min(done, size) / size)))
            if at > shown:
                self.bar.update(at - shown)
                shown = at

        secs = write_batch(batch, self.names, options, contexts, dest, report)
        self.bar.update(size - shown)  # what rounding left: the batch counts size passages
        self.weigh(secs)
        return secs


def commit_segment(
    tmp: Path, folder: Path, rows: tuple[int, int], secs: dict[str, float], **extra: Any
) -> None:
    meta = {"rows": list(rows), "seconds": secs, **extra}
    write_synced(tmp / "segment.json", json.dumps(meta))
    fsync_tree(tmp)
    os.replace(tmp, folder)  # the batch is complete


def segments_stage(job: BuildJob, parts: list[str], under: str = "segments") -> dict[str, float]:
    """Write the missing segments of the segmentable ``parts`` into ``work/<under>/<batch>/``;
    returns the seconds each part spent in all of them."""
    corpus, work, classes, options = job.corpus, job.work, job.classes, job.options
    batch_size, progress, engine = job.batch_size, job.progress, job.engine
    names = [n for n in parts if classes[n].segmentable]
    if not names:
        return {}
    root = work / under
    root.mkdir(exist_ok=True)
    for stale in root.glob(".*.tmp"):  # a batch that was being written when the build stopped
        shutil.rmtree(stale)
    n = len(corpus)
    folders = segment_folders(work, n, batch_size, under)
    done = [f for f in folders if f.exists()]
    contexts = {}
    if len(done) < len(folders):  # what each batch needs from the whole corpus (aliases)
        contexts = {name: classes[name].segment_context(corpus, options[name]) for name in names}
    todo = [
        (b, b * batch_size, min(n, (b + 1) * batch_size))
        for b, f in enumerate(folders)
        if not f.exists()
    ]
    bar = tqdm(
        total=n,
        initial=sum(segment_rows(f) for f in done),
        desc="indexing" if under == "segments" else "encoding",
        unit="passage",
        disable=not progress,
        smoothing=0.05,
    )
    try:
        if engine.engine == "ray" and todo:
            from hopgraph.index.ray_engine import ray_segments, unpack_folder

            bar.set_postfix_str("ray", refresh=False)
            made = ray_segments(
                corpus.lines,
                todo,
                names,
                options,
                contexts,
                address=engine.address,
                workers=engine.workers,
                cpus_per_worker=engine.cpus_per_worker,
                source=str(corpus.source) if corpus.source else None,
            )
            rows = {b: (lo, hi) for b, lo, hi in todo}
            for b, packed, info in made:
                tmp = root / f".{folders[b].name}.tmp"
                tmp.mkdir()
                unpack_folder(packed, tmp)
                commit_segment(tmp, folders[b], rows[b], info["seconds"], node=info["node"])
                bar.update(rows[b][1] - rows[b][0])
        else:
            last = json.loads((done[-1] / "segment.json").read_text())["seconds"] if done else {}
            moving = _BatchBar(bar, names, last)
            bar.set_postfix_str(", ".join(names), refresh=False)
            for b, lo, hi in todo:
                batch = Corpus(corpus[lo:hi], source=corpus.source)
                tmp = root / f".{folders[b].name}.tmp"
                tmp.mkdir()
                secs = moving.write(batch, options, contexts, tmp)
                commit_segment(tmp, folders[b], (lo, hi), secs)
    finally:
        bar.close()
    totals: dict[str, float] = {}
    for folder in folders:
        for name, s in json.loads((folder / "segment.json").read_text())["seconds"].items():
            totals[name] = totals.get(name, 0.0) + s
    return totals


def segment_folders(work: Path, n: int, batch_size: int, under: str = "segments") -> list[Path]:
    return [work / under / f"{b:06d}" for b in range((n + batch_size - 1) // batch_size)]


def segment_rows(folder: Path) -> int:
    lo, hi = json.loads((folder / "segment.json").read_text())["rows"]
    return hi - lo
