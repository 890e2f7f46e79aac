"""The evaluation runner: per-question rows, summaries, multi-gold PR, merging groups."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hopgraph.eval import MethodSpec, evaluate, merge_results


def test_summary_and_multi_gold_perfect_recall(demo_index, demo_dataset):
    (res,) = evaluate(demo_index, demo_dataset, ["bm25"], progress=False)
    rows = res.per_query
    assert res.n_questions == len(demo_dataset.questions) == len(rows)
    assert res.metrics["recall@5"] == pytest.approx(np.mean([r["recall@5"] for r in rows]))
    multi = [r for r in rows if r["n_gold"] > 1]
    assert res.metrics["n_multi_gold"] == len(multi) > 0
    assert res.metrics["pr_multi@10"] == pytest.approx(np.mean([r["pr@10"] for r in multi]))
    assert "latency_ms" not in res.metrics and res.latency["latency_ms_p50"] > 0


def test_merging_groups_equals_one_run(demo_index, demo_dataset):
    specs = [MethodSpec("bm25"), MethodSpec("hybrid")]
    whole = evaluate(demo_index, demo_dataset, specs, progress=False, n_resamples=200)
    qs = demo_dataset.questions
    halves = [dataclasses.replace(demo_dataset, questions=part) for part in (qs[:5], qs[5:])]
    parts = [evaluate(demo_index, h, specs, progress=False) for h in halves]
    merged = merge_results(parts, n_resamples=200)
    for a, b in zip(whole, merged, strict=True):
        assert a.label == b.label and a.n_questions == b.n_questions
        for key, v in a.metrics.items():
            assert b.metrics[key] == pytest.approx(v), key
    assert merged[1].comparison["against"] == "bm25"
    assert merged[1].comparison["delta"] == pytest.approx(whole[1].comparison["delta"])
    with pytest.raises(ValueError):
        merge_results([parts[0], parts[1][:1]])


def test_split_by_pools(demo_dataset):
    from hopgraph.corpus import Corpus, Dataset, Passage, Question
    from hopgraph.errors import CorpusError

    ps = [Passage(f"{db}.{t}", t, f"table {t}", {"db": db}) for db in "xy" for t in "abc"]
    qs = [Question("q1", "?", ("x.a", "x.b"), metadata={"db": "x"})]
    qs.append(Question("q2", "?", ("y.c",), metadata={"db": "y"}))
    parts = Dataset("t", Corpus(ps), qs).split_by("db")
    assert sorted(parts) == ["x", "y"]
    assert parts["x"].corpus.ids == ["x.a", "x.b", "x.c"]
    assert [q.id for q in parts["y"].questions] == ["q2"]
    bad = [Question("q3", "?", ("y.a",), metadata={"db": "x"})]
    with pytest.raises(CorpusError, match="outside its pool"):
        Dataset("t", Corpus(ps), bad).split_by("db")
    with pytest.raises(CorpusError, match="no metadata"):
        demo_dataset.split_by("db")
