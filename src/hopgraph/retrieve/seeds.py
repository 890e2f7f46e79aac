"""Seed distributions for PPR (SPRIG §3.3): query entities, top-k passages, and their mixing."""

from __future__ import annotations

import threading

import numpy as np

from hopgraph.errors import ConfigError

WEIGHTINGS = ("rank", "raw", "softmax")
MIXINGS = ("l1", "fixed", "adaptive")


def entity_weights(df: np.ndarray, q: float) -> np.ndarray:
    """Weights of matched query entities: ``df(e)^-q`` (q = 0: uniform)."""
    return np.power(np.maximum(df.astype(np.float64), 1.0), -q)


def passage_weights(scores: np.ndarray, weighting: str) -> np.ndarray:
    """Weights of the top-k seed passages (given best first): ``rank`` 1/rank, ``raw`` the
    retriever's scores (negatives clipped to 0), ``softmax`` exp(s − max) normalised."""
    scores = np.asarray(scores, dtype=np.float64)
    if weighting == "rank":
        return 1.0 / np.arange(1, len(scores) + 1, dtype=np.float64)
    if weighting == "raw":
        return np.clip(scores, 0.0, None)
    if weighting == "softmax":
        if not len(scores):
            return scores
        e = np.exp(scores - scores.max())
        return e / e.sum()
    raise ConfigError(f"seed weighting must be one of {WEIGHTINGS}, got {weighting!r}")


def _l1(x: np.ndarray) -> np.ndarray:
    s = x.sum()
    return x / s if s > 0 else x


_SCRATCH = threading.local()


def l1_at(rows: np.ndarray, vals: np.ndarray, n: int) -> np.ndarray:
    """``vals`` L1-normalised as the ``n``-long vector holding them at ``rows`` (distinct; zero
    elsewhere) is by :func:`mix_seeds` ``l1``, to the last bit: numpy's pairwise sum depends on
    where the values sit, so it is taken over that dense vector, written into a zeroed scratch
    vector kept per thread (a fresh one would cost a page fault per 4 KB on a million nodes)."""
    buf = getattr(_SCRATCH, "buf", None)
    if buf is None or buf.shape[0] != n:
        buf = _SCRATCH.buf = np.zeros(n)
    buf[rows] = vals
    total = buf.sum()
    buf[rows] = 0.0
    vals = np.asarray(vals, np.float64)
    return vals / total if total > 0 else vals


def mix_seeds(
    s_entities: np.ndarray, s_passages: np.ndarray, mode: str, alpha_mix: float = 0.5
) -> np.ndarray:
    """``s = norm(α_mix·s_e + (1 − α_mix)·s_d)`` over one node vector (SPRIG §3.3).

    ``l1``: mass-proportional, the raw vectors are added (α_mix implicit in their L1 masses);
    ``fixed``: both L1-normalised first and mixed with ``alpha_mix``; ``adaptive``:
    α_mix = (n_e + 1)/(n_e + n_d + 2) from the numbers of non-zero seeds. If one side is empty,
    the other is used alone.
    """
    n_e, n_d = int(np.count_nonzero(s_entities)), int(np.count_nonzero(s_passages))
    if n_e == 0 or n_d == 0 or mode == "l1":
        return _l1(s_entities + s_passages)
    if mode == "fixed":
        a = alpha_mix
    elif mode == "adaptive":
        a = (n_e + 1) / (n_e + n_d + 2)
    else:
        raise ConfigError(f"seed mixing must be one of {MIXINGS}, got {mode!r}")
    return _l1(a * _l1(s_entities) + (1.0 - a) * _l1(s_passages))
