"""Approximate nearest-neighbour search over the dense vectors: an HNSW graph (usearch).

usearch keeps the graph and a quantised copy of the vectors (int8 by default: 384 bytes a
passage for MiniLM) in one file that is memory-mapped on load (``view``), so a million-passage
graph costs page cache, not process memory. The graph is built on one thread, in row order:
the same vectors always give the same file. Search returns candidate rows; the dense part
re-scores them with the stored vectors, so cosines are exact and ties break as in exact search.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.errors import ConfigError
from hopgraph.index.npy import copy_file

FILE = "ann.usearch"


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


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

    def __init__(self, index: Any, source: tuple[Path, tuple[int, ...]] | None = None):
        self.index = index
        # the file a view maps, and its identity when mapped: saving copies that file rather
        # than writing the graph from the map, whose pages would all become this process's
        self.source = source

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
        target = folder / FILE
        if self.source is not None and _identity(self.source[0]) == self.source[1]:
            copy_file(self.source[0], target)
            return
        self.index.save(str(target))

    @classmethod
    def load(cls, folder: Path, *, mmap: bool = True) -> AnnIndex:
        path = folder / FILE
        before = _identity(path)
        index = _usearch().restore(str(path), view=mmap)
        # a view maps the file ``path`` named throughout the load (a swap renames another in)
        same = mmap and before is not None and _identity(path) == before
        return cls(index, (path, before) if same else None)

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
