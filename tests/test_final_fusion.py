"""The default's final fusion: its weights per kind of corpus, and which corpora are tables."""

from __future__ import annotations

from types import SimpleNamespace

from hopgraph.corpus import Corpus, Passage
from hopgraph.corpus.convert import TABLE_KIND
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.final_fusion import (
    WEIGHTS,
    Weights,
    chosen_weights,
    fusion_kind,
    is_tables,
)


def test_the_weights_per_corpus_kind():
    """The default's weights go by fusion kind; a weight given replaces the default's, and
    dense gets none without vectors whatever is asked; the profile's lead raises BM25's by
    PROFILE_GAIN (0 as chosen: no change)."""
    from hopgraph.retrieve.final_fusion import PROFILE_GAIN

    assert chosen_weights("entity_titles") == WEIGHTS["entity_titles"] == Weights(0.0, 0.0)
    plain = WEIGHTS["plain_titles"]
    assert plain.bm25 > 0 and plain.dense > 0
    assert WEIGHTS["tables"].dense > 0
    assert chosen_weights("plain_titles", bm25=0.3) == Weights(0.3, plain.dense)
    assert chosen_weights("plain_titles", dense=0) == Weights(plain.bm25, 0.0)
    assert chosen_weights("plain_titles_no_vectors", dense=2.0).dense == 0.0
    lifted = chosen_weights("plain_titles", lead=1.0)
    assert lifted.bm25 == plain.bm25 + PROFILE_GAIN
    assert chosen_weights("plain_titles_no_vectors", lead=1.0) == WEIGHTS["plain_titles_no_vectors"]
    assert "alone" in Weights(0, 0).describe() and "BM25's (0.5)" in Weights(0.5, 0).describe()


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
