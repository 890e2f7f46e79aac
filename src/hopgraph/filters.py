"""Metadata filters: which passages a search may return.

A filter is a dict in the style of MongoDB / Chroma / LangChain vector stores::

    {"source": "report.pdf"}                          # equality
    {"year": {"$gte": 2020}, "lang": {"$in": ["en", "de"]}}
    {"$or": [{"kind": "faq"}, {"page": {"$lt": 3}}]}

Fields are keys of the passages' ``metadata`` (a dotted name reaches into nested dicts:
``"author.name"``); several fields in one dict must all match. Operators: ``$eq $ne $in $nin
$gt $gte $lt $lte`` on a field, ``$and $or`` (lists of filters) and ``$not`` (a filter) at the
top. Semantics, chosen to match what users of those stores expect:

- a list-valued field matches ``$eq``/``$in`` when any element does (``{"tags": "x"}``);
- ``$ne`` / ``$nin`` match passages that lack the field;
- ``$gt``/``$gte``/``$lt``/``$lte`` compare numbers with numbers and strings with strings
  (ISO dates order as strings); a value of another type, or a missing field, does not match;
- ``True`` is not ``1``: booleans only equal booleans.

:func:`matching_rows` turns a filter into a boolean mask over an index's rows. The metadata is
read once per corpus (one pass) into per-field columns, and masks of recent filters are kept,
so a repeated filter costs a dictionary look-up.
"""

from __future__ import annotations

import json
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hopgraph.errors import ConfigError

__all__ = [
    "FILTER_OPERATORS",
    "MetadataTable",
    "filter_json_schema",
    "matching_rows",
    "validate_filter",
]

FILTER_OPERATORS = ("$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte")
_LOGICAL = ("$and", "$or", "$not")
_RANGE = {"$gt": np.greater, "$gte": np.greater_equal, "$lt": np.less, "$lte": np.less_equal}
MAX_FILTER_TERMS = 256
"""More conditions than this in one filter are refused (a filter is not a query language)."""
MAX_IN_VALUES = 10_000
"""The most values one ``$in`` / ``$nin`` list may hold."""


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class _Cond:
    field: str
    op: str
    value: Any


@dataclass(frozen=True)
class _Node:
    op: str  # $and, $or, $not
    children: tuple[_Cond | _Node, ...]


def validate_filter(spec: Any) -> _Node:
    """Parse ``spec``; a malformed filter raises :class:`ConfigError` saying what and where."""
    count = [0]
    node = _parse(spec, "filter", count)
    return node if isinstance(node, _Node) else _Node("$and", (node,))


def _parse(spec: Any, where: str, count: list[int]) -> _Cond | _Node:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where} must be an object of field conditions, got {spec!r}")
    parts: list[_Cond | _Node] = []
    for key, value in spec.items():
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{where}: field names are non-empty strings, got {key!r}")
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise ConfigError(f"{where}.{key} must be a non-empty list of filters")
            kids = tuple(_parse(v, f"{where}.{key}[{i}]", count) for i, v in enumerate(value))
            parts.append(_Node(key, kids))
        elif key == "$not":
            parts.append(_Node("$not", (_parse(value, f"{where}.$not", count),)))
        elif key.startswith("$"):
            raise ConfigError(
                f"{where}: unknown operator {key!r} at the top (use $and, $or, $not, or a "
                f"field name with one of {', '.join(FILTER_OPERATORS)})"
            )
        elif isinstance(value, dict) and any(isinstance(k, str) and k[:1] == "$" for k in value):
            for op, operand in value.items():
                parts.append(_cond(key, op, operand, f"{where}.{key}", count))
        else:
            parts.append(_cond(key, "$eq", value, f"{where}.{key}", count))
    if not parts:
        raise ConfigError(f"{where} is empty: give at least one condition (or no filter)")
    return parts[0] if len(parts) == 1 else _Node("$and", tuple(parts))


def _cond(field: str, op: Any, value: Any, where: str, count: list[int]) -> _Cond:
    count[0] += 1
    if count[0] > MAX_FILTER_TERMS:
        raise ConfigError(f"a filter has at most {MAX_FILTER_TERMS} conditions")
    if op not in FILTER_OPERATORS:
        raise ConfigError(
            f"{where}: unknown operator {op!r}; use one of {', '.join(FILTER_OPERATORS)}"
        )
    if op in ("$in", "$nin"):
        if not isinstance(value, list):
            raise ConfigError(f"{where}.{op} takes a list of values, got {value!r}")
        if len(value) > MAX_IN_VALUES:
            raise ConfigError(f"{where}.{op}: at most {MAX_IN_VALUES} values")
        return _Cond(field, op, tuple(value))
    if op in _RANGE:
        if not _is_number(value) and not isinstance(value, str):
            raise ConfigError(f"{where}.{op} compares with a number or a string, got {value!r}")
    elif not _is_scalar(value):
        raise ConfigError(f"{where}.{op} takes a string, number, boolean or null, got {value!r}")
    return _Cond(field, op, value)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | bool | int | float)


def _key(v: Any) -> tuple[str, Any] | None:
    """A hashable key under which equal values meet (1 == 1.0, True != 1); None if unhashable."""
    if v is None:
        return ("z", None)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int | float):
        return ("n", float(v))
    if isinstance(v, str):
        return ("s", v)
    return None


def filter_json_schema(ref: str) -> dict[str, Any]:
    """The filter grammar :func:`validate_filter` takes, as JSON Schema (2020-12); ``ref`` is
    where the schema itself is found (``#/components/schemas/MetadataFilter``), for ``$and``,
    ``$or`` and ``$not``. Not expressed: the :data:`MAX_FILTER_TERMS` conditions in all."""
    scalar = {"type": ["string", "number", "boolean", "null"]}
    ordered = {"type": ["string", "number"]}
    values = {"type": "array", "maxItems": MAX_IN_VALUES}
    operators = {op: ordered if op in _RANGE else scalar for op in FILTER_OPERATORS}
    operators |= {"$in": values, "$nin": values}
    condition = {
        "anyOf": [
            scalar,
            {
                "type": "object",
                "minProperties": 1,
                "properties": operators,
                "additionalProperties": False,
            },
        ]
    }
    return {
        "type": "object",
        "description": "metadata conditions: a field (not starting with $; a dotted name "
        "reaches nested metadata) with a value (equality) or operators; $and, $or, $not; "
        f"at most {MAX_FILTER_TERMS} conditions in all",
        "minProperties": 1,
        "properties": {
            "$and": {"type": "array", "minItems": 1, "items": {"$ref": ref}},
            "$or": {"type": "array", "minItems": 1, "items": {"$ref": ref}},
            "$not": {"$ref": ref},
        },
        "patternProperties": {"^[^$]": condition},
        "additionalProperties": False,
    }


# --------------------------------------------------------------------------- columns


class _Column:
    """One field's values over all rows: an inverted index for equality, and numeric and
    string arrays for ranges (built when first asked for)."""

    def __init__(self, values: list[Any]):
        self.values = values  # _MISSING where the passage lacks the field
        self.present = np.fromiter((v is not _MISSING for v in values), bool, len(values))
        self._postings: dict[tuple[str, Any], np.ndarray] | None = None
        self._numbers: np.ndarray | None = None
        self._strings: tuple[np.ndarray, np.ndarray] | None = None

    def postings(self) -> dict[tuple[str, Any], np.ndarray]:
        if self._postings is None:
            acc: dict[tuple[str, Any], list[int]] = {}
            for row, v in enumerate(self.values):
                if v is _MISSING:
                    continue
                for x in v if isinstance(v, list) else (v,):
                    key = _key(x)
                    if key is not None:
                        acc.setdefault(key, []).append(row)
            self._postings = {k: np.unique(np.asarray(r, np.int64)) for k, r in acc.items()}
        return self._postings

    def numbers(self) -> np.ndarray:
        if self._numbers is None:
            self._numbers = np.fromiter(
                (float(v) if _is_number(v) else np.nan for v in self.values),
                np.float64,
                len(self.values),
            )
        return self._numbers

    def strings(self) -> tuple[np.ndarray, np.ndarray]:
        if self._strings is None:
            is_str = np.fromiter((isinstance(v, str) for v in self.values), bool, len(self.values))
            arr = np.array([v if isinstance(v, str) else "" for v in self.values], dtype=object)
            self._strings = (arr, is_str)
        return self._strings


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


class MetadataTable:
    """The metadata of a corpus's passages, by row, read in one pass; columns per field."""

    def __init__(self, metadata: Sequence[dict[str, Any] | None]):
        self.n = len(metadata)
        self._meta = metadata
        self._columns: dict[str, _Column] = {}
        self._masks: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def of(cls, passages: Iterable[Any]) -> MetadataTable:
        return cls([p.metadata or None for p in passages])

    def column(self, field: str) -> _Column:
        col = self._columns.get(field)
        if col is None:
            path = field.split(".")
            col = _Column([_lookup(m, path) for m in self._meta])
            self._columns[field] = col
        return col

    def mask(self, spec: Any, node: _Node | None = None) -> np.ndarray:
        """Boolean mask of the rows that match filter ``spec`` (kept for the last 64 filters);
        ``node``: ``spec`` already parsed by :func:`validate_filter`."""
        node = node if node is not None else validate_filter(spec)
        key = json.dumps(spec, sort_keys=True, default=str)
        with self._lock:
            m = self._masks.get(key)
            if m is not None:
                self._masks.move_to_end(key)
                return m
            m = self._eval(node)
            m.setflags(write=False)
            self._masks[key] = m
            if len(self._masks) > 64:
                self._masks.popitem(last=False)
            return m

    def _eval(self, node: _Cond | _Node) -> np.ndarray:
        if isinstance(node, _Node):
            masks = [self._eval(c) for c in node.children]
            if node.op == "$not":
                return ~masks[0]
            out = masks[0].copy()
            for m in masks[1:]:
                out = out & m if node.op == "$and" else out | m
            return out
        col = self.column(node.field)
        op, value = node.op, node.value
        if op in ("$eq", "$ne"):
            m = self._any_of(col, (value,))
            return ~m if op == "$ne" else m
        if op in ("$in", "$nin"):
            m = self._any_of(col, value)
            return ~m if op == "$nin" else m
        cmp = _RANGE[op]
        if isinstance(value, str):
            arr, is_str = col.strings()
            out = np.zeros(self.n, bool)
            rows = np.flatnonzero(is_str)
            out[rows] = cmp(arr[rows], value).astype(bool)
            return out
        with np.errstate(invalid="ignore"):
            return cmp(col.numbers(), float(value))  # NaN (not a number) compares False

    def _any_of(self, col: _Column, values: Iterable[Any]) -> np.ndarray:
        out = np.zeros(self.n, bool)
        postings = col.postings()
        for v in values:
            key = _key(v)
            rows = postings.get(key) if key is not None else None
            if rows is not None:
                out[rows] = True
        return out


def _lookup(meta: dict[str, Any] | None, path: list[str]) -> Any:
    cur: Any = meta
    for name in path:
        if not isinstance(cur, dict) or name not in cur:
            return _MISSING
        cur = cur[name]
    return cur


# --------------------------------------------------------------------------- per corpus

_TABLES: weakref.WeakKeyDictionary[Any, MetadataTable] = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def metadata_table(corpus: Any) -> MetadataTable:
    """The metadata table of ``corpus``, read on first use and kept while the corpus lives (the
    table holds no reference to the corpus, so it does not keep it alive)."""
    with _TABLES_LOCK:
        table = _TABLES.get(corpus)
        if table is None:
            table = MetadataTable.of(corpus)
            _TABLES[corpus] = table
        return table


def matching_rows(corpus: Any, spec: Any) -> np.ndarray | None:
    """Boolean mask of the rows of ``corpus`` whose metadata match filter ``spec``; ``None``
    when there is no filter (``None`` or ``{}``)."""
    if spec is None or spec == {}:
        return None
    node = validate_filter(spec)  # a bad filter fails before the metadata is read
    return metadata_table(corpus).mask(spec, node)
