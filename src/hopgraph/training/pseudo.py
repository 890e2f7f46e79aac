"""Pseudo-query training sets: questions drawn from a corpus itself, with their gold by
construction (no labels, no LLM).

Each pseudo-query (:func:`~hopgraph.index.profile.pseudo_queries`: a sentence held out of a
passage, or a cropped span) asks for the passage it was cut from. The source passage must not
hold the query word for word, so the training index is the corpus's index with each source
passage replaced by its *rest* (a live update: only those passages go through the models
again), the same setting the corpus profile measures.
"""

from __future__ import annotations

from hopgraph.corpus import Dataset, Passage, Question
from hopgraph.index.profile import pseudo_queries
from hopgraph.training.ranker import TrainingCorpus

PSEUDO_SEED = 1  # not the profile's seed: other passages than the ones it measures


def pseudo_training_corpus(
    c: TrainingCorpus, n: int = 300, seed: int = PSEUDO_SEED, *, trains: tuple[str, ...] = ()
) -> TrainingCorpus:
    """``n`` pseudo-queries of ``c``'s corpus as a training corpus named ``{c.name}-pseudo``,
    of ``c``'s family and held out with it (``source``); ``trains``: the models it trains."""
    corpus = c.index.corpus
    queries = pseudo_queries(corpus, n, seed)
    rests = [
        Passage(corpus[q.row].id, corpus[q.row].title, q.text, corpus[q.row].metadata)
        for q in queries
    ]
    index = c.index.updated(delete=[p.id for p in rests], add=rests)
    pairs = enumerate(zip(queries, rests, strict=True))
    questions = [Question(f"pseudo-{i}", q.query, (p.id,)) for i, (q, p) in pairs]
    ds = Dataset(f"{c.name}-pseudo", index.corpus, questions)
    return TrainingCorpus.of(ds.name, c.family, index, ds, trains=trains, source=c.source or c.name)
