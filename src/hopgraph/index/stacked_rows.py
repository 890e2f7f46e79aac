"""Rows of a vector matrix after live updates, without copying the matrix.

An update keeps some rows and appends new ones. Copying every kept vector costs O(index) per
commit (1.5 GB at 1M passages of 384-d float32, seconds and as much memory again), so a dense
part holds its vectors as the kept rows of its stored matrix (a memory map) plus a small tail of
the rows added since: row ``i`` is ``base[keep[i]]`` for ``i < len(keep)``, else
``tail[i - len(keep)]``. A compaction writes them out as one matrix again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_BLOCK = 65_536  # rows widened to float32 at a time


@dataclass(frozen=True)
class StackedRows:
    base: np.ndarray  # (n_base, dim), often a memory map of the stored file
    keep: np.ndarray | None  # base rows still there, increasing (None: all of them)
    tail: np.ndarray  # (m, dim) rows added since, in base's dtype

    @classmethod
    def of(cls, matrix: np.ndarray) -> StackedRows:
        return cls(matrix, None, np.zeros((0, matrix.shape[1]), matrix.dtype))

    @property
    def n_kept(self) -> int:
        return self.base.shape[0] if self.keep is None else len(self.keep)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_kept + self.tail.shape[0], self.base.shape[1])

    @property
    def dtype(self) -> np.dtype:
        return self.base.dtype

    @property
    def plain(self) -> bool:
        """Whether the rows are exactly ``base`` (nothing deleted or added since)."""
        return self.keep is None and self.tail.shape[0] == 0

    def updated(self, keep: np.ndarray, new: np.ndarray) -> StackedRows:
        """After an update that keeps the current rows ``keep`` (increasing) and then appends
        ``new``: O(rows) integers, and only the tail's vectors copied."""
        keep = np.asarray(keep, np.int64)
        split = int(np.searchsorted(keep, self.n_kept))
        from_base, from_tail = keep[:split], keep[split:] - self.n_kept
        base_keep: np.ndarray | None = from_base if self.keep is None else self.keep[from_base]
        if self.keep is None and len(from_base) == self.base.shape[0]:
            base_keep = None
        tail = np.concatenate([self.tail[from_tail], np.asarray(new).astype(self.dtype)])
        return StackedRows(self.base, base_keep, tail)

    def take(self, rows: np.ndarray | int) -> np.ndarray:
        """The float32 vectors at ``rows`` (an int gives one vector)."""
        if np.ndim(rows) == 0:
            return self.take(np.asarray([rows]))[0]
        rows = np.asarray(rows, np.int64)
        n_kept = self.n_kept
        if self.tail.shape[0] == 0 or (len(rows) and rows.max() < n_kept):
            picked = rows if self.keep is None else self.keep[rows]
            return np.asarray(self.base[picked], np.float32)
        out = np.empty((len(rows), self.base.shape[1]), np.float32)
        in_base = rows < n_kept
        picked = rows[in_base] if self.keep is None else self.keep[rows[in_base]]
        out[in_base] = self.base[picked]
        out[~in_base] = self.tail[rows[~in_base] - n_kept]
        return out

    def dot(self, q: np.ndarray) -> np.ndarray:
        """``rows @ q`` in float32 for a vector or a (dim, b) block: one scan of the stored
        matrix (deleted rows dropped after), float16 rows widened a block at a time."""
        base = _matmul(self.base, q)
        if self.keep is not None:
            base = base[self.keep]
        if self.tail.shape[0] == 0:
            return base
        return np.concatenate([base, _matmul(self.tail, q)])

    def materialized(self) -> np.ndarray:
        """The rows as one array (``base`` itself when nothing changed)."""
        if self.plain:
            return self.base
        kept = self.base if self.keep is None else self.base[self.keep]
        return np.concatenate([kept, self.tail])


def _matmul(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    if matrix.dtype == np.float32:
        return matrix @ q
    out = np.empty((matrix.shape[0], *q.shape[1:]), np.float32)
    for lo in range(0, matrix.shape[0], _BLOCK):
        out[lo : lo + _BLOCK] = matrix[lo : lo + _BLOCK].astype(np.float32) @ q
    return out
