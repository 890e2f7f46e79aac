"""BM25 numbers checked against bm25s's own pipeline and against the formula by hand."""

from __future__ import annotations

import json
import math

import bm25s
import numpy as np
import pytest
import Stemmer

from hopgraph.corpus import Corpus, Passage
from hopgraph.index import Index
from hopgraph.index.sparse import SparseOptions, SparsePart
from hopgraph.text import Tokenizer


def _bm25s_reference(texts: list[str]):
    stemmer = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    ref = bm25s.BM25()
    ref.index(tokens, show_progress=False)
    return ref, stemmer


def _assert_same_scores(passages: list[Passage], queries: list[str]) -> None:
    part = SparsePart.build(Corpus(passages), SparseOptions(), progress=False)
    ref, stemmer = _bm25s_reference([p.content for p in passages])
    for q in queries:
        qtok = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, return_ids=False)[0]
        expected = ref.get_scores(qtok)
        np.testing.assert_allclose(part.scores(q), expected, rtol=1e-5, atol=1e-6)


def test_tokenizer_matches_bm25s():
    text = "The Lantern-Keeper's 2nd film (1987) was directed by Isolde Marwenne; 'x' a I"
    stemmer = Stemmer.Stemmer("english")
    expected = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, return_ids=False)[0]
    assert Tokenizer()(text) == expected


def test_scores_equal_bm25s_on_demo(demo_dataset):
    queries = [q.text for q in demo_dataset.questions] + ["river river lantern", "zzzz unknown"]
    _assert_same_scores(list(demo_dataset.corpus), queries)


def test_scores_equal_bm25s_on_hotpotqa(data_dir):
    lines = (data_dir / "hotpotqa" / "corpus.jsonl").read_text().splitlines()[:1500]
    passages = [Passage(str(d["idx"]), d["title"], d["text"]) for d in map(json.loads, lines)]
    qs = [json.loads(x)["question"] for x in (data_dir / "hotpotqa" / "questions.jsonl").open()]
    _assert_same_scores(passages, qs[:40])


def test_scores_equal_formula_by_hand():
    # Three passages (no title), Lucene BM25 with k1=1.5, b=0.75. Lucene (since 8.0) drops the
    # constant (k1 + 1) factor: idf · tf / (tf + k1 · (1 - b + b · dl / avgdl)).
    docs = ["apple banana apple", "banana cherry", "cherry cherry cherry date"]
    passages = [Passage(str(i), "", t) for i, t in enumerate(docs)]
    part = SparsePart.build(Corpus(passages), SparseOptions(stemmer="none"), progress=False)
    lengths = [3, 2, 4]
    avgdl = sum(lengths) / 3

    def term(tf: int, df: int, dl: int) -> float:
        idf = math.log(1 + (3 - df + 0.5) / (df + 0.5))
        return idf * tf / (tf + 1.5 * (1 - 0.75 + 0.75 * dl / avgdl))

    # query "apple cherry": apple (df 1) in doc 0 twice; cherry (df 2) once in doc 1, 3x in doc 2
    expected = [term(2, 1, 3), term(1, 2, 2), term(3, 2, 4)]
    np.testing.assert_allclose(part.scores("apple cherry"), expected, rtol=1e-5)
    # unknown words and stopwords score nothing
    assert part.scores("the of zebra").sum() == 0.0


def test_weighted_scores_is_weighted_sum_of_term_scores(demo_index):
    sparse = demo_index.part("sparse")
    ids = sparse.term_ids("river lantern keeper")
    single = [sparse.scores_from_ids([t]) for t in ids]
    w = np.array([0.5, 0.3, 0.2])
    got = sparse.weighted_scores(np.array(ids), w)
    np.testing.assert_allclose(got, sum(wi * s for wi, s in zip(w, single, strict=True)), atol=1e-6)


def test_doc_term_counts(demo_dataset):
    index = Index.build(demo_dataset.corpus, ["sparse"], progress=False)
    sparse = index.part("sparse")
    tok = Tokenizer()
    for row in (0, 7, 20):
        terms = tok(demo_dataset.corpus[row].content)
        assert sparse.doc_lengths[row] == len(terms)
        vocab = sparse.id_to_term()
        lo, hi = sparse.doc_terms.indptr[row], sparse.doc_terms.indptr[row + 1]
        got = {
            vocab[t]: int(c)
            for t, c in zip(
                sparse.doc_terms.indices[lo:hi], sparse.doc_terms.data[lo:hi], strict=True
            )
        }
        assert got == {t: terms.count(t) for t in set(terms)}


@pytest.mark.parametrize("bad", [{"k1": "-1"}, {"b": "1.5"}, {"method": "nope"}, {"k3": "1"}])
def test_bad_sparse_options(demo_dataset, bad):
    from hopgraph.errors import ConfigError

    with pytest.raises(ConfigError):
        Index.build(demo_dataset.corpus, ["sparse"], {"sparse": bad}, progress=False)


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_bm25_from_counts_equals_bm25s_index_bit_for_bit(method):
    """The vectorised build gives bm25s's own score matrix, for every variant."""
    import bm25s

    from hopgraph.corpus import load_corpus
    from hopgraph.data import demo_dataset_path
    from hopgraph.index.sparse import SparseOptions, _count_terms, bm25_from_counts
    from hopgraph.text.analyze import analyzer

    o = SparseOptions(method=method, k1=1.2, b=0.6)
    texts = [p.content for p in load_corpus(demo_dataset_path())]
    tok = analyzer(o.language, o.stemmer, o.stopwords)
    counts, terms = _count_terms(tok, texts, False)
    ours = bm25_from_counts(o, counts, terms)
    ref = bm25s.BM25(k1=o.k1, b=o.b, method=o.method)
    doc_ids = [[terms.index(t) for t in tok(x)] for x in texts]
    ref.index((doc_ids, {t: i for i, t in enumerate(terms)}), show_progress=False)
    for key in ("data", "indices", "indptr"):
        assert ours.scores[key].dtype == ref.scores[key].dtype
        assert np.array_equal(ours.scores[key], ref.scores[key])
    assert ours.scores["num_docs"] == ref.scores["num_docs"]
    assert ours.vocab_dict == ref.vocab_dict
    if ref.nonoccurrence_array is None:
        assert ours.nonoccurrence_array is None
    else:
        assert np.array_equal(ours.nonoccurrence_array, ref.nonoccurrence_array)
