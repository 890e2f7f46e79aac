"""The dense part's HNSW graph (usearch), built from a size on, and float16 vectors: saved and
memory-mapped, deterministic, and searched with exact re-scoring."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from hopgraph.corpus import load_corpus, load_dataset
from hopgraph.data import demo_dataset_path
from hopgraph.index import Index
from hopgraph.index.ann import AnnIndex
from hopgraph.index.dense import DenseOptions
from hopgraph.retrieve import get_retriever


@pytest.fixture(scope="module")
def exact_index():
    return Index.build(load_corpus(demo_dataset_path()), ["dense"], progress=False)


@pytest.fixture(scope="module")
def ann_index(tmp_path_factory, exact_index):
    """The same vectors, with the graph forced on (ann_min_passages below the corpus size)."""
    path = tmp_path_factory.mktemp("ann") / "ix"
    Index.build(
        load_corpus(demo_dataset_path()), ["dense"],
        {"dense": {"ann_min_passages": 10, "vectors": "float16"}}, progress=False,
    ).save(path)  # fmt: skip
    return Index.load(path)


def test_graph_from_the_threshold_on():
    small, big = DenseOptions(), DenseOptions(ann_min_passages=10)
    assert not small.uses_ann(44) and small.stored_dtype(44) is np.float32
    assert big.uses_ann(44) and big.stored_dtype(44) is np.float32
    assert DenseOptions(vectors="auto", ann_min_passages=10).stored_dtype(44) is np.float16
    assert DenseOptions(ann="none").stored_dtype(10**7) is np.float32
    assert DenseOptions(ann="hnsw", vectors="float32").stored_dtype(1) is np.float32


def test_loaded_index_has_a_mapped_graph_and_float16_vectors(ann_index, exact_index):
    dense = ann_index.part("dense")
    assert dense.ann is not None and len(dense.ann) == len(ann_index)
    assert dense.embeddings.dtype == np.float16
    assert isinstance(dense.embeddings, np.memmap)
    assert ann_index.info()["parts"]["dense"]["stats"]["ann"] is True
    assert exact_index.part("dense").ann is None  # below the threshold: exact search only
    # float16 storage keeps cosines to within a rounding of float32
    q = exact_index.part("dense").embeddings[3]
    np.testing.assert_allclose(dense.scores(q), exact_index.part("dense").scores(q), atol=2e-3)


def test_ann_search_finds_what_exact_search_finds(ann_index, exact_index):
    """On 44 passages the graph is complete: the same top 10 as exact search, for every demo
    question, with exact cosines (re-scored from the stored vectors)."""
    questions = [q.text for q in load_dataset(demo_dataset_path()).questions]
    for q in questions:
        got = get_retriever(ann_index, "dense").search(q, k=10)  # mode auto: the graph
        want = get_retriever(exact_index, "dense", mode="exact").search(q, k=10)
        assert [h.id for h in got] == [h.id for h in want]
        np.testing.assert_allclose([h.score for h in got], [h.score for h in want], atol=2e-3)


def test_graph_build_is_deterministic(tmp_path, exact_index):
    vectors = np.asarray(exact_index.part("dense").embeddings, np.float32)
    digests = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        AnnIndex.build(vectors).save(tmp_path / name)
        digests.append(hashlib.sha256((tmp_path / name / "ann.usearch").read_bytes()).digest())
    assert digests[0] == digests[1]
    loaded = AnnIndex.load(tmp_path / "a")
    assert loaded.search(vectors[7], 1, 16)[0].tolist() == [7]  # a vector finds itself


def test_exact_only_index_refuses_ann_search_clearly(exact_index):
    from hopgraph.errors import ConfigError

    with pytest.raises(ConfigError, match="dense.ann=hnsw"):
        exact_index.part("dense").search_ann(exact_index.part("dense").embeddings[0], 5, 16)


def test_default_method_over_the_graph_ranks_as_over_exact_search(tmp_path):
    """multihop reads cosines through the HNSW graph where the dense part has one; on a corpus
    the graph covers exactly, the rankings are those of exact search."""
    corpus = load_corpus(demo_dataset_path())
    exact = Index.build(corpus, progress=False)
    with_graph = Index.build(corpus, options={"dense": {"ann_min_passages": 10}}, progress=False)
    assert with_graph.part("dense").ann is not None
    for q in load_dataset(demo_dataset_path()).questions:
        got = get_retriever(with_graph).search(q.text, k=5)
        want = get_retriever(exact).search(q.text, k=5)
        assert [h.id for h in got] == [h.id for h in want], q.text


def test_updates_keep_the_graph_and_still_find_what_exact_search_finds(tmp_path):
    """An update does not rebuild the graph (it costs ~30 s at 100k passages): deleted rows'
    keys are skipped and added rows scanned exactly, so the top 10 stay those of exact search
    on the final corpus; saved and loaded, then compacted to a fresh graph."""
    from hopgraph.corpus import Corpus

    corpus = load_corpus(demo_dataset_path())
    opts = {"dense": {"ann_min_passages": 10}}
    Index.build(Corpus(corpus[:30]), ["dense"], opts, progress=False).save(tmp_path / "ix")
    index = Index.load(tmp_path / "ix")
    graph = index.part("dense").ann
    index = index.updated(add=list(corpus[30:38]), delete=[corpus[2].id, corpus[11].id])
    index = index.updated(add=list(corpus[38:]), delete=[corpus[31].id, corpus[0].id])
    dense = index.part("dense")
    assert dense.ann is graph and dense.ann_rows is not None
    assert dense.ann_live == 27 and dense.embeddings.shape[0] == 40  # 27 old rows, 13 new
    index.save(tmp_path / "ix")  # two deltas: the graph file is not rewritten
    loaded = Index.load(tmp_path / "ix")  # replayed on the saved graph
    np.testing.assert_array_equal(loaded.part("dense").ann_rows, dense.ann_rows)
    exact = Index.build(index.corpus, ["dense"], {"dense": {"ann": "none"}}, progress=False)
    compact = loaded.part("dense").compacted()
    assert compact.ann_rows is None and len(compact.ann) == 40
    with pytest.raises(ValueError, match="compacted"):
        dense.save(tmp_path)
    questions = [q.text for q in load_dataset(demo_dataset_path()).questions]
    for ix in (index, loaded):
        for q in questions:
            got = get_retriever(ix, "dense").search(q, k=10)
            want = get_retriever(exact, "dense").search(q, k=10)
            assert [h.id for h in got] == [h.id for h in want], q


def test_a_mapped_graph_is_saved_as_a_copy_of_its_file(tmp_path):
    """A loaded (memory-mapped) graph is saved by copying its file, so saving an index read
    back from a large build makes none of the graph's pages the process's; once another file
    is under that name (a generation swapped in), the graph itself is written."""
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    (tmp_path / "a").mkdir()
    AnnIndex.build(vectors).save(tmp_path / "a")
    src = tmp_path / "a" / "ann.usearch"
    loaded = AnnIndex.load(tmp_path / "a")
    assert loaded.source is not None and loaded.source[0] == src
    (tmp_path / "b").mkdir()
    loaded.save(tmp_path / "b")
    assert (tmp_path / "b" / "ann.usearch").read_bytes() == src.read_bytes()
    original = src.read_bytes()
    (tmp_path / "c").mkdir()
    AnnIndex.build(vectors[::-1].copy()).save(tmp_path / "c")
    (tmp_path / "c" / "ann.usearch").replace(src)
    (tmp_path / "d").mkdir()
    loaded.save(tmp_path / "d")
    assert (tmp_path / "d" / "ann.usearch").read_bytes() == original
    assert AnnIndex.load(tmp_path / "a", mmap=False).source is None
