"""The methods an evaluation runs, with their parameters: ``hopgraph eval --method a,b --set ...``
and a preset's tuned settings turned into :class:`~hopgraph.eval.runner.MethodSpec`s."""

from __future__ import annotations

from typing import Any

from hopgraph.config import describe_options
from hopgraph.errors import ConfigError
from hopgraph.eval.runner import MethodSpec
from hopgraph.retrieve import method_class
from hopgraph.retrieve.base import resolve_method_name


def method_specs(
    methods: list[str], sets: dict[str, str], preset: dict[str, Any] | None = None
) -> list[MethodSpec]:
    """Give each method its parameters: ``method.param=v`` for one, ``param=v`` for all that
    have ``param`` (an error if none has it). A preset's ``graph`` parameters go to every method
    that has them and its ``seed_k`` to the methods it names; ``--set`` overrides both."""
    methods = [resolve_method_name(m) for m in methods]  # "default" → its method's name
    resolved: dict[str, str] = {}
    for key, value in sets.items():  # default.param=v is the default method's parameter
        m, dot, name = key.partition(".")
        resolved[f"{resolve_method_name(m)}.{name}" if dot else key] = value
    sets = resolved
    params: dict[str, dict[str, str]] = {m: {} for m in methods}
    for m in methods:
        names = {n for n, *_ in describe_options(method_class(m).Params)}
        for key, value in (preset or {}).get("graph", {}).items():
            if key in names:
                params[m][key] = value
        if m in (preset or {}).get("seed_k", {}) and "seed_k" in names:
            params[m]["seed_k"] = preset["seed_k"][m]
    for key, value in sets.items():
        m, dot, name = key.partition(".")
        if dot and m in params:
            params[m][name] = value
            continue
        takers = [
            m for m in methods if key in {n for n, *_ in describe_options(method_class(m).Params)}
        ]
        if not takers:
            raise ConfigError(f"no method in {methods} has a parameter {key!r}")
        for m in takers:
            params[m][key] = value
    return [MethodSpec(m, params[m]) for m in methods]
