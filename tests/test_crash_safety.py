"""A process killed at any point while it updates or builds an index leaves the last good index:
it loads (every checksum verified) and answers, and it is one of the states the writer saved."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import time
from pathlib import Path

import pytest

from hopgraph import atomic
from hopgraph.corpus import Corpus, Passage
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever

PARTS = ["sparse", "entities", "links", "corpus_graph"]
OPTIONS = {"entities": {"title_aliases": True}, "corpus_graph": {"knn": 0}}
KILLS = 56  # the issue asks for at least 50


def _passage(i: int) -> Passage:
    return Passage(f"new-{i}", f"Harbour Station {i}", f"Harbour Station {i} lies on the Velmora.")


def _states(base: list[str], steps: int) -> list[list[str]]:
    """Ids of the index after each update of :func:`_update_forever`."""
    ids, out = list(base), [list(base)]
    for i in range(steps):
        ids = [x for x in ids if x != f"new-{i - 3}"] + [f"new-{i}"]
        out.append(list(ids))
    return out


def _own_locks() -> None:
    """tqdm's write lock is a multiprocessing lock shared with the parent across fork: killed
    while holding it, the child would leave the parent waiting forever. Every tqdm class gets a
    lock of the child's own, subclasses included: one created before the fork (bm25s's
    ``tqdm.auto``) keeps its own copy of the shared lock otherwise, which once hung the suite."""
    import threading

    from tqdm import std

    lock = threading.RLock()
    classes = [std.tqdm]
    while classes:
        cls = classes.pop()
        cls.set_lock(lock)
        classes.extend(cls.__subclasses__())


def _update_forever(path: str, exchange: bool) -> None:
    """The writer: add a passage and delete an older one, save, again and again."""
    _own_locks()
    if not exchange:
        atomic._renameat2 = False  # the two-rename fallback of other systems
    index = Index.load(path)
    done = [int(x[4:]) for x in index.corpus.ids if x.startswith("new-")]
    i = max(done) + 1 if done else 0  # go on from the state the last writer left
    while True:
        index = index.updated(add=[_passage(i)], delete=[f"new-{i - 3}"] if i >= 3 else [])
        index.save(path)
        i += 1


def _build_forever(path: str, corpus: list[Passage], exchange: bool) -> None:
    """The writer: build an index of the first n passages and save it over the last one."""
    _own_locks()
    if not exchange:
        atomic._renameat2 = False
    n = 5
    while True:
        Index.build(Corpus(corpus[:n]), PARTS, OPTIONS, progress=False).save(path)
        n = n + 1 if n < len(corpus) else 5


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_killed_writers_leave_a_loadable_index(demo_dataset, tmp_path):
    ctx = mp.get_context("fork")  # the child starts at once, with everything imported
    corpus = list(demo_dataset.corpus)
    base = [p.id for p in corpus[:20]]
    updates = {tuple(s) for s in _states(base, 5000)}
    builds = {tuple(p.id for p in corpus[:n]) for n in range(5, len(corpus) + 1)}
    rng = random.Random(1234)
    debris = 0
    for run in range(KILLS):
        path = tmp_path / f"run{run % 4}"  # folders are reused: writers overwrite
        building = run % 4 >= 2
        exchange = run % 2 == 0
        if not (path / "manifest.json").exists():
            Index.build(Corpus(corpus[:20]), PARTS, OPTIONS, progress=False).save(path)
        if building:
            proc = ctx.Process(target=_build_forever, args=(str(path), corpus, exchange))
        else:
            proc = ctx.Process(target=_update_forever, args=(str(path), exchange))
        proc.start()
        time.sleep(rng.uniform(0.05, 0.8))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        assert proc.exitcode == -signal.SIGKILL, "the writer died before it was killed"
        debris += any(p.name.startswith(f".{path.name}.") for p in tmp_path.iterdir())

        index = Index.load(path)  # verifies the size and sha256 of every file
        ids = tuple(index.corpus.ids)
        assert ids in (builds if building else updates) | {tuple(base)}, f"run {run}: a mix"
        hits = get_retriever(index, "graph").search("Which river flows through Quellhaven?", 3)
        assert len(hits.ids) == 3
        if building and ids != tuple(base):
            # the next update run starts from the base again
            Index.build(Corpus(corpus[:20]), PARTS, OPTIONS, progress=False).save(path)
    # some kills landed mid-write (a temp or previous folder was left beside the index) ...
    assert debris >= 5, f"only {debris} of {KILLS} kills interrupted a write"
    # ... and the next writer cleans up after the dead ones
    for run in range(4):
        path = tmp_path / f"run{run}"
        Index.load(path).save(path)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_crash_between_the_fallback_renames_is_recovered(tmp_path, demo_dataset):
    """The state the two-rename fallback leaves if killed between its renames: no index folder,
    the previous one beside it. Loading renames it back."""
    path = tmp_path / "ix"
    Index.build(Corpus(demo_dataset.corpus[:6]), ["sparse"], progress=False).save(path)
    os.rename(path, tmp_path / ".ix.old-999999-abcdef12")
    assert not path.exists()
    index = Index.load(path)
    assert len(index) == 6 and path.is_dir()


def test_readers_leave_a_locked_swap_alone(tmp_path, demo_dataset):
    """While a writer holds the folder's lock it may be between the fallback's two renames
    (NFS has no atomic exchange): a reader must not put the old folder back under it. Once the
    lock is free (the writer died), the next reader recovers; a new lock holder recovers too."""
    from hopgraph.atomic import writer_lock
    from hopgraph.errors import IndexError_

    path = tmp_path / "ix"
    Index.build(Corpus(demo_dataset.corpus[:6]), ["sparse"], progress=False).save(path)
    old = tmp_path / ".ix.old-999999-abcdef12"
    with writer_lock(path):
        os.rename(path, old)  # this writer is "between its renames"
        with pytest.raises(IndexError_):
            Index.load(path)
        assert old.is_dir() and not path.exists()  # left alone
        os.rename(old, path)  # the writer finishes its swap
    assert len(Index.load(path)) == 6
    os.rename(path, old)  # a writer died between its renames: nobody holds the lock
    assert len(Index.load(path)) == 6 and not old.exists()
    os.rename(path, old)
    with writer_lock(path):  # the next writer recovers as it takes the lock
        assert path.is_dir() and not old.exists()


def test_remove_debris_spares_live_writers(tmp_path):
    path = tmp_path / "ix"
    path.mkdir()
    mine = tmp_path / f".ix.tmp-{os.getpid()}-00000000"
    dead = tmp_path / ".ix.tmp-999999-00000000"
    for d in (mine, dead):
        d.mkdir()
    atomic.remove_debris(Path(path))
    assert mine.exists() and not dead.exists()
