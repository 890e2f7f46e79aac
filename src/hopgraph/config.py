"""Typed option sets shared by the API, the CLI (``--set key=value``) and index manifests.

Every pluggable piece (an index part, a retriever) declares its options as a dataclass whose
fields carry their help text in ``metadata["help"]``. :func:`make_options` builds one from a dict
of user values, converting strings from the command line and naming unknown keys.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeVar

from hopgraph.errors import ConfigError

T = TypeVar("T")


def option(default: Any, help: str, choices: tuple[Any, ...] | None = None) -> Any:
    """A dataclass field with help text (and optional allowed values)."""
    return dataclasses.field(default=default, metadata={"help": help, "choices": choices})


def _coerce(name: str, value: Any, tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null", "")):
            return None
        return _coerce(name, value, args[0])
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


def make_options(cls: type[T], values: dict[str, Any] | None = None, *, what: str = "") -> T:
    """Build options ``cls`` from ``values``; unknown keys and bad values raise ConfigError."""
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
    kwargs = {}
    for key, value in values.items():
        v = _coerce(key, value, hints[key])
        choices = fields[key].metadata.get("choices")
        if choices and v not in choices:
            raise ConfigError(f"option {key!r} must be one of {list(choices)}, got {v!r}")
        kwargs[key] = v
    obj = cls(**kwargs)
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
