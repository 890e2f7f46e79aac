"""Markdown tables and JSON for evaluation results."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from hopgraph.eval.runner import MethodResult


def markdown_table(results: Sequence[MethodResult], ks: Sequence[int] = (1, 2, 5, 10)) -> str:
    """One row per method: Recall@k, Hit@10, MRR, nDCG@10, PR@5/10 (TR@10 and MissTR@10 with a
    corpus graph), latency, index time, RSS."""
    cols = [f"R@{k}" for k in ks] + ["Hit@10", "MRR", "nDCG@10", "PR@5", "PR@10"]
    keys = [f"recall@{k}" for k in ks] + ["hit@10", "mrr", "ndcg@10", "pr@5", "pr@10"]
    if results and all("tr@10" in r.metrics for r in results):  # a corpus graph: FastInsight's
        cols, keys = [*cols, "TR@10", "MissTR@10"], [*keys, "tr@10", "misstr@10"]
    head = ["method", "n", *cols, "p50 ms", "p95 ms", "p99 ms", "index s", "peak RSS MB"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in results:
        vals = [f"{r.metrics[k]:.3f}" for k in keys]
        lat = [f"{r.latency[f'latency_ms_{p}']:.1f}" for p in ("p50", "p95", "p99")]
        cells = [f"`{r.label}`", str(r.n_questions), *vals, *lat]
        cells += [f"{r.index_seconds:.1f}", f"{r.peak_rss_mb:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    compared = [r for r in results if r.comparison]
    if compared:
        first = compared[0].comparison["against"]
        sub = [
            f"\nΔRecall@10 against `{first}` (paired bootstrap, 1000 resamples, 95% CI):\n",
            "| method | ΔR@10 | 95% CI | p | wins / ties / losses |",
            "|---|---|---|---|---|",
        ]
        for r in compared:
            c = r.comparison
            sub.append(
                f"| `{r.label}` | {c['delta']:+.3f} | [{c['ci_low']:+.3f}, {c['ci_high']:+.3f}] "
                f"| {c['p_value']:.3f} | {c['wins']} / {c['ties']} / {c['losses']} |"
            )
        table += "\n" + "\n".join(sub)
    return table


def per_query_table(results: Sequence[MethodResult]) -> str:
    """Recall@10 of every question under every method."""
    head = ["question", *[f"`{r.label}` R@10" for r in results]]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for i, row in enumerate(results[0].per_query):
        vals = [f"{r.per_query[i]['recall@10']:.2f}" for r in results]
        lines.append("| " + " | ".join([row["id"], *vals]) + " |")
    return "\n".join(lines)


def write_json(
    results: Sequence[MethodResult], path: str | Path, *, per_query: bool = False
) -> None:
    """One object per method, or a list of them when several methods ran."""
    objs = [r.to_json(per_query=per_query) for r in results]
    payload = objs[0] if len(objs) == 1 else objs
    Path(path).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
