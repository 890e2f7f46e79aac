"""ViewCorpus: the kept rows of a base corpus and the added passages, read as one corpus."""

from __future__ import annotations

import random

import pytest

from hopgraph.corpus import Corpus, Passage
from hopgraph.corpus.filecorpus import FileCorpus, write_passages
from hopgraph.corpus.view import ViewCorpus
from hopgraph.errors import CorpusError


def test_a_view_of_a_view_reads_as_the_list_it_stands_for(tmp_path):
    passages = [Passage(f"p{i}", f"T{i}", f"text {i}") for i in range(50)]
    offsets, ids = write_passages(passages, tmp_path / "p.jsonl")
    base = FileCorpus(tmp_path / "p.jsonl", offsets, ids)
    rng = random.Random(0)
    want = list(passages)
    view = base
    for step in range(4):
        keep = sorted(rng.sample(range(len(want)), len(want) - 5))
        added = [Passage(f"n{step}-{i}", "", f"new {step} {i}") for i in range(3)]
        view = ViewCorpus(view, keep, added)
        want = [want[r] for r in keep] + added
        assert isinstance(view.base, FileCorpus)  # flattened: one base whatever the depth
        assert list(view) == want and view.ids == [p.id for p in want] and len(view) == len(want)
        assert [view[i] for i in range(len(view))] == want
        for lo, hi in (
            (0, len(want)),
            (3, 20),
            (len(want) - 4, len(want)),
            (5, 5),
            (len(want) - 6, len(want) + 9),
        ):
            assert view[lo:hi] == want[lo:hi], (lo, hi)
        assert view.get(want[7].id) == want[7] and view.position(want[-1].id) == len(want) - 1
    with pytest.raises(CorpusError, match="duplicate"):
        ViewCorpus(Corpus(passages[:3]), [0, 1], [passages[0]])


def test_duplicate_ids_are_named_by_every_corpus_kind(tmp_path):
    passages = [Passage(f"p{i}", "", f"text {i}") for i in range(5)]
    offsets, ids = write_passages([*passages, Passage("p3", "", "again")], tmp_path / "d.jsonl")
    with pytest.raises(CorpusError, match="duplicate passage id 'p3'"):
        FileCorpus(tmp_path / "d.jsonl", offsets, ids)
    offsets, ids = write_passages(passages, tmp_path / "p.jsonl")
    base = FileCorpus(tmp_path / "p.jsonl", offsets, ids)
    assert [base.position(i) for i in ids] == list(range(5))
    with pytest.raises(CorpusError, match="duplicate passage id 'p1'"):
        ViewCorpus(base, [0, 1, 2], [Passage("p1", "", "again")])
    view = ViewCorpus(base, [0, 2], [Passage("p1", "", "replaced")])  # deleted, added again
    assert [view.position(i) for i in ("p0", "p2", "p1")] == [0, 1, 2]
