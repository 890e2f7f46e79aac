"""The default method on an index without passage vectors (no dense part): its own ranker
models, every dense signal absent, and a search without a method that says so."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hopgraph.defaults import default_build
from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.models.ranker import CORPUS_KINDS, NO_VECTORS, load_ranker, ranker_kind
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.base import DEFAULT_METHOD, default_choice, full_parts
from hopgraph.retrieve.final_fusion import WEIGHTS
from hopgraph.retrieve.hop_features import COL, DENSE_FEATURES
from hopgraph.retrieve.multihop import (
    MultihopParams,
    score_candidates,
    shared_ranker,
)
from hopgraph.training.ranker import TrainingCorpus, train, train_both


@pytest.fixture(scope="module")
def full_index(default_index):
    return default_index


@pytest.fixture(scope="module")
def bare_index(full_index):
    """The same index without its dense part (the sparse and entity parts shared)."""
    return Index(full_index.corpus, {k: v for k, v in full_index.parts.items() if k != "dense"})


def test_the_default_searches_without_vectors_and_says_so(demo_dataset, bare_index):
    choice = default_choice(bare_index)
    assert choice.method == DEFAULT_METHOD and choice.missing == ("dense",) and choice.works
    assert "without passage vectors" in choice.note and "--parts dense" in choice.note
    r = get_retriever(bare_index)
    assert r.name == "multihop" and not r.uses_dense
    assert r.ranker is shared_ranker("").for_kind("entity_titles" + NO_VECTORS)
    ranking = r.search(demo_dataset.questions[0].text, k=5)
    assert len(ranking.ids) == 5
    assert ranking.info["default_fallback"]["missing_parts"] == ["dense"]
    assert ranking.info["method"] == "multihop"
    # named explicitly, the method runs the same way, without the note
    named = get_retriever(bare_index, "multihop").search(demo_dataset.questions[0].text, k=5)
    assert named.ids == ranking.ids and "default_fallback" not in named.info


def test_every_dense_signal_is_absent(demo_dataset, bare_index):
    r = get_retriever(bare_index)
    q = demo_dataset.questions[0].text
    found = score_candidates(bare_index, r.settings, q, None, r.ranker.score)
    assert found.fh.qvec is None and len(found.fh.d_list) == 0
    assert not found.feats.X[:, [COL[f] for f in DENSE_FEATURES]].any()
    assert found.feats.X[:, COL["bm25"]].any() and found.feats.X[:, COL["ppr"]].any()
    hits = r.search(q, k=3).explanations
    assert all(h["cosine"] == 0.0 and h["signals"]["dense"] == 0.0 for h in hits)


def test_training_features_without_vectors_are_the_search_features(
    demo_dataset, full_index, bare_index
):
    """The no-vector models are fitted on indexes that have vectors, with them switched off:
    the features must be exactly those of an index that has none."""
    from dataclasses import replace

    s = replace(MultihopParams().settings(), vectors=False)
    qvec = full_index.part("dense").encode_queries([demo_dataset.questions[1].text])[0]
    q = demo_dataset.questions[1].text
    a = score_candidates(full_index, s, q, qvec, None)
    b = score_candidates(bare_index, s, q, None, None)
    np.testing.assert_array_equal(a.rows, b.rows)
    np.testing.assert_array_equal(a.feats.X, b.feats.X)


def test_a_filter_and_a_large_k_are_answered_without_vectors(demo_dataset):
    from hopgraph.corpus import Corpus, Passage

    passages = [
        Passage(p.id, p.title, p.text, {"group": i % 3}) for i, p in enumerate(demo_dataset.corpus)
    ]
    corpus = Corpus(passages)
    parts, options, _ = default_build(corpus)
    index = Index.build(corpus, [p for p in parts if p != "dense"], options, progress=False)
    r = get_retriever(index)
    n = len(corpus)
    everything = r.search("film director", k=n + 3)
    assert sorted(everything.ids) == sorted(corpus.ids)
    filtered = r.search(demo_dataset.questions[0].text, k=n, filter={"group": 1})
    assert set(filtered.ids) == {p.id for p in passages if p.metadata["group"] == 1}
    assert filtered.explanations[-1]  # the filled hits say how they were ranked


def test_choices_on_partial_indexes(demo_dataset, full_index, bare_index):
    assert set(full_parts(DEFAULT_METHOD)) == {"sparse", "dense", "entities"}
    full = default_choice(full_index)
    assert full.method == DEFAULT_METHOD and not full.partial and full.note == ""
    sparse = Index(full_index.corpus, {"sparse": full_index.part("sparse")})
    assert default_choice(sparse).method == "bm25"
    hybrid = Index(full_index.corpus, {k: full_index.part(k) for k in ("sparse", "dense")})
    assert default_choice(hybrid).method == "rrf"
    entities = Index(full_index.corpus, {"entities": full_index.part("entities")})
    nothing = default_choice(entities)
    assert not nothing.works and nothing.note == ""
    with pytest.raises(ConfigError, match="--parts"):
        get_retriever(entities)


def test_a_ranker_file_without_the_no_vector_models_is_refused_clearly(tmp_path, bare_index):
    data = load_ranker().to_json()
    data["models"] = {k: v for k, v in data["models"].items() if k in CORPUS_KINDS}
    path = tmp_path / "vectors-only.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="without passage vectors"):
        get_retriever(bare_index, model=str(path))


def test_train_both_holds_both_kinds_and_is_reproducible(tmp_path, demo_dataset, full_index):
    corpus = TrainingCorpus.of("demo", "demo", full_index, demo_dataset)
    s = MultihopParams().settings()
    a = train_both([corpus], s, progress=False).save(tmp_path / "a.json")
    b = train_both([corpus], s, progress=False).save(tmp_path / "b.json")
    assert a.read_bytes() == b.read_bytes()
    both = load_ranker(a)
    assert set(both.rankers) == {ranker_kind(k, v) for k in CORPUS_KINDS for v in (True, False)}
    # the models with vectors are those train() fits alone
    alone = train([corpus], s, progress=False).to_json()["models"]
    for kind, model in alone.items():
        assert both.to_json()["models"][kind] == model


def test_bm25s_weight_goes_by_corpus_kind_without_vectors(demo_dataset, bare_index):
    """Without vectors the corpus kind decides BM25's weight: 0 where titles are entity names,
    1 elsewhere (final_fusion.WEIGHTS), unless set; dense has none."""
    assert get_retriever(bare_index).weights == WEIGHTS["entity_titles_no_vectors"]
    assert WEIGHTS["entity_titles_no_vectors"] == (0.0, 0.0, 0.0)
    plain = Index.build(
        demo_dataset.corpus,
        ["sparse", "entities"],
        {"entities": {"title_aliases": False, "alias_mentions": False}},
        progress=False,
    )
    r = get_retriever(plain)
    assert r.ranker is shared_ranker("").for_kind("plain_titles" + NO_VECTORS)
    assert r.weights == WEIGHTS["plain_titles_no_vectors"] == (1.0, 0.0, 0.0)
    assert get_retriever(plain, lexical_weight=0.25).weights.bm25 == 0.25
    q = demo_dataset.questions[0].text
    fused, alone = r.search(q, k=10), get_retriever(plain, lexical_weight=0).search(q, k=10)
    assert fused.info["weights"] == {"bm25": 1.0, "dense": 0.0}
    assert alone.info["weights"] == {"bm25": 0.0, "dense": 0.0}
    assert "without vectors" in r.trusted() and "BM25's (1)" in r.trusted()


def test_an_evaluation_of_the_default_builds_its_vectors():
    """What a build for the default makes includes the dense part it only uses where present:
    `hopgraph eval SET` with no method measures the full default, not the one without vectors
    (it searches with what the index has)."""
    from hopgraph.eval import MethodSpec
    from hopgraph.eval.runner import required_parts
    from hopgraph.retrieve.base import needed_parts

    assert "dense" in required_parts([MethodSpec(DEFAULT_METHOD)])
    assert "dense" in required_parts([MethodSpec("default")])
    assert "dense" not in needed_parts(DEFAULT_METHOD)
