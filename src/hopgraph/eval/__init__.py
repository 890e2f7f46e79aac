"""Evaluation: per-query retrieval metrics, aggregation, latency, paired bootstrap, reports."""

from hopgraph.eval.runner import (
    MethodResult,
    MethodSpec,
    evaluate,
    merge_results,
    required_parts,
)
from hopgraph.eval.specs import method_specs

__all__ = [
    "MethodResult",
    "MethodSpec",
    "evaluate",
    "merge_results",
    "method_specs",
    "required_parts",
]
