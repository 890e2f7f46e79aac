"""Paired bootstrap comparison of two systems' per-query metric values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np

__all__ = ["BootstrapResult", "paired_bootstrap"]

# Upper bound on the number of index draws held in memory at once (resamples x questions).
_MAX_DRAWS_PER_CHUNK = 2_000_000


class BootstrapResult(TypedDict):
    """What :func:`paired_bootstrap` returns (a plain dict at runtime)."""

    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    wins: int
    ties: int
    losses: int
    n: int
    mean_a: float
    mean_b: float


def _as_scores(values: Sequence[float], name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D sequence of per-query values, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf; per-query metric values must be finite")
    return arr


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> BootstrapResult:
    """Paired bootstrap of the difference in means ``mean(b) - mean(a)``.

    ``a[i]`` and ``b[i]`` must be the same metric for the same question ``i`` under system A
    (the baseline) and system B. Each resample draws ``n`` question indices with replacement
    (a :func:`numpy.random.default_rng` generator seeded with ``seed``, so the result is
    deterministic for a given seed and input) and records the mean of ``b - a`` over them.

    Returns a dict with

    * ``delta``: ``mean(b) - mean(a)`` on the original questions;
    * ``ci_low`` / ``ci_high``: the percentile confidence interval at level ``ci`` of the
      resampled deltas (``np.percentile``, linear, at ``(1 - ci) / 2`` and ``(1 + ci) / 2``);
    * ``p_value``: a two-sided bootstrap p-value for "no difference": twice the fraction of
      resampled deltas on the other side of 0 from ``delta`` (a resampled delta exactly 0
      counts as the other side), capped at 1. If ``delta == 0`` it is 1. Its resolution is
      ``2 / n_resamples``; 0.0 means no resample crossed 0, i.e. ``p < 2 / n_resamples``;
    * ``wins`` / ``ties`` / ``losses``: questions with ``b > a`` / ``b == a`` / ``b < a``;
    * ``n``: the number of questions; ``mean_a`` / ``mean_b``: the two means.

    Raises ValueError for empty or unequal-length inputs, non-finite values, ``n_resamples < 1``
    or ``ci`` outside ``(0, 1)``.
    """
    x = _as_scores(a, "a")
    y = _as_scores(b, "b")
    if x.shape != y.shape:
        raise ValueError(
            f"a and b must hold one value per question for the same questions: "
            f"got {x.size} and {y.size} values"
        )
    n = int(x.size)
    if n == 0:
        raise ValueError("paired_bootstrap needs at least one question, got empty inputs")
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples must be an integer >= 1, got {n_resamples!r}")
    n_resamples = int(n_resamples)
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be strictly between 0 and 1, got {ci!r}")

    diff = y - x
    delta = float(diff.mean())

    rng = np.random.default_rng(seed)
    rows_per_chunk = max(1, _MAX_DRAWS_PER_CHUNK // n)
    boot = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, rows_per_chunk):
        stop = min(start + rows_per_chunk, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        boot[start:stop] = diff[idx].mean(axis=1)

    alpha = 1.0 - ci
    low, high = np.percentile(boot, [100.0 * alpha / 2, 100.0 * (1.0 - alpha / 2)])

    if delta > 0:
        p_value = min(1.0, 2.0 * float(np.mean(boot <= 0.0)))
    elif delta < 0:
        p_value = min(1.0, 2.0 * float(np.mean(boot >= 0.0)))
    else:
        p_value = 1.0

    return BootstrapResult(
        delta=delta,
        ci_low=float(low),
        ci_high=float(high),
        p_value=p_value,
        wins=int(np.count_nonzero(y > x)),
        ties=int(np.count_nonzero(y == x)),
        losses=int(np.count_nonzero(y < x)),
        n=n,
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
    )
