"""The ``sparse`` part: BM25 (bm25s) plus the document–term count matrix.

bm25s stores the BM25 contribution of every (term, passage) pair as a CSC matrix, so scoring a
query is a sum of a few columns. The document–term counts are kept beside it for relevance
feedback (RM3) and for later in-place updates.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from hopgraph.config import option, positive
from hopgraph.corpus import Corpus
from hopgraph.index.npy import save_array
from hopgraph.index.part import (
    Change,
    IndexPart,
    ReplayStep,
    load_records,
    merge_records,
    save_records,
)
from hopgraph.jit import LARGE, compiled, has_numba, import_bm25s
from hopgraph.text.analyze import ANALYZER_VERSION, analyzer, check_analyzer

bm25s = import_bm25s()  # without numba, which bm25s would import for backends we do not use


ANALYZER_FILE = "analyzer.json"


@dataclass(frozen=True)
class SparseOptions:
    k1: float = option(1.5, "BM25 term-frequency saturation")
    b: float = option(0.75, "BM25 length normalisation")
    method: str = option(
        "lucene", "BM25 variant (bm25s)", choices=("lucene", "robertson", "atire", "bm25l", "bm25+")
    )
    language: str = option(
        "en",
        "language of the corpus (ISO 639-1 code; several comma-separated: a mixed corpus, each "
        "text analysed in its own); detected at index time (hopgraph.text.language)",
    )
    stemmer: str = option(
        "auto", "Snowball stemmer (PyStemmer's name), 'auto' (the language's) or 'none'"
    )
    stopwords: str = option(
        "auto", "stop words: 'auto' (the language's list, if any), 'none', or a language code"
    )

    def validate(self) -> None:
        positive("k1", self.k1)
        check_analyzer(self.language, self.stemmer, self.stopwords)
        if not 0.0 <= self.b <= 1.0:
            from hopgraph.errors import ConfigError

            raise ConfigError(f"option 'b' must be in [0, 1], got {self.b}")


class SparsePart(IndexPart):
    name = "sparse"
    Options = SparseOptions

    def __init__(
        self,
        options: SparseOptions,
        bm25: bm25s.BM25 | None,
        doc_terms: sp.csr_matrix,
        terms: list[str] | None = None,
    ):
        """``bm25``: the score matrix, or None to compute it from ``doc_terms`` and ``terms``
        when first searched (an update replayed on load, or several in a row, then costs
        one computation instead of one each)."""
        super().__init__(options)
        self._bm25 = bm25
        self._counts_terms = terms
        # the analyzer version its terms came from (an update keeps its base's: old terms stay)
        self.analyzer_version = ANALYZER_VERSION
        self._bm25_lock = threading.Lock()
        self.doc_terms = doc_terms
        self.tokenizer = analyzer(options.language, options.stemmer, options.stopwords)
        self.vocab: dict[str, int] = bm25.vocab_dict if bm25 is not None else _vocab(terms or [])
        self.n_docs = int(doc_terms.shape[0])
        self._doc_len: np.ndarray | None = None
        self._terms: list[str] | None = None
        self.derived: dict[tuple, Any] = {}  # structures methods derive from this part (graphs)

    # -- building -------------------------------------------------------------------------
    @classmethod
    def build(cls, corpus: Corpus, options: SparseOptions, *, progress: bool = True) -> SparsePart:
        texts = [p.content for p in corpus]
        return cls.from_texts(options, texts, progress=progress)

    @classmethod
    def from_texts(
        cls, options: SparseOptions, texts: list[str], *, progress: bool = False
    ) -> SparsePart:
        """BM25 over ``texts`` (row ``i`` = ``texts[i]``)."""
        tok = analyzer(options.language, options.stemmer, options.stopwords)
        counts, terms = _count_terms(tok, texts, progress)
        return cls.from_counts(options, counts, terms, progress=progress)

    @classmethod
    def from_counts(
        cls, options: SparseOptions, counts: sp.csr_matrix, terms: list[str], *, progress: bool
    ) -> SparsePart:
        """BM25 from document–term counts (``counts[d, t]``: occurrences of ``terms[t]`` in d).

        Both building and live updates go through here, so an updated index scores exactly as
        one built from scratch (a term's BM25 weight depends on counts, not on token order).
        """
        counts = sp.csr_matrix(counts)
        counts.sum_duplicates()
        used = np.flatnonzero(np.bincount(counts.indices, minlength=len(terms)))
        if len(used) < len(terms):  # terms left by deleted passages: drop them
            counts = sp.csr_matrix(counts[:, used])
            terms = [terms[t] for t in used.tolist()]
        doc_terms = sp.csr_matrix(
            (counts.data.astype(np.int32, copy=False), counts.indices, counts.indptr),
            shape=(counts.shape[0], len(_vocab(terms))),
        )
        return cls(options, None, doc_terms, terms)

    @property
    def bm25(self) -> bm25s.BM25:
        """The bm25s index (its score matrix computed from the counts on first use)."""
        if self._bm25 is None:
            with self._bm25_lock:
                if self._bm25 is None:
                    assert self._counts_terms is not None
                    d = self.doc_terms  # its last column is bm25s's empty token: no entries
                    counts = sp.csr_matrix(
                        (d.data, d.indices, d.indptr), shape=(d.shape[0], len(self._counts_terms))
                    )
                    self._bm25 = bm25_from_counts(self.options, counts, self._counts_terms)
        return self._bm25

    segmentable = True

    @classmethod
    def write_segment(
        cls,
        passages: Corpus,
        options: SparseOptions,
        folder: Path,
        context: Any = None,
        *,
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        """The document–term counts of ``passages`` (the tokeniser is the per-passage work)."""
        tok = analyzer(options.language, options.stemmer, options.stopwords)
        counts, terms = _count_terms(tok, [p.content for p in passages], False)
        save_records(folder, "counts", counts, terms)

    @classmethod
    def from_segments(
        cls,
        corpus: Corpus,
        options: SparseOptions,
        folders: list[Path],
        parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> SparsePart:
        """BM25 over the merged counts: the terms are numbered in order of first occurrence
        over the whole corpus, as one tokenising pass numbers them."""
        counts, terms = merge_records(load_records(f, "counts") for f in folders)
        return cls.from_counts(options, counts, terms, progress=progress)

    def reassembled(self, rows: list[int | str], *, progress: bool = False) -> SparsePart:
        """A new part whose row ``i`` is this part's row ``rows[i]`` (an int) or the text
        ``rows[i]`` (a str, tokenised now): only new texts are tokenised."""
        terms = list(self.id_to_term())
        vocab = dict(self.vocab)
        tok = self.tokenizer
        old = sp.csr_matrix(self.doc_terms)
        blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (data, indices, lengths)
        i = 0
        with tqdm(
            total=len(rows), desc="sparse: updating", unit="passage", disable=not progress
        ) as bar:
            while i < len(rows):
                if isinstance(rows[i], str):  # a new text: tokenised now
                    ids = [vocab.setdefault(t, len(vocab)) for t in tok(rows[i])]
                    cols, cnt = np.unique(np.asarray(ids, np.int64), return_counts=True)
                    blocks.append((cnt, cols, np.asarray([len(cols)])))
                    i, done = i + 1, 1
                else:  # a run of kept rows: copied in one step
                    j = i
                    while j < len(rows) and not isinstance(rows[j], str):
                        j += 1
                    a, b = int(rows[i]), int(rows[j - 1])  # type: ignore[arg-type]
                    if b - a == j - i - 1:  # consecutive rows (an add keeps all): a slice
                        lo, hi = int(old.indptr[a]), int(old.indptr[b + 1])
                        lengths = np.diff(old.indptr[a : b + 2])
                        blocks.append((old.data[lo:hi], old.indices[lo:hi], lengths))
                    else:
                        kept = old[np.asarray(rows[i:j], np.int64)]
                        blocks.append((kept.data, kept.indices, np.diff(kept.indptr)))
                    i, done = j, j - i
                bar.update(done)
        terms.extend(list(vocab)[len(terms) :])
        lengths = np.concatenate([b[2] for b in blocks]) if blocks else np.zeros(0, np.int64)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        # int32 indices where they fit, as scipy would convert them anyway: at a million
        # passages each needless conversion copies ~66M postings
        idx = np.int32 if max(len(terms), int(indptr[-1])) < np.iinfo(np.int32).max else np.int64
        counts = sp.csr_matrix(
            (
                np.concatenate([b[0].astype(np.int32, copy=False) for b in blocks])
                if blocks else np.zeros(0, np.int32),
                np.concatenate([b[1].astype(idx, copy=False) for b in blocks])
                if blocks else np.zeros(0, idx),
                indptr.astype(idx),
            ),
            shape=(len(rows), len(terms)),
        )  # fmt: skip
        return type(self).from_counts(self.options, counts, terms, progress=False)

    def update(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> SparsePart:
        rows: list[int | str] = [*change.keep.tolist(), *(p.content for p in change.added_passages)]
        part = self.reassembled(rows, progress=progress)
        part.payload = {}  # the tokeniser is cheap and deterministic: replay tokenises again
        part.analyzer_version = self.analyzer_version
        return part

    replayable = True

    def replay(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        payload: dict[str, Any],
    ) -> SparsePart:
        return self.update(change, parts, old_parts)

    @classmethod
    def combined_payload(cls, steps: Sequence[ReplayStep], n_base_kept: int) -> dict[str, Any]:
        return {}  # the added texts are tokenised again, whatever delta they came in

    @property
    def outdated(self) -> str:
        """Why this part's terms are not those its queries get, or "": built by an analyzer of
        another version (:data:`~hopgraph.text.analyze.ANALYZER_VERSION`) for a language other
        than English. Rebuilding the part mends it (``Index.add_parts`` rebuilds it)."""
        langs = set(self.options.language.split(","))
        if langs <= {"en"} or self.analyzer_version == ANALYZER_VERSION:
            return ""
        return (
            f"its BM25 terms for {self.options.language!r} come from analyzer version "
            f"{self.analyzer_version}, queries are analysed by version {ANALYZER_VERSION}"
        )

    def save(self, folder: Path) -> None:
        (folder / ANALYZER_FILE).write_text(json.dumps({"version": self.analyzer_version}))
        self.bm25.save(str(folder / "bm25"), show_progress=False)
        save_array(folder / "doc_terms.indptr.npy", self.doc_terms.indptr)
        save_array(folder / "doc_terms.indices.npy", self.doc_terms.indices)
        save_array(folder / "doc_terms.data.npy", self.doc_terms.data)

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
        part = cls(options, bm25, doc_terms)
        made = folder / ANALYZER_FILE  # absent: built before versions were kept
        part.analyzer_version = json.loads(made.read_text())["version"] if made.exists() else 0
        return part

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
        bm25 = self.bm25
        s = bm25.scores
        plain = bm25.nonoccurrence_array is None and s["data"].dtype == np.float32
        if self.n_docs >= LARGE and plain and has_numba():
            # bm25s's own sum (np.add.at, term by term in float32) compiled: the same numbers
            ids_a = np.asarray(ids, dtype=np.int64)
            return _postings_sum(s["data"], s["indices"], s["indptr"], ids_a, self.n_docs)
        return np.asarray(bm25.get_scores_from_ids(ids), dtype=np.float32)

    def weighted_scores(self, ids: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Σ_t weight_t · BM25(t, d) for every passage d: a weighted query (RM3)."""
        out = np.zeros(self.n_docs, dtype=np.float64)
        s = self.bm25.scores
        data, indices, indptr = s["data"], s["indices"], s["indptr"]
        for t, w in zip(ids, weights, strict=True):
            lo, hi = int(indptr[t]), int(indptr[t + 1])
            np.add.at(out, indices[lo:hi], w * data[lo:hi].astype(np.float64))
        return out.astype(np.float32)

    def scores_unindexed(self, text: str, docs: Sequence[str]) -> np.ndarray:
        """BM25 score of ``text`` against each of ``docs``, texts that are not in the index,
        scored as if each were one more passage of it (this index's document frequencies and
        mean length; bm25s's own idf and term-frequency functions). A passage's own text scores
        as the passage does (tested)."""
        from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

        bm25 = self.bm25
        ids = self.term_ids(text)
        out = np.zeros(len(docs), np.float64)
        if not ids or not len(docs):
            return out
        df = self._doc_freqs()
        idf_fn = _select_idf_scorer(bm25.idf_method)
        idf = {t: idf_fn(int(df[t]), self.n_docs) for t in set(ids)}
        tfc = _select_tfc_scorer(bm25.method)
        avg = float(self.doc_lengths.mean())
        nonocc = getattr(bm25, "nonoccurrence_array", None)
        terms = [(t, self.id_to_term()[t]) for t in ids]
        for i, doc in enumerate(docs):
            tokens = self.tokenizer(doc)
            counts = Counter(tokens)
            for t, term in terms:
                tf = counts.get(term, 0)
                if tf:
                    out[i] += idf[t] * float(
                        tfc(tf_array=np.float32(tf), l_d=len(tokens), l_avg=avg, k1=bm25.k1,
                            b=bm25.b, delta=bm25.delta)
                    )  # fmt: skip
                elif nonocc is not None:
                    out[i] += float(nonocc[t])
        return out

    def _doc_freqs(self) -> np.ndarray:
        df = self.derived.get(("doc_freqs",))
        if df is None:
            df = np.bincount(self.doc_terms.indices, minlength=self.doc_terms.shape[1])
            self.derived[("doc_freqs",)] = df
        return df

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


def _vocab(terms: list[str]) -> dict[str, int]:
    """Term → id as bm25s numbers them, with its empty token (``BM25.index`` with
    ``create_empty_token``) after the terms when no term is empty."""
    vocab = {t: i for i, t in enumerate(terms)}
    if "" not in vocab:
        vocab[""] = len(terms)
    return vocab


def bm25_from_counts(options: SparseOptions, counts: sp.csr_matrix, terms: list[str]) -> bm25s.BM25:
    """A bm25s index from document–term counts: what ``BM25.index`` computes from token lists,
    with bm25s's own document-frequency, idf and term-frequency functions, applied to all
    (passage, term) pairs at once instead of one passage at a time.

    bm25s's loop keeps every token of the corpus as a Python int (about 9 GB at a million
    passages); this keeps the counts' arrays. The arithmetic is the same, in the same order and
    types (float64, stored as float32), so the score matrix is equal bit for bit (tested).
    """
    from bm25s.scoring import (
        _build_idf_array,
        _build_nonoccurrence_array,
        _select_idf_scorer,
        _select_tfc_scorer,
    )

    bm25 = bm25s.BM25(k1=options.k1, b=options.b, method=options.method)
    n_docs, n_terms = counts.shape
    lengths = np.diff(counts.indptr)
    doc_len = np.asarray(counts.sum(axis=1)).ravel().astype(np.int64)
    avg_doc_len = doc_len.mean() if len(doc_len) else 0.0  # (no passages: an empty part)
    df = np.bincount(counts.indices, minlength=n_terms)
    doc_frequencies = dict(enumerate(df.tolist()))
    nonoccurrence = None
    if bm25.method in bm25.methods_requiring_nonoccurrence:
        nonoccurrence = _build_nonoccurrence_array(
            doc_frequencies=doc_frequencies,
            n_docs=n_docs,
            compute_idf_fn=_select_idf_scorer(bm25.idf_method),
            calculate_tfc_fn=_select_tfc_scorer(bm25.method),
            l_d=avg_doc_len,
            l_avg=avg_doc_len,
            k1=bm25.k1,
            b=bm25.b,
            delta=bm25.delta,
            dtype=bm25.dtype,
        )
    bm25.nonoccurrence_array = nonoccurrence
    idf = _build_idf_array(
        doc_frequencies=doc_frequencies,
        n_docs=n_docs,
        compute_idf_fn=_select_idf_scorer(bm25.idf_method),
        dtype=bm25.dtype,
    )
    doc_idx = np.repeat(np.arange(n_docs, dtype=bm25.int_dtype), lengths)
    voc_idx = counts.indices.astype(bm25.int_dtype)
    tfc = _select_tfc_scorer(bm25.method)(
        tf_array=counts.data.astype(bm25.dtype),
        l_d=np.repeat(doc_len, lengths),
        l_avg=avg_doc_len,
        k1=bm25.k1,
        b=bm25.b,
        delta=bm25.delta,
    )
    flat = idf[voc_idx] * tfc
    if nonoccurrence is not None:
        flat -= nonoccurrence[voc_idx]
    matrix = sp.csc_matrix(
        (flat.astype(bm25.dtype), (doc_idx, voc_idx)), shape=(n_docs, n_terms), dtype=bm25.dtype
    )
    bm25.scores = {
        "data": matrix.data,
        "indices": matrix.indices.astype(bm25.int_dtype),
        "indptr": matrix.indptr.astype(np.int64),  # as bm25s's own CSC builder types it
        "num_docs": n_docs,
    }
    vocab = _vocab(terms)
    bm25.vocab_dict = vocab
    bm25.unique_token_ids_set = set(vocab.values())
    return bm25


def _count_terms(
    tok: Callable[[str], list[str]], texts: list[str], progress: bool
) -> tuple[sp.csr_matrix, list[str]]:
    """Document–term counts of ``texts`` and the terms (in order of first occurrence)."""
    vocab: dict[str, int] = {}
    doc_ids: list[list[int]] = []
    for text in tqdm(texts, desc="sparse: tokenising", unit="passage", disable=not progress):
        doc_ids.append([vocab.setdefault(t, len(vocab)) for t in tok(text)])
    lengths = np.fromiter((len(d) for d in doc_ids), dtype=np.int64, count=len(doc_ids))
    rows = np.repeat(np.arange(len(doc_ids)), lengths)
    cols = np.fromiter((t for d in doc_ids for t in d), dtype=np.int64, count=int(lengths.sum()))
    counts = sp.csr_matrix(
        (np.ones(len(cols), dtype=np.int32), (rows, cols)), shape=(len(doc_ids), len(vocab))
    )
    counts.sum_duplicates()
    return counts, list(vocab)


def _postings_sum_loop(data, indices, indptr, ids, n):  # noqa: ANN001, ANN202
    """Σ over the query's terms (repeats kept, in order) of their postings' scores, added into
    a float32 array one posting at a time: bm25s's ``np.add.at`` loop, without its overhead."""
    out = np.zeros(n, dtype=np.float32)
    for t in ids:
        for j in range(indptr[t], indptr[t + 1]):
            out[indices[j]] += data[j]
    return out


_postings_sum = compiled(_postings_sum_loop)
