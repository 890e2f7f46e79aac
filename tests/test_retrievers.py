"""Base retrievers: orderings, formulas, explanations, determinism, and errors."""

from __future__ import annotations

import numpy as np
import pytest

from hopgraph.errors import ConfigError, HopgraphError
from hopgraph.retrieve import get_retriever, list_methods, top_k
from hopgraph.retrieve.operators import (
    composed_search,
    lexical_search,
    max_normalize,
    reciprocal_rank_fusion,
)

BASE = ["bm25", "bm25_rm3", "dense", "rrf", "hybrid", "composed"]


def test_all_base_methods_registered():
    assert set(BASE) <= set(list_methods())


@pytest.mark.parametrize("method", BASE)
def test_rankings_are_sorted_deterministic_and_explained(demo_index, demo_dataset, method):
    r = get_retriever(demo_index, method)
    for q in demo_dataset.questions[:5]:
        a, b = r.search(q.text, k=7), r.search(q.text, k=7)
        assert a.ids == b.ids and a.scores == b.scores
        assert 0 < len(a) <= 7 and len(set(a.ids)) == len(a.ids)
        assert a.scores == sorted(a.scores, reverse=True)
        assert len(a.explanations) == len(a) and all(a.explanations)
        assert a.to_dict()["hits"][0]["why"] == a.explanations[0]


@pytest.mark.parametrize("method", BASE)
def test_batch_equals_one_at_a_time(demo_index, demo_dataset, method):
    r = get_retriever(demo_index, method)
    qs = [q.text for q in demo_dataset.questions[:6]]
    batch = r.search_batch(qs, k=5)
    for q, rb in zip(qs, batch, strict=True):
        single = r.search(q, k=5)
        assert rb.ids == single.ids
        assert rb.scores == pytest.approx(single.scores, abs=1e-5)


def test_rrf_formula_by_hand():
    # list A: 3, 1, 2; list B: 2, 3. k=60.
    rows, scores = reciprocal_rank_fusion([np.array([3, 1, 2]), np.array([2, 3])], 60)
    expected = {3: 1 / 61 + 1 / 62, 1: 1 / 62, 2: 1 / 63 + 1 / 61}
    assert rows.tolist() == [3, 2, 1]
    assert scores.tolist() == pytest.approx([expected[3], expected[2], expected[1]])


def test_rrf_method_fuses_bm25_and_dense_ranks(demo_index, demo_dataset):
    q = demo_dataset.questions[0].text
    r = get_retriever(demo_index, "rrf").search(q, k=10)
    bm = get_retriever(demo_index, "bm25").search(q, k=100)
    de = get_retriever(demo_index, "dense").search(q, k=100)
    for pid, score, why in zip(r.ids, r.scores, r.explanations, strict=True):
        expect = 0.0
        if pid in bm.ids:
            assert why["bm25_rank"] == bm.ids.index(pid) + 1
            expect += 1 / (60 + why["bm25_rank"])
        if pid in de.ids:
            assert why["dense_rank"] == de.ids.index(pid) + 1
            expect += 1 / (60 + why["dense_rank"])
        assert score == pytest.approx(expect)


def test_hybrid_is_weighted_sum(demo_index, demo_dataset):
    q = demo_dataset.questions[1].text
    sparse, dense = demo_index.part("sparse"), demo_index.part("dense")
    bm = sparse.scores(q)
    cos = dense.scores(dense.encode_queries([q])[0])
    expected = 0.2 * bm / bm.max() + 0.8 * cos
    r = get_retriever(demo_index, "hybrid", w_sparse=0.2, w_dense=0.8).search(q, k=5)
    rows = [demo_index.corpus.position(i) for i in r.ids]
    assert r.scores == pytest.approx(expected[rows].tolist(), abs=1e-5)
    assert rows == np.argsort(-expected, kind="stable")[:5].tolist()


def test_composed_scores_only_bm25_candidates(demo_index, demo_dataset):
    q = demo_dataset.questions[2].text
    r = get_retriever(demo_index, "composed", c=2, min_candidates=3).search(q, k=2)
    cand, _ = lexical_search(demo_index.part("sparse"), q, 4)  # max(k*c, min) = 4
    assert set(r.ids) <= {demo_index.corpus[int(i)].id for i in cand}
    assert r.info["candidates"] == 4
    assert all(why["bm25_rank"] <= 4 for why in r.explanations)


def test_composed_search_ranks_candidates_by_cosine_plus_weighted_bm25(demo_index, demo_dataset):
    q = demo_dataset.questions[3].text
    sparse, dense = demo_index.part("sparse"), demo_index.part("dense")
    qvec = dense.encode_queries([q])[0]
    bm, cos = sparse.scores(q), dense.scores(qvec)
    cand, _ = lexical_search(sparse, q, 8)
    for w in (0.0, 0.5, 3.0):
        rows, sims, _, n = composed_search(sparse, dense, q, qvec, 8, 5, bm25_weight=w)
        expected = cos[cand] + w * bm[cand] / bm[cand].max()
        assert n == 8 and rows.tolist() == cand[np.argsort(-expected, kind="stable")[:5]].tolist()
        assert sims == pytest.approx(cos[rows], abs=1e-5)  # the cosines, whatever the weight


def test_rm3_expands_the_query(demo_index, demo_dataset):
    r = get_retriever(demo_index, "bm25_rm3", fb_docs=3, fb_terms=5).search(
        demo_dataset.questions[0].text, k=5
    )
    assert 0 < len(r.info["expansion"]) <= 5
    assert sum(r.info["expansion"].values()) == pytest.approx(1.0, abs=1e-3)
    # orig_weight=1 is plain BM25 up to a constant factor: same order
    plain = get_retriever(demo_index, "bm25").search(demo_dataset.questions[0].text, k=5)
    only_q = get_retriever(demo_index, "bm25_rm3", orig_weight=1.0).search(
        demo_dataset.questions[0].text, k=5
    )
    assert only_q.ids == plain.ids


def test_top_k_breaks_ties_by_row():
    s = np.array([1.0, 3.0, 3.0, 2.0, 3.0, 0.0])
    assert top_k(s, 2).tolist() == [1, 2]
    assert top_k(s, 4).tolist() == [1, 2, 4, 3]
    assert top_k(s, 10, positive_only=True).tolist() == [1, 2, 4, 3, 0]


def test_max_normalize():
    assert max_normalize(np.array([0.0, 2.0, 4.0])).tolist() == [0.0, 0.5, 1.0]
    assert max_normalize(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]


def test_query_without_known_terms(demo_index):
    bm25 = get_retriever(demo_index, "bm25").search("zzzqqq", k=5)  # no match: corpus order
    assert bm25.ids == [demo_index.corpus[i].id for i in range(5)]
    assert all(why["filled"].startswith("corpus order") for why in bm25.explanations)
    assert len(get_retriever(demo_index, "dense").search("zzzqqq", k=5)) == 5


@pytest.mark.parametrize(
    ("method", "params", "match"),
    [
        ("nope", {}, "unknown method 'nope'"),
        ("rrf", {"k_rrf": "abc"}, "expects float"),
        ("rrf", {"depth": "0"}, "must be > 0"),
        ("dense", {"mode": "ivf"}, "must be one of"),
        ("bm25", {"alpha": "1"}, "unknown option"),
        ("hybrid", {"w_sparse": "0", "w_dense": "0"}, "not both be 0"),
    ],
)
def test_bad_methods_and_params(demo_index, method, params, match):
    with pytest.raises(ConfigError, match=match):
        get_retriever(demo_index, method, **params)


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_bad_k(demo_index, k):
    with pytest.raises(ConfigError, match="k must be"):
        get_retriever(demo_index, "bm25").search("film", k=k)


def test_empty_query(demo_index):
    with pytest.raises(HopgraphError, match="empty query"):
        get_retriever(demo_index, "bm25").search("   ", k=3)


def test_k_larger_than_corpus(demo_index):
    assert len(get_retriever(demo_index, "dense").search("film", k=1000)) == 44


# -- the default on an index without its parts -------------------------------------------------
def test_default_falls_back_to_the_best_method_the_parts_allow(demo_dataset, demo_index, tmp_path):
    from hopgraph.index import Index
    from hopgraph.retrieve.base import DEFAULT_METHOD, default_choice

    folder = tmp_path / "sparse"
    Index.build(demo_dataset.corpus, ["sparse"], progress=False).save(folder)
    sparse = Index.load(folder)
    query = demo_dataset.questions[0].text
    for name in (None, "default"):
        r = get_retriever(sparse, name)
        assert r.name == "bm25"
        ranking = r.search(query, k=5)
        assert ranking.method == "bm25" and ranking.info["method"] == "bm25"
        assert ranking.ids == get_retriever(sparse, "bm25").search(query, k=5).ids
        fallback = ranking.info["default_fallback"]
        assert fallback["default"] == DEFAULT_METHOD == "multihop"
        assert fallback["missing_parts"] == ["dense", "entities"]
        assert f"`hopgraph add-parts {folder} --parts dense,entities`" in fallback["note"]
    assert "default_fallback" not in get_retriever(sparse, "bm25").search(query, k=5).info
    with pytest.raises(ConfigError, match="method 'multihop' needs more index parts"):
        get_retriever(sparse, "multihop")  # named explicitly: no fallback
    # sparse and dense: rrf, noted in filtered and per-document searches too
    choice = default_choice(demo_index)
    assert choice.method == "rrf" and choice.missing == ("entities",)
    r = get_retriever(demo_index)
    assert r.name == "rrf"
    ranking = r.search(query, k=3, filter={"title": {"$ne": "x"}})
    assert ranking.info["method"] == "rrf" and "default_fallback" in ranking.info
