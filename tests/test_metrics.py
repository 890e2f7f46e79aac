"""Tests for hopgraph.eval.metrics: hand-computed values, edge cases, and ir_measures parity."""

from __future__ import annotations

import math
import random

import pytest

from hopgraph.eval.metrics import (
    aggregate,
    capped_recall_at_k,
    compute_all,
    hit_at_k,
    latency_percentiles,
    ndcg_at_k,
    perfect_recall_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)

# 1/log2(r+1) for ranks 1..4
D1 = 1.0  # 1/log2(2)
D2 = 1.0 / math.log2(3)  # 0.6309297535714575
D3 = 0.5  # 1/log2(4)
D4 = 1.0 / math.log2(5)  # 0.43067655807339306

# Running example: gold b (rank 2), d (rank 4), x (not retrieved).
RANKING = ["a", "b", "c", "d", "e"]
GOLD = {"b", "d", "x"}


# --------------------------------------------------------------------------- hand-computed


def test_recall_hand_computed() -> None:
    assert recall_at_k(RANKING, GOLD, 1) == 0.0  # top1 {a}: 0 of 3 gold
    assert recall_at_k(RANKING, GOLD, 2) == pytest.approx(1 / 3)  # {a,b}: b -> 1/3
    assert recall_at_k(RANKING, GOLD, 4) == pytest.approx(2 / 3)  # b, d -> 2/3
    assert recall_at_k(RANKING, GOLD, 5) == pytest.approx(2 / 3)  # x never retrieved


def test_hit_hand_computed() -> None:
    assert hit_at_k(RANKING, GOLD, 1) == 0.0  # a is not gold
    assert hit_at_k(RANKING, GOLD, 2) == 1.0  # b is gold
    assert hit_at_k(RANKING, GOLD, 5) == 1.0


def test_perfect_recall_hand_computed() -> None:
    assert perfect_recall_at_k(RANKING, GOLD, 5) == 0.0  # x missing
    ranking = ["z", "g1", "g2"]
    gold = {"g1", "g2"}
    assert perfect_recall_at_k(ranking, gold, 1) == 0.0  # k < |gold|: impossible
    assert perfect_recall_at_k(ranking, gold, 2) == 0.0  # only g1 in {z, g1}
    assert perfect_recall_at_k(ranking, gold, 3) == 1.0  # g1, g2 both in top3


def test_capped_recall_hand_computed() -> None:
    assert capped_recall_at_k(RANKING, GOLD, 1) == 0.0  # 0 / min(1,3)
    assert capped_recall_at_k(RANKING, GOLD, 2) == pytest.approx(1 / 2)  # 1 / min(2,3) = 1/2
    assert capped_recall_at_k(RANKING, GOLD, 5) == pytest.approx(2 / 3)  # 2 / min(5,3) = 2/3
    # k < |gold| and every slot is gold: capped recall is 1 while plain recall is 1/3
    assert capped_recall_at_k(["b"], GOLD, 1) == 1.0  # 1 / min(1,3)
    assert recall_at_k(["b"], GOLD, 1) == pytest.approx(1 / 3)


def test_precision_hand_computed() -> None:
    assert precision_at_k(RANKING, GOLD, 1) == 0.0  # 0/1
    assert precision_at_k(RANKING, GOLD, 2) == pytest.approx(0.5)  # 1/2
    assert precision_at_k(RANKING, GOLD, 5) == pytest.approx(0.4)  # 2/5


def test_reciprocal_rank_hand_computed() -> None:
    assert reciprocal_rank(RANKING, GOLD) == pytest.approx(0.5)  # first gold b at rank 2
    assert reciprocal_rank(RANKING, GOLD, k=1) == 0.0  # rank 2 > k=1
    assert reciprocal_rank(RANKING, GOLD, k=2) == pytest.approx(0.5)
    assert reciprocal_rank(["q", "r", "s", "d"], GOLD) == pytest.approx(0.25)  # d at rank 4


def test_ndcg_hand_computed() -> None:
    assert ndcg_at_k(RANKING, GOLD, 1) == 0.0  # no gain at rank 1
    # k=2: DCG = D2 (b at rank 2); IDCG over min(2,3)=2 ranks = D1 + D2
    #      = 0.63093 / 1.63093 = 0.386853
    assert ndcg_at_k(RANKING, GOLD, 2) == pytest.approx(D2 / (D1 + D2))
    assert ndcg_at_k(RANKING, GOLD, 2) == pytest.approx(0.386853, abs=1e-6)
    # k=5: DCG = D2 + D4 = 0.63093 + 0.43068 = 1.06161; IDCG over 3 = 1 + 0.63093 + 0.5 = 2.13093
    #      -> 0.498189
    assert ndcg_at_k(RANKING, GOLD, 5) == pytest.approx((D2 + D4) / (D1 + D2 + D3))
    assert ndcg_at_k(RANKING, GOLD, 5) == pytest.approx(0.498189, abs=1e-6)
    # ranking z, g1, g2 with gold {g1, g2}, k=3: DCG = D2 + D3 = 1.13093; IDCG = D1 + D2 = 1.63093
    #      -> 0.693426
    assert ndcg_at_k(["z", "g1", "g2"], {"g1", "g2"}, 3) == pytest.approx(0.693426, abs=1e-6)
    # perfect ranking -> 1
    assert ndcg_at_k(["g1", "g2", "z"], {"g1", "g2"}, 3) == pytest.approx(1.0)


# --------------------------------------------------------------------------- edge cases


def test_k_larger_than_ranking() -> None:
    # ranking has 5 items, k=10: hits are b, d
    assert recall_at_k(RANKING, GOLD, 10) == pytest.approx(2 / 3)
    assert capped_recall_at_k(RANKING, GOLD, 10) == pytest.approx(2 / 3)  # 2 / min(10,3)
    assert precision_at_k(RANKING, GOLD, 10) == pytest.approx(0.2)  # 2/10: denominator stays k
    # IDCG over min(10,3)=3 ranks, same as k=5
    assert ndcg_at_k(RANKING, GOLD, 10) == pytest.approx((D2 + D4) / (D1 + D2 + D3))
    assert perfect_recall_at_k(["b", "d", "x"], GOLD, 10) == 1.0


def test_duplicates_in_ranking_count_once() -> None:
    ranking = ["a", "a", "b"]
    assert recall_at_k(ranking, {"a"}, 3) == 1.0
    assert precision_at_k(ranking, {"a"}, 3) == pytest.approx(1 / 3)  # a counted once: 1/3
    assert ndcg_at_k(ranking, {"a"}, 3) == pytest.approx(1.0)  # DCG 1 (not 1 + D2), IDCG 1
    # gold {a, b}, k=2: top2 = [a, a] -> one hit, the second a earns nothing
    assert recall_at_k(ranking, {"a", "b"}, 2) == pytest.approx(0.5)  # 1/2
    assert precision_at_k(ranking, {"a", "b"}, 2) == pytest.approx(0.5)  # 1/2
    assert perfect_recall_at_k(ranking, {"a", "b"}, 2) == 0.0
    # DCG = D1 = 1; IDCG = D1 + D2 = 1.63093 -> 0.613147
    assert ndcg_at_k(ranking, {"a", "b"}, 2) == pytest.approx(1 / (D1 + D2))
    # k=3: a at 1, b at 3 (positions, duplicates still occupy a slot): DCG = 1 + 0.5
    assert ndcg_at_k(ranking, {"a", "b"}, 3) == pytest.approx((D1 + D3) / (D1 + D2))
    assert reciprocal_rank(["c", "a", "a"], {"a"}) == pytest.approx(0.5)
    all_metrics = compute_all(["a", "a", "a"], {"a", "b"}, ks=(3,))
    assert all_metrics["recall@3"] == pytest.approx(0.5)
    assert all_metrics["precision@3"] == pytest.approx(1 / 3)


def test_duplicates_in_gold_are_ignored() -> None:
    assert recall_at_k(["a"], ["a", "a"], 1) == 1.0  # gold {a}: 1/1, not 1/2
    assert ndcg_at_k(["a"], ["a", "a", "b"], 2) == pytest.approx(1 / (D1 + D2))


def test_no_gold_hit_gives_zero_everywhere() -> None:
    metrics = compute_all(["p", "q", "r"], {"x", "y"}, ks=(1, 2, 5, 10))
    assert all(value == 0.0 for value in metrics.values())
    assert reciprocal_rank(["p", "q"], {"x"}) == 0.0


def test_empty_ranking() -> None:
    metrics = compute_all([], {"x"}, ks=(1, 5))
    assert all(value == 0.0 for value in metrics.values())
    assert precision_at_k([], {"x"}, 3) == 0.0


@pytest.mark.parametrize(
    "fn",
    [
        recall_at_k,
        hit_at_k,
        perfect_recall_at_k,
        capped_recall_at_k,
        precision_at_k,
        ndcg_at_k,
    ],
)
def test_validation_for_k_metrics(fn) -> None:
    with pytest.raises(ValueError, match="gold"):
        fn(RANKING, set(), 5)
    with pytest.raises(ValueError, match="k must be >= 1"):
        fn(RANKING, GOLD, 0)
    with pytest.raises(ValueError, match="k must be >= 1"):
        fn(RANKING, GOLD, -3)
    with pytest.raises(TypeError):
        fn(RANKING, GOLD, 2.5)
    with pytest.raises(TypeError):
        fn(RANKING, "b", 2)  # a bare string is not a gold collection


def test_validation_for_rr_and_compute_all() -> None:
    with pytest.raises(ValueError, match="gold"):
        reciprocal_rank(RANKING, [])
    with pytest.raises(ValueError, match="k must be >= 1"):
        reciprocal_rank(RANKING, GOLD, k=0)
    with pytest.raises(ValueError, match="gold"):
        compute_all(RANKING, frozenset())
    with pytest.raises(ValueError, match="k must be >= 1"):
        compute_all(RANKING, GOLD, ks=(1, 0))


# --------------------------------------------------------------------------- compute_all


def test_compute_all_keys_and_values() -> None:
    metrics = compute_all(RANKING, GOLD)
    expected_keys = {"mrr"}
    for k in (1, 2, 5, 10):
        for name in ("recall", "hit", "pr", "capped_recall", "ndcg", "precision"):
            expected_keys.add(f"{name}@{k}")
    assert set(metrics) == expected_keys
    assert metrics["mrr"] == pytest.approx(0.5)
    assert metrics["recall@2"] == pytest.approx(1 / 3)
    assert metrics["capped_recall@2"] == pytest.approx(1 / 2)
    assert metrics["ndcg@5"] == pytest.approx(0.498189, abs=1e-6)
    assert metrics["precision@10"] == pytest.approx(0.2)
    assert metrics["hit@1"] == 0.0
    assert metrics["pr@10"] == 0.0


def test_compute_all_matches_single_metric_functions() -> None:
    rng = random.Random(7)
    ids = [f"p{i}" for i in range(30)]
    ks = (1, 3, 5, 10, 40)
    for _ in range(200):
        ranking = [rng.choice(ids) for _ in range(rng.randint(0, 25))]  # may hold duplicates
        gold = set(rng.sample(ids, rng.randint(1, 6)))
        metrics = compute_all(ranking, gold, ks=ks)
        for k in ks:
            assert metrics[f"recall@{k}"] == pytest.approx(recall_at_k(ranking, gold, k))
            assert metrics[f"hit@{k}"] == hit_at_k(ranking, gold, k)
            assert metrics[f"pr@{k}"] == perfect_recall_at_k(ranking, gold, k)
            assert metrics[f"capped_recall@{k}"] == pytest.approx(
                capped_recall_at_k(ranking, gold, k)
            )
            assert metrics[f"ndcg@{k}"] == pytest.approx(ndcg_at_k(ranking, gold, k))
            assert metrics[f"precision@{k}"] == pytest.approx(precision_at_k(ranking, gold, k))
        assert metrics["mrr"] == pytest.approx(reciprocal_rank(ranking, gold))


# --------------------------------------------------------------------------- summaries


def test_aggregate_means() -> None:
    rows = [
        {"recall@1": 1.0, "mrr": 1.0},
        {"recall@1": 0.0, "mrr": 0.5},
        {"recall@1": 0.5, "mrr": 0.0},
    ]
    # recall@1: (1 + 0 + 0.5) / 3 = 0.5; mrr: (1 + 0.5 + 0) / 3 = 0.5
    assert aggregate(rows) == pytest.approx({"recall@1": 0.5, "mrr": 0.5})
    assert aggregate([{"x": 0.25}]) == {"x": 0.25}


def test_aggregate_rejects_empty_and_mismatched() -> None:
    with pytest.raises(ValueError):
        aggregate([])
    with pytest.raises(ValueError, match="query 1"):
        aggregate([{"a": 1.0, "b": 0.0}, {"a": 1.0}])


def test_latency_percentiles() -> None:
    out = latency_percentiles([0.004, 0.001, 0.003, 0.002])
    # ms sorted [1, 2, 3, 4]; linear: p50 at index 1.5 -> 2.5; p95 at 2.85 -> 3 + 0.85 = 3.85;
    # p99 at 2.97 -> 3.97; mean 10/4 = 2.5
    assert out == pytest.approx(
        {
            "latency_ms_p50": 2.5,
            "latency_ms_p95": 3.85,
            "latency_ms_p99": 3.97,
            "latency_ms_mean": 2.5,
        }
    )
    assert latency_percentiles([0.010]) == pytest.approx(
        {
            "latency_ms_p50": 10.0,
            "latency_ms_p95": 10.0,
            "latency_ms_p99": 10.0,
            "latency_ms_mean": 10.0,
        }
    )
    with pytest.raises(ValueError):
        latency_percentiles([])


# --------------------------------------------------------------------------- ir_measures parity


def _random_run(seed: int, n_queries: int = 50):
    rng = random.Random(seed)
    ids = [f"d{i}" for i in range(80)]
    queries = {}
    for q in range(n_queries):
        ranking = rng.sample(ids, rng.randint(1, 30))  # no duplicates: a run is a dict per query
        gold = set(rng.sample(ids[:40], rng.randint(1, 14)))  # sometimes |gold| > 10
        if q % 5 == 0:  # make sure some queries have early hits
            ranking[0] = next(iter(sorted(gold)))
            ranking = list(dict.fromkeys(ranking))
        queries[f"q{q}"] = (ranking, gold)
    return queries


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_ir_measures(seed: int) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    queries = _random_run(seed)
    qrels = [
        ir_measures.Qrel(qid, doc, 1) for qid, (_, gold) in queries.items() for doc in sorted(gold)
    ]
    # Strictly decreasing scores so trec_eval's score sort reproduces our order exactly.
    run = [
        ir_measures.ScoredDoc(qid, doc, float(len(ranking) - i))
        for qid, (ranking, _) in queries.items()
        for i, doc in enumerate(ranking)
    ]
    ours = {
        "nDCG@10": lambda r, g: ndcg_at_k(r, g, 10),
        "R@10": lambda r, g: recall_at_k(r, g, 10),
        "RR": lambda r, g: reciprocal_rank(r, g),
        "P@5": lambda r, g: precision_at_k(r, g, 5),
    }
    measures = [ir_measures.parse_measure(name) for name in ours]
    seen = set()
    for metric in ir_measures.iter_calc(measures, qrels, run):
        name = str(metric.measure)
        ranking, gold = queries[metric.query_id]
        assert ours[name](ranking, gold) == pytest.approx(metric.value, abs=1e-9), (
            name,
            metric.query_id,
        )
        seen.add((metric.query_id, name))
    assert len(seen) == len(queries) * len(ours)  # every query and measure was compared
    # and the hits are not all trivially zero
    assert sum(reciprocal_rank(r, g) > 0 for r, g in queries.values()) >= 10
