"""Upper bounds on the method parameters a client may send to the server.

A parameter is a cost knob (a depth, a budget, a number of iterations): without a bound, one
request with ``max_iter`` 10^9 occupies a core for hours. Every numeric parameter of every
method has one: by name where the cost is known (:data:`PARAM_MAX`), else a generous default by
type. A request beyond a bound is refused (422 ``invalid_params`` naming the parameter) before
any work; ``GET /info`` lists every bound. Parameters the server fixes itself (``hopgraph
serve --set``) are the operator's choice and are not bounded.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

# the largest value a client may send, by parameter name (any method)
PARAM_MAX: dict[str, float] = {
    "max_iter": 100,  # PPR / GraphER iterations
    "iterations": 10,  # GRIEVER retrieval iterations
    "depth": 10_000,  # candidates per list
    "n": 10_000,  # candidates reranked / initial ranking depth
    "min_candidates": 10_000,
    "c": 1_000,
    "b_max": 1_000,  # cross-encoder budget
    "rerank": 1_000,  # the default's cross-encoder pairs per query
    "patience": 1_000,
    "batch": 1_000,
    "fb_docs": 1_000,
    "fb_terms": 1_000,
    "first_k": 1_000,
    "n_expand": 1_000,
    "seed_k": 1_000,
    "anchors": 100,
    "bridge_cap": 1_000,
    "rewrite_anchors": 100,
    "rewrite_entities": 1_000,
    "rewrite_k": 1_000,
    "ef_search": 10_000,
    "max_paths": 10_000,
    "t_max": 1_000,
    "join_entities": 1_000,
    "max_n": 10,
    "max_length": 512,
    "edge_cap": 100_000,
    "min_df": 100_000,
}
DEFAULT_INT_MAX = 100_000
DEFAULT_FLOAT_MAX = 1e6
THRESHOLD_MAX = 10**12  # "*_min_passages": a size threshold, not a cost


def param_bounds(params_cls: type) -> dict[str, float]:
    """The largest absolute value of each numeric parameter of a method's ``Params``."""
    hints = typing.get_type_hints(params_cls)
    out: dict[str, float] = {}
    for f in dataclasses.fields(params_cls):
        tp = hints[f.name]
        if typing.get_origin(tp) in (typing.Union, types.UnionType):  # int | None
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = args[0] if len(args) == 1 else tp
        if tp is bool or tp not in (int, float):
            continue
        if f.name in PARAM_MAX:
            out[f.name] = PARAM_MAX[f.name]
        elif f.name.endswith("_min_passages"):
            out[f.name] = THRESHOLD_MAX
        else:
            out[f.name] = DEFAULT_INT_MAX if tp is int else DEFAULT_FLOAT_MAX
    return out


def over_bound(params_cls: type, given: dict[str, Any], opts: Any) -> tuple[str, Any, float] | None:
    """The first parameter the client gave (``given``) whose value in ``opts`` is beyond its
    bound: ``(name, value, bound)``; None when all are within."""
    bounds = param_bounds(params_cls)
    for name in given:
        bound = bounds.get(name)
        value = getattr(opts, name, None)
        if bound is not None and value is not None and abs(value) > bound:
            return name, value, bound
    return None
