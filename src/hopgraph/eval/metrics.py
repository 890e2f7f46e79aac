"""Binary-relevance retrieval metrics for one query, plus aggregation and latency summaries.

Conventions shared by every metric:

* ``ranking`` is a sequence of passage ids, best first.
* ``gold`` is a non-empty collection of relevant passage ids (duplicates are ignored).
  An empty ``gold`` raises :class:`ValueError`: recall and nDCG are undefined for it.
* The top ``k`` is ``ranking[:k]``, the first ``k`` *positions*. If an id occurs more than
  once, only its first occurrence counts: a repeated gold id is one hit, and the later copies
  occupy positions without earning anything (so duplicates are never rewarded).
* ``k`` must be an integer ``>= 1``; ``k`` may exceed ``len(ranking)``.
* Precision divides by ``k`` even when the ranking is shorter (as trec_eval's ``P@k`` does).

The values match trec_eval / ``ir_measures`` (``R@k``, ``P@k``, ``nDCG@k``, ``RR``) on
rankings without duplicates.
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_right
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_KS",
    "aggregate",
    "capped_recall_at_k",
    "compute_all",
    "hit_at_k",
    "latency_percentiles",
    "ndcg_at_k",
    "perfect_recall_at_k",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "topological_recall",
]

DEFAULT_KS: tuple[int, ...] = (1, 2, 5, 10)


# --------------------------------------------------------------------------- helpers


def _check_k(k: int) -> int:
    """Return ``k`` as an int, or raise if it is not an integer ``>= 1``."""
    if isinstance(k, bool):
        raise TypeError(f"k must be an integer >= 1, got {k!r}")
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"k must be an integer >= 1, got {k!r}") from None
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return k


def _gold_set(gold: Collection[str]) -> frozenset[str]:
    """The gold ids as a frozenset; raise on an empty collection or a bare string."""
    if isinstance(gold, str):
        raise TypeError("gold must be a collection of passage ids, not a single string")
    gold_set = gold if isinstance(gold, frozenset) else frozenset(gold)
    if not gold_set:
        raise ValueError("gold is empty: the query has no relevant passages, metrics are undefined")
    return gold_set


def _check_ranking(ranking: Sequence[str]) -> Sequence[str]:
    if isinstance(ranking, str):
        raise TypeError("ranking must be a sequence of passage ids, not a single string")
    return ranking


def _hit_ranks(ranking: Iterable[str], gold: frozenset[str]) -> list[int]:
    """1-based ranks, ascending, of the first occurrence of each gold id in ``ranking``."""
    ranks: list[int] = []
    seen: set[str] = set()
    remaining = len(gold)
    for rank, pid in enumerate(ranking, start=1):
        if pid in gold and pid not in seen:
            seen.add(pid)
            ranks.append(rank)
            remaining -= 1
            if remaining == 0:  # every gold id found: nothing later can change a metric
                break
    return ranks


def _top_k_hit_ranks(ranking: Sequence[str], gold: frozenset[str], k: int) -> list[int]:
    return _hit_ranks(ranking[:k], gold)


def _dcg(hit_ranks: Iterable[int]) -> float:
    return sum(1.0 / math.log2(rank + 1) for rank in hit_ranks)


def _idcg(n_gold: int, k: int) -> float:
    return sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, n_gold) + 1))


# --------------------------------------------------------------------------- metrics


def recall_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    """Fraction of the gold ids found in the top ``k``: ``|gold ∩ top-k| / |gold|``."""
    g = _gold_set(gold)
    k = _check_k(k)
    return len(_top_k_hit_ranks(_check_ranking(ranking), g, k)) / len(g)


def hit_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    """1.0 if at least one gold id is in the top ``k``, else 0.0."""
    g = _gold_set(gold)
    k = _check_k(k)
    return 1.0 if _top_k_hit_ranks(_check_ranking(ranking), g, k) else 0.0


def perfect_recall_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    """PR@k: 1.0 if every gold id is in the top ``k``, else 0.0.

    Always 0.0 when ``k < |gold|``.
    """
    g = _gold_set(gold)
    k = _check_k(k)
    return 1.0 if len(_top_k_hit_ranks(_check_ranking(ranking), g, k)) == len(g) else 0.0


def capped_recall_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    """BEIR's capped recall R_cap@k: ``|gold ∩ top-k| / min(k, |gold|)``.

    Unlike plain recall it can reach 1.0 when ``k < |gold|``.
    """
    g = _gold_set(gold)
    k = _check_k(k)
    return len(_top_k_hit_ranks(_check_ranking(ranking), g, k)) / min(k, len(g))


def precision_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    """``|gold ∩ top-k| / k``; the denominator is ``k`` even if the ranking is shorter."""
    g = _gold_set(gold)
    k = _check_k(k)
    return len(_top_k_hit_ranks(_check_ranking(ranking), g, k)) / k


def reciprocal_rank(ranking: Sequence[str], gold: Collection[str], k: int | None = None) -> float:
    """``1 / rank`` of the first gold id (ranks start at 1).

    0.0 if no gold id is within the top ``k``, or anywhere in the ranking when ``k`` is None.
    """
    g = _gold_set(gold)
    ranking = _check_ranking(ranking)
    window = ranking if k is None else ranking[: _check_k(k)]
    for rank, pid in enumerate(window, start=1):
        if pid in g:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    """nDCG@k with binary gains.

    ``DCG = sum over gold hits in the top k of 1 / log2(rank + 1)``; the ideal DCG places
    ``min(k, |gold|)`` gold ids at ranks ``1..min(k, |gold|)``.
    """
    g = _gold_set(gold)
    k = _check_k(k)
    return _dcg(_top_k_hit_ranks(_check_ranking(ranking), g, k)) / _idcg(len(g), k)


def compute_all(
    ranking: Sequence[str], gold: Collection[str], ks: Iterable[int] = DEFAULT_KS
) -> dict[str, float]:
    """Every metric for one query in a single pass over the ranking.

    Returns keys ``recall@k``, ``hit@k``, ``pr@k``, ``capped_recall@k``, ``ndcg@k`` and
    ``precision@k`` for each ``k`` in ``ks`` (in the order given, repeats dropped), plus
    ``mrr``: the reciprocal rank over the whole ranking.
    """
    g = _gold_set(gold)
    checked_ks = list(dict.fromkeys(_check_k(k) for k in ks))
    ranks = _hit_ranks(_check_ranking(ranking), g)  # whole ranking, ascending
    n_gold = len(g)
    discounts = [1.0 / math.log2(rank + 1) for rank in ranks]

    out: dict[str, float] = {}
    for k in checked_ks:
        hits = bisect_right(ranks, k)  # number of gold ids within the top k
        out[f"recall@{k}"] = hits / n_gold
        out[f"hit@{k}"] = 1.0 if hits else 0.0
        out[f"pr@{k}"] = 1.0 if hits == n_gold else 0.0
        out[f"capped_recall@{k}"] = hits / min(k, n_gold)
        out[f"ndcg@{k}"] = sum(discounts[:hits]) / _idcg(n_gold, k)
        out[f"precision@{k}"] = hits / k
    out["mrr"] = 1.0 / ranks[0] if ranks else 0.0
    return out


# --------------------------------------------------------------------------- summaries


def aggregate(per_query: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Mean of each metric over queries.

    Every query must report the same metric names (as :func:`compute_all` with the same ``ks``
    does); otherwise a mean would silently be over a different set of queries per metric.
    Keys keep the order of the first query.
    """
    if len(per_query) == 0:
        raise ValueError("aggregate needs at least one query's metrics, got none")
    keys = list(per_query[0])
    key_set = set(keys)
    for i, row in enumerate(per_query):
        if set(row) != key_set:
            missing = sorted(key_set - set(row))
            extra = sorted(set(row) - key_set)
            raise ValueError(
                f"query {i} reports different metrics from query 0 "
                f"(missing: {missing}, extra: {extra})"
            )
    values = np.array([[row[key] for key in keys] for row in per_query], dtype=np.float64)
    means = values.mean(axis=0)
    return {key: float(m) for key, m in zip(keys, means, strict=True)}


def latency_percentiles(seconds: Sequence[float]) -> dict[str, float]:
    """Latency summary in milliseconds from per-query latencies in seconds.

    Returns ``latency_ms_p50``, ``latency_ms_p95``, ``latency_ms_p99`` (``np.percentile`` with
    linear interpolation) and ``latency_ms_mean``.
    """
    ms = np.asarray(seconds, dtype=np.float64).ravel() * 1000.0
    if ms.size == 0:
        raise ValueError("latency_percentiles needs at least one latency, got none")
    if not np.all(np.isfinite(ms)):
        raise ValueError("latencies must be finite numbers (found NaN or inf)")
    p50, p95, p99 = np.percentile(ms, [50.0, 95.0, 99.0], method="linear")
    return {
        "latency_ms_p50": float(p50),
        "latency_ms_p95": float(p95),
        "latency_ms_p99": float(p99),
        "latency_ms_mean": float(ms.mean()),
    }


# --------------------------------------------------------------------------- graph metrics


def topological_recall(
    costs: Any, retrieved_rows: Sequence[int], gold_rows: Collection[int]
) -> tuple[float, float]:
    """Topological Recall and MissTR (FastInsight, Definition 7 and Corollary 1) of one query.

    ``costs`` is :func:`hopgraph.graph.paths.log_degree_costs` of the corpus graph; rows are
    corpus rows. TR averages ``1 / (1 + u)`` over the gold nodes, ``u`` the accumulated
    log-degree from the nearest retrieved node (0 for a retrieved gold node, so TR >= Recall);
    MissTR = TR - Recall is the partial credit earned by the gold nodes not retrieved.
    """
    from hopgraph.graph.paths import uncertainty

    gold = np.unique(np.asarray(list(gold_rows), dtype=np.int64))
    if len(gold) == 0:
        raise ValueError("gold must not be empty")
    retrieved = np.asarray(list(retrieved_rows), dtype=np.int64)
    u = uncertainty(costs, retrieved, gold)
    found = np.isin(gold, retrieved)
    u[found] = 0.0
    tr = float(np.mean(1.0 / (1.0 + u)))  # 1 / (1 + inf) = 0
    return tr, tr - float(found.mean())
