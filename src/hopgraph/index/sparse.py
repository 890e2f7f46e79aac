"""The ``sparse`` part: BM25 (bm25s) plus the document–term count matrix.

bm25s stores the BM25 contribution of every (term, passage) pair as a CSC matrix, so scoring a
query is a sum of a few columns. The document–term counts are kept beside it for relevance
feedback (RM3) and for later in-place updates.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from hopgraph.config import option, positive
from hopgraph.corpus import Corpus
from hopgraph.index.part import IndexPart, register_part
from hopgraph.text.tokenize import Tokenizer


@dataclass(frozen=True)
class SparseOptions:
    k1: float = option(1.5, "BM25 term-frequency saturation")
    b: float = option(0.75, "BM25 length normalisation")
    method: str = option(
        "lucene", "BM25 variant (bm25s)", choices=("lucene", "robertson", "atire", "bm25l", "bm25+")
    )
    stemmer: str = option("english", "Snowball stemmer language, or 'none'")
    stopwords: str = option("en", "stopword list: 'en' or 'none'", choices=("en", "none"))

    def validate(self) -> None:
        positive("k1", self.k1)
        if not 0.0 <= self.b <= 1.0:
            from hopgraph.errors import ConfigError

            raise ConfigError(f"option 'b' must be in [0, 1], got {self.b}")


@register_part
class SparsePart(IndexPart):
    name = "sparse"
    Options = SparseOptions

    def __init__(self, options: SparseOptions, bm25: bm25s.BM25, doc_terms: sp.csr_matrix):
        super().__init__(options)
        self.bm25 = bm25
        self.doc_terms = doc_terms
        self.tokenizer = Tokenizer(options.stemmer, options.stopwords)
        self.vocab: dict[str, int] = bm25.vocab_dict
        self.n_docs = int(bm25.scores["num_docs"])
        self._doc_len: np.ndarray | None = None
        self._terms: list[str] | None = None
        self.derived: dict[tuple, Any] = {}  # structures methods derive from this part (graphs)

    # -- building -------------------------------------------------------------------------
    @classmethod
    def build(cls, corpus: Corpus, options: SparseOptions, *, progress: bool = True) -> SparsePart:
        tok = Tokenizer(options.stemmer, options.stopwords)
        vocab: dict[str, int] = {}
        doc_ids: list[list[int]] = []
        for p in tqdm(corpus, desc="sparse: tokenising", unit="passage", disable=not progress):
            doc_ids.append([vocab.setdefault(t, len(vocab)) for t in tok(p.content)])
        bm25 = bm25s.BM25(k1=options.k1, b=options.b, method=options.method)
        bm25.index((doc_ids, dict(vocab)), show_progress=progress, leave_progress=False)
        n_terms = len(bm25.vocab_dict)
        lengths = np.fromiter((len(d) for d in doc_ids), dtype=np.int64, count=len(doc_ids))
        rows = np.repeat(np.arange(len(doc_ids)), lengths)
        cols = np.fromiter(
            (t for d in doc_ids for t in d), dtype=np.int64, count=int(lengths.sum())
        )
        counts = sp.csr_matrix(
            (np.ones(len(cols), dtype=np.int32), (rows, cols)), shape=(len(doc_ids), n_terms)
        )
        counts.sum_duplicates()
        return cls(options, bm25, counts)

    def save(self, folder: Path) -> None:
        self.bm25.save(str(folder / "bm25"), show_progress=False)
        np.save(folder / "doc_terms.indptr.npy", self.doc_terms.indptr)
        np.save(folder / "doc_terms.indices.npy", self.doc_terms.indices)
        np.save(folder / "doc_terms.data.npy", self.doc_terms.data)

    @classmethod
    def load(cls, folder: Path, options: SparseOptions, *, mmap: bool = True) -> SparsePart:
        mode = "r" if mmap else None
        bm25 = bm25s.BM25.load(str(folder / "bm25"), mmap=mmap, show_progress=False)
        indptr = np.load(folder / "doc_terms.indptr.npy", mmap_mode=mode)
        n_docs = len(indptr) - 1
        doc_terms = sp.csr_matrix(
            (
                np.load(folder / "doc_terms.data.npy", mmap_mode=mode),
                np.load(folder / "doc_terms.indices.npy", mmap_mode=mode),
                indptr,
            ),
            shape=(n_docs, len(bm25.vocab_dict)),
        )
        return cls(options, bm25, doc_terms)

    def stats(self) -> dict[str, Any]:
        return {
            "passages": self.n_docs,
            "terms": len(self.vocab),
            "postings": int(self.doc_terms.nnz),
        }

    # -- querying -------------------------------------------------------------------------
    def term_ids(self, text: str) -> list[int]:
        """Vocabulary ids of the query's terms (repeats kept, unknown terms dropped)."""
        vocab = self.vocab
        return [vocab[t] for t in self.tokenizer(text) if t in vocab]

    def scores(self, text: str) -> np.ndarray:
        """BM25 score of every passage for ``text`` (float32, length = passages)."""
        return self.scores_from_ids(self.term_ids(text))

    def scores_from_ids(self, ids: list[int]) -> np.ndarray:
        if not ids:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.asarray(self.bm25.get_scores_from_ids(ids), dtype=np.float32)

    def weighted_scores(self, ids: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Σ_t weight_t · BM25(t, d) for every passage d: a weighted query (RM3)."""
        out = np.zeros(self.n_docs, dtype=np.float64)
        s = self.bm25.scores
        data, indices, indptr = s["data"], s["indices"], s["indptr"]
        for t, w in zip(ids, weights, strict=True):
            lo, hi = int(indptr[t]), int(indptr[t + 1])
            np.add.at(out, indices[lo:hi], w * data[lo:hi].astype(np.float64))
        return out.astype(np.float32)

    @property
    def doc_lengths(self) -> np.ndarray:
        if self._doc_len is None:
            self._doc_len = np.asarray(self.doc_terms.sum(axis=1)).ravel()
        return self._doc_len

    def id_to_term(self) -> list[str]:
        """Term of each vocabulary id (built once: RM3 reads it on every query)."""
        if self._terms is None:
            terms = [""] * len(self.vocab)
            for t, i in self.vocab.items():
                terms[i] = t
            self._terms = terms
        return self._terms
