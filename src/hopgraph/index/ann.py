"""Approximate nearest-neighbour search over the dense vectors: an HNSW graph (usearch).

usearch keeps the graph and a quantised copy of the vectors (int8 by default: 384 bytes a
passage for MiniLM) in one file that is memory-mapped on load (``view``), so a million-passage
graph costs page cache, not process memory. The graph is built on one thread, in row order:
the same vectors always give the same file. Search returns candidate rows; the dense part
re-scores them with the stored vectors, so cosines are exact and ties break as in exact search.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.errors import ConfigError

FILE = "ann.usearch"


def _usearch() -> Any:
    try:
        from usearch.index import Index
    except ImportError:
        raise ConfigError(
            "approximate search needs usearch: pip install usearch (or hopgraph[dense]); "
            "or build the dense part with ann=none"
        ) from None
    return Index


class AnnIndex:
    """An HNSW graph over unit vectors (inner product), rows as keys."""

    def __init__(self, index: Any):
        self.index = index

    @classmethod
    def build(
        cls,
        vectors: np.ndarray,
        *,
        dtype: str = "i8",
        connectivity: int = 16,
        expansion_add: int = 128,
        block: int = 65_536,
        progress: bool = False,
    ) -> AnnIndex:
        """The graph of ``vectors`` (row ``i`` gets key ``i``), added block by block on one
        thread (deterministic)."""
        from tqdm.auto import tqdm

        n, dim = vectors.shape
        index = _usearch()(
            ndim=dim,
            metric="ip",
            dtype=dtype,
            connectivity=connectivity,
            expansion_add=expansion_add,
        )
        for lo in tqdm(range(0, n, block), desc="dense: HNSW graph", disable=not progress):
            hi = min(n, lo + block)
            index.add(
                np.arange(lo, hi, dtype=np.uint64),
                np.ascontiguousarray(vectors[lo:hi], dtype=np.float32),
                threads=1,
            )
        return cls(index)

    def save(self, folder: Path) -> None:
        self.index.save(str(folder / FILE))

    @classmethod
    def load(cls, folder: Path, *, mmap: bool = True) -> AnnIndex:
        path = folder / FILE
        return cls(_usearch().restore(str(path), view=mmap))

    def search(self, qvecs: np.ndarray, k: int, ef: int) -> list[np.ndarray]:
        """Up to ``k`` candidate rows for each query row of ``qvecs`` (best first)."""
        self.index.expansion_search = max(ef, k)
        q = np.ascontiguousarray(np.atleast_2d(qvecs), dtype=np.float32)
        found = self.index.search(q, k, threads=1)
        if q.shape[0] == 1 and not hasattr(found, "counts"):  # one query: a Matches
            return [np.asarray(found.keys, np.int64)]
        return [
            np.asarray(found.keys[i][: int(found.counts[i])], np.int64) for i in range(q.shape[0])
        ]

    def __len__(self) -> int:
        return len(self.index)
