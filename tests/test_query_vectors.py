"""Vectors encoded at query time on an index without them (issue 38): the rerank features
against hand-computed values, the packaged model, and ``multihop`` reranking its top with the
real encoders where the index has no dense part."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hopgraph.config import make_options
from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.final_fusion import final_order
from hopgraph.retrieve.hop_features import COL, FEATURES
from hopgraph.retrieve.multihop import MultihopParams, score_candidates
from hopgraph.retrieve.query_vectors import (
    ANCHORS,
    ENCODE_BATCH,
    OWN,
    RERANK_FEATURES,
    TOP,
    Encoders,
    query_vector_model,
    rerank_features,
    reranked,
)


def _unit(x) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_rerank_features_by_hand():
    q = _unit([1.0, 0.0, 0.0])
    V = _unit([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    own = np.arange(4 * len(FEATURES), dtype=np.float64).reshape(4, len(FEATURES))
    scores = np.array([3.0, 2.5, 1.0, 0.5])
    X = rerank_features(scores, V, q, own)
    col = {f: i for i, f in enumerate(RERANK_FEATURES)}
    assert X.shape == (4, len(RERANK_FEATURES))
    assert X[:, col["score_gap"]] == pytest.approx([0.0, -0.5, -2.0, -2.5])
    assert X[:, col["place"]] == pytest.approx([0, 1, 2, 3])
    cos = np.array([1 / np.sqrt(2), 0.0, 1 / np.sqrt(2), 0.0])
    assert X[:, col["cosine"]] == pytest.approx(cos)
    assert X[:, col["cosine_gap"]] == pytest.approx(cos - cos.max())
    # cosine ranks (stable): rows 0, 2, 1, 3
    assert X[:, col["cosine_rank"]] == pytest.approx(-np.log1p([0, 2, 1, 3]))
    # hop cosine: through the first ANCHORS passages, never a passage through itself
    H = _unit(V[:ANCHORS] + q)
    hop = V @ H.T
    for a in range(ANCHORS):
        hop[a, a] = -1.0
    assert X[:, col["hop_cosine"]] == pytest.approx(hop.max(axis=1))
    assert X[:, col["hop_gain"]] == pytest.approx(hop.max(axis=1) - cos)
    for f in OWN:
        assert X[:, col[f]] == pytest.approx(own[:, COL[f]])


def test_reranked_keeps_the_old_order_on_ties():
    class Flat:
        def score(self, X):
            return np.asarray([1.0, 2.0, 1.0, 2.0])

    assert reranked(Flat(), np.zeros((4, 2))).tolist() == [1, 3, 0, 2]


def test_the_packaged_model_names_its_features_and_recipe():
    m = query_vector_model()
    assert m.features == RERANK_FEATURES and m.model.num_feature() == len(RERANK_FEATURES)
    assert m.meta["top"] == TOP and "--ship" in m.meta["recipe"]
    assert set(m.meta["trained_on"]) >= {"musique", "hotpotqa", "2wikimultihopqa"}


def test_a_bad_model_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"kind": "something else"}))
    with pytest.raises(ConfigError, match="not a query-vector reranker"):
        query_vector_model(str(bad))
    with pytest.raises(ConfigError, match="not a query-vector reranker"):
        query_vector_model(str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="query_vectors"):
        make_options(MultihopParams, {"query_vectors": -2})


@pytest.fixture(scope="module")
def bare_index(default_index):
    """The demo index without its dense part (the other parts shared)."""
    return Index(default_index.corpus, {k: v for k, v in default_index.parts.items()
                                        if k != "dense"})  # fmt: skip


def test_the_top_is_reranked_by_vectors_encoded_at_query_time(demo_dataset, bare_index):
    q = demo_dataset.questions[0].text
    plain = get_retriever(bare_index, "multihop")
    assert plain.query_vectors is None  # no staged build pending: off unless asked
    base = plain.search(q, k=TOP + 10)  # the reranked top and some of the rest
    assert "query_vectors" not in base.info
    r = get_retriever(bare_index, "multihop", query_vectors=TOP)
    got = r.search(q, k=TOP + 10)
    assert got.info["query_vectors"] == TOP
    # the same order computed by hand: the no-vector order's top TOP, encoded and reranked
    last = score_candidates(bare_index, r.settings, q, None, r.ranker.score)
    order, final = final_order(last, r.weights, r.params.k_rrf)
    rows = last.rows[order][:TOP]
    enc = Encoders.of(None)
    V = enc.passages.encode(
        [bare_index.corpus[int(i)].content for i in rows], batch_size=ENCODE_BATCH
    )
    X = rerank_features(final[order][:TOP], V, enc.query.encode_query(q), last.feats.X[order][:TOP])
    want = rows[reranked(query_vector_model(), X)]
    ids = bare_index.corpus.ids
    assert got.ids[:TOP] == [ids[int(i)] for i in want]
    assert got.ids[TOP:] == base.ids[TOP:]  # the rest keep the no-vector order
    assert sorted(got.ids[:TOP]) == sorted(base.ids[:TOP])
    assert got.scores == pytest.approx(base.scores)  # descending, the top's in its new order
    hits = got.explanations[:TOP]
    before = [h["no_vector_rank"] for h in hits]
    assert before == [base.ids.index(i) + 1 for i in got.ids[:TOP]]
    for place, h in enumerate(hits, 1):
        moved = "by vectors encoded at query time" in h["summary"]
        assert moved == (h["no_vector_rank"] != place)


def test_an_index_with_vectors_or_plain_titles_is_not_reranked(default_index):
    r = get_retriever(default_index, "multihop", query_vectors=TOP)
    assert r.query_vectors is None
    assert r.search("Who founded it?", k=3).info["query_vectors"] == (
        "off: the index has passage vectors"
    )


def test_a_saved_model_loads_back_with_the_same_scores(tmp_path):
    from hopgraph.retrieve.query_vectors import save_model
    from hopgraph.training.ranker import Candidates, fit

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, len(RERANK_FEATURES)))
    y = (X[:, 2] > 0.5).astype(int)
    booster = fit([Candidates(X, y, np.full(10, 20))], {"min_child_samples": 5})
    path = tmp_path / "rerank.json"
    save_model(booster, {"top": TOP}, path)
    m = query_vector_model(str(path))
    assert m.meta == {"top": TOP} and not list(tmp_path.glob(".*.tmp"))
    assert m.score(X) == pytest.approx(booster.predict(X))
