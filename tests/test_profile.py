"""The corpus profile: pseudo-queries drawn from a corpus, and how well each signal finds them."""

from __future__ import annotations

import numpy as np
import pytest

from hopgraph.corpus import Corpus, Passage
from hopgraph.index import Index
from hopgraph.index.profile import (
    SIGNALS,
    corpus_profile,
    held_out,
    is_stale,
    pseudo_queries,
    source_ranks,
)
from hopgraph.index.sparse import SparseOptions, SparsePart


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_scores_unindexed_of_an_indexed_text_equal_its_score(demo_dataset, method):
    """A passage's own text, scored as if unindexed, scores as the indexed passage does."""
    texts = [p.content for p in demo_dataset.corpus]
    part = SparsePart.from_texts(SparseOptions(method=method), texts)
    for query in ("Who founded the shipyard?", "river station harbour", "unknownword"):
        want = np.asarray(part.scores(query), np.float64)[:12]
        got = part.scores_unindexed(query, texts[:12])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_held_out_cuts_a_sentence_or_a_span():
    rng = np.random.default_rng(0)
    text = (
        "The harbour station opened in 1901 on the river bank. "
        "It served the ferries of the northern line for sixty years. "
        "A fire destroyed the hall in 1962."
    )
    query, rest, kind = held_out(text, rng)
    assert kind == "sentence" and query in text and query not in rest
    assert sorted((query + " " + rest).split()) == sorted(text.split())
    one = "lowercase words without any sentence end " * 3
    query, rest, kind = held_out(one, rng)
    assert kind == "span" and len(query.split()) >= 5
    assert sorted((query + " " + rest).split()) == sorted(one.split())
    assert held_out("too short to cut", rng) is None


def test_pseudo_queries_are_deterministic(demo_dataset):
    a = pseudo_queries(demo_dataset.corpus, 20, seed=3)
    b = pseudo_queries(demo_dataset.corpus, 20, seed=3)
    assert a == b and len(a) > 0
    assert len({q.row for q in a}) == len(a)
    for q in a:
        assert q.query not in q.rest


def test_source_ranks_are_exact_where_counted_by_hand():
    """Three passages; the source scored as its rest, the others as indexed."""
    corpus = Corpus(
        [
            Passage("a", "", "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"),
            Passage("b", "", "alpha beta words of another passage entirely about nothing much"),
            Passage("c", "", "unrelated text here with no shared terms at all for this one"),
        ]
    )
    index = Index.build(corpus, ["sparse", "dense"], progress=False)
    from hopgraph.index.profile import PseudoQuery

    q = PseudoQuery(0, "alpha beta", "gamma delta epsilon zeta eta theta iota kappa lambda mu",
                    "span")  # fmt: skip
    ranks = source_ranks(index, [q])
    # b holds "alpha beta" and a's rest does not; c ties with a at 0, and a tie counts
    # against the source
    assert ranks["bm25"][0] == 2
    sparse = index.part("sparse")
    assert sparse.scores_unindexed("alpha beta", [q.rest])[0] == 0.0


def test_profile_on_the_demo_index_and_its_features(demo_dataset):
    index = Index.build(demo_dataset.corpus, ["sparse", "dense"], progress=False)
    prof = index.profile
    assert prof is not None and prof["passages"] == len(demo_dataset.corpus)
    assert prof == corpus_profile(index)  # deterministic
    for s in SIGNALS:
        m = prof["signals"][s]
        assert 0.0 < m["mrr"] <= 1.0 and 0.0 <= m["recall@10"] <= 1.0


def test_profile_kept_in_the_manifest_and_refreshed_after_large_updates(tmp_path, demo_dataset):
    passages = list(demo_dataset.corpus)
    index = Index.build(Corpus(passages[:20]), ["sparse", "dense"], progress=False)
    index.save(tmp_path / "ix")
    loaded = Index.load(tmp_path / "ix")
    assert loaded.profile == index.profile and not is_stale(loaded.profile, loaded)
    loaded.add(passages[20:21])  # 5%: kept
    assert loaded.profile == index.profile
    loaded.add(passages[21:24])  # 20% in all: measured again
    assert loaded.profile["passages"] == 24
    loaded.save(tmp_path / "ix")
    assert Index.load(tmp_path / "ix").profile == loaded.profile
    assert Index.build(Corpus(passages[:5]), ["sparse"], progress=False).profile is None
