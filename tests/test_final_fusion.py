"""The default's final fusion: its weights per kind of corpus, and which corpora are tables."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from hopgraph.corpus import Corpus, Passage
from hopgraph.corpus.convert import TABLE_KIND
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.final_fusion import (
    WEIGHTS,
    Weights,
    bm25_margin,
    chosen_weights,
    fusion_kind,
    is_tables,
)


def test_the_weights_per_corpus_kind():
    """The default's weights go by fusion kind; a weight given replaces the default's (a BM25
    weight given is fixed: no margin's part), and dense gets none without vectors whatever is
    asked."""
    assert chosen_weights("entity_titles") == WEIGHTS["entity_titles"] == Weights(0.0, 0.0)
    plain = WEIGHTS["plain_titles"]
    assert plain.any and WEIGHTS["tables"].dense > 0
    assert chosen_weights("plain_titles", bm25=0.3) == Weights(0.3, plain.dense, 0.0)
    assert chosen_weights("plain_titles", dense=0) == Weights(plain.bm25, 0.0, plain.margin)
    assert chosen_weights("plain_titles_no_vectors", dense=2.0).dense == 0.0
    assert "alone" in Weights(0, 0).describe() and "BM25's (0.5)" in Weights(0.5, 0).describe()
    assert "+ 1 × its top hit's lead" in Weights(0.25, 0.5, 1.0).describe()


def test_bm25s_weight_grows_with_its_top_hits_margin():
    """BM25's weight for one query: its base plus ``margin`` × (s1 − s2) / s1 of BM25's two
    best scores; 0 with fewer than two hits."""
    fh = SimpleNamespace(bm25=np.array([0.0, 8.0, 2.0, 6.0]), b_list=np.array([1, 3, 2]))
    assert bm25_margin(fh) == pytest.approx(0.25)
    w = Weights(0.5, 0.25, 2.0).for_query(fh)
    assert w == Weights(1.0, 0.25, 0.0)
    assert Weights(0.5, 0.25).for_query(fh) == Weights(0.5, 0.25)
    assert bm25_margin(SimpleNamespace(bm25=np.array([3.0]), b_list=np.array([0]))) == 0.0


def _corpus(n: int, tables: int) -> Corpus:
    return Corpus([
        Passage(id=f"p{i}", title=f"t{i}", text=f"singer_{i}: name, country, age {i}",
                metadata={"kind": TABLE_KIND} if i < tables else {})
        for i in range(n)
    ])  # fmt: skip


def test_a_corpus_of_tables_is_its_own_kind():
    """Most documents tables: ``tables`` (dense leans in); from the build's detection where
    the index has one, else from the passages' metadata."""
    mostly = _corpus(10, 7)
    few = _corpus(10, 2)
    assert is_tables(SimpleNamespace(corpus=mostly, detected=None))
    assert not is_tables(SimpleNamespace(corpus=few, detected=None))
    told = SimpleNamespace(corpus=few, detected={"why": {"table_share": 0.9}})
    assert is_tables(told)  # the build's measurement wins
    assert not is_tables(SimpleNamespace(corpus=_corpus(0, 0), detected=None))
    index = Index.build(
        mostly, ["sparse", "entities"], {"entities": {"title_aliases": False}}, progress=False
    )
    assert fusion_kind(index, False) == "tables_no_vectors"
    r = get_retriever(index)
    assert r.weights == WEIGHTS["tables_no_vectors"]
    assert "database tables" in r.trusted()
