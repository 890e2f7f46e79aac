"""Entity part, bipartite TF–IDF graph, seeds, and the SPRIG methods."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from hopgraph.corpus import Corpus, Passage
from hopgraph.errors import ConfigError
from hopgraph.graph import ppr_exact
from hopgraph.graph.bipartite import build_bipartite, tfidf_weights
from hopgraph.index import Index
from hopgraph.index.entities import title_alias_map
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.seeds import entity_weights, mix_seeds, passage_weights

GRAPH_METHODS = [
    "graph", "graph_bm25_fallback", "graph_hybrid", "graph_dense", "graph_rrf",
    "rrf_ppr_fusion", "tfidf_graph", "bm25_2step",
]  # fmt: skip


@pytest.fixture(scope="module")
def tiny():
    passages = [
        Passage("0", "Ada Vell", "Ada Vell was born in Quellhaven. Ada Vell wrote Red Lamp."),
        Passage("1", "Quellhaven", "Quellhaven lies on the Velmora river."),
        Passage("2", "Red Lamp", "Red Lamp is a novel by Ada Vell."),
        Passage("3", "Velmora (river)", "The Velmora flows into Lake Esterine."),
        Passage("4", "Velmora (ship)", "The Velmora was a ship built in Quellhaven."),
    ]
    return Corpus(passages)


@pytest.fixture(scope="module")
def tiny_index(tiny):
    return Index.build(tiny, ["sparse", "entities"], progress=False)


def test_entity_mentions_and_df(tiny_index):
    ents = tiny_index.part("entities")
    ids = ents.ids
    assert "ada vell" in ids and "quellhaven" in ids
    m = ents.mentions.toarray()
    assert m[0, ids["ada vell"]] == 3  # title + twice in the text
    assert ents.df[ids["quellhaven"]] == 3  # passages 0, 1, 4
    # "Where" is captured by the regex but is no corpus entity, so only Ada Vell is matched
    assert ents.query_entities("Where was Ada Vell born?") == [ids["ada vell"]]


def test_df_filters(tiny):
    ix = Index.build(tiny, ["entities"], {"entities": {"min_entity_df": 2}}, progress=False)
    assert all(d >= 2 for d in ix.part("entities").df)
    ix = Index.build(tiny, ["entities"], {"entities": {"max_entity_df_ratio": 0.5}}, progress=False)
    assert "quellhaven" not in ix.part("entities").ids  # in 3 of 5 passages


def test_title_aliases_drop_ambiguous(tiny):
    aliases = title_alias_map(tiny, "simple")
    assert aliases["red lamp"] == "red lamp" and aliases["ada vell"] == "ada vell"
    assert "velmora" not in aliases  # river and ship: ambiguous
    ix = Index.build(tiny, ["entities"], {"entities": {"title_aliases": True}}, progress=False)
    ents = ix.part("entities")
    assert ents.mentions[2, ents.ids["red lamp"]] >= 1


def test_alias_mentions_find_titles_the_ner_splits():
    """The regex NER splits "Ermengarde of Tours" at "of"; alias_mentions finds the whole title
    in the text (capitalised, accents folded), and not a lowercase run of the same words."""
    c = Corpus(
        [
            Passage("0", "Lothair II", "He was the son of Ermengarde of Tours and Lothair I."),
            Passage("1", "Ermengarde of Tours", "Ermengarde of Tours died in 851."),
            Passage("2", "Café de Flore", "They met at the Cafe de Flore in Paris."),
            Passage("3", "Notes", "a walk from ermengarde of tours to the café de flore"),
        ]
    )
    on = {"title_aliases": True, "alias_mentions": True}
    ents = Index.build(c, ["entities"], {"entities": on}, progress=False).part("entities")
    e, cafe = ents.ids["ermengarde of tours"], ents.ids["cafe de flore"]
    assert ents.mentions[0, e] == 1 and ents.mentions[2, cafe] == 1
    assert ents.mentions[3, e] == 0 and ents.mentions[3, cafe] == 0  # lowercase: no
    assert ents.owns[1, e] == 1 and ents.owns[0, e] == 0  # own pages unchanged
    off = Index.build(c, ["entities"], {"entities": {"title_aliases": True}}, progress=False)
    assert off.part("entities").mentions[0, e] == 0  # the NER alone splits it


def test_tfidf_weights_by_hand():
    tf = sp.csr_matrix(np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 0.0]]))
    w, df = tfidf_weights(tf)
    assert df.tolist() == [2.0, 1.0]
    # N = 3: w = tf·log((N+1)/(df+1)) + 1
    assert w[0, 0] == pytest.approx(2 * math.log(4 / 3) + 1)
    assert w[1, 1] == pytest.approx(1 * math.log(4 / 2) + 1)


def test_bipartite_graph_structure_and_hub_penalty():
    tf = sp.csr_matrix(np.array([[1.0, 1.0], [1.0, 0.0], [1.0, 0.0]]))
    g = build_bipartite(tf, hub_penalty=1.0)
    P = g.P.toarray()
    assert P.shape == (5, 5)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    w, df = tfidf_weights(tf)
    # passage 0 → entity 0 (df 3) and entity 1 (df 1), scaled by df^-1, then row-normalised
    a, b = w[0, 0] / 3, w[0, 1] / 1
    assert P[0, 3] == pytest.approx(a / (a + b)) and P[0, 4] == pytest.approx(b / (a + b))
    assert P[:3, :3].sum() == 0 and P[3:, 3:].sum() == 0  # bipartite


def test_prune_and_cap():
    tf = sp.csr_matrix(np.array([[1, 1, 0], [1, 0, 1], [1, 0, 0], [1, 1, 0]], dtype=float))
    g = build_bipartite(tf, prune_top_pct=34.0)  # 1 of 3 entities: the df-4 hub
    assert not g.kept[0] and g.kept[1:].all()
    assert g.P[4].nnz == 0  # hub node has no edges left
    g = build_bipartite(tf, edge_cap=1)
    assert g.P[4].nnz == 1  # entity 0 keeps one passage


def test_seed_weights_and_mixing():
    assert passage_weights(np.array([3.0, 2.0, 1.0]), "rank").tolist() == [1, 0.5, 1 / 3]
    assert passage_weights(np.array([3.0, -1.0]), "raw").tolist() == [3.0, 0.0]
    sm = passage_weights(np.array([1.0, 0.0]), "softmax")
    assert sm.tolist() == pytest.approx([math.e / (math.e + 1), 1 / (math.e + 1)])
    assert entity_weights(np.array([1, 4]), 0.5).tolist() == [1.0, 0.5]
    se, sd = np.array([1.0, 0, 0, 0]), np.array([0, 2.0, 1.0, 0])
    assert mix_seeds(se, sd, "l1").tolist() == pytest.approx([0.25, 0.5, 0.25, 0])
    assert mix_seeds(se, sd, "fixed", 0.5).tolist() == pytest.approx([0.5, 1 / 3, 1 / 6, 0])
    a = (1 + 1) / (1 + 2 + 2)
    assert mix_seeds(se, sd, "adaptive").tolist() == pytest.approx(
        [a, (1 - a) * 2 / 3, (1 - a) / 3, 0]
    )
    assert mix_seeds(np.zeros(4), sd, "adaptive").tolist() == pytest.approx([0, 2 / 3, 1 / 3, 0])
    with pytest.raises(ConfigError):
        mix_seeds(se, sd, "nope")


def test_graph_method_equals_ppr_by_hand(tiny_index):
    q = "Which river flows through the birthplace of Ada Vell?"
    r = get_retriever(tiny_index, "graph", max_iter=200).search(q, k=5)
    ents = tiny_index.part("entities")
    g = ents.graph(0.5, 0.0, 0)
    s = np.zeros(g.n_nodes)
    qe = ents.query_entities(q)
    s[5 + np.array(qe)] = np.power(np.maximum(ents.df[qe], 1), -0.5)
    s /= s.sum()
    exact = ppr_exact(g.P, s, 0.15)[:5]
    order = np.lexsort((np.arange(5), -exact))
    expected = [str(i) for i in order if exact[i] > 0][:5]
    assert r.ids == expected
    assert r.scores == pytest.approx(exact[[int(i) for i in r.ids]].tolist(), abs=1e-9)


def test_push_and_power_agree_on_ranking(demo_graph_index, demo_dataset):
    power = get_retriever(demo_graph_index, "graph_hybrid", max_iter=100)
    push = get_retriever(demo_graph_index, "graph_hybrid", ppr="push", eps=1e-9)
    for q in demo_dataset.questions[:6]:
        assert power.search(q.text, k=5).ids == push.search(q.text, k=5).ids


@pytest.fixture(scope="module")
def demo_graph_index(demo_index_dir, tmp_path_factory):
    ix = Index.load(demo_index_dir)
    ix.add_parts(["entities"], progress=False)
    return ix


@pytest.mark.parametrize("method", GRAPH_METHODS)
def test_graph_methods_rank_and_explain(demo_graph_index, demo_dataset, method):
    r = get_retriever(demo_graph_index, method)
    for q in demo_dataset.questions[:4]:
        a = r.search(q.text, k=6)
        assert a.ids == r.search(q.text, k=6).ids
        assert 0 < len(a) <= 6 and a.scores == sorted(a.scores, reverse=True)
        assert all(a.explanations)
    batch = r.search_batch([q.text for q in demo_dataset.questions[:3]], k=4)
    assert [b.ids for b in batch] == [r.search(q.text, k=4).ids for q in demo_dataset.questions[:3]]


def test_fallbacks(tiny_index):
    q = "where does it flow"  # no capitalised words: no entities
    r = get_retriever(tiny_index, "graph").search(q, k=5)
    assert r.info["fallback"] == "uniform" and len(r) == 5
    r = get_retriever(tiny_index, "graph_bm25_fallback").search(q, k=5)
    assert r.info["fallback"] == "bm25"
    top = get_retriever(tiny_index, "bm25").search(q, k=1).ids[0]
    assert r.ids[0] == top


def test_seed_passages_lift_their_neighbours(demo_graph_index, demo_dataset):
    q = demo_dataset.questions[0]  # The Lantern Keeper -> Isolde Marwenne
    r = get_retriever(demo_graph_index, "graph_dense", seed_k=1, entity_seeds=False).search(
        q.text, k=10
    )
    seed = get_retriever(demo_graph_index, "dense").search(q.text, k=1).ids[0]
    assert r.ids[0] == seed and r.explanations[0]["seed"] == pytest.approx(1.0)
    assert len(r) > 1  # mass flowed to passages sharing the seed's entities


def test_bm25_2step_expands_with_entities(demo_graph_index, demo_dataset):
    r = get_retriever(demo_graph_index, "bm25_2step", n_expand=3).search(
        demo_dataset.questions[0].text, k=5
    )
    assert 0 < len(r.info["expansion"]) <= 3


def test_spacy_request_never_falls_back(tiny):
    with pytest.raises(ConfigError):
        Index.build(
            tiny,
            ["entities"],
            {"entities": {"ner": "spacy", "spacy_model": "no_such_model"}},
            progress=False,
        )


def test_bad_graph_params(tiny_index):
    for bad in (
        {"alpha": "1.5"},
        {"seed_weighting": "x"},
        {"prune_top_pct": "100"},
        {"ppr": "exact"},
    ):
        with pytest.raises(ConfigError):
            get_retriever(tiny_index, "graph", **bad)


def test_ngram_query_matcher_ignores_capitalisation():
    c = Corpus(
        [
            Passage(
                "0", "Me and Bobby McGee", "Me and Bobby McGee is a song by Kris Kristofferson."
            ),
            Passage("1", "Kris Kristofferson", "Kris Kristofferson is a singer."),
        ]
    )
    ix = Index.build(c, ["entities"], {"entities": {"title_aliases": True}}, progress=False)
    ents = ix.part("entities")
    q = "who wrote the song me and bobby mcgee"
    assert ents.query_entities(q, "ner") == []  # no capitals: the regex finds nothing
    assert [ents.names[i] for i in ents.query_entities(q, "ngram")] == ["me and bobby mcgee"]
    # longest match wins and single function words never match
    q2 = "Who Is Kris Kristofferson?"
    assert [ents.names[i] for i in ents.query_entities(q2, "ngram")] == ["kris kristofferson"]


def test_own_page_boost_scales_entity_to_title_passage_edges(tiny):
    ix = Index.build(
        tiny, ["sparse", "entities"], {"entities": {"title_aliases": True}}, progress=False
    )
    ents = ix.part("entities")
    e = ents.ids["red lamp"]
    assert ents.owns[2, e] == 1 and ents.owns[0, e] == 0  # passage 2 is Red Lamp's own page
    plain, boosted = ents.graph(0.5, 0.0, 0, 1.0), ents.graph(0.5, 0.0, 0, 5.0)
    node = 5 + e
    w_plain = plain.P[node].toarray().ravel()
    w_boost = boosted.P[node].toarray().ravel()
    assert w_boost[2] > w_plain[2] and w_boost[0] < w_plain[0]
    # the boost is exactly 5x on the raw weight before row normalisation
    ratio = (w_boost[2] / w_boost[0]) / (w_plain[2] / w_plain[0])
    assert ratio == pytest.approx(5.0)
    r = get_retriever(ix, "graph", own_page_boost=5.0).search("Who wrote Red Lamp?", k=3)
    assert r.ids[0] == "2"
