"""Tests of chunk_document: window sizes, overlap, sentence ends, ids and metadata."""

from __future__ import annotations

import random

import pytest

from hopgraph.corpus import Passage, chunk_document


def _words(n: int, period_every: int = 0) -> str:
    return " ".join(
        f"w{i}" + ("." if period_every and i % period_every == period_every - 1 else "")
        for i in range(n)
    )


def _indices(p: Passage) -> list[int]:
    return [int(w.rstrip(".!?\"')")[1:]) for w in p.text.split()]


def test_short_text_is_one_passage_with_doc_id():
    meta = {"source": "x"}
    out = chunk_document(
        "doc", "Title", "a few  words\nhere", max_words=4, overlap=1, metadata=meta
    )
    assert out == [Passage("doc", "Title", "a few  words\nhere", {"source": "x"})]
    assert out[0].metadata is not meta


def test_exactly_max_words_is_one_passage():
    out = chunk_document("d", "T", _words(10), max_words=10, overlap=3)
    assert [p.id for p in out] == ["d"]
    assert out[0].metadata == {}


def test_windows_ids_and_metadata():
    out = chunk_document("doc", "T", _words(25), max_words=10, overlap=3, metadata={"k": 1})
    assert [p.id for p in out] == ["doc#0", "doc#1", "doc#2", "doc#3"]
    for n, p in enumerate(out):
        assert p.title == "T"
        assert p.metadata == {"doc_id": "doc", "chunk": n, "k": 1}


def test_last_window_reaches_the_end():
    out = chunk_document("d", "T", _words(25), max_words=10, overlap=3)
    idx = [_indices(p) for p in out]
    assert idx == [list(range(0, 10)), list(range(7, 17)), list(range(14, 24)), [21, 22, 23, 24]]


def test_prefers_sentence_end_in_last_quarter():
    words = [f"w{i}" for i in range(30)]
    words[8] += "."  # offset 8 of a 10-word window: inside the last 25%
    out = chunk_document("d", "T", " ".join(words), max_words=10, overlap=2)
    assert _indices(out[0]) == list(range(0, 9))
    assert out[0].text.endswith("w8.")
    assert _indices(out[1])[:2] == [7, 8]


def test_ignores_sentence_end_before_last_quarter():
    words = [f"w{i}" for i in range(30)]
    words[4] += "."  # offset 4 of a 10-word window: too early
    out = chunk_document("d", "T", " ".join(words), max_words=10, overlap=2)
    assert _indices(out[0]) == list(range(0, 10))


@pytest.mark.parametrize("end", ["!", "?", '."', ".)", "?'"])
def test_other_sentence_ends(end):
    words = [f"w{i}" for i in range(30)]
    words[7] += end
    out = chunk_document("d", "T", " ".join(words), max_words=8, overlap=1)
    assert out[0].text.endswith("w7" + end)
    assert len(out[0].text.split()) == 8
    words[6] += end
    out = chunk_document("d", "T", " ".join(words), max_words=8, overlap=1)
    assert out[0].text.endswith("w7" + end)  # the latest sentence end wins


def test_keeps_original_spacing_inside_chunks():
    text = "one two\nthree  four\n\nfive six seven eight"
    out = chunk_document("d", "T", text, max_words=4, overlap=0)
    assert [p.text for p in out] == ["one two\nthree  four", "five six seven eight"]


def test_zero_overlap_partitions_words():
    out = chunk_document("d", "T", _words(23), max_words=5, overlap=0)
    assert sum((_indices(p) for p in out), []) == list(range(23))


def test_large_overlap_still_terminates():
    out = chunk_document("d", "T", _words(40, period_every=3), max_words=8, overlap=7)
    idx = [_indices(p) for p in out]
    assert all(len(i) <= 8 for i in idx)
    assert idx[-1][-1] == 39
    assert all(b[0] == a[0] + 1 for a, b in zip(idx, idx[1:], strict=False))


@pytest.mark.parametrize("seed", range(30))
def test_random_texts_invariants(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 400)
    max_words = rng.randint(1, 60)
    overlap = rng.randint(0, max_words - 1)
    words = [f"w{i}" + rng.choice(["", "", "", ".", "!", "?"]) for i in range(n)]
    out = chunk_document("d", "T", " ".join(words), max_words=max_words, overlap=overlap)
    idx = [_indices(p) for p in out]
    if n <= max_words:
        assert [p.id for p in out] == ["d"]
        return
    assert [p.id for p in out] == [f"d#{k}" for k in range(len(out))]
    assert all(1 <= len(i) <= max_words for i in idx)
    assert all(i == list(range(i[0], i[-1] + 1)) for i in idx)
    assert idx[0][0] == 0 and idx[-1][-1] == n - 1
    for a, b in zip(idx, idx[1:], strict=False):
        assert b[0] == a[-1] + 1 - overlap  # exactly `overlap` shared words
        assert b[0] > a[0]  # progress
    for a in idx[:-1]:  # a window ends at a sentence end or is full
        last = words[a[-1]]
        assert len(a) == max_words or last[-1] in ".!?"


@pytest.mark.parametrize(
    ("max_words", "overlap"),
    [(0, 0), (-5, 0), (10, -1), (10, 10), (10, 11), (1, 1), (2.5, 0), (10, 1.5)],
)
def test_invalid_parameters(max_words, overlap):
    with pytest.raises(ValueError):
        chunk_document("d", "T", "text", max_words=max_words, overlap=overlap)
