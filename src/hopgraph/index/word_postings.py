"""Which texts can hold a new title alias: postings of every base text's words.

When an update adds a page whose title is a new alias, every old text that mentions the alias
must be rescanned (the entity part finds title aliases in the texts). Reading and scanning
every text is O(index): ~11 s at a million passages. These postings make it O(change): the
words a text holds (the words :func:`~hopgraph.index.aliases.alias_spans` compares: accents
folded, runs of ``[0-9A-Za-z]``, lowercased) map to the base rows that hold them, so only the
base texts holding every word of the alias, and the texts added since the base, need a look.

As Lucene keeps segments, the postings are written with the base (a build or a compaction)
and never changed in place: an update maps base rows to current rows (``to_current``) and
keeps the words of the rows it added, and a compaction merges both into new postings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from hopgraph.index.aliases import block_words
from hopgraph.index.npy import save_array

FILES = ("words.keys.json", "words.indptr.npy", "words.rows.npy")


def word_records(texts: Sequence[str], block: int = 4096) -> tuple[sp.csr_matrix, list[str]]:
    """(texts × words) 0/1 matrix of the words each text holds, and the words, numbered in
    order of first appearance (so records of consecutive batches merge into the records of
    one pass, :func:`~hopgraph.index.part.merge_records`)."""
    ids: dict[str, int] = {}
    indptr = [0]
    cols: list[int] = []
    for lo in range(0, len(texts), block):
        batch = list(texts[lo : lo + block])
        clean = [t.replace("\x00", " ") for t in batch]  # NUL separates the texts below
        stream, _ = block_words(clean)
        for part in stream.split("\x00"):
            row = sorted({ids.setdefault(w, len(ids)) for w in part.split()})
            cols.extend(row)
            indptr.append(len(cols))
    m = sp.csr_matrix(
        (np.ones(len(cols), np.float32), np.asarray(cols, np.int32), np.asarray(indptr, np.int64)),
        shape=(len(texts), len(ids)),
    )
    return m, list(ids)


class WordPostings:
    """Word → base rows, base rows → current rows, and the words of rows added since the base.

    ``keys``: the words; ``indptr`` / ``rows``: the base rows holding word ``j`` are
    ``rows[indptr[j]:indptr[j + 1]]`` (increasing); ``to_current``: current row of each base
    row (−1: deleted), None while no update happened; ``added``: current row → words of the
    rows added since the base.
    """

    def __init__(
        self,
        keys: list[str],
        indptr: np.ndarray,
        rows: np.ndarray,
        n_base: int,
        to_current: np.ndarray | None = None,
        added: dict[int, frozenset[str]] | None = None,
    ):
        self.keys, self.indptr, self.rows, self.n_base = keys, indptr, rows, n_base
        self.to_current = to_current
        self.added = added or {}
        self._ids: dict[str, int] | None = None
        self._added_index: dict[str, set[int]] | None = None  # word → added rows, when asked

    @classmethod
    def from_records(cls, matrix: Any, keys: list[str]) -> WordPostings:
        """From (base rows × words) records (:func:`word_records`, merged or not)."""
        csc = sp.csc_matrix(matrix)
        csc.sort_indices()
        return cls(list(keys), csc.indptr.astype(np.int64), csc.indices.astype(np.int32),
                   int(matrix.shape[0]))  # fmt: skip

    @classmethod
    def of_texts(cls, texts: Sequence[str]) -> WordPostings:
        return cls.from_records(*word_records(texts))

    @property
    def ids(self) -> dict[str, int]:
        if self._ids is None:
            self._ids = {w: j for j, w in enumerate(self.keys)}
        return self._ids

    def updated(
        self, old_to_new: np.ndarray, added_texts: Sequence[str], n_keep: int
    ) -> WordPostings:
        """After an update: ``old_to_new`` maps the current rows to the new ones (−1:
        deleted), and the texts ``added_texts`` become rows ``n_keep`` onwards."""
        base = np.arange(self.n_base) if self.to_current is None else self.to_current
        to_current = np.where(base >= 0, old_to_new[np.maximum(base, 0)], -1)
        added = {int(old_to_new[r]): w for r, w in self.added.items() if old_to_new[r] >= 0}
        if added_texts:
            m, keys = word_records(added_texts)
            for i in range(m.shape[0]):
                cols = m.indices[m.indptr[i] : m.indptr[i + 1]]
                added[n_keep + i] = frozenset(keys[j] for j in cols.tolist())
        return type(self)(self.keys, self.indptr, self.rows, self.n_base, to_current, added)

    def candidates(self, phrases: Iterable[str]) -> np.ndarray:
        """The current rows whose text can hold one of ``phrases`` (normalised aliases,
        words separated by one space): every word of a phrase is among the text's words. A
        superset of the rows that hold a phrase as consecutive words, in increasing order."""
        ids = self.ids
        found: list[np.ndarray] = []
        extra: set[int] = set()
        for phrase in phrases:
            words = phrase.split()
            if not words:
                continue
            cols = [ids.get(w) for w in words]
            if all(c is not None for c in cols):  # base rows holding every word
                lists = sorted(
                    (self.rows[self.indptr[c] : self.indptr[c + 1]] for c in cols), key=len
                )
                hit = np.asarray(lists[0])
                for other in lists[1:]:  # both increasing: a binary search per row of hit
                    if not len(hit):
                        break
                    at = np.searchsorted(other, hit)
                    ok = at < len(other)
                    ok[ok] = np.asarray(other[at[ok]]) == hit[ok]
                    hit = hit[ok]
                found.append(np.asarray(hit, np.int64))
            if self.added:
                extra.update(self._added_holding(words))
        base = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
        if self.to_current is not None:
            base = self.to_current[base]
            base = base[base >= 0]
        return np.union1d(base, np.fromiter(extra, np.int64, len(extra)))

    def _added_holding(self, words: list[str]) -> set[int]:
        """The added rows whose words include every one of ``words``."""
        if self._added_index is None:
            index: dict[str, set[int]] = {}
            for r, ws in self.added.items():
                for w in ws:
                    index.setdefault(w, set()).add(r)
            self._added_index = index
        sets = sorted((self._added_index.get(w, set()) for w in words), key=len)
        return set.intersection(*sets) if sets else set()

    def compacted(self, n_rows: int) -> WordPostings:
        """New postings over the current rows (``n_rows``), the added rows merged in."""
        if self.to_current is None and not self.added:
            return self
        counts = np.diff(self.indptr)
        cols = np.repeat(np.arange(len(self.keys), dtype=np.int64), counts)
        rows = np.asarray(self.rows, np.int64)
        if self.to_current is not None:
            rows = self.to_current[rows]
            keep = rows >= 0
            cols, rows = cols[keep], rows[keep]
        keys, ids = list(self.keys), dict(self.ids)
        more_rows: list[int] = []
        more_cols: list[int] = []
        for r, words in self.added.items():
            for w in sorted(words):
                more_rows.append(r)
                more_cols.append(ids.setdefault(w, len(ids)))
                if len(ids) > len(keys):
                    keys.append(w)
        rows = np.concatenate([rows, np.asarray(more_rows, np.int64)])
        cols = np.concatenate([cols, np.asarray(more_cols, np.int64)])
        m = sp.csc_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n_rows, len(keys)))
        return type(self).from_records(m, keys)

    def save(self, folder: Path) -> None:
        """The base postings (a part saved whole is compacted first)."""
        assert self.to_current is None and not self.added, "save the compacted() postings"
        (folder / FILES[0]).write_text(json.dumps(self.keys, ensure_ascii=False))
        save_array(folder / FILES[1], self.indptr)
        save_array(folder / FILES[2], self.rows)

    @classmethod
    def load(cls, folder: Path, n_base: int, *, mmap: bool = True) -> WordPostings | None:
        """The postings saved in ``folder`` for a base of ``n_base`` rows (None: none saved)."""
        if not all((folder / f).exists() for f in FILES):
            return None  # a part written before the postings: updates read every text
        mode = "r" if mmap else None
        keys = json.loads((folder / FILES[0]).read_text(encoding="utf-8"))
        indptr = np.load(folder / FILES[1], mmap_mode=mode)
        rows = np.load(folder / FILES[2], mmap_mode=mode)
        return cls(keys, indptr, rows, n_base)
