"""A process killed at any point while it updates or builds an index leaves the last good index:
it loads (every checksum verified) and answers, and it is one of the states the writer saved."""

from __future__ import annotations

import faulthandler
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import signal
import time
import warnings
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


def _commit_killed_at(
    path: str, step: int, add: list[Passage], delete: list[str], stack: str
) -> None:
    """Child: load, update, commit a delta, SIGKILLed just before its ``step``-th filesystem
    operation (a folder made, a file synced, a rename, a file written). SIGUSR1 writes every
    thread's stack to ``stack`` (how the parent sees where a hung child waits)."""
    _own_locks()
    faulthandler.register(signal.SIGUSR1, file=open(stack, "w"), all_threads=True)  # noqa: SIM115
    import hopgraph.index.folder as folder  # where commits write

    calls = {"n": 0}

    def counted(fn):
        def wrapper(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == step:
                os.kill(os.getpid(), signal.SIGKILL)
            return fn(*args, **kwargs)

        return wrapper

    index = Index.load(path).updated(add=add, delete=delete)
    for name in ("write_passages", "save_payload", "write_synced", "fsync_tree", "fsync_dir"):
        setattr(folder, name, counted(getattr(folder, name)))
    os.mkdir, os.rename, os.fsync = counted(os.mkdir), counted(os.rename), counted(os.fsync)
    index.save(path)
    os._exit(0)  # not killed: the commit has fewer steps than `step`


def _run_child(ctx, path: Path, pristine: Path, args: tuple, before: list, after: list):
    """Run one killed commit in a forked child and return it, ended. A forked child of this
    many-threaded process can deadlock on a lock another thread held at the fork (it happened
    once in a full suite run, never alone): such a child is stopped after 120 s with its stacks
    reported (a warning), killed, which is a kill at some point of the commit, so the folder must
    still load as the old or the new generation, and the step is run again from the same state.
    A second hang fails the test with both stacks."""
    stacks = []
    for _ in range(2):
        stack = path.parent / "child-stack.txt"
        child = ctx.Process(target=_commit_killed_at, args=(*args, str(stack)))
        child.start()
        child.join(120)
        if child.exitcode is not None:
            return child
        os.kill(child.pid, signal.SIGUSR1)
        time.sleep(2)
        child.kill()
        child.join()
        stacks.append(stack.read_text() if stack.exists() else "(no stack written)")
        warnings.warn(
            f"a forked commit hung at step {args[1]}, retried:\n{stacks[-1]}", stacklevel=2
        )
        assert Index.load(path).corpus.ids in (before, after)  # killed where it hung
        shutil.rmtree(path)
        shutil.copytree(pristine, path)
    pytest.fail(f"the forked commit hung twice at step {args[1]}:\n" + "\n".join(stacks))


def test_a_commit_killed_before_any_of_its_steps_leaves_a_generation(tmp_path, demo_dataset):
    """A delta commit is killed (SIGKILL) before each of its filesystem operations in turn:
    the folder then loads, every checksum verified, as the previous generation or the new one,
    never anything else, and the next commit goes on from it and clears the debris."""
    corpus = demo_dataset.corpus
    path = tmp_path / "ix"
    parts, options = ["sparse", "dense", "entities"], {"entities": {"title_aliases": True}}
    Index.build(Corpus(corpus[:30]), parts, options, progress=False).save(path)
    first = Index.load(path).updated(add=list(corpus[30:33]))
    first.save(path)  # one delta already: the killed commit adds the second
    before = Index.load(path).corpus.ids
    pristine = tmp_path / "pristine"
    shutil.copytree(path, pristine)
    add, delete = list(corpus[33:36]), [corpus[1].id]
    after = [i for i in before if i != corpus[1].id] + [p.id for p in add]
    ctx = mp.get_context("fork")
    seen = set()
    last_debris: set[str] = set()
    for step in range(1, 200):
        shutil.rmtree(path)
        shutil.copytree(pristine, path)  # each kill lands on the same commit
        child = _run_child(ctx, path, pristine, (str(path), step, add, delete), before, after)
        loaded = Index.load(path)  # every checksum verified
        state = loaded.corpus.ids
        assert state in (before, after), step
        seen.add("new" if state == after else "old")
        if child.exitcode == 0:  # the commit ran to its end: every step was tried
            assert state == after and loaded.generation == 2
            break
        assert child.exitcode == -signal.SIGKILL
        # before the manifest's rename the old generation, after it the new one, for good
        assert loaded.generation == (2 if state == after else 1)
        assert not ("new" in seen and state == before), step
        debris = path / "deltas"
        if state == before and step > 1:  # what the killed commit left is not listed
            kept = {d.name for d in debris.iterdir()} - {
                d.name for d in (pristine / "deltas").iterdir()
            }
            last_debris = kept or last_debris
    else:
        pytest.fail("the commit never completed")
    assert seen == {"old", "new"} and step > 8  # mkdirs, writes, syncs, renames
    assert last_debris  # some kills left a half-written delta folder ...
    # ... which the next commit clears: kill once more mid-commit, then commit
    shutil.rmtree(path)
    shutil.copytree(pristine, path)
    child = _run_child(ctx, path, pristine, (str(path), 6, add, delete), before, after)
    assert child.exitcode == -signal.SIGKILL and len(list((path / "deltas").iterdir())) == 2
    nxt = Index.load(path).updated(delete=[corpus[2].id])
    nxt.save(path)
    listed = {
        d["folder"].rpartition("/")[2]
        for d in json.loads((path / "manifest.json").read_text())["deltas"]
    }
    assert {d.name for d in (path / "deltas").iterdir()} == listed and len(listed) == 2
    assert get_retriever(Index.load(path), "bm25").search(corpus[35].title, 3).ids


def test_a_flipped_byte_in_any_file_is_caught_at_load_naming_the_file(tmp_path, demo_dataset):
    """Every kind of file of an index (passages, ids, offsets, each part's arrays and JSON,
    the vectors' graph, a delta's passages, deletions and payloads): one byte flipped, and
    loading refuses, naming the file."""
    from hopgraph.errors import IndexError_

    corpus = demo_dataset.corpus
    path = tmp_path / "ix"
    options = {"entities": {"title_aliases": True, "alias_mentions": True}}
    options["dense"] = {"ann_min_passages": 10}  # the HNSW graph file too
    Index.build(Corpus(corpus[:40]), ["sparse", "dense", "entities"], options, progress=False).save(
        path
    )
    Index.load(path).updated(add=list(corpus[40:]), delete=[corpus[0].id]).save(path)
    files = json.loads((path / "manifest.json").read_text())["files"]
    kinds = {Path(rel).name.split(".", 1)[-1] for rel in files}
    assert {"jsonl", "npy", "json", "usearch"} <= kinds and any(
        r.startswith("deltas/") for r in files
    )
    for rel in files:
        f = path / rel
        data = bytearray(f.read_bytes())
        if not data:
            continue
        i = len(data) // 2
        data[i] ^= 0x01
        f.write_bytes(bytes(data))
        with pytest.raises(IndexError_, match=re.escape(rel)):
            Index.load(path)
        data[i] ^= 0x01
        f.write_bytes(bytes(data))
    assert len(Index.load(path)) == len(corpus) - 1


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs (needs root, as on CI; skipped where mounting is not allowed)."""
    import subprocess

    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_gives_a_clear_error_and_keeps_the_last_generation(small_disk, demo_dataset):
    """Onto a full disk: a commit, a compaction and an update through the HTTP API fail with a
    message saying so, and the folder loads as the generation it had."""
    from fastapi.testclient import TestClient

    from hopgraph.errors import StorageError
    from hopgraph.serve import create_app

    corpus = demo_dataset.corpus
    path = small_disk / "ix"
    Index.build(Corpus(corpus[:40]), ["sparse", "entities"], progress=False).save(path)
    Index.load(path).updated(add=[corpus[40]]).save(path)  # generation 1, as a delta
    big = Passage("big", "A long page", "Velmora harbour station. " * 200_000)  # 5 MB
    with pytest.raises(StorageError, match="No space left on device.*Nothing was changed"):
        Index.load(path).updated(add=[big]).save(path)
    loaded = Index.load(path)  # every checksum verified
    assert loaded.generation == 1 and "big" not in loaded.corpus
    assert len(list((path / "deltas").iterdir())) == 1  # the failed commit's folder is gone
    # a compaction writes a whole copy beside the folder: fill the disk so it cannot
    free = os.statvfs(small_disk)
    (small_disk / "filler").write_bytes(b"\0" * max(0, free.f_bavail * free.f_frsize - 20_000))
    with pytest.raises(StorageError, match="No space left on device"):
        Index.load(path).compact()
    assert Index.load(path).generation == 1
    assert not [p for p in small_disk.iterdir() if p.name.startswith(".ix.")]  # no half copy
    with TestClient(create_app(str(path))) as client:
        r = client.post("/passages", json={"passages": [big.to_dict()]})
        assert r.status_code == 507 and r.json()["error"]["type"] == "insufficient_storage"
        assert "No space left on device" in r.json()["error"]["message"]
        assert client.get("/health").json()["generation"] == 1
    (small_disk / "filler").unlink()
    Index.load(path).updated(add=[corpus[41]]).save(path)  # with space again, it goes on
    assert Index.load(path).generation == 2
