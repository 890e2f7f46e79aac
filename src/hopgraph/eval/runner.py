"""Run retrieval methods over a dataset's questions and measure quality, latency and memory."""

from __future__ import annotations

import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hopgraph.corpus import Dataset
from hopgraph.eval.bootstrap import paired_bootstrap
from hopgraph.eval.metrics import (
    aggregate,
    compute_all,
    latency_percentiles,
    topological_recall,
)
from hopgraph.index import Index
from hopgraph.retrieve.registry import get_retriever, method_parts, resolve_method_name

# Recall@2/5/10 etc. are always computed (the JSON report promises them), whatever ``ks`` shows.
REPORTED_KS = (2, 5, 10)
# Topological Recall and MissTR at this depth when the index has a corpus graph (FastInsight).
TOPOLOGICAL_K = 10


@dataclass
class MethodSpec:
    """A method name, its parameters, and the label it is reported under."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    def __post_init__(self) -> None:
        self.method = resolve_method_name(self.method)  # "default" is reported as its method
        if not self.label:
            args = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
            self.label = f"{self.method}[{args}]" if args else self.method


@dataclass
class MethodResult:
    label: str
    method: str
    params: dict[str, Any]
    n_questions: int
    metrics: dict[str, float]
    latency: dict[str, float]
    index_seconds: float
    peak_rss_mb: float
    per_query: list[dict[str, Any]]
    comparison: dict[str, Any] | None = None
    trusted: str = ""  # which signals the ranking trusted on this corpus (Retriever.trusted)

    def to_json(self, *, per_query: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": self.label,
            "base_method": self.method,
            "params": self.params,
            "n_questions": self.n_questions,
            **self.metrics,
            **self.latency,
            "index_seconds": self.index_seconds,
            "peak_rss_mb": self.peak_rss_mb,
        }
        if self.comparison is not None:
            out["vs_first"] = self.comparison
        if self.trusted:
            out["trusted"] = self.trusted
        if per_query:
            out["per_query"] = self.per_query
        return out


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def required_parts(methods: Sequence[MethodSpec]) -> list[str]:
    parts: list[str] = []
    for m in methods:
        for p in method_parts(m.method, m.params):
            if p not in parts:
                parts.append(p)
    return parts


def evaluate(
    index: Index,
    dataset: Dataset,
    methods: Sequence[MethodSpec | str],
    *,
    ks: Sequence[int] = (1, 2, 5, 10),
    depth: int = 100,
    limit: int | None = None,
    progress: bool = True,
    bootstrap_seed: int = 0,
    n_resamples: int = 1000,
    max_per_doc: int | None = 0,
) -> list[MethodResult]:
    """Evaluate each method on the dataset's questions (one search per question, timed).

    ``max_per_doc`` is the searches' per-document limit: 0 (no limit) by default, so a chunked
    set's passage-level gold (every chunk of a relevant document) is measured on each method's
    own ranking; None: the limit a search has by default (``benchmarks/max_per_doc.py``).

    Metrics are means over questions; latency is per query (one warm-up query first, untimed);
    with several methods, each is compared with the first by a paired bootstrap of Recall@10.
    When the index has a ``corpus_graph`` part, Topological Recall and MissTR at 10 are added
    (``tr@10``, ``misstr@10``), measured on that graph.
    """
    specs = [m if isinstance(m, MethodSpec) else MethodSpec(m) for m in methods]
    questions = dataset.questions[:limit] if limit else dataset.questions
    if not questions:
        raise ValueError(f"dataset {dataset.name!r} has no questions to evaluate")
    all_ks = sorted(set(ks) | set(REPORTED_KS))
    depth = max(depth, max(all_ks))
    graph = index.part("corpus_graph") if index.has("corpus_graph") else None
    pos = index.corpus.position
    results: list[MethodResult] = []
    for spec in specs:
        retriever = get_retriever(index, spec.method, **spec.params)
        # warm-up: loads models, fills caches
        retriever.search(questions[0].text, k=depth, max_per_doc=max_per_doc)
        rows = []
        for q in tqdm(questions, desc=f"eval {spec.label}", unit="q", disable=not progress):
            t0 = time.perf_counter()
            ranking = retriever.search(q.text, k=depth, max_per_doc=max_per_doc)
            elapsed = time.perf_counter() - t0
            m = compute_all(ranking.ids, q.gold, all_ks)
            if graph is not None:
                top = [pos(i) for i in ranking.ids[:TOPOLOGICAL_K]]
                gold = [pos(g) for g in q.gold if g in index.corpus]
                tr, miss = topological_recall(graph.costs, top, gold)
                m[f"tr@{TOPOLOGICAL_K}"], m[f"misstr@{TOPOLOGICAL_K}"] = tr, miss
            stages = {  # stage timings such as seed_ms, ppr_ms
                key: v
                for key, v in ranking.info.items()
                if key.endswith("_ms") and isinstance(v, float)
            }
            rows.append(
                {
                    "id": q.id,
                    "top10": ranking.ids[:10],
                    "n_gold": len(set(q.gold)),
                    **m,
                    "latency_ms": elapsed * 1e3,
                    "stages": stages,
                }
            )
        parts = method_parts(spec.method, spec.params)
        index_seconds = round(sum(index.build_seconds.get(p, 0.0) for p in parts), 3)
        results.append(_summarize(spec, rows, index_seconds))
        results[-1].trusted = retriever.trusted()
    _compare(results, n_resamples=n_resamples, seed=bootstrap_seed)
    return results


def _summarize(spec: MethodSpec, rows: list[dict[str, Any]], index_seconds: float) -> MethodResult:
    """Means over questions, PR@k over the questions with more than one gold passage
    (``pr_multi@k``, GraphER's headline metric), latency percentiles and stage medians."""
    metrics = aggregate(
        [{k: v for k, v in r.items() if isinstance(v, float) and k != "latency_ms"} for r in rows]
    )
    multi = [r for r in rows if r["n_gold"] > 1]
    metrics["n_multi_gold"] = float(len(multi))
    for key in [k for k in metrics if k.startswith("pr@")] if multi else []:
        metrics[key.replace("pr@", "pr_multi@")] = float(np.mean([r[key] for r in multi]))
    latency = latency_percentiles([r["latency_ms"] / 1e3 for r in rows])
    stages: dict[str, list[float]] = {}
    for r in rows:
        for key, v in r["stages"].items():
            stages.setdefault(key, []).append(v)
    for key, vals in stages.items():
        latency[f"{key}_p50"] = float(np.median(vals))
    return MethodResult(
        label=spec.label,
        method=spec.method,
        params=dict(spec.params),
        n_questions=len(rows),
        metrics=metrics,
        latency=latency,
        index_seconds=index_seconds,
        peak_rss_mb=round(peak_rss_mb(), 1),
        per_query=rows,
    )


def _compare(results: list[MethodResult], *, n_resamples: int, seed: int) -> None:
    """Each method against the first: paired bootstrap of Recall@10."""
    if len(results) < 2:
        return
    base = [r["recall@10"] for r in results[0].per_query]
    for res in results[1:]:
        other = [r["recall@10"] for r in res.per_query]
        cmp = paired_bootstrap(base, other, n_resamples=n_resamples, seed=seed)
        res.comparison = {"metric": "recall@10", "against": results[0].label, **cmp}


def merge_results(
    groups: Sequence[Sequence[MethodResult]], *, n_resamples: int = 1000, seed: int = 0
) -> list[MethodResult]:
    """Pool the results of the same methods run on several groups of one dataset (such as
    the databases of a table-retrieval set, each searched in its own index) into one result
    per method, as if all questions had been run together."""
    if not groups:
        raise ValueError("merge_results needs at least one group")
    labels = [r.label for r in groups[0]]
    for g in groups[1:]:
        if [r.label for r in g] != labels:
            raise ValueError("every group must report the same methods in the same order")
    merged = []
    for i, first in enumerate(groups[0]):
        rows = [row for g in groups for row in g[i].per_query]
        spec = MethodSpec(first.method, first.params, first.label)
        merged.append(_summarize(spec, rows, round(sum(g[i].index_seconds for g in groups), 3)))
        merged[-1].trusted = "; ".join(dict.fromkeys(g[i].trusted for g in groups if g[i].trusted))
    _compare(merged, n_resamples=n_resamples, seed=seed)
    return merged
