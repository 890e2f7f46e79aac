"""A corpus read from its JSONL file on demand, for corpora too large to hold as objects.

A million :class:`Passage` objects take about 2.8 GB of memory; the same passages as a
``passages.jsonl`` file with a table of line offsets take the file (left to the page cache) and
8 bytes a passage, plus the id → row table. Iterating streams the file; ``corpus[i]`` reads one
line (``os.pread``: no shared file position, so threads may read at once). The file is opened
once, when the corpus is made: if the file is replaced later, this corpus goes on reading the
one it opened.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import orjson

from hopgraph.corpus.passage import Corpus, Passage, positions_of
from hopgraph.errors import CorpusError


def passage_line(p: Passage) -> bytes:
    """One passage as a line of an index's ``passages.jsonl``."""
    return (json.dumps(p.to_dict(), ensure_ascii=False) + "\n").encode("utf-8")


def _line_dict(line: bytes | str) -> dict:
    try:  # orjson parses these lines ~3x faster; what it refuses (NaN in metadata) json reads
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def passage_from_line(line: bytes | str) -> Passage:
    d = _line_dict(line)
    return Passage(d["id"], d["title"], d["text"], d.get("metadata") or {})


def write_passages(passages: Iterable[Passage], path: Path) -> tuple[np.ndarray, list[str]]:
    """Write ``passages`` as JSONL to ``path``; returns the byte offset of each line (and the
    end of the file, so ``len(passages) + 1`` values) and the ids, in order."""
    offsets = [0]
    ids: list[str] = []
    with open(path, "wb") as f:
        for p in passages:
            offsets.append(offsets[-1] + f.write(passage_line(p)))
            ids.append(p.id)
    return np.asarray(offsets, dtype=np.int64), ids


def line_offsets(path: Path) -> np.ndarray:
    """Byte offset of every line of ``path``, and the end of the file."""
    offsets = [0]
    with open(path, "rb") as f:
        for line in f:
            offsets.append(offsets[-1] + len(line))
    return np.asarray(offsets, dtype=np.int64)


class FileCorpus(Corpus):
    """The passages of a JSONL file written by :func:`write_passages`, read when asked.

    ``offsets``: the line offsets (as :func:`write_passages` returns them; read from the file
    when not given); ``ids``: the passage ids in order (read from the file when not given).
    Behaves as a :class:`Corpus` (ids are checked for duplicates) but holds no passage.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        offsets: np.ndarray | None = None,
        ids: list[str] | None = None,
        source: object | None = None,
    ):
        self.path = Path(path)
        self.source = source if source is not None else self.path.parent
        # opened now: a folder replaced later (a new generation of the index) leaves this
        # corpus reading the file it was opened on
        self._fd: int | None = os.open(self.path, os.O_RDONLY)
        # closed when the corpus is collected or at exit (a __del__ may run after os is gone)
        weakref.finalize(self, os.close, self._fd)
        self._offsets = line_offsets(self.path) if offsets is None else np.asarray(offsets)
        if ids is None:
            ids = [p.id for p in self]
        if len(ids) != len(self._offsets) - 1:
            raise CorpusError(f"{len(ids)} ids for {len(self._offsets) - 1} lines", self.path)
        self._pos = positions_of(ids, self.source)

    @property
    def offsets(self) -> np.ndarray:
        """Byte offset of each passage's line, and the end of the file."""
        return self._offsets

    def lines(self, start: int, stop: int) -> bytes:
        """The JSON lines of passages ``start`` to ``stop`` (exclusive), as stored."""
        return self._read(start, stop)

    def _read(self, start: int, stop: int) -> bytes:
        assert self._fd is not None
        lo, hi = int(self._offsets[start]), int(self._offsets[stop])
        return os.pread(self._fd, hi - lo, lo)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                return [self[j] for j in range(start, stop, step)]
            if start >= stop:
                return []
            return [passage_from_line(line) for line in self._read(start, stop).splitlines()]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"passage row {i} out of range ({n} passages)")
        return passage_from_line(self._read(i, i + 1))

    def texts(self, start: int, stop: int) -> list[str]:
        """The texts of rows ``start`` to ``stop``, parsed from their lines without making
        passages (a third of the time, for a scan of every text)."""
        start, stop, _ = slice(start, stop).indices(len(self))
        if start >= stop:
            return []
        return [_line_dict(line)["text"] for line in self._read(start, stop).splitlines()]

    def __iter__(self) -> Iterator[Passage]:
        step = 4096
        for start in range(0, len(self), step):
            yield from self[start : start + step]

    def get(self, pid: str) -> Passage:
        return self[self.position(pid)]

    @property
    def ids(self) -> list[str]:
        return list(self._pos)
