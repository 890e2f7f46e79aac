"""Passages, corpora, questions and datasets, and the loaders that read them from disk."""

from hopgraph.corpus.chunking import chunk_document
from hopgraph.corpus.loaders import load_corpus, load_dataset
from hopgraph.corpus.passage import Corpus, Dataset, Passage, Question

__all__ = [
    "Corpus",
    "Dataset",
    "Passage",
    "Question",
    "chunk_document",
    "load_corpus",
    "load_dataset",
]
