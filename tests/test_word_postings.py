"""Word postings: which texts can hold a new title alias, without reading every text."""

from __future__ import annotations

import random
import re

import numpy as np

from hopgraph.corpus import Corpus, Passage
from hopgraph.index import Index
from hopgraph.index.word_postings import WordPostings, word_records
from hopgraph.text.ner import fold_accents

WORDS = ["Tours", "of", "Hugh", "Gödel", "Kurt", "the", "Ñandú", "x1", "Ōsaka", "city", "–",
         "ﬁ", "Straße", "東京", "a\x00b", "Abbey", "Prum"]  # fmt: skip
PHRASES = ["hugh of tours", "kurt godel", "osaka city", "prum abbey", "x1 city", "stra e"]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[0-9a-z]+", fold_accents(text).lower()))


def _holds(text: str, phrase: str) -> bool:
    stream = " ".join(re.findall(r"[0-9A-Za-z]+", fold_accents(text))).lower()
    return f" {phrase} " in f" {stream} "


def _texts(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 12))) for _ in range(n)]


def test_word_records_hold_the_words_the_alias_scan_compares():
    texts = _texts(random.Random(1), 3000)
    m, keys = word_records(texts, block=256)
    assert m.shape == (3000, len(keys))
    for i, t in enumerate(texts):
        assert {keys[j] for j in m.indices[m.indptr[i] : m.indptr[i + 1]]} == _words(t)


def test_candidates_are_every_text_holding_a_phrase_through_updates_and_compaction():
    rng = random.Random(2)
    texts = _texts(rng, 2000)
    words = WordPostings.of_texts(texts)
    current = list(texts)
    for step in range(4):  # delete some rows, add some texts, as Index.updated does
        alive = np.ones(len(current), bool)
        alive[rng.sample(range(len(current)), 100)] = False
        keep = np.flatnonzero(alive)
        added = _texts(rng, 50)
        old_to_new = np.full(len(current), -1, np.int64)
        old_to_new[keep] = np.arange(len(keep))
        words = words.updated(old_to_new, added, len(keep))
        current = [current[r] for r in keep] + added
        for phrase in PHRASES:
            got = set(words.candidates([phrase]).tolist())
            holds = {r for r, t in enumerate(current) if _holds(t, phrase)}
            assert holds <= got, (step, phrase)  # a superset of the texts holding it
            assert got == {r for r, t in enumerate(current) if set(phrase.split()) <= _words(t)}
        if step == 1:
            words = words.compacted(len(current))  # as a compaction writes the new base
            assert words.to_current is None and not words.added
            fresh = WordPostings.of_texts(current)
            for phrase in PHRASES:
                np.testing.assert_array_equal(
                    words.candidates([phrase]), fresh.candidates([phrase])
                )


def test_a_new_alias_is_found_in_old_texts_by_the_postings_as_by_a_rebuild(tmp_path):
    """The entities part keeps the postings (saved with the base, carried through updates);
    a page with a new title finds the old texts that mention it, and nothing else is read."""
    opts = {"entities": {"title_aliases": True, "alias_mentions": True}}
    base = [
        Passage("a", "Lothair I", "Lothair I retired to Prum Abbey in 855."),
        Passage("b", "Louis the Pious", "Louis the Pious ruled after Charlemagne."),
        Passage("c", "Ermengarde", "Ermengarde married Lothair; Prum Abbey kept her letters."),
        Passage("d", "Hugh", "Hugh of Tours was a count."),
    ]
    index = Index.build(Corpus(base), ["entities"], opts, progress=False)
    assert index.part("entities").words is not None
    index.save(tmp_path / "ix")
    index = Index.load(tmp_path / "ix")
    assert index.part("entities").words is not None  # saved with the base
    index = index.updated(delete=["b"], add=[Passage("e", "Charlemagne", "Charlemagne ruled.")])
    index = index.updated(add=[Passage("f", "Prum Abbey", "Prum Abbey is in the Eifel.")])
    part = index.part("entities")
    assert part.payload["rescan"] == [0, 1]  # a and c: the old texts holding "prum abbey"
    rebuilt = Index.build(index.corpus, ["entities"], opts, progress=False)
    assert part.found_dict() == rebuilt.part("entities").found_dict()
    index.save(tmp_path / "ix")  # a delta commit
    loaded = Index.load(tmp_path / "ix")
    assert loaded.part("entities").found_dict() == rebuilt.part("entities").found_dict()
    loaded.compact()  # a new base: the postings merged over the current rows
    again = Index.load(tmp_path / "ix").part("entities").words
    fresh = rebuilt.part("entities").words
    assert again is not None and fresh is not None
    for phrase in ["prum abbey", "hugh of tours", "louis the pious", "charlemagne ruled"]:
        np.testing.assert_array_equal(again.candidates([phrase]), fresh.candidates([phrase]))
