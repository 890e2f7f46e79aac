"""Passages, corpora, questions and datasets, and the loaders that read them from disk."""

from hopgraph.corpus.chunking import chunk_document
from hopgraph.corpus.convert import chunked_dataset, sql_tables, tables_dataset, write_unified
from hopgraph.corpus.documents import read_document
from hopgraph.corpus.loaders import (
    SkippedPassages,
    detect_format,
    iter_corpus,
    load_corpus,
    load_dataset,
)
from hopgraph.corpus.passage import Corpus, Dataset, Passage, Question

__all__ = [
    "Corpus",
    "Dataset",
    "Passage",
    "Question",
    "SkippedPassages",
    "chunk_document",
    "chunked_dataset",
    "detect_format",
    "iter_corpus",
    "load_corpus",
    "load_dataset",
    "read_document",
    "sql_tables",
    "tables_dataset",
    "write_unified",
]
