"""Typed option sets shared by the API, the CLI (``--set key=value``) and index manifests.

Every pluggable piece (an index part, a retriever) declares its options as a dataclass whose
fields are made by :func:`option`: their help text, and what values they take (``choices``, a
:class:`Bounds` range, ``server_only`` for a file the server would load). :func:`make_options`
builds one from a dict of user values, converting strings from the command line (or, with
``strict``, taking JSON values as they are) and naming unknown keys and values out of range;
:func:`option_json_schema` states the same in JSON Schema (the HTTP server's OpenAPI document),
so what is checked and what is documented come from one declaration.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hopgraph.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class Bounds:
    """The numbers an option takes: at least ``minimum``, at most ``maximum``, above ``above``,
    below ``below`` (each None: no such bound), and besides them the values ``also`` (a
    sentinel such as -1 for "auto")."""

    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    below: float | None = None
    also: tuple[float, ...] = ()

    def admits(self, value: float) -> bool:
        """Whether ``value`` is within the bounds (NaN is not)."""
        if value in self.also:
            return True
        if value != value:  # NaN
            return False
        return not (
            (self.minimum is not None and value < self.minimum)
            or (self.maximum is not None and value > self.maximum)
            or (self.above is not None and value <= self.above)
            or (self.below is not None and value >= self.below)
        )

    def describe(self) -> str:
        """The bounds in words: "> 0", ">= 0", "in [0, 1]", ">= 0 or -1"."""
        low = (
            ("[", self.minimum)
            if self.minimum is not None
            else ("(", self.above)
            if self.above is not None
            else None
        )
        high = (
            (self.maximum, "]")
            if self.maximum is not None
            else (self.below, ")")
            if self.below is not None
            else None
        )
        if low and high:
            text = f"in {low[0]}{low[1]:g}, {high[0]:g}{high[1]}"
        elif low:
            text = f"{'>=' if low[0] == '[' else '>'} {low[1]:g}"
        elif high:
            text = f"{'<=' if high[1] == ']' else '<'} {high[0]:g}"
        else:
            text = "a number"
        return " or ".join([text, *(f"{v:g}" for v in self.also)])

    def json_schema(self, limit: float | None = None) -> dict[str, Any]:
        """JSON Schema keywords for the bounds, within ``[-limit, limit]`` when given (a
        server's bound on the absolute value); with ``also``, an ``anyOf`` of the range and the
        extra values (those within ``limit``)."""
        out: dict[str, Any] = {}
        low = [v for v in (self.minimum, None if limit is None else -limit) if v is not None]
        high = [v for v in (self.maximum, limit) if v is not None]
        if self.above is not None and not (low and max(low) > self.above):
            out["exclusiveMinimum"] = self.above
        elif low:
            out["minimum"] = max(low)
        if self.below is not None and not (high and min(high) < self.below):
            out["exclusiveMaximum"] = self.below
        elif high:
            out["maximum"] = min(high)
        extra = [v for v in self.also if limit is None or abs(v) <= limit]
        if extra:
            return {"anyOf": [out, {"enum": extra}]}
        return out


POSITIVE = Bounds(above=0)
NON_NEGATIVE = Bounds(minimum=0)
UNIT_INTERVAL = Bounds(minimum=0, maximum=1)

Choices = tuple[Any, ...] | Callable[[], tuple[Any, ...]]


def option(
    default: Any,
    help: str,
    choices: Choices | None = None,
    *,
    bounds: Bounds | None = None,
    server_only: bool = False,
) -> Any:
    """A dataclass field with help text, and what it takes: ``choices`` (the allowed values,
    or a function giving them, for lists only known once everything is registered),
    ``bounds`` (a number's range), ``server_only`` (a file the server would load: set by the
    operator, never by a request)."""
    meta = {"help": help, "choices": choices, "bounds": bounds, "server_only": server_only}
    return dataclasses.field(default=default, metadata=meta)


def option_choices(f: dataclasses.Field) -> tuple[Any, ...] | None:
    """The allowed values of field ``f`` (None: any of its type)."""
    choices = f.metadata.get("choices")
    return choices() if callable(choices) else choices


def server_only_options(cls: type) -> frozenset[str]:
    """The options of ``cls`` only the server's operator sets (``server_only``)."""
    return frozenset(f.name for f in dataclasses.fields(cls) if f.metadata.get("server_only"))


def _coerce(name: str, value: Any, tp: Any, strict: bool = False) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None or (
            not strict and isinstance(value, str) and value.lower() in ("none", "null", "")
        ):
            return None
        return _coerce(name, value, args[0], strict)
    if strict:
        return _as_json(name, value, tp)
    try:
        if tp is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on"):
                return True
            if isinstance(value, str) and value.lower() in ("0", "false", "no", "off"):
                return False
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            raise ValueError(value)
        if tp is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            if isinstance(value, bool):
                raise ValueError(value)
            return int(value)
        if tp is float:
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if tp is str:
            if not isinstance(value, str):
                raise ValueError(value)
            return value
    except (TypeError, ValueError):
        raise ConfigError(
            f"option {name!r} expects {getattr(tp, '__name__', tp)}, got {value!r}"
        ) from None
    return value


_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _as_json(name: str, value: Any, tp: Any) -> Any:
    """``value`` as a JSON document gives it, checked against ``tp`` with JSON Schema's types:
    no string is read as a number, no number as a boolean; an integer may be written ``3.0``."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = number and (isinstance(value, int) or value.is_integer())
    elif tp is float:
        ok = number
    else:
        ok = tp is not str or isinstance(value, str)
    if not ok:
        kind = _JSON_TYPES.get(tp, getattr(tp, "__name__", str(tp)))
        raise ConfigError(f"option {name!r} expects {kind}, got {value!r}")
    if tp is int:
        return int(value)
    if tp is float:
        try:
            return float(value)
        except OverflowError:  # an integer beyond any float: out of every bound
            return math.copysign(math.inf, value)
    return value


def option_values(
    cls: type, values: dict[str, Any] | None = None, *, what: str = "", strict: bool = False
) -> dict[str, Any]:
    """``values`` checked and converted for options ``cls``, each on its own: unknown keys, a
    wrong type, a value not among the choices or out of bounds raise ConfigError. Strings are
    converted as on the command line; with ``strict``, values are taken as JSON gives them (a
    number for a number, a boolean for a boolean), as the HTTP server's schema states."""
    values = dict(values or {})
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(values) - set(fields))
    if unknown:
        label = f" for {what}" if what else ""
        raise ConfigError(
            f"unknown option(s) {', '.join(map(repr, unknown))}{label}; "
            f"valid: {', '.join(sorted(fields)) or '(none)'}"
        )
    out = {}
    for key, value in values.items():
        v = _coerce(key, value, hints[key], strict)
        choices = option_choices(fields[key])
        if choices and v not in choices:
            raise ConfigError(f"option {key!r} must be one of {list(choices)}, got {v!r}")
        bounds = fields[key].metadata.get("bounds")
        if bounds is not None and v is not None and not bounds.admits(v):
            raise ConfigError(f"option {key!r} must be {bounds.describe()}, got {v!r}")
        out[key] = v
    return out


def make_options(
    cls: type[T], values: dict[str, Any] | None = None, *, what: str = "", strict: bool = False
) -> T:
    """Build options ``cls`` from ``values`` (checked by :func:`option_values`), then the
    class's own ``validate`` (rules between options); problems raise ConfigError."""
    obj = cls(**option_values(cls, values, what=what, strict=strict))
    check = getattr(obj, "validate", None)
    if check is not None:
        check()
    return obj


def describe_options(cls: type) -> list[tuple[str, str, Any, str]]:
    """(name, type name, default, help) for each option of ``cls``."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        out.append(
            (f.name, getattr(tp, "__name__", str(tp)), f.default, f.metadata.get("help", ""))
        )
    return out


def option_json_schema(
    cls: type, name: str, limit: float | None = None, choices: tuple[Any, ...] | None = None
) -> dict[str, Any]:
    """The JSON Schema of option ``name`` of ``cls`` as :func:`make_options` with ``strict``
    takes it: its type, its choices (``choices`` overrides the declared ones), its bounds
    (within ``[-limit, limit]`` for a number when given), its help and default."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    tp = typing.get_type_hints(cls)[name]
    nullable = False
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        nullable, tp = len(args) < len(typing.get_args(tp)), args[0]
    schema: dict[str, Any] = {"type": _JSON_TYPES[tp]} if tp in _JSON_TYPES else {}
    choices = option_choices(f) if choices is None else choices
    bounds: Bounds | None = f.metadata.get("bounds")
    if choices:
        schema["enum"] = list(choices)
    elif tp in (int, float) and (bounds is not None or limit is not None):
        schema.update((bounds or Bounds()).json_schema(limit))
    if nullable:
        schema = {"anyOf": [schema, {"type": "null"}]}
    schema["description"] = f.metadata.get("help", "")
    if f.default is not dataclasses.MISSING:
        schema["default"] = f.default
    return schema


def parse_assignments(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Turn ``["k=v", ...]`` from the command line into a dict; bad items raise ConfigError."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def positive(name: str, value: float) -> None:
    if value <= 0:
        raise ConfigError(f"option {name!r} must be > 0, got {value!r}")


def in_unit_interval(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"option {name!r} must be in [0, 1], got {value!r}")
