"""GraphER: the links part, candidate graphs, graph cohesive smoothing and the rerankers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from hopgraph.corpus import Corpus, Passage
from hopgraph.errors import ConfigError
from hopgraph.graph.cohesion import (
    graph_cohesive_smoothing,
    row_stochastic,
    shared_entity_adjacency,
)
from hopgraph.graph.ppr import ppr_exact
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever

GRAPHER = ["grapher_gcs", "grapher_ppr"]


@pytest.fixture(scope="module")
def linked():
    passages = [
        Passage("a", "Ada Vell", "Ada Vell was born in Quellhaven.", {"links": ["c", "zz"]}),
        Passage("b", "Quellhaven", "Quellhaven lies on the Velmora river."),
        Passage("c", "Red Lamp", "A novel.", {"doc_id": "d1", "chunk": 0}),
        Passage("d", "Red Lamp", "Its second part.", {"doc_id": "d1", "chunk": 1}),
        Passage("e", "Red Lamp", "Its third part.", {"doc_id": "d1", "chunk": 2}),
        Passage("f", "Other", "Unrelated text about Red Lamp.", {"doc_id": "d2", "chunk": 1}),
    ]
    return Corpus(passages)


def test_links_part_fields_and_adjacency(linked, tmp_path):
    ix = Index.build(linked, ["sparse", "links"], progress=False)
    links = ix.part("links")
    # a → c from metadata (the unknown "zz" is skipped), a → b by title mention,
    # f → c, d, e: "Red Lamp" is the title of all three chunks
    assert links.fields(0, linked) == {"links": ["b", "c"]}
    assert links.fields(5, linked)["links"] == ["c", "d", "e"]
    assert links.fields(3, linked) == {"links": [], "doc": 0, "chunk": 1}
    rows = np.array([0, 2, 1, 3, 4, 5])
    s = links.structural(rows)
    assert (s == s.T).all() and s[0, 1] == 1 and s[0, 2] == 1 and s[1, 2] == 0
    c = links.contextual(rows)
    assert c[1, 3] == 1 and c[3, 4] == 1 and c[1, 4] == 0  # chunks 0-1, 1-2, not 0-2
    assert c[5].sum() == 0  # another document
    ix.save(tmp_path / "ix")
    back = Index.load(tmp_path / "ix").part("links")
    assert (back.links != links.links).nnz == 0
    assert back.doc.tolist() == links.doc.tolist() and back.chunk.tolist() == links.chunk.tolist()


def test_links_options_switch_sources(linked):
    meta_only = Index.build(
        linked, ["links"], {"links": {"title_mentions": False}}, progress=False
    ).part("links")
    assert meta_only.fields(0, linked)["links"] == ["c"]
    assert meta_only.links.nnz == 1


def test_shared_entity_adjacency_by_hand():
    # passages × entities: 0:{x,y}, 1:{y}, 2:{x,y,z}, 3:{} ; repeated mentions count once
    M = sp.csr_matrix(np.array([[2, 1, 0], [0, 3, 0], [1, 1, 1], [0, 0, 0]], dtype=np.float32))
    A = shared_entity_adjacency(M, np.array([0, 1, 2, 3]))
    expected = np.array(
        [
            [0, 1 / 1, 2 / 3, 0],
            [1 / 2, 0, 1 / 3, 0],
            [2 / 2, 1 / 1, 0, 0],
            [0, 0, 0, 0],
        ]
    )
    assert np.allclose(A, expected)
    sub = shared_entity_adjacency(M, np.array([2, 0]))  # follows the order of rows
    assert np.allclose(sub, [[0, 2 / 2], [2 / 3, 0]])


def test_gcs_matches_the_linear_solve():
    rng = np.random.default_rng(0)
    A = rng.random((30, 30)) * (rng.random((30, 30)) < 0.2)
    A[5] = 0  # a node without out-edges
    s = rng.random(30)
    alpha = 0.3
    p, iters = graph_cohesive_smoothing(A, s, alpha, eps=1e-12, max_iter=10_000)
    W = row_stochastic(A)
    fixed = np.linalg.solve(np.eye(30) - (1 - alpha) * W, alpha * s)
    assert np.allclose(p, np.maximum(fixed, s), atol=1e-9)
    assert 1 < iters < 10_000
    assert p[5] == s[5]  # no neighbours: α·s, then the max keeps s
    assert (p >= s).all()


def test_gcs_stops_at_max_iter_and_tolerance():
    A = np.array([[0, 1.0], [1.0, 0]])
    s = np.array([1.0, 0.0])
    _, it = graph_cohesive_smoothing(A, s, 0.5, eps=1e-3, max_iter=1000)
    _, it_fine = graph_cohesive_smoothing(A, s, 0.5, eps=1e-9, max_iter=1000)
    assert it < it_fine
    p, it = graph_cohesive_smoothing(A, s, 0.5, eps=1e-12, max_iter=3)
    assert it == 3
    assert p[1] > 0  # node 1 took a share of its neighbour's score


def test_gcs_does_not_favour_hubs_like_ppr():
    # a hub with a tiny seed linked to 8 leaves; an isolated passage with a good seed
    n = 10
    A = np.zeros((n, n))
    A[0, 1:9] = A[1:9, 0] = 1.0
    s = np.array([0.01] + [0.3] * 8 + [0.5])
    gcs, _ = graph_cohesive_smoothing(A, s, 0.5)
    P = row_stochastic(A)
    ppr = ppr_exact(P, s / s.sum(), 0.5)
    assert np.argmax(ppr) == 0  # PPR puts the hub first
    assert np.argmax(gcs) == 9  # GCS keeps the best seed first


@pytest.fixture(scope="module")
def grapher_index(demo_index_dir):
    ix = Index.load(demo_index_dir)
    ix.add_parts(["entities", "links"], progress=False)
    return ix


@pytest.mark.parametrize("method", GRAPHER)
def test_without_edges_the_base_ranking_is_kept(grapher_index, demo_dataset, method):
    base = get_retriever(grapher_index, "hybrid")
    none = get_retriever(grapher_index, method, w_conceptual=0, w_structural=0, w_contextual=0)
    for q in demo_dataset.questions[:5]:
        assert none.search(q.text, k=10).ids == base.search(q.text, k=10).ids


@pytest.mark.parametrize("method", GRAPHER)
def test_grapher_reranks_the_base_candidates(grapher_index, demo_dataset, method):
    r = get_retriever(grapher_index, method, n=20)
    base = get_retriever(grapher_index, "hybrid")
    moved = 0
    for q in demo_dataset.questions:
        got = r.search(q.text, k=20)
        want = base.search(q.text, k=20)
        assert sorted(got.ids) == sorted(want.ids)  # a permutation of the top 20
        assert got.scores == sorted(got.scores, reverse=True)
        moved += got.ids[:5] != want.ids[:5]
        why = got.explanations[0]
        assert set(why) == {method, "seed", "base_rank", "neighbours"}
        assert {"base_ms", "graph_ms", "rerank_ms", "candidates", "edges"} <= set(got.info)
    assert moved > 0  # the graph changed some top 5


def test_gcs_lifts_passages_linked_to_the_top(grapher_index, demo_dataset):
    gcs = get_retriever(grapher_index, "grapher_gcs")
    base = get_retriever(grapher_index, "hybrid")
    recall = {"base": 0.0, "gcs": 0.0}
    for q in demo_dataset.questions:
        for name, r in (("base", base), ("gcs", gcs)):
            top = r.search(q.text, k=5).ids
            recall[name] += len(set(top) & set(q.gold)) / len(q.gold)
    assert recall["gcs"] >= recall["base"]


def test_grapher_params_are_checked(grapher_index):
    with pytest.raises(ConfigError):
        get_retriever(grapher_index, "grapher_gcs", alpha=1.5)
    with pytest.raises(ConfigError):
        get_retriever(grapher_index, "grapher_gcs", w_structural=-1)
    with pytest.raises(ConfigError):
        get_retriever(grapher_index, "grapher_gcs", base="grapher_ppr")
    with pytest.raises(ConfigError):
        get_retriever(grapher_index, "grapher_gcs", base="no_such_method")


def test_grapher_with_a_sparse_base_needs_no_query_embedding(grapher_index):
    r = get_retriever(grapher_index, "grapher_gcs", base="bm25")
    assert not r.uses_dense
    assert len(r.search("Who founded the Quellhaven observatory?", k=3)) == 3


def test_parts_follow_the_parameters(linked):
    from hopgraph.retrieve.base import method_parts

    assert method_parts("grapher_gcs", {"base": "bm25"}) == ("sparse", "links")
    assert set(method_parts("grapher_gcs")) == {"sparse", "dense", "links"}
    assert "entities" in method_parts("grapher_ppr", {"w_conceptual": 1})
    ix = Index.build(linked, ["sparse", "links"], progress=False)
    assert get_retriever(ix, "grapher_gcs", base="bm25").search("Red Lamp novel", k=2).ids
    with pytest.raises(ConfigError, match="no 'entities' part"):
        get_retriever(ix, "grapher_gcs", base="bm25", w_conceptual=1)


def test_conceptual_edges_follow_shared_entities(grapher_index, demo_dataset):
    r = get_retriever(grapher_index, "grapher_gcs", w_conceptual=1, w_structural=0, n=30)
    q = demo_dataset.questions[0].text
    got = r.search(q, k=30)
    assert got.info["edges"] > 0
    ents = grapher_index.part("entities")
    top = got.ids[0]
    for nb in got.explanations[0]["neighbours"]:
        a = set(ents.passage_entities(grapher_index.corpus.position(top)).tolist())
        b = set(ents.passage_entities(grapher_index.corpus.position(nb)).tolist())
        assert a & b
