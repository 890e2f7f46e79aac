"""Synthetic training questions: sentences, descriptions, and questions whose gold holds by
construction, on the demo corpus."""

from __future__ import annotations

import pytest

from hopgraph.corpus import Corpus, Passage
from hopgraph.training.synthetic import (
    SYNTHETIC_SUFFIX,
    description,
    sentences,
    synthetic_dataset,
    synthetic_questions,
)


def test_sentences_keep_abbreviations_whole():
    text = "Dr. Ada Vell was born in 1901. She moved to St. Brigid in 1920! Did she stay? Yes."
    assert sentences(text) == [
        "Dr. Ada Vell was born in 1901.",
        "She moved to St. Brigid in 1920!",
        "Did she stay?",
        "Yes.",
    ]


CINDERFEN = "Cinderfen Records is an independent record label in Oakhollow."


@pytest.mark.parametrize(
    ("title", "text", "want"),
    [
        ("Ada Vell", "Ada Vell (1901–1980) was an English film director.", "English film director"),
        ("Quellhaven", "Quellhaven is a market town on the Velmora river.", "market town"),
        ("Cinderfen Records", CINDERFEN, "independent record label"),
        ("Ada Vell", "In 1901 Ada Vell was born.", None),  # not an "X is a ..." opening
        ("Ada Vell", "Ada Vell directed films.", None),
    ],
)
def test_description_of_the_first_sentence(title, text, want):
    assert description(title, text) == want


def test_questions_have_their_gold_by_construction(demo_dataset):
    corpus = demo_dataset.corpus
    qs = synthetic_questions(corpus, 60, seed=1)
    assert qs == synthetic_questions(corpus, 60, seed=1)  # deterministic
    kinds = {q.metadata["kind"] for q in qs}
    assert kinds == {"sentence", "bridge", "comparison"}
    assert len({q.id for q in qs}) == len(qs) <= 60
    for q in qs:
        gold = [corpus.get(g) for g in q.gold]
        if q.metadata["kind"] == "sentence":
            (p,) = gold
            assert q.text.replace("it", p.title) in p.text or q.text in p.text
        elif q.metadata["kind"] == "bridge":
            a, b = gold
            assert b.title in a.text and b.title not in q.text  # B named by description only
            assert f"the {description(b.title, b.text)}" in q.text and a.title in q.text
        else:
            x, y = gold
            assert x.title in q.text and y.title in q.text and q.text.startswith("Which ")


def test_a_bridge_question_reads_as_expected():
    a = "SS Orrendale was a cargo ship. She was built by Rookwell Shipyards in 1911 for the trade."
    b = "Rookwell Shipyards was a shipbuilding company founded by Tobias Grennick."
    corpus = Corpus([Passage("a", "SS Orrendale", a), Passage("b", "Rookwell Shipyards", b)])
    bridge = [q for q in synthetic_questions(corpus, 10) if q.metadata["kind"] == "bridge"]
    assert [(q.text, q.gold) for q in bridge] == [
        (
            "SS Orrendale was built by the shipbuilding company in 1911 for the trade.",
            ("a", "b"),
        )
    ]


def test_synthetic_dataset_is_named_apart(demo_dataset):
    ds = synthetic_dataset(demo_dataset, 10)
    assert ds.name == demo_dataset.name + SYNTHETIC_SUFFIX and ds.corpus is demo_dataset.corpus
    assert 0 < len(ds.questions) <= 10
