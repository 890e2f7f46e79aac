"""The default method ``multihop``: registry, ranking, explanations, ranker files, training."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from hopgraph.defaults import DEFAULT_PARTS, default_build
from hopgraph.errors import ConfigError
from hopgraph.eval import evaluate
from hopgraph.index import Index
from hopgraph.models.ranker import CORPUS_KINDS, NO_VECTORS, load_ranker
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.base import DEFAULT_METHOD, method_class
from hopgraph.retrieve.hop_features import FEATURES, HopSettings
from hopgraph.retrieve.multihop import MultihopParams, score_candidates, shared_ranker
from hopgraph.training.ranker import TrainingCorpus, evaluate_ranker, train


def test_default_is_multihop_and_needs_three_parts():
    assert DEFAULT_METHOD == "multihop"
    assert set(DEFAULT_PARTS) == {"sparse", "dense", "entities"}
    assert method_class("default") is method_class("multihop")
    assert method_class(None) is method_class("multihop")


def test_default_build_detects_title_aliases(demo_dataset, default_index):
    assert set(default_index.parts) == set(DEFAULT_PARTS)
    assert default_index.part("entities").options.title_aliases is True
    assert default_index.detected["entities"] == {"title_aliases": True, "alias_mentions": True}


def test_get_retriever_without_name_is_the_default(default_index):
    r = get_retriever(default_index)
    assert r.name == "multihop"
    assert get_retriever(default_index, "default").name == "multihop"


def test_large_k_is_answered_with_every_passage_once(default_index):
    r = get_retriever(default_index)
    n = len(default_index.corpus)
    ranking = r.search("Who directed the film?", k=n + 5)
    assert len(ranking.ids) == n
    assert len(set(ranking.ids)) == n
    assert all(np.diff(ranking.scores) <= 0)


def test_deterministic_and_batch_equals_single(demo_dataset, default_index):
    r = get_retriever(default_index)
    qs = [q.text for q in demo_dataset.questions] * 2  # more than one PPR block
    single = [r.search(q, k=10) for q in qs]
    again = [r.search(q, k=10) for q in qs]
    batch = r.search_batch(qs, k=10)
    for a, b, c in zip(single, again, batch, strict=True):
        assert a.ids == b.ids == c.ids
        np.testing.assert_allclose(a.scores, c.scores, rtol=1e-9)


def test_local_ppr_is_the_power_iteration_at_eps_zero_and_close_above(demo_dataset, default_index):
    qs = [q.text for q in demo_dataset.questions]
    power = get_retriever(default_index, ppr="power")
    exact_local = get_retriever(default_index, ppr="local", ppr_eps=0.0)
    for q in qs:
        a, b = power.search(q, k=10), exact_local.search(q, k=10)
        assert a.ids == b.ids
        np.testing.assert_allclose(a.scores, b.scores, rtol=1e-9)
    # auto solves locally from ppr_local_min_passages on: here the demo's size
    n = len(default_index.corpus)
    auto = get_retriever(default_index, ppr_local_min_passages=n, ppr_eps=1e-4)
    local = get_retriever(default_index, ppr="local", ppr_eps=1e-4)
    batch = auto.search_batch(qs, k=10)
    for q, c in zip(qs, batch, strict=True):
        assert local.search(q, k=10).ids == c.ids
    assert any(  # really another solver: some scores move
        not np.allclose(local.search(q, k=10).scores, power.search(q, k=10).scores) for q in qs
    )


def test_rewritten_queries_cosines_are_computed_only_when_read(
    demo_dataset, default_index, monkeypatch
):
    import hopgraph.retrieve.hop_features as hf

    calls = []
    cosines = hf.cosines
    monkeypatch.setattr(hf, "cosines", lambda *a: calls.append(1) or cosines(*a))
    q = demo_dataset.questions[0].text
    found = get_retriever(default_index).search(q, k=10)
    assert len(calls) == 1  # the first hop's; rewrite_k 0 reads no rewritten query's list
    assert found.explanations  # they say which rewritten query matched best: now computed
    assert len(calls) == 1 + HopSettings().rewrite_anchors
    calls.clear()
    get_retriever(default_index, rewrite_k=2).search(q, k=10)
    assert len(calls) == 1 + HopSettings().rewrite_anchors  # their top lists join


def test_beats_rrf_on_the_demo(demo_dataset, default_index):
    results = evaluate(default_index, demo_dataset, ["rrf", "multihop"], progress=False)
    by = {r.label: r.metrics for r in results}
    assert by["multihop"]["recall@5"] >= by["rrf"]["recall@5"]
    assert by["multihop"]["recall@5"] > 0.8


def test_explanations_name_the_bridge(demo_dataset, default_index):
    """On two-hop questions, some gold second-hop passage is explained as a 2-hop path
    through a first-hop passage, in words."""
    r = get_retriever(default_index)
    paths = []
    for q in demo_dataset.questions:
        ranking = r.search(q.text, k=5)
        why = ranking.explanations
        assert len(why) == len(ranking.ids)
        for pid, w in zip(ranking.ids, why, strict=True):
            assert w["summary"]
            assert set(w["signals"]) >= {"bm25", "dense", "graph", "bridge"}
            route = w["route"]
            if w["path"].startswith("2-hop"):  # the sentence and the data say the same
                assert route["hops"] == 2 and f"*{route['via']}*" in w["path"]
                via = default_index.corpus.get(route["via_id"])
                assert via.title == route["via"] and route["via_id"] != pid
            elif w["path"].startswith("1-hop"):
                assert route["hops"] == 1 and route["kind"] in ("named", "direct")
            else:
                assert route is None
            if pid in q.gold and w["path"].startswith("2-hop: question → *"):
                paths.append(w["path"])
    assert paths, "no gold passage was explained as a 2-hop path"
    assert all("→ this page" in p or "← this page" in p for p in paths)


def test_features_are_finite_and_named(demo_dataset, default_index):
    r = get_retriever(default_index)
    q = demo_dataset.questions[0]
    qvec = default_index.part("dense").encode_queries([q.text])[0]
    found = score_candidates(default_index, r.settings, q.text, qvec, None)
    assert found.feats.X.shape == (len(found.rows), len(FEATURES))
    assert np.isfinite(found.feats.X).all()
    assert len(set(found.rows.tolist())) == len(found.rows)
    # the gold passages are among the candidates
    pos = default_index.corpus.position
    assert {pos(g) for g in q.gold} <= set(found.rows.tolist())
    # dropping a signal zeroes its columns
    s = HopSettings(drop=("ppr", "bridge"))
    dropped = score_candidates(default_index, s, q.text, qvec, None).feats.X
    assert not dropped[:, FEATURES.index("ppr")].any()
    assert not dropped[:, FEATURES.index("bridge")].any()


def test_float32_entity_ones_give_the_float64_features(demo_dataset, default_index):
    """The candidates' entity matrix holds its ones in float32 (half the memory); every
    feature taken from it equals the one taken from float64 ones, bit for bit."""
    import scipy.sparse as sp

    from hopgraph.retrieve import hop_features

    r = get_retriever(default_index)
    maps = hop_features.entity_maps(default_index.part("entities"), len(default_index))
    assert maps.binary.dtype == np.float32
    for q in demo_dataset.questions[:5]:
        qvec = default_index.part("dense").encode_queries([q.text])[0]
        ours = score_candidates(default_index, r.settings, q.text, qvec, None).feats.X
        b = maps.binary
        maps.binary = sp.csr_matrix((np.ones(b.nnz, np.float64), b.indices, b.indptr), b.shape)
        try:
            wide = score_candidates(default_index, r.settings, q.text, qvec, None).feats.X
        finally:
            maps.binary = b
        np.testing.assert_array_equal(ours, wide)


def test_shipped_ranker_matches_the_features():
    rankers = load_ranker()
    assert rankers.features == FEATURES
    assert set(rankers.rankers) == {*CORPUS_KINDS, *(k + NO_VECTORS for k in CORPUS_KINDS)}
    trained = rankers.meta["trained_on"]
    assert set(trained["entity_titles"]) >= {"hotpotqa", "musique", "2wikimultihopqa"}
    assert "scifact" not in trained["entity_titles"]
    assert "scifact" in trained["plain_titles"]
    # the train sets buried in 100k passages (issue 38) train the entity_titles models only
    at_scale = {"musique_train@100000", "hotpotqa_train@100000"}
    assert at_scale <= set(trained["entity_titles"])
    assert not at_scale & set(trained["plain_titles"])
    for kind in rankers.rankers:
        ranker = rankers.for_kind(kind)
        x = np.zeros((3, len(FEATURES)))
        x[1, FEATURES.index("bm25")] = 1.0
        assert ranker.score(x).shape == (3,)
        contrib = ranker.contributions(x)
        np.testing.assert_allclose(contrib.sum(axis=1), ranker.score(x), atol=1e-9)


def test_the_model_follows_the_corpus_kind(demo_dataset, default_index):
    """Entity-name titles get the entity_titles model; without title aliases, plain_titles."""
    assert get_retriever(default_index).ranker is shared_ranker("").for_kind("entity_titles")
    plain = Index.build(
        demo_dataset.corpus,
        ["sparse", "dense", "entities"],
        {"entities": {"title_aliases": False, "alias_mentions": False}},
        progress=False,
    )
    r = get_retriever(plain)
    assert r.ranker is shared_ranker("").for_kind("plain_titles")
    assert r.search(demo_dataset.questions[0].text, k=5).ids


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "unreadable"),
        ('{"kind": "linear"}', "not a lightgbm-lambdarank"),
        ('{"kind": "lightgbm-lambdarank", "features": ["a"]}', "malformed"),
        ('{"kind": "lightgbm-lambdarank", "features": ["a"], "models": {}}', "no model for"),
    ],
)
def test_bad_ranker_files_are_refused(tmp_path, content, message):
    path = tmp_path / "ranker.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_ranker(path)
    with pytest.raises(ConfigError, match="not found"):
        load_ranker(tmp_path / "missing.json")


def test_ranker_with_other_features_is_refused(tmp_path, default_index):
    data = load_ranker().to_json()
    data["features"] = [*data["features"][:-1], "something_else"]  # same count, other names
    path = tmp_path / "other.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="retrain"):
        get_retriever(default_index, model=str(path))


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("depth", 0), ("anchors", -1), ("alpha", 1.5), ("gcs_alpha", -0.1), ("rewrite_k", -1),
        ("ppr_eps", -1e-7), ("ppr", "fast"), ("ppr_local_min_passages", 0),
        ("lexical_weight", -0.5), ("dense_weight", -2), ("chain", -1),
    ],
)  # fmt: skip
def test_bad_params_are_refused(default_index, param, value):
    with pytest.raises(ConfigError, match=param):
        get_retriever(default_index, **{param: value})


def test_missing_entities_part_names_the_command(demo_index):
    with pytest.raises(ConfigError, match=r"hopgraph add-parts .* --parts entities"):
        get_retriever(demo_index, "multihop")  # without a name the default falls back to rrf


def test_training_is_reproducible_and_the_model_ranks(tmp_path, demo_dataset, default_index):
    corpus = TrainingCorpus.of("demo", "demo", default_index, demo_dataset)
    s = MultihopParams().settings()
    a = train([corpus], s, progress=False).save(tmp_path / "a.json")
    b = train([corpus], s, progress=False).save(tmp_path / "b.json")
    assert a.read_bytes() == b.read_bytes()
    fitted = load_ranker(a)
    scores = evaluate_ranker(corpus, fitted, s)
    assert scores["recall@5"] > 0.8
    # a retriever uses a model file given as a parameter
    r = get_retriever(default_index, model=str(a))
    assert r.search(demo_dataset.questions[0].text, k=5).ids


def test_pseudo_queries_train_the_plain_model_and_leave_with_their_corpus(
    demo_dataset, default_index
):
    from hopgraph.training.pseudo import pseudo_training_corpus

    corpus = TrainingCorpus.of("demo", "demo", default_index, demo_dataset)
    pseudo = pseudo_training_corpus(corpus, 12, trains=("plain_titles",))
    assert pseudo.name == "demo-pseudo" and pseudo.source == "demo" and pseudo.family == "demo"
    assert pseudo.models() == ("plain_titles",) and corpus.models() == CORPUS_KINDS
    assert len(pseudo.index.corpus) == len(default_index.corpus)  # sources replaced by rests
    assert 0 < len(pseudo.dataset.questions) <= 12
    for q, gold in zip(pseudo.dataset.questions, pseudo.gold_rows, strict=True):
        (pid,) = q.gold
        assert pseudo.index.corpus.ids[gold[0]] == pid
        assert q.text not in pseudo.index.corpus[gold[0]].text  # the rest, not the passage
        assert q.text in default_index.corpus[default_index.corpus.position(pid)].text
    s = MultihopParams().settings()
    both = train([corpus, pseudo], s, progress=False)
    assert both.meta["trained_on"] == {
        "entity_titles": {"demo": len(demo_dataset.questions)},
        "plain_titles": {"demo": len(demo_dataset.questions),
                         "demo-pseudo": len(pseudo.dataset.questions)},
    }  # fmt: skip


def test_rank_features_of_candidates_equal_the_dense_ranks():
    from hopgraph.retrieve.hop_features import _neg_log_ranks

    rng = np.random.default_rng(3)
    n = 500
    for _ in range(20):
        order = rng.choice(n, size=rng.integers(0, 120), replace=False)
        rows = rng.choice(n, size=rng.integers(0, 80), replace=False)
        dense = np.full(n, -np.log1p(n))  # the n-sized reference: every row's value
        dense[order] = -np.log1p(np.arange(1, len(order) + 1))
        np.testing.assert_array_equal(_neg_log_ranks(order, rows, n), dense[rows])


def test_title_words_do_not_keep_their_corpus_alive():
    """The per-corpus title cache is keyed weakly by the corpus; its value must not hold the
    corpus, or every generation a server ever served stays in memory (it did: ~1 MB per
    update on HotpotQA, 2.3 GB after 900 updates)."""
    import gc
    import weakref

    from hopgraph.corpus import Corpus, Passage
    from hopgraph.retrieve.hop_features import _TITLE_WORDS, title_words

    corpus = Corpus([Passage("a", "Harbour Station", "text")])
    assert title_words(corpus)[0] == ["harbour", "station"]
    ref = weakref.ref(corpus)
    before = len(_TITLE_WORDS)
    del corpus
    gc.collect()
    assert ref() is None and len(_TITLE_WORDS) == before - 1


def test_rerank_switch_reorders_only_the_top_n(demo_dataset, default_index):
    """rerank=N: the top N are the same passages, reordered by the mix of the packaged
    cross-encoder and the ranker (with rerank_paths, the cross-encoder's part as path scores
    through the passages that led to them); past N nothing moves; scores still descend; a huge
    rerank_mix gives back the ranker's order."""
    from hopgraph.models.rerankers import load_cross_encoder
    from hopgraph.retrieve.model_search import path_scores, zscore
    from hopgraph.retrieve.multihop import rescored_via, score_candidates

    plain = get_retriever(default_index)
    switched = get_retriever(default_index, rerank=8, rerank_mix=0.5, rerank_paths=False)
    paths = get_retriever(default_index, rerank=8, rerank_mix=0.5)
    ranker_only = get_retriever(default_index, rerank=8, rerank_mix=1e6)
    ce = load_cross_encoder()
    dense = default_index.part("dense")
    moved = via_used = 0
    for q in demo_dataset.questions[:6]:
        a, b, c = plain.search(q.text, 20), switched.search(q.text, 20), paths.search(q.text, 20)
        for r in (b, c):
            assert set(a.ids[:8]) == set(r.ids[:8]) and a.ids[8:] == r.ids[8:]
            assert r.scores == sorted(r.scores, reverse=True)
        assert ranker_only.search(q.text, 20).ids == a.ids
        texts = [default_index.corpus.get(i).content for i in a.ids[:8]]
        ce_scores, base = ce.score(q.text, texts), zscore(np.array(a.scores[:8]))
        want = zscore(ce_scores) + 0.5 * base
        assert b.ids[:8] == [a.ids[i] for i in np.lexsort((np.arange(8), -want))]
        found = score_candidates(
            default_index, plain.settings, q.text, dense.encode_queries([q.text])[0],
            plain.ranker.score,
        )  # fmt: skip
        rows = np.array([default_index.corpus.position(i) for i in a.ids[:8]])
        via = rescored_via(found, rows)
        want = path_scores(ce_scores, via) + 0.5 * base
        assert c.ids[:8] == [a.ids[i] for i in np.lexsort((rows, -want))]
        moved += a.ids != b.ids
        via_used += int((via >= 0).sum())
        # each rescored hit says where the ranker alone put it, and in words when it moved
        for place, (pid, why) in enumerate(zip(b.ids, b.explanations, strict=True), 1):
            if place > 8:
                assert "ranker_rank" not in why
                continue
            assert why["ranker_rank"] == a.ids.index(pid) + 1
            said = f"by the cross-encoder (the ranker's #{why['ranker_rank']})" in why["summary"]
            assert said == (why["ranker_rank"] != place)
    assert moved  # the cross-encoder changes some order
    assert via_used  # some rescored passage was reached through another one
    with pytest.raises(ConfigError):
        get_retriever(default_index, rerank=-1)


def test_path_scores_lift_a_second_hop_to_the_mean_of_its_path():
    """A passage reached through another scores max(own, mean of the two), in z-scores; the
    others keep their z-scores."""
    from hopgraph.retrieve.model_search import path_scores, zscore

    model = np.array([3.0, 1.0, 0.0, 2.0, -1.0])
    via = np.array([-1, 0, -1, 2, -1])  # 1 was reached through 0, 3 through 2
    z = zscore(model)
    out = path_scores(model, via)
    assert out[1] == pytest.approx((z[1] + z[0]) / 2) and out[1] > z[1]
    assert out[3] == pytest.approx(z[3])  # its path (through the weaker 2) is worse than itself
    assert out[[0, 2, 4]] == pytest.approx(z[[0, 2, 4]])
    assert path_scores(model, np.full(5, -1)) == pytest.approx(z)


def test_final_fusion_of_the_rankers_order_with_bm25s_and_denses(demo_dataset, default_index):
    """lexical_weight=a, dense_weight=b order the candidates by 1/(60 + ranker rank) +
    a/(60 + BM25 rank) + b/(60 + dense rank), ranks among the candidates, computed here by hand
    from the ranker's scores and the two lists; 0 and 0 is the ranker alone."""
    from hopgraph.retrieve.final_fusion import Weights, with_baselines

    plain = get_retriever(default_index, lexical_weight=0.0, dense_weight=0.0)
    fused = get_retriever(default_index, lexical_weight=1.0, dense_weight=0.5)
    auto = get_retriever(default_index)  # entity-name titles: the ranker alone
    assert auto.weights == Weights(0.0, 0.0) == plain.weights
    assert "the ranker's order alone" in auto.trusted() and "as asked" in fused.trusted()
    for q in demo_dataset.questions[:4]:
        v = default_index.part("dense").encode_queries([q.text])[0]
        found = score_candidates(default_index, plain.settings, q.text, v, plain.ranker.score)
        rows = found.rows.tolist()
        by_ranker = sorted(range(len(rows)), key=lambda i: (-found.scores[i], rows[i]))
        want = {rows[i]: 1 / (60 + place) for place, i in enumerate(by_ranker, 1)}
        for signal, w in ((found.fh.b_list, 1.0), (found.fh.d_list, 0.5)):
            for place, r in enumerate([r for r in signal.tolist() if r in rows], 1):
                want[r] += w / (60 + place)
        want_order = sorted(rows, key=lambda r: (-want[r], r))
        order, score = with_baselines(found, np.asarray(by_ranker), Weights(1.0, 0.5), 60.0)
        assert found.rows[order].tolist() == want_order
        assert np.allclose(score, [want[r] for r in rows])
        k = 10
        assert fused.search(q.text, k=k).ids == [
            default_index.corpus.ids[r] for r in want_order[:k]
        ]
        assert plain.search(q.text, k=k).ids == [
            default_index.corpus.ids[rows[i]] for i in by_ranker[:k]
        ]
        hits = fused.search(q.text, k=3).explanations
        assert all(
            h["fusion"]["weights"] == {"bm25": 1.0, "dense": 0.5}
            and "fused with BM25's" in h["summary"] for h in hits
        )  # fmt: skip
        assert "fusion" not in plain.search(q.text, k=3).explanations[0]


CHAIN = [  # question → Gloria → Antonio Vivaldi → Venice: the third page, through the second
    (
        "gloria",
        "Gloria (Vivaldi)",
        "Gloria is a sacred choral work written by Antonio Vivaldi in 1715.",
    ),
    (
        "vivaldi",
        "Antonio Vivaldi",
        "Antonio Vivaldi was an Italian violinist born in Venice in 1678.",
    ),
    (
        "venice",
        "Venice",
        "Venice is a city of northeastern Italy built on islands in a lagoon; "
        "the Grand Canal crosses it.",
    ),  # fmt: skip
]


@pytest.fixture(scope="module")
def chain_index(demo_dataset):
    from hopgraph.corpus import Corpus, Passage

    corpus = Corpus([*demo_dataset.corpus, *(Passage(i, t, x) for i, t, x in CHAIN)])
    parts, options, detected = default_build(corpus)
    index = Index.build(corpus, parts, options, progress=False)
    index.detected = detected
    return index


def test_the_chain_round_names_every_hop(chain_index):
    """One first-hop anchor: the first round reaches Vivaldi's page (a bridge of Gloria's), the
    chain round anchored on the ranker's top passages reaches Venice through it, and the
    explanation names both passages on the way, as the route's data does."""
    q = "Which canal crosses the city where the composer of Gloria was born?"
    one = get_retriever(chain_index, "multihop", anchors=1, chain=0).search(q, k=20)
    two = get_retriever(chain_index, "multihop", anchors=1, chain=2).search(q, k=20)
    why = dict(zip(two.ids, two.explanations, strict=True))
    assert why["vivaldi"]["path"] == "2-hop: question → *Gloria (Vivaldi)* → this page"
    assert why["venice"]["path"] == (
        "3-hop: question → *Gloria (Vivaldi)* → *Antonio Vivaldi* → this page"
    )
    route = why["venice"]["route"]
    assert route["hops"] == 3 and route["kind"] == "bridge" and route["entity"] == "Venice"
    assert route["via"] == "Antonio Vivaldi" and route["via_id"] == "vivaldi"
    assert route["chain"] == [
        {"title": "Gloria (Vivaldi)", "id": "gloria"},
        {"title": "Antonio Vivaldi", "id": "vivaldi"},
    ]
    assert two.info["anchors"] == 1 and two.info["chain_anchors"] == 2
    assert one.info["chain_anchors"] == 0
    # one round: Venice is no hop of anything, so it has no path
    first = dict(zip(one.ids, one.explanations, strict=True))
    assert not first.get("venice", {}).get("path")
    assert two.ids.index("venice") < (one.ids.index("venice") if "venice" in one.ids else 99)


def test_the_chain_round_adds_candidates_and_keeps_the_first(chain_index):
    """``chain=N`` rescored the first round's candidates and the bridge pages of the ranker's
    top N; ``chain=0`` is the first round alone."""
    r = get_retriever(chain_index, "multihop", anchors=1)
    assert r.settings.chain == MultihopParams().chain == 3
    q = "Which canal crosses the city where the composer of Gloria was born?"
    qvec = chain_index.part("dense").encode_queries([q])[0]
    found = score_candidates(chain_index, r.settings, q, qvec, r.ranker.score)
    first = found.before
    assert first is not None and first.before is None
    assert set(first.rows.tolist()) <= set(found.rows.tolist())
    top = first.rows[np.lexsort((first.rows, -first.scores))[:3]].tolist()
    assert found.anchors == top
    assert found.rewrites is first.rewrites
    alone = score_candidates(chain_index, replace(r.settings, chain=0), q, qvec, r.ranker.score)
    assert alone.before is None
    assert np.array_equal(alone.rows, first.rows) and np.array_equal(alone.scores, first.scores)
    # training collects the first round's features only
    bare = score_candidates(chain_index, r.settings, q, qvec, None)
    assert bare.before is None and np.array_equal(bare.feats.X, first.feats.X)
