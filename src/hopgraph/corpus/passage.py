"""The units of retrieval and evaluation: passages, corpora, questions, datasets."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hopgraph.errors import CorpusError


@dataclass(frozen=True)
class Passage:
    """One retrievable unit.

    ``metadata`` holds optional structure: ``doc_id`` and ``chunk`` for chunked documents,
    ``links`` (list of passage ids this one points to), and anything a loader keeps.
    """

    id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def content(self) -> str:
        """Title and text as one string: what the retrievers index."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "title": self.title, "text": self.text}
        if self.metadata:
            d["metadata"] = self.metadata
        return d


def positions_of(ids: Sequence[str], source: object | None = None) -> dict[str, int]:
    """Row of each id; CorpusError names the first id that occurs twice. Built by ``dict(zip)``
    in C, not a Python loop (a million ids: ~0.37 s against ~0.48 s here; an update at 1M
    passages makes two of these maps)."""
    pos = dict(zip(ids, range(len(ids)), strict=True))
    if len(pos) != len(ids):
        seen: set[str] = set()
        for pid in ids:
            if pid in seen:
                raise CorpusError(f"duplicate passage id {pid!r}", source)
            seen.add(pid)
    return pos


class Corpus(Sequence[Passage]):
    """Ordered passages with unique ids. Row ``i`` of every index part is passage ``i``."""

    def __init__(self, passages: Iterable[Passage], source: object | None = None):
        self._passages: list[Passage] = list(passages)
        self._pos: dict[str, int] = {}
        for i, p in enumerate(self._passages):
            if p.id in self._pos:
                raise CorpusError(f"duplicate passage id {p.id!r}", source)
            if not p.text.strip():
                raise CorpusError(f"passage {p.id!r} has empty text", source)
            self._pos[p.id] = i
        self.source = source

    def __len__(self) -> int:
        return len(self._passages)

    def __getitem__(self, i):  # type: ignore[override]
        return self._passages[i]

    def __iter__(self) -> Iterator[Passage]:
        return iter(self._passages)

    def __contains__(self, pid: object) -> bool:
        return pid in self._pos

    def position(self, pid: str) -> int:
        """Row of passage ``pid``; KeyError names the id when unknown."""
        try:
            return self._pos[pid]
        except KeyError:
            raise KeyError(f"unknown passage id {pid!r}") from None

    def get(self, pid: str) -> Passage:
        return self._passages[self.position(pid)]

    @property
    def ids(self) -> list[str]:
        return [p.id for p in self._passages]

    def texts(self, start: int, stop: int) -> list[str]:
        """The texts of rows ``start`` to ``stop`` (exclusive): what a scan of every text
        reads (a corpus on disk reads them without making passages)."""
        return [p.text for p in self[start:stop]]


@dataclass(frozen=True)
class Question:
    """A question with its gold supporting passages (ids into the corpus)."""

    id: str
    text: str
    gold: tuple[str, ...]
    answers: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Dataset:
    """A corpus plus questions with gold passages; ``skipped`` explains questions left out."""

    name: str
    corpus: Corpus
    questions: list[Question]
    skipped: dict[str, int] = field(default_factory=dict)

    def split_by(self, key: str) -> dict[str, Dataset]:
        """One dataset per value of ``metadata[key]``, holding the passages and the questions
        with that value: for tasks where each question searches only its own pool (the tables
        of its database in Spider and BIRD). Every passage and question must have the key, and
        a question's gold must lie in its own pool."""
        pools: dict[str, list[Passage]] = {}
        for p in self.corpus:
            if key not in p.metadata:
                raise CorpusError(f"passage {p.id!r} has no metadata {key!r} to split by")
            pools.setdefault(str(p.metadata[key]), []).append(p)
        asked: dict[str, list[Question]] = {}
        for q in self.questions:
            value = q.metadata.get(key)
            if value is None or str(value) not in pools:
                raise CorpusError(f"question {q.id!r}: no passages with {key}={value!r}")
            members = {p.id for p in pools[str(value)]}
            if not set(q.gold) <= members:
                raise CorpusError(f"question {q.id!r}: gold outside its pool {key}={value!r}")
            asked.setdefault(str(value), []).append(q)
        return {
            v: Dataset(f"{self.name}/{v}", Corpus(pools[v], self.corpus.source), qs)
            for v, qs in asked.items()
        }
