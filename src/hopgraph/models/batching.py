"""Texts in encoder batches, longest first (as sentence-transformers forms them), so that a
batch pads little."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["longest_first"]


def longest_first(texts: list[str], batch_size: int) -> Iterator[tuple[np.ndarray, int]]:
    """``(rows, done)`` per batch: the rows of ``texts`` in the batch (longest texts first) and
    how many texts the batches so far hold."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    for i in range(0, len(texts), batch_size):
        yield order[i : i + batch_size], min(i + batch_size, len(texts))
