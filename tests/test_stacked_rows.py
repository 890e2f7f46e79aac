"""StackedRows: the rows of a matrix after updates equal the copied matrix they stand for."""

import numpy as np
import pytest

from hopgraph.index.stacked_rows import StackedRows


def _unit(rng: np.random.Generator, n: int, d: int = 8) -> np.ndarray:
    m = rng.normal(size=(n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_updates_equal_a_copied_matrix(dtype):
    rng = np.random.default_rng(0)
    base = _unit(rng, 50).astype(dtype)
    rows, copied = StackedRows.of(base), base.astype(np.float32)
    assert rows.plain and rows.materialized() is base
    for step in range(6):  # deletes from base and tail, adds, and both at once
        n = rows.shape[0]
        keep = np.sort(rng.choice(n, size=n - (step % 3) * 3, replace=False))
        new = _unit(rng, step % 2 * 4)
        rows = rows.updated(keep, new)
        copied = np.concatenate([copied[keep], new.astype(dtype).astype(np.float32)])
        assert rows.shape == copied.shape
        np.testing.assert_array_equal(rows.materialized().astype(np.float32), copied)
        picks = rng.integers(0, len(copied), size=7)
        np.testing.assert_array_equal(rows.take(picks), copied[picks])
        np.testing.assert_array_equal(rows.take(int(picks[0])), copied[picks[0]])
        q = _unit(rng, 3).T  # a (dim, 3) block of queries, and one query
        np.testing.assert_allclose(rows.dot(q), copied @ q, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(rows.dot(q[:, 0]), copied @ q[:, 0], rtol=1e-6, atol=1e-6)
    assert not rows.plain and rows.base is base  # the stored matrix was never copied


def test_keeping_everything_keeps_no_index_array():
    base = _unit(np.random.default_rng(1), 10)
    rows = StackedRows.of(base).updated(np.arange(10), _unit(np.random.default_rng(2), 2))
    assert rows.keep is None and rows.shape == (12, 8)
    rows = rows.updated(np.arange(10), np.zeros((0, 8), np.float32))  # the tail deleted
    assert rows.plain
