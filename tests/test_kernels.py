"""The compiled paths (numba) give the numbers of the numpy ones they replace, to the last bit:
the top-k selection, BM25's postings sum, and the sparse seed normalisation."""

from __future__ import annotations

import numpy as np
import pytest

import hopgraph.index.sparse as sparse_mod
import hopgraph.ranks as ranks
from hopgraph.corpus import Corpus, Passage
from hopgraph.index.sparse import SparseOptions, SparsePart
from hopgraph.ranks import top_k, top_rows
from hopgraph.retrieve.seeds import l1_at, mix_seeds


def _arrays(rng: np.random.Generator):
    n = int(rng.integers(1, 400))
    yield rng.random(n)  # distinct scores
    yield rng.integers(-3, 4, n).astype(np.float64)  # many ties, negatives, zeros
    yield np.where(rng.random(n) < 0.05, rng.integers(1, 3, n), 0).astype(np.float32)
    yield np.zeros(n)
    yield np.array([0.0, -0.0, 1.0, 1.0, -1.0, 2.0, 2.0, 0.5])[: min(n, 8)]


def test_compiled_top_k_is_numpys(monkeypatch):
    rng = np.random.default_rng(0)
    cases = [a for _ in range(40) for a in _arrays(rng)]
    want = {
        (i, k, po): top_k(a, k, positive_only=po)
        for i, a in enumerate(cases) for k in (1, 2, 7, 50) for po in (False, True)
    }  # fmt: skip
    monkeypatch.setattr(ranks, "LARGE", 1)  # every array takes the compiled path
    for (i, k, po), rows in want.items():
        got = top_k(cases[i], k, positive_only=po)
        np.testing.assert_array_equal(got, rows, err_msg=f"case {i} k={k} positive_only={po}")


def test_top_rows_of_the_entries_is_top_k_of_the_vector():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 300))
        dense = np.zeros(n)
        rows = rng.choice(n, int(rng.integers(0, n + 1)), replace=False)
        dense[rows] = rng.integers(-2, 4, len(rows)) / 2  # ties, zeros and negatives
        for k in (1, 3, 20):
            np.testing.assert_array_equal(
                top_rows(rows, dense[rows], k), top_k(dense, k, positive_only=True)
            )
    assert top_rows(np.arange(3), np.ones(3), 0).size == 0


def test_compiled_postings_sum_is_bm25s_sum(monkeypatch):
    rng = np.random.default_rng(2)
    words = [f"w{i}" for i in range(40)]
    passages = [
        Passage(str(i), f"t{i}", " ".join(rng.choice(words, int(rng.integers(1, 30)))))
        for i in range(300)
    ]
    part = SparsePart.build(Corpus(passages), SparseOptions(), progress=False)
    queries = [" ".join(rng.choice(words, int(rng.integers(1, 12)))) for _ in range(50)]
    queries += ["w1 w1 w1 w2", "nothing here"]  # repeated terms count each time; none known
    want = [np.asarray(part.bm25.get_scores_from_ids(part.term_ids(q)), np.float32)
            for q in queries]  # fmt: skip
    monkeypatch.setattr(sparse_mod, "LARGE", 1)
    for q, w in zip(queries, want, strict=True):
        got = part.scores(q)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, w)


@pytest.mark.parametrize("n", [5, 8, 9, 130, 1000, 70_001])
def test_l1_at_is_mix_seeds_l1_to_the_last_bit(n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        rows = np.sort(rng.choice(n, min(n, int(rng.integers(1, 25))), replace=False))
        vals = rng.random(len(rows)) * 10.0 ** rng.integers(-3, 3, len(rows))
        dense = np.zeros(n)
        dense[rows] = vals
        want = mix_seeds(dense, np.zeros(n), "l1")
        np.testing.assert_array_equal(l1_at(rows, vals, n), want[rows])
    assert l1_at(np.zeros(0, np.int64), np.zeros(0), n).size == 0


def test_without_numba_large_arrays_take_numpys_paths(monkeypatch):
    """numba is the `large` extra: without it, arrays past LARGE take the numpy paths (the
    same rows) instead of the plain-Python loops of the kernels."""
    rng = np.random.default_rng(3)
    scores = rng.integers(-3, 40, 5000).astype(np.float32)
    monkeypatch.setattr(ranks, "LARGE", 1)
    want = top_k(scores, 25)
    calls = []
    monkeypatch.setattr(ranks, "_best", lambda *a: calls.append(a))  # a kernel call would fail
    monkeypatch.setattr(ranks, "has_numba", lambda: False)
    np.testing.assert_array_equal(top_k(scores, 25), want)
    assert not calls
