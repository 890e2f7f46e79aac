"""FastInsight and its baselines: the corpus graph part, GRanker, STeX, GAR's frontier,
Topological Recall, and the rerank / gar / fastinsight methods with a reranker trained here."""

from __future__ import annotations

import json
import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from hopgraph.corpus import Corpus, Passage
from hopgraph.errors import ConfigError, CorpusError
from hopgraph.eval.metrics import recall_at_k, topological_recall
from hopgraph.graph.cohesion import latent_graph_fusion, reciprocal_degree_propagation
from hopgraph.graph.paths import degree, log_degree_costs, uncertainty
from hopgraph.index import Index
from hopgraph.index.corpus_graph import knn_graph, shared_entity_graph, symmetric_union
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.graph_search import Frontier, neighbourhood, stex


def _random_graph(n: int, p: float, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    a = np.triu((rng.random((n, n)) < p).astype(np.float32), 1)
    return sp.csr_matrix(a + a.T)


# -- GRanker ---------------------------------------------------------------------------------
def test_propagation_matrix_by_hand():
    # path 0 - 1 - 2 among the candidates; corpus degrees 1, 4, 2
    A = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], float)
    P = reciprocal_degree_propagation(A, np.array([1, 4, 2]))
    # row 1: W = [1/1, 0, 1/2] normalised -> [2/3, 0, 1/3]
    np.testing.assert_allclose(P, [[0, 1, 0], [2 / 3, 0, 1 / 3], [0, 1, 0]])


def test_a_candidate_without_neighbours_keeps_its_vector():
    A = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], float)
    P = reciprocal_degree_propagation(A, np.array([3, 3, 5]))
    H = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = latent_graph_fusion(H, P, 0.2)
    np.testing.assert_allclose(out[2], H[2])
    np.testing.assert_allclose(out[0], 0.8 * H[0] + 0.2 * H[1])
    np.testing.assert_allclose(latent_graph_fusion(H, P, 0.0), H)


# -- STeX ------------------------------------------------------------------------------------
def _stex_reference(adj, deg, ranked, qvec, vectors, beta):
    """Algorithm 3 line by line."""
    ranked = list(ranked)
    cand = {int(j) for i in ranked for j in adj[i].indices} - set(ranked)
    r_max = len(ranked)
    out = {}
    for n in cand:
        a_n = [v for v in ranked if adj[n, v]]
        s = 0.0
        if r_max > 1:
            r_best = min(ranked.index(v) + 1 for v in a_n)
            s = 1 - (r_best - 1) / (r_max - 1)
        c_max = min(deg[n], r_max)
        if c_max > 1:
            s += (len(a_n) - 1) / (c_max - 1)
        out[n] = float(qvec @ vectors[n]) + beta * s
    return out


@pytest.mark.parametrize("seed", range(5))
def test_stex_matches_algorithm_3(seed):
    rng = np.random.default_rng(seed)
    adj = _random_graph(40, 0.1, seed)
    deg = degree(adj)
    vectors = rng.normal(size=(40, 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    qvec = vectors[0]
    ranked = rng.permutation(40)[: 1 + seed * 3]
    rows, scores = stex(adj, deg, ranked, qvec, vectors, 1.0)
    ref = _stex_reference(adj, deg, ranked, qvec, vectors, 1.0)
    assert set(rows.tolist()) == set(ref) == set(neighbourhood(adj, ranked).tolist())
    np.testing.assert_allclose(scores, [ref[r] for r in rows.tolist()])
    assert np.all(np.diff(scores) <= 0)


def test_stex_prefers_bridges_and_top_ranked_neighbours():
    # retrieved 0 (rank 1), 1 (rank 2); node 2 touches both, 3 touches only rank 2, 4 only rank 1
    edges = [(0, 2), (1, 2), (1, 3), (0, 4)]
    a = sp.lil_matrix((5, 5))
    for i, j in edges:
        a[i, j] = a[j, i] = 1
    adj = sp.csr_matrix(a)
    vectors = np.zeros((5, 2))
    rows, _ = stex(adj, degree(adj), np.array([0, 1]), np.array([1.0, 0.0]), vectors, 1.0)
    assert rows.tolist() == [2, 4, 3]


# -- GAR's frontier --------------------------------------------------------------------------
def test_frontier_pops_neighbours_of_the_best_scored_first():
    a = sp.lil_matrix((6, 6))
    for i, j in [(0, 2), (1, 3), (1, 4), (0, 4)]:
        a[i, j] = a[j, i] = 1
    f = Frontier(sp.csr_matrix(a))
    f.mark_scored(np.array([0, 1]), np.array([0.2, 0.9]))
    assert len(f) == 3
    assert f.pop(2) == [3, 4]  # reached from 1 (0.9); 4's best is 0.9 too, reached later
    f.mark_scored(np.array([3, 4]), np.array([0.5, 0.1]))
    assert f.pop(5) == [2]  # 0 and 1 are scored: never again
    assert f.pop(1) == []


# -- Topological Recall ----------------------------------------------------------------------
def test_uncertainty_matches_networkx():
    adj = _random_graph(30, 0.12, 3)
    deg = degree(adj)
    g = nx.DiGraph()
    coo = adj.tocoo()
    for i, j in zip(coo.row.tolist(), coo.col.tolist(), strict=True):
        g.add_edge(i, j, w=math.log1p(deg[i]))
    sources = [0, 7]
    dist = nx.multi_source_dijkstra_path_length(g, sources, weight="w")
    u = uncertainty(log_degree_costs(adj), np.array(sources), np.arange(30))
    for t in range(30):
        assert u[t] == pytest.approx(dist.get(t, math.inf))


def test_topological_recall_by_hand_and_corollary_1():
    # path 0 - 1 - 2 - 3 (degrees 1, 2, 2, 1), retrieved {0}, gold {0, 2, 3}
    adj = sp.csr_matrix(np.diag([1.0, 1.0, 1.0], 1) + np.diag([1.0, 1.0, 1.0], -1))
    costs = log_degree_costs(adj)
    tr, miss = topological_recall(costs, [0], [0, 2, 3])
    u2 = math.log(2) + math.log(3)  # leave 0 (deg 1), leave 1 (deg 2)
    u3 = u2 + math.log(3)
    expected = (1 + 1 / (1 + u2) + 1 / (1 + u3)) / 3
    assert tr == pytest.approx(expected)
    recall = recall_at_k(["0"], {"0", "2", "3"}, 10)
    assert tr == pytest.approx(recall + miss)  # Corollary 1
    assert topological_recall(costs, [], [1]) == (0.0, 0.0)
    iso = sp.csr_matrix((3, 3))
    assert topological_recall(log_degree_costs(iso), [0], [0, 1])[0] == pytest.approx(0.5)


# -- the corpus graph part -------------------------------------------------------------------
def test_knn_graph_is_exact():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(50, 6)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    g = knn_graph(v, 4)
    sims = v @ v.T
    np.fill_diagonal(sims, -np.inf)
    for i in range(50):
        assert set(g[i].indices) == set(np.argsort(-sims[i])[:4])
    assert knn_graph(v[:1], 4).nnz == 0


def test_shared_entity_graph_skips_common_entities():
    # entity 0 in passages 0, 1; entity 1 in all four (too common with max_df 3)
    m = sp.csr_matrix(np.array([[1, 1], [1, 1], [0, 1], [0, 1]], float))
    g = symmetric_union([shared_entity_graph(m, 3)], 4).toarray()
    assert g.tolist() == [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]


@pytest.fixture(scope="module")
def small_corpus():
    return Corpus(
        [
            Passage("a", "Ada Vell", "Ada Vell was born in Quellhaven.", {"links": ["c"]}),
            Passage("b", "Quellhaven", "Quellhaven lies on the Velmora river."),
            Passage("c", "Red Lamp", "Red Lamp is a novel by Ada Vell."),
            Passage("d", "Velmora", "The Velmora is a river."),
        ]
    )


def test_corpus_graph_part_builds_its_inputs_and_round_trips(small_corpus, tmp_path):
    edges = tmp_path / "edges.tsv"
    edges.write_text("b\td\n# a comment\nd\tnowhere\n" + '{"source": "a", "target": "d"}\n')
    ix = Index.build(
        small_corpus, ["corpus_graph"], {"corpus_graph": {"knn": 0, "edges_file": str(edges)}},
        progress=False,
    )  # fmt: skip
    assert set(ix.parts) == {"links", "corpus_graph"}  # links built first, no dense needed
    g = ix.part("corpus_graph")
    dense = g.adjacency.toarray()
    assert (dense == dense.T).all() and not dense.diagonal().any()
    # a->c (metadata), a->b (title mention), c->a (mention), b-d (file), a-d (file)
    assert {(i, j) for i, j in zip(*np.nonzero(np.triu(dense)), strict=True)} == {
        (0, 1), (0, 2), (0, 3), (1, 3),
    }  # fmt: skip
    assert g.stats()["file_unknown_ids"] == 1
    ix.save(tmp_path / "ix")
    back = Index.load(tmp_path / "ix").part("corpus_graph")
    assert (back.adjacency != g.adjacency).nnz == 0
    assert back.degree.tolist() == [3, 2, 1, 2]


def test_a_part_built_from_a_rebuilt_part_is_rebuilt_too(small_corpus):
    ix = Index.build(small_corpus, ["corpus_graph"], {"corpus_graph": {"knn": 0}}, progress=False)
    before = ix.part("corpus_graph").adjacency.nnz
    # links without title mentions: the graph keeps only a->c, and its own options (knn 0)
    built = ix.add_parts(
        ["links"], {"links": {"title_mentions": False}}, progress=False, rebuild_changed=True
    )
    assert built == ["links", "corpus_graph"]
    g = ix.part("corpus_graph")
    assert g.options.knn == 0 and g.adjacency.nnz == 2 < before
    assert ix.add_parts(["links"], {"links": {"title_mentions": False}}, progress=False) == []


def test_corpus_graph_options_are_checked(small_corpus, tmp_path):
    with pytest.raises(ConfigError, match="at least one edge source"):
        Index.build(small_corpus, ["corpus_graph"], {"corpus_graph": {"knn": 0, "links": False}})
    with pytest.raises(ConfigError, match="not a file"):
        Index.build(small_corpus, ["corpus_graph"], {"corpus_graph": {"edges_file": "/nope"}})
    bad = tmp_path / "bad.tsv"
    bad.write_text("only-one-id\n")
    with pytest.raises(CorpusError, match="two tab-separated ids"):
        Index.build(
            small_corpus, ["corpus_graph"],
            {"corpus_graph": {"knn": 0, "edges_file": str(bad)}}, progress=False,
        )  # fmt: skip


# -- the methods, with a reranker trained on the demo questions -------------------------------
@pytest.fixture(scope="module")
def reranker(tmp_path_factory, demo_index, demo_dataset):
    from hopgraph.training.reranker import (
        RerankerConfig,
        rerank_examples,
        save_reranker,
        train_reranker,
    )

    config = RerankerConfig(layers=1, max_length=64, epochs=1, candidates=8, base="bm25")
    examples = rerank_examples(demo_index, demo_dataset, config, progress=False)
    result = train_reranker(examples, config, progress=False)
    assert len(result.history) == 1 and result.n_val >= 1
    folder = tmp_path_factory.mktemp("rr") / "model"
    save_reranker(result.model, result.tokenizer, folder, {"max_length": 64})
    return str(folder)


@pytest.fixture(scope="module")
def fi_index(demo_index_dir):
    ix = Index.load(demo_index_dir)
    ix.add_parts(["corpus_graph"], progress=False)
    return ix


def test_rerank_rescores_the_base_top_n(fi_index, demo_dataset, reranker):
    from hopgraph.models.rerankers import load_cross_encoder

    q = demo_dataset.questions[0].text
    base = get_retriever(fi_index, "dense").search(q, 20)
    r = get_retriever(fi_index, "rerank", model=reranker, n=8, mix=0.0).search(q, 20)
    assert set(r.ids[:8]) == set(base.ids[:8]) and r.ids[8:] == base.ids[8:]
    ce = load_cross_encoder(reranker)
    rows = [fi_index.corpus.position(i) for i in base.ids[:8]]
    s = ce.score(q, [fi_index.corpus[i].content for i in rows])
    expected = [base.ids[i] for i in np.lexsort((rows, -s))]
    assert r.ids[:8] == expected
    assert r.info["pairs"] == 8


def test_gar_and_fastinsight_spend_the_budget_once(fi_index, demo_dataset, reranker):
    q = demo_dataset.questions[1].text
    for method in ("gar", "fastinsight"):
        extra = {"patience": 0} if method == "fastinsight" else {}
        retriever = get_retriever(fi_index, method, model=reranker, b_max=25, batch=5, **extra)
        r = retriever.search(q, 40)
        assert r.info["pairs"] == 25  # every scored passage encoded exactly once
        assert len(r.ids) == len(set(r.ids)) == 40
        assert retriever.search(q, 40).ids == r.ids  # deterministic
        assert r.info["from_graph"] > 0


def test_without_expansion_gar_and_fastinsight_are_rerank(fi_index, demo_dataset, reranker):
    q = demo_dataset.questions[2].text
    rerank = get_retriever(fi_index, "rerank", model=reranker, n=10, mix=0.0).search(q, 10)
    gar = get_retriever(fi_index, "gar", model=reranker, b_max=10, batch=10).search(q, 10)
    fi = get_retriever(
        fi_index, "fastinsight", model=reranker, b_max=10, batch=10, alpha=0.0, mix=0.0
    ).search(q, 10)
    assert rerank.ids == gar.ids == fi.ids
    np.testing.assert_allclose(rerank.scores, fi.scores, atol=1e-6)


def test_granker_uses_the_graph(fi_index, demo_dataset, reranker):
    q = demo_dataset.questions[3].text
    plain = get_retriever(fi_index, "fastinsight", model=reranker, alpha=0.0, b_max=30)
    smooth = get_retriever(fi_index, "fastinsight", model=reranker, alpha=0.5, b_max=30)
    assert plain.search(q, 30).scores != smooth.search(q, 30).scores


def test_cross_encoder_methods_run_out_of_the_box(fi_index, demo_dataset):
    """No model named: the packaged reranker (ONNX, no torch needed) serves all three."""
    from hopgraph.models.reranker_onnx import OnnxCrossEncoder

    q = demo_dataset.questions[0]
    for method in ("rerank", "gar", "fastinsight"):
        r = get_retriever(fi_index, method)
        assert isinstance(r.model, OnnxCrossEncoder)
        assert len(r.search(q.text, 10).ids) == 10
    with pytest.raises(ConfigError, match="cannot load cross-encoder"):
        get_retriever(fi_index, "rerank", model="/no/such/model")
    for bad in ({"mix": -1}, {"max_length": -1}):
        with pytest.raises(ConfigError):
            get_retriever(fi_index, "rerank", **bad)
    with pytest.raises(ConfigError, match="patience"):
        get_retriever(fi_index, "fastinsight", patience=-1)


def test_fastinsight_stops_early_when_the_top_k_settles(fi_index, demo_dataset, reranker):
    """patience=1: the loop ends at the first iteration that adds nothing to the top k, so it
    scores fewer pairs; patience=0 spends the whole budget. The default is 2."""
    from hopgraph.retrieve.fastinsight import FastInsightParams

    assert FastInsightParams().patience == 2 and FastInsightParams().batch == 15
    stopped, full = [], []
    for q in demo_dataset.questions[:6]:
        early = get_retriever(fi_index, "fastinsight", model=reranker, patience=1, b_max=40)
        whole = get_retriever(fi_index, "fastinsight", model=reranker, b_max=40, patience=0)
        a, b = early.search(q.text, 3), whole.search(q.text, 3)
        assert b.info["pairs"] == 40 and not b.info["stopped_early"]
        assert a.info["pairs"] <= 40
        stopped.append(a.info["stopped_early"])
        full.append(a.info["pairs"] < b.info["pairs"])
    assert any(stopped) and stopped == full


def test_rerank_mix_interpolates_with_the_base(fi_index, demo_dataset, reranker):
    """mix=0 is the cross-encoder alone (test_rerank_rescores_the_base_top_n); a huge mix
    gives back the base's order; the default mix (3) lies between."""
    from hopgraph.retrieve.fastinsight import FastInsightParams, RerankParams

    assert RerankParams().mix == FastInsightParams().mix == 3.0
    q = demo_dataset.questions[2].text
    base = get_retriever(fi_index, "dense").search(q, 20)
    huge = get_retriever(fi_index, "rerank", model=reranker, n=20, mix=1e6).search(q, 20)
    assert huge.ids == base.ids
    zero = get_retriever(fi_index, "rerank", model=reranker, n=20, mix=0.0).search(q, 20)
    assert zero.ids != base.ids


def test_eval_reports_topological_recall(fi_index, demo_dataset, reranker):
    from hopgraph.eval import evaluate

    res = evaluate(fi_index, demo_dataset, ["dense"], limit=5, progress=False)[0]
    m = res.metrics
    assert 0 <= m["misstr@10"] <= m["tr@10"] <= 1
    assert m["tr@10"] == pytest.approx(m["recall@10"] + m["misstr@10"])


def test_train_reranker_cli(tmp_path):
    from click.testing import CliRunner

    from hopgraph.cli import cli
    from hopgraph.data import demo_dataset_path

    out = tmp_path / "ce"
    args = [
        "train-reranker", str(demo_dataset_path()), "-o", str(out), "--layers", "1",
        "--max-length", "48", "--epochs", "1", "--base", "bm25", "--candidates", "6",
        "--index-dir", str(tmp_path / "cache"), "-q",
    ]  # fmt: skip
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "validation nDCG@10" in res.output
    card = json.loads((out / "hopgraph_reranker.json").read_text())
    assert card["config"]["layers"] == 1 and card["max_length"] == 48
    assert (tmp_path / "ce.checkpoints" / "epoch-1" / "config.json").exists()
    from hopgraph.models.cross_encoder import CrossEncoder

    ce = CrossEncoder(str(out))
    assert ce.max_length == 48 and ce.model.config.num_hidden_layers == 1
    again = CliRunner().invoke(cli, args)
    assert again.exit_code != 0 and "--overwrite" in again.output
    bad = CliRunner().invoke(cli, [*args[:-1], "--epochs", "0", "--overwrite"])
    assert bad.exit_code != 0 and "epochs must be >= 1" in str(bad.exception)


def test_cross_encoder_rankings_explain_themselves(fi_index, demo_dataset, reranker):
    r = get_retriever(fi_index, "gar", model=reranker, b_max=12, batch=4).search(
        demo_dataset.questions[0].text, 20
    )
    ex = r.explanations
    assert len(ex) == 20 and sum(e["scored"] for e in ex) == 12
    assert all(e["scored"] for e in ex[:12]) and not any(e["scored"] for e in ex[12:])
