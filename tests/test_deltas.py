"""Commits that write only what changed: an update saved into its folder is a delta (the added
passages, the deleted ids, the models' outputs) and a new manifest; loading replays the deltas
on the base and gives what the updated index gives, and a fresh build too. Compaction writes a
new base."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_updates import FAST_OPTIONS, _random_updates, assert_same_rankings

from hopgraph.corpus import Corpus, Passage
from hopgraph.errors import StorageError
from hopgraph.index import Index
from hopgraph.index.store import DeltaPolicy
from hopgraph.retrieve import get_retriever

PARTS = ["sparse", "dense", "entities"]
OPTIONS = {"entities": {"title_aliases": True, "alias_mentions": True}}


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: (inode, mtime_ns), to see which a commit wrote."""
    return {
        p.relative_to(root).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


def _rankings(index: Index, queries: list[str]) -> list[list[str]]:
    out = []
    for method in ("bm25", "dense", "default"):
        r = get_retriever(index, method)
        out += [r.search(q, 10).ids for q in queries]
    return out


@pytest.fixture(scope="module")
def setting(demo_dataset):
    corpus = demo_dataset.corpus
    queries = [q.text for q in demo_dataset.questions][:12]
    return corpus, queries


def test_an_update_commits_only_a_delta_and_loads_as_a_rebuild(setting, tmp_path):
    corpus, queries = setting
    path = tmp_path / "ix"
    Index.build(Corpus(corpus[:30]), PARTS, OPTIONS, progress=False).save(path)
    index = Index.load(path)
    before = _files(path)
    steps = [
        (list(corpus[30:36]), [corpus[3].id]),
        (list(corpus[36:]), [corpus[31].id, corpus[7].id]),
        ([], [corpus[9].id]),  # a delete alone: no vectors to keep
    ]
    for add, delete in steps:
        index = index.updated(add=add, delete=delete)
        index.save(path)
    after = _files(path)
    changed = sorted(k for k in after if before.get(k) != after[k])
    # the base is untouched; the manifest and three delta folders are all that was written
    assert all(k == "manifest.json" or k.startswith("deltas/") for k in changed), changed
    assert {k.split("/")[1] for k in changed if k.startswith("deltas/")} == {
        d.name for d in (path / "deltas").iterdir()
    } and len(list((path / "deltas").iterdir())) == 3
    written = sum((path / k).stat().st_size for k in changed)
    total = sum((path / k).stat().st_size for k in after)
    assert written < 0.4 * total, (written, total)  # 14 of 44 passages came: ~30 %

    loaded = Index.load(path)
    assert loaded.generation == index.generation == 3
    assert loaded.corpus.ids == index.corpus.ids
    rebuilt = Index.build(loaded.corpus, PARTS, OPTIONS, progress=False)
    want = _rankings(rebuilt, queries)
    assert _rankings(loaded, queries) == want
    assert _rankings(index, queries) == want
    for name in PARTS:
        assert loaded.part(name).stats() == rebuilt.part(name).stats(), name
    ea, eb = loaded.part("entities"), rebuilt.part("entities")
    assert ea.found_dict() == eb.found_dict() and (ea.mentions != eb.mentions).nnz == 0
    np.testing.assert_allclose(
        np.asarray(loaded.part("dense").embeddings), np.asarray(rebuilt.part("dense").embeddings),
        atol=1e-5,
    )  # fmt: skip

    # compaction: one base again, the same rankings, loads without replaying
    loaded.compact()
    assert not (path / "deltas").exists() or not any((path / "deltas").iterdir())
    again = Index.load(path)
    assert again.generation == 3 and not again.deltas
    assert _rankings(again, queries) == want


def test_a_reader_replays_only_the_deltas_committed_since(setting, tmp_path, monkeypatch):
    corpus, queries = setting
    path = tmp_path / "ix"
    Index.build(Corpus(corpus[:30]), PARTS, OPTIONS, progress=False).save(path)
    writer, reader = Index.load(path), Index.load(path)
    writer = writer.updated(add=list(corpus[30:34]))
    writer.save(path)
    reader = reader.reloaded()
    assert reader.generation == 1 and reader.corpus.ids == writer.corpus.ids
    writer = writer.updated(add=list(corpus[34:40]), delete=[corpus[0].id])
    writer.save(path)

    def no_full_load(*a, **k):
        raise AssertionError("the reader loaded the whole folder again")

    monkeypatch.setattr(Index, "load", no_full_load)
    reader = reader.reloaded()
    monkeypatch.undo()
    assert reader.generation == 2 and reader.corpus.ids == writer.corpus.ids
    assert _rankings(reader, queries) == _rankings(writer, queries)
    # after a compaction the base changed: the reader loads the folder anew
    writer.compact()
    reader = reader.reloaded()
    assert reader.base == writer.base and reader.generation == 2


def test_the_policy_compacts_when_deltas_grow(setting, tmp_path):
    corpus, _ = setting
    path = tmp_path / "ix"
    Index.build(Corpus(corpus[:30]), ["sparse", "entities"], progress=False).save(path)
    index = Index.load(path)
    index.policy = DeltaPolicy(max_deltas=2, max_share=1.0, min_rows=1000)
    for i in range(2):
        index = index.updated(add=[corpus[30 + i]])
        index.save(path)
        assert len(index.deltas) == i + 1
    index = index.updated(add=[corpus[32], corpus[33]])
    index.save(path)  # a third delta would pass max_deltas: a new base instead
    assert index.deltas == [] and Index.load(path).generation == 3
    index.policy = DeltaPolicy(max_deltas=99, max_share=0.1, min_rows=2)
    index = index.updated(add=list(corpus[34:38]))  # 4 rows > max(0.1 * 38, 2)
    index.save(path)
    assert index.deltas == []


def test_a_commit_that_fails_midway_leaves_the_previous_generation(setting, tmp_path, monkeypatch):
    import hopgraph.index.folder as folder  # where commits write

    corpus, queries = setting
    path = tmp_path / "ix"
    Index.build(Corpus(corpus[:30]), ["sparse", "entities"], progress=False).save(path)
    index = Index.load(path).updated(add=list(corpus[30:33]))
    index.save(path)

    def boom(folder, payload):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(folder, "save_payload", boom)
    with pytest.raises(StorageError, match="No space left on device"):
        index.updated(delete=[corpus[1].id]).save(path)
    monkeypatch.undo()
    loaded = Index.load(path)
    assert loaded.generation == 1 and len(loaded) == 33
    assert len(list((path / "deltas").iterdir())) == 1  # the failed commit's folder is gone
    index.updated(delete=[corpus[2].id]).save(path)
    assert len(list((path / "deltas").iterdir())) == 2
    assert Index.load(path).generation == 2


def test_new_parts_or_another_folder_write_the_whole_index(setting, tmp_path):
    corpus, _ = setting
    path = tmp_path / "ix"
    Index.build(Corpus(corpus[:30]), ["sparse"], progress=False).save(path)
    index = Index.load(path).updated(add=[corpus[30]])
    index.add_parts(["entities"])
    index.save(path)
    assert index.deltas == [] and Index.load(path).has("entities")
    other = Index.load(path).updated(add=[corpus[31]])
    other.save(tmp_path / "copy")  # another folder: a whole index there
    assert not (tmp_path / "copy" / "deltas").exists() or not os.listdir(
        tmp_path / "copy" / "deltas"
    )
    assert len(Index.load(tmp_path / "copy")) == 32


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 10**6),
    start=st.integers(3, 40),
    steps=st.integers(1, 5),
    compact_at=st.integers(-1, 4),
)
def test_any_sequence_of_commits_and_compactions_loads_as_a_rebuild(
    demo_dataset, tmp_path_factory, seed, start, steps, compact_at
):
    """Random adds, deletes and edited re-adds, each committed as a delta, with a compaction at
    a random step (or none): the folder loads (replaying the deltas) as a fresh build of the
    final corpus ranks and stores, and so does a reader that followed every commit."""
    corpus = demo_dataset.corpus
    queries = [q.text for q in demo_dataset.questions[:6]]
    path = tmp_path_factory.mktemp("commits") / "ix"
    parts, options = ["sparse", "entities"], {"entities": FAST_OPTIONS["entities"]}
    Index.build(Corpus(corpus[:start]), parts, options, progress=False).save(path)
    index, reader = Index.load(path), Index.load(path)
    for step, (add, delete) in enumerate(_random_updates(corpus, start, steps, seed)):
        index = index.updated(add=add, delete=delete)
        index.save(path, compact=True if step == compact_at else None)
        reader = reader.reloaded()
        assert reader.generation == index.generation == step + 1
    loaded = Index.load(path)
    rebuilt = Index.build(loaded.corpus, parts, options, progress=False)
    assert loaded.corpus.ids == rebuilt.corpus.ids == reader.corpus.ids
    methods = [("bm25", {}), ("graph", {})]
    for ix in (loaded, reader):
        assert_same_rankings(ix, rebuilt, methods, queries)
        ea, eb = ix.part("entities"), rebuilt.part("entities")
        assert ea.names == eb.names and (ea.mentions != eb.mentions).nnz == 0
        assert ea.found_dict() == eb.found_dict()
        for q in queries:
            np.testing.assert_array_equal(
                ix.part("sparse").scores(q), rebuilt.part("sparse").scores(q)
            )


def test_several_deltas_replay_as_one_change_equal_to_one_by_one(setting, tmp_path):
    """Loading a folder with several deltas replays them as one change (one re-assembly of each
    part): the same passages, vectors, entity structures, found aliases and rankings as
    replaying them one at a time, through adds, deletes, a passage added then deleted, and a
    deleted id added again."""
    import json
    import shutil

    from hopgraph.index.store import read_manifest

    corpus, queries = setting
    path = tmp_path / "ix"
    Index.build(Corpus(corpus[:30]), PARTS, OPTIONS, progress=False).save(path)
    index = Index.load(path)
    back = Passage(corpus[4].id, corpus[4].title, corpus[4].text + " Edited.")
    steps = [
        (list(corpus[30:35]), [corpus[3].id, corpus[4].id]),
        ([*corpus[35:38], back], [corpus[31].id]),
        ([], [corpus[36].id, corpus[10].id]),
        (list(corpus[38:]), []),
    ]
    for add, delete in steps:
        index = index.updated(add=add, delete=delete)
        index.save(path, compact=False)
    loaded = Index.load(path)  # four deltas: replayed at once
    assert loaded.generation == 4 and len(loaded.deltas) == 4 and loaded.saved_deltas == 4
    listed = read_manifest(path)["deltas"]
    assert len(listed) == 4
    only_base = tmp_path / "base"  # the same base without its deltas
    shutil.copytree(path, only_base)
    manifest = read_manifest(only_base)
    manifest["generation"] -= len(listed)
    manifest["deltas"] = []
    (only_base / "manifest.json").write_text(json.dumps(manifest))
    start = Index.load(only_base, verify=False)
    one_by_one = start
    for entry in listed:
        one_by_one = one_by_one.replayed(path, [entry])
    at_once = start.replayed(path, listed)
    assert at_once.corpus.ids == one_by_one.corpus.ids == index.corpus.ids == loaded.corpus.ids
    assert at_once.corpus.get(corpus[4].id).text.endswith("Edited.")
    np.testing.assert_array_equal(
        at_once.part("dense").embeddings, one_by_one.part("dense").embeddings
    )
    ea, eb = at_once.part("entities"), one_by_one.part("entities")
    assert ea.names == eb.names and ea.aliases == eb.aliases
    assert (ea.mentions != eb.mentions).nnz == 0 and ea.found_dict() == eb.found_dict()
    sa, sb = at_once.part("sparse"), one_by_one.part("sparse")  # term ids follow arrival order
    assert set(sa.vocab) == set(sb.vocab) and sa.stats() == sb.stats()
    for q in queries:
        np.testing.assert_array_equal(sa.scores(q), sb.scores(q))
    assert _rankings(at_once, queries) == _rankings(one_by_one, queries)
    assert _rankings(loaded, queries) == _rankings(index, queries)
    assert [d.generation for d in at_once.deltas] == [d.generation for d in one_by_one.deltas]
