"""At most N hits per document (``max_per_doc``): the operator that keeps neighbouring chunks of
one document from crowding a ranking.

A folder of documents is indexed as overlapping chunks, each with metadata ``doc_id`` (its
document) and ``chunk``; a question about one page then ranks several of that page's chunks
first and pushes a second page out of the top k. :class:`Crowding` keeps, in ranking order, the
first ``max_per_doc`` hits of each document and skips the rest; :meth:`Retriever.search_batch`
asks the method for a deeper ranking until ``k`` hits are kept (the same over-fetch as a metadata
filter), so a search still answers ``k`` hits when the corpus has enough documents.

A passage without ``doc_id`` is its own document. When a search does not say
(``max_per_doc=None``), an index of documents (:attr:`Documents.chunked`: some document has
several passages) gets :data:`DEFAULT_MAX_PER_DOC` (1: the best passage of each document),
measured on chunked SciFact (``benchmarks/max_per_doc.py``, docs/notes/documents-filters.md,
"Hits per document"), raised where the documents are too few for ``k`` hits; a passage corpus (the
multi-hop sets, BEIR abstracts) gets no limit, so its rankings are unchanged.
``max_per_doc=0`` is no limit; a given limit is kept even when it leaves fewer than ``k`` hits.

Which passage belongs to which document is read from the corpus once per corpus object (an
index generation) and kept while it lives: an index's ``passages.jsonl`` is scanned as bytes for
``"doc_id"`` and only the lines holding it are parsed, so a passage corpus pays one read of its
file; an updated corpus (:class:`~hopgraph.corpus.view.ViewCorpus`) reuses its base's reading
and reads only the passages added since.
"""

from __future__ import annotations

import json
import threading
import weakref
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import orjson

from hopgraph.corpus import Corpus
from hopgraph.corpus.filecorpus import FileCorpus
from hopgraph.corpus.view import ViewCorpus
from hopgraph.errors import ConfigError
from hopgraph.retrieve.ranking import Ranking

DOC_KEY = "doc_id"
"""The metadata field naming a passage's document."""

DEFAULT_MAX_PER_DOC = 1
"""``max_per_doc`` of a search that gives none, on an index of documents (see the module):
raised where the documents are too few for ``k`` hits (:meth:`Crowding.filling`)."""

_NEEDLE = b'"doc_id"'
_BLOCK = 4096


def check_max_per_doc(value: Any) -> int | None:
    """``value`` if it is None or a whole number >= 0, else a :class:`ConfigError` saying so."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ConfigError(f"max_per_doc must be a whole number >= 0 (0: no limit), got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Documents:
    """The document of every row of a corpus: ``group[row]`` numbers it (passages without
    ``doc_id`` each get their own), ``sizes[g]`` counts document ``g``'s passages."""

    group: np.ndarray
    sizes: np.ndarray
    named: int
    """How many documents come from a ``doc_id`` (the others are lone passages)."""

    @property
    def largest(self) -> int:
        return int(self.sizes.max()) if len(self.sizes) else 0

    @property
    def chunked(self) -> bool:
        """Whether the corpus holds documents cut into several passages (an index of a folder
        of documents, or of a chunked corpus), the case the default limit is for."""
        return self.largest > 1

    def capacity(self, cap: int, allowed: np.ndarray | None = None) -> int:
        """How many passages (of the ``allowed`` rows) a ranking with ``cap`` per document can
        hold at most."""
        group = self.group if allowed is None else self.group[allowed]
        counts = np.bincount(group, minlength=len(self.sizes))
        return int(np.minimum(counts, cap).sum())


@dataclass(frozen=True)
class Crowding:
    """A search's per-document limit: ``cap`` hits per document of ``docs``; ``given``: the
    caller's limit (else the default for an index of documents, ``raised_from`` its value when
    :meth:`filling` raised it)."""

    cap: int
    docs: Documents
    given: bool
    raised_from: int | None = None

    def filling(self, k: int, allowed: np.ndarray | None = None) -> Crowding:
        """The default limit raised, where the documents are too few, to the smallest that lets
        ``k`` hits (of the ``allowed`` rows) through, so a search that gave no limit still has
        ``k`` hits (a folder of three documents, k=10); a given limit is kept as it is."""
        if self.given or self.docs.capacity(self.cap, allowed) >= k:
            return self
        lo, hi = self.cap + 1, max(self.docs.largest, self.cap + 1)
        while lo < hi:  # capacity grows with the limit
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if self.docs.capacity(mid, allowed) >= k else (mid + 1, hi)
        return replace(self, cap=lo, raised_from=self.cap)

    def keep(self, rows: np.ndarray, eligible: np.ndarray | None = None) -> np.ndarray:
        """A boolean per ranked row: whether it is among the first ``cap`` of its document,
        counting only the ``eligible`` positions (those a filter keeps; all without one)."""
        return within_cap(self.docs.group[rows], self.cap, eligible)

    def apply(self, r: Ranking, k: int, eligible: np.ndarray | None = None) -> Ranking:
        """``r``'s first ``k`` hits with at most ``cap`` per document, in order; its info says
        the limit and how many hits ranked above the last one kept were skipped for it."""
        assert r.rows is not None  # every ranking is made by Retriever._ranking, with its rows
        keep = self.keep(r.rows, eligible)
        pos = np.flatnonzero(keep)[:k]
        end = int(pos[-1]) + 1 if len(pos) else 0
        crowded = ~keep[:end] if eligible is None else eligible[:end] & ~keep[:end]
        out = r.restricted(keep, k)
        out.info.update(self.info(int(crowded.sum())))
        return out

    def info(self, skipped: int) -> dict[str, Any]:
        """What a ranking's ``info`` says of the limit: ``max_per_doc``, where it came from
        (``max_per_doc_from``) and the hits skipped for it (``crowded_out``)."""
        if self.given:
            source = "given"
        else:
            source = (
                f"default for an index of documents ({self.docs.named} documents cut into "
                "passages); max_per_doc=0 turns it off"
            )
            if self.raised_from is not None:
                source += f"; raised from {self.raised_from} so that the search has k hits"
        return {"max_per_doc": self.cap, "max_per_doc_from": source, "crowded_out": skipped}


def within_cap(group: np.ndarray, cap: int, eligible: np.ndarray | None = None) -> np.ndarray:
    """For a sequence of document numbers in ranking order, whether each position is among the
    first ``cap`` eligible positions of its document (an ineligible position is never kept)."""
    n = len(group)
    pos = np.arange(n) if eligible is None else np.flatnonzero(eligible)
    g = group[pos]
    order = np.argsort(g, kind="stable")  # each document's positions, in ranking order
    sg = g[order]
    starts = np.ones(len(sg), bool)
    starts[1:] = sg[1:] != sg[:-1]
    idx = np.arange(len(sg))
    first = np.maximum.accumulate(np.where(starts, idx, 0))
    nth = np.empty(len(sg), np.int64)
    nth[order] = idx - first
    out = np.zeros(n, bool)
    out[pos[nth < cap]] = True
    return out


def crowding_for(corpus: Corpus, max_per_doc: int | None) -> Crowding | None:
    """The limit a search with ``max_per_doc`` has on ``corpus`` (before :meth:`Crowding.filling`):
    None when there is none: 0, a corpus without documents, or None on a corpus whose documents
    are not cut into several passages."""
    if max_per_doc == 0:
        return None
    docs = documents_of(corpus)
    if docs is None:  # every passage is its own document: nothing to limit
        return None
    if max_per_doc is None:
        return Crowding(DEFAULT_MAX_PER_DOC, docs, given=False) if docs.chunked else None
    return Crowding(max_per_doc, docs, given=True)


# --------------------------------------------------------------------------- reading doc_id

_DOCS: weakref.WeakKeyDictionary[Any, Documents | None] = weakref.WeakKeyDictionary()
_KEYS: weakref.WeakKeyDictionary[Any, tuple[np.ndarray, dict[Any, int]] | None] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()


def documents_of(corpus: Corpus) -> Documents | None:
    """The documents of ``corpus``'s rows, or None when no passage has a ``doc_id`` (read once
    per corpus object, see the module)."""
    with _LOCK:
        if corpus in _DOCS:
            return _DOCS[corpus]
    docs = _documents(corpus)
    with _LOCK:
        _DOCS[corpus] = docs
    return docs


def _documents(corpus: Corpus) -> Documents | None:
    if isinstance(corpus, ViewCorpus):
        base = _named_groups(corpus.base)
        names = dict(base[1]) if base is not None else {}
        kept = base[0][corpus.rows] if base is not None else np.full(len(corpus.rows), -1)
        added = _groups_of([_doc_key(p.metadata) for p in corpus.added], names)
        group = np.concatenate([kept, added]).astype(np.int64)
    else:
        found = _named_groups(corpus)
        if found is None:
            return None
        group = found[0].copy()
    if not (group >= 0).any():
        return None
    named = group >= 0  # numbered again: a view may have lost every passage of a document
    used, renumbered = np.unique(group[named], return_inverse=True)
    group[named] = renumbered
    lone = ~named  # each its own document, numbered after the named ones
    group[lone] = len(used) + np.arange(int(lone.sum()))
    return Documents(group, np.bincount(group), len(used))


def _named_groups(corpus: Corpus) -> tuple[np.ndarray, dict[Any, int]] | None:
    """Per row the number of its ``doc_id`` (-1 without one) and the numbers by key; None when
    no passage has one. Kept per corpus (a base shared by the generations of an index)."""
    with _LOCK:
        if corpus in _KEYS:
            return _KEYS[corpus]
    names: dict[Any, int] = {}
    if isinstance(corpus, FileCorpus):
        keys = _file_keys(corpus)
    else:
        keys = [_doc_key(p.metadata) for p in corpus]
    group = _groups_of(keys, names)
    out = (group, names) if names else None
    with _LOCK:
        _KEYS[corpus] = out
    return out


def _file_keys(corpus: FileCorpus) -> list[Any]:
    """The ``doc_id`` keys of an index's passages file: a block of lines without the bytes
    ``"doc_id"`` has none (inside a text the quotes are escaped), only the others are parsed."""
    keys: list[Any] = []
    n = len(corpus)
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        block = corpus.lines(start, stop)
        if _NEEDLE not in block:
            keys.extend([None] * (stop - start))
            continue
        for line in block.splitlines():
            if _NEEDLE in line:
                try:  # as FileCorpus reads a line: orjson, json for what it refuses (NaN)
                    d = orjson.loads(line)
                except orjson.JSONDecodeError:
                    d = json.loads(line)
                keys.append(_doc_key(d.get("metadata")))
            else:
                keys.append(None)
    return keys


def _doc_key(metadata: Any) -> Any:
    """A hashable key for a passage's ``doc_id`` (None: it has none, or an unusable one)."""
    if not isinstance(metadata, dict):
        return None
    value = metadata.get(DOC_KEY)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return ("json", json.dumps(value))
    return None


def _groups_of(keys: list[Any], names: dict[Any, int]) -> np.ndarray:
    """The number of each key in ``names`` (new keys added to it), -1 for None."""
    out = np.empty(len(keys), np.int64)
    for i, key in enumerate(keys):
        if key is None:
            out[i] = -1
        else:
            out[i] = names.setdefault(key, len(names))
    return out
