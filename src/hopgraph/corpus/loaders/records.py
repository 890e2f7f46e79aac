"""Reading the loaders' JSON and JSONL files and checking their records' fields.

Shared by every format module: each problem raises :class:`~hopgraph.errors.CorpusError`
naming the file and, where there is one, the 1-based line (or the record of a JSON list).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hopgraph.corpus.documents import BOM as _BOM
from hopgraph.corpus.documents import decode_utf8 as _decode
from hopgraph.corpus.documents import read_bytes as _read_bytes
from hopgraph.corpus.documents import read_error as _read_error
from hopgraph.errors import CorpusError

# --------------------------------------------------------------------------- skipping

SKIP_REASONS = {
    "not_utf8": "lines that are not valid UTF-8",
    "empty_text": "passages whose text is empty or whitespace",
}
MAX_SKIP_PLACES = 20
"""The first places (file:line) of each reason a :class:`SkippedPassages` keeps."""


@dataclass
class SkippedPassages:
    """What ``skip_bad`` left out of a JSONL corpus instead of stopping: per reason (a key of
    :data:`SKIP_REASONS`) how many, and where the first :data:`MAX_SKIP_PLACES` were."""

    counts: dict[str, int] = field(default_factory=dict)
    places: dict[str, list[str]] = field(default_factory=dict)

    def add(self, reason: str, path: Path, line: int | None) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        where = self.places.setdefault(reason, [])
        if len(where) < MAX_SKIP_PLACES:
            where.append(f"{path}:{line}" if line is not None else str(path))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            reason: {"count": n, "what": SKIP_REASONS[reason], "first": self.places[reason]}
            for reason, n in self.counts.items()
        }

    def describe(self) -> str:
        """One line per reason: how many, and the first places."""
        lines = []
        for reason, n in self.counts.items():
            shown = self.places[reason]
            more = f" and {n - len(shown)} more" if n > len(shown) else ""
            lines.append(f"skipped {n} {SKIP_REASONS[reason]}: {', '.join(shown)}{more}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- reading


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return {
        bool: "boolean",
        int: "number",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(value), type(value).__name__)


def _iter_jsonl(
    path: Path, skip_bad: SkippedPassages | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSONL file, reading it line
    by line (a corpus of a million passages is never held whole). A leading BOM is dropped; an
    invalid UTF-8 byte names its line and column (with ``skip_bad``: the line is skipped and
    counted there)."""
    loads = json.loads
    try:
        f = path.open("rb")
    except OSError as e:
        raise _read_error(e, path) from None
    with f:
        for lineno, raw in enumerate(f, 1):
            skip = len(_BOM) if lineno == 1 and raw.startswith(_BOM) else 0
            try:
                line = raw[skip:].decode("utf-8")
            except UnicodeDecodeError as e:
                if skip_bad is not None:
                    skip_bad.add("not_utf8", path, lineno)
                    continue
                col = e.start + skip + 1  # counted from the line's first byte, BOM included
                raise CorpusError(
                    f"not valid UTF-8 (byte 0x{raw[e.start + skip]:02x} at column {col})",
                    path,
                    lineno,
                ) from None
            if not line or line.isspace():
                continue
            try:
                rec = loads(line)
            except json.JSONDecodeError as e:
                raise CorpusError(
                    f"invalid JSON: {e.msg} (column {e.colno})", path, lineno
                ) from None
            if not isinstance(rec, dict):
                raise CorpusError(f"expected a JSON object, got {_json_type(rec)}", path, lineno)
            yield lineno, rec


def _first_jsonl_record(path: Path) -> Any:
    """The first non-blank line of a JSONL file, parsed; None when it cannot be read."""
    try:
        with path.open("rb") as f:
            for raw in f:
                if raw.strip():
                    return json.loads(raw.removeprefix(_BOM).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return None


def _load_json(path: Path) -> Any:
    text = _decode(_read_bytes(path), path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise CorpusError(f"invalid JSON: {e.msg} (column {e.colno})", path, e.lineno) from None


def _load_json_list(path: Path, data: Any = None) -> list[Any]:
    if data is None:
        data = _load_json(path)
    if not isinstance(data, list):
        raise CorpusError(f"expected a JSON array of records, got {_json_type(data)}", path)
    return data


# --------------------------------------------------------------------------- field checks


class _Where:
    """Location of a record for error messages: a line of a JSONL file or a record of a list."""

    __slots__ = ("path", "line", "record")

    def __init__(self, path: Path, line: int | None = None, record: int | None = None):
        self.path = path
        self.line = line
        self.record = record

    def error(self, message: str) -> CorpusError:
        if self.record is not None:
            message = f"record {self.record}: {message}"
        return CorpusError(message, self.path, self.line)


def _require(rec: dict[str, Any], key: str, where: _Where) -> Any:
    try:
        return rec[key]
    except KeyError:
        raise where.error(f"missing field {key!r}") from None


def _require_dict(rec: Any, where: _Where) -> dict[str, Any]:
    if not isinstance(rec, dict):
        raise where.error(f"expected a JSON object, got {_json_type(rec)}")
    return rec


def _id_value(value: Any, key: str, where: _Where) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise where.error(f"field {key!r} must be a string or integer, got {_json_type(value)}")
    s = str(value)
    if not s.strip():
        raise where.error(f"field {key!r} is empty")
    return s


def _skipped_empty(value: Any, where: _Where, skip_bad: SkippedPassages | None) -> bool:
    """Whether a passage whose ``text`` is ``value`` is skipped (and counted) as empty."""
    if skip_bad is None or not isinstance(value, str) or value.strip():
        return False
    skip_bad.add("empty_text", where.path, where.line)
    return True


def _str_value(value: Any, key: str, where: _Where, *, nonempty: bool = False) -> str:
    if not isinstance(value, str):
        raise where.error(f"field {key!r} must be a string, got {_json_type(value)}")
    if nonempty and not value.strip():
        raise where.error(f"empty {key}" if key == "text" else f"field {key!r} is empty")
    return value


def _answers(value: Any, key: str, where: _Where) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(a, (str, int, float)) for a in value):
        return tuple(dict.fromkeys(str(a) for a in value))
    raise where.error(f"field {key!r} must be a string or a list of strings")


# --------------------------------------------------------------------------- files


def _need_dir(path: Path, fmt: str) -> None:
    if not path.is_dir():
        raise CorpusError(f"the {fmt} format needs a folder, not a file", path)


def _need_file(folder: Path, name: str) -> Path:
    p = folder / name
    if not p.is_file():
        raise CorpusError("no such file", p)
    return p
