"""The ``links`` part: GraphER's enrichment fields for structural and contextual proximity.

Computed one passage at a time (linear in the corpus), and plain metadata in the end: each
passage's outgoing links (passage rows) and its document id and chunk number. Conceptual
proximity (shared named entities) comes from the ``entities`` part.

* **Structural**: links given with the data (``metadata["links"]``: hyperlinks, foreign keys),
  and, for Wikipedia-like corpora, a mention of another passage's title (the mention found by
  the regex NER and normalised like SPRIG-EL's title aliases).
* **Contextual**: ``metadata["doc_id"]`` and ``metadata["chunk"]``; adjacent chunks of one
  document are neighbours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from hopgraph.config import option, positive
from hopgraph.corpus import Corpus
from hopgraph.errors import CorpusError, NotUpdatableError
from hopgraph.index.aliases import title_alias_map
from hopgraph.index.npy import save_array
from hopgraph.index.part import Change, IndexPart, stack_records
from hopgraph.text.ner import make_extractor, normalize_entity, strip_disambiguator


@dataclass(frozen=True)
class LinkOptions:
    metadata_links: bool = option(True, "use each passage's metadata 'links' (passage ids)")
    title_mentions: bool = option(
        True, "link a passage to the passages whose title it mentions (Wikipedia-like corpora)"
    )
    normalize: str = option("simple", "normalisation of titles and mentions", ("simple", "lower"))
    min_title_len: int = option(3, "titles shorter than this (characters) are not matched")

    def validate(self) -> None:
        positive("min_title_len", self.min_title_len)


class LinksPart(IndexPart):
    name = "links"
    Options = LinkOptions

    def __init__(
        self, options: LinkOptions, links: sp.csr_matrix, doc: np.ndarray, chunk: np.ndarray
    ):
        super().__init__(options)
        self.links = links  # links[i, j] = 1: passage i points to passage j (directed)
        self.doc = doc  # document code per passage (-1: not a chunk of a known document)
        self.chunk = chunk  # chunk number within its document (-1 when unknown)
        # each passage's normalised text mentions (title_mentions; for live updates)
        self.raw: sp.csr_matrix | None = None
        self.raw_keys: list[str] = []

    @classmethod
    def build(cls, corpus: Corpus, options: LinkOptions, *, progress: bool = True) -> LinksPart:
        raw, keys = _mention_keys(corpus, options, progress)
        return cls.assemble(corpus, options, raw, keys)

    @classmethod
    def assemble(
        cls, corpus: Corpus, options: LinkOptions, raw: sp.csr_matrix | None, keys: list[str]
    ) -> LinksPart:
        """The part from the corpus and each passage's normalised mentions (``raw[d, j]`` = 1:
        passage d mentions ``keys[j]``; None without ``title_mentions``). Which mention is a
        title depends on the whole corpus, so this runs on every build and update."""
        o = options
        n = len(corpus)
        src: list[int] = []
        dst: list[int] = []
        if o.metadata_links:
            for i, p in enumerate(corpus):
                targets = p.metadata.get("links") or []
                if not isinstance(targets, list):
                    raise CorpusError(f"passage {p.id!r}: metadata 'links' must be a list")
                for t in targets:
                    j = corpus._pos.get(str(t))  # links may name unknown pages: skip those
                    if j is not None and j != i:
                        src.append(i)
                        dst.append(j)
        if o.title_mentions and raw is not None:
            s, d = _title_mentions(corpus, o, raw, keys)
            src.extend(s)
            dst.extend(d)
        links = sp.csr_matrix(
            (np.ones(len(src), np.float32), (np.asarray(src, np.int64), np.asarray(dst, np.int64))),
            shape=(n, n),
        )
        links.sum_duplicates()
        links.data[:] = 1.0
        links.sort_indices()
        doc, chunk = _doc_chunks(corpus)
        part = cls(o, links, doc, chunk)
        part.raw, part.raw_keys = raw, keys
        return part

    def update(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> LinksPart:
        """Mentions are found in the added passages only; links (to and from every passage)
        are recomputed from the stored mentions, titles and metadata."""
        o = self.options
        if not o.title_mentions:
            return type(self).assemble(change.new, o, None, [])
        if self.raw is None:
            raise NotUpdatableError(
                "this links part was built before live updates were supported (it lacks the "
                "per-passage mentions); rebuild the index to update it"
            )
        added = Corpus(change.added_passages)
        new, keys = _mention_keys(added, o, progress, list(self.raw_keys))
        raw, keys = stack_records(self.raw, change.keep, new, keys)
        return type(self).assemble(change.new, o, raw, keys)

    def save(self, folder: Path) -> None:
        save_array(folder / "links.indptr.npy", self.links.indptr)
        save_array(folder / "links.indices.npy", self.links.indices)
        save_array(folder / "doc.npy", self.doc)
        save_array(folder / "chunk.npy", self.chunk)
        if self.raw is not None:
            (folder / "raw_keys.json").write_text(json.dumps(self.raw_keys, ensure_ascii=False))
            save_array(folder / "raw.indptr.npy", self.raw.indptr)
            save_array(folder / "raw.indices.npy", self.raw.indices)

    @classmethod
    def load(cls, folder: Path, options: LinkOptions, *, mmap: bool = True) -> LinksPart:
        mode = "r" if mmap else None
        indptr = np.load(folder / "links.indptr.npy", mmap_mode=mode)
        indices = np.load(folder / "links.indices.npy", mmap_mode=mode)
        n = len(indptr) - 1
        links = sp.csr_matrix((np.ones(len(indices), np.float32), indices, indptr), shape=(n, n))
        doc = np.load(folder / "doc.npy", mmap_mode=mode)
        chunk = np.load(folder / "chunk.npy", mmap_mode=mode)
        part = cls(options, links, doc, chunk)
        if (folder / "raw_keys.json").exists():  # the per-passage mentions (live updates)
            part.raw_keys = json.loads((folder / "raw_keys.json").read_text())
            ri = np.load(folder / "raw.indices.npy")
            part.raw = sp.csr_matrix(
                (np.ones(len(ri), np.float32), ri, np.load(folder / "raw.indptr.npy")),
                shape=(n, len(part.raw_keys)),
            )
        return part

    def stats(self) -> dict[str, Any]:
        return {
            "links": int(self.links.nnz),
            "passages_with_links": int(np.count_nonzero(np.diff(self.links.indptr))),
            "chunked_passages": int(np.count_nonzero(self.doc >= 0)),
        }

    # -- enrichment fields and candidate graphs -------------------------------------------
    def fields(self, row: int, corpus: Corpus) -> dict[str, Any]:
        """The enrichment of passage ``row`` as plain metadata (what a vector store would hold)."""
        lo, hi = self.links.indptr[row], self.links.indptr[row + 1]
        out: dict[str, Any] = {"links": [corpus[int(j)].id for j in self.links.indices[lo:hi]]}
        if self.doc[row] >= 0:
            out.update(doc=int(self.doc[row]), chunk=int(self.chunk[row]))
        return out

    def structural(self, rows: np.ndarray) -> np.ndarray:
        """Dense 0/1 adjacency among ``rows``: a link in either direction."""
        sub = self.links[rows][:, rows].toarray()
        return np.maximum(sub, sub.T)

    def contextual(self, rows: np.ndarray) -> np.ndarray:
        """Dense 0/1 adjacency among ``rows``: adjacent chunks of the same document."""
        doc = np.asarray(self.doc)[rows]
        chunk = np.asarray(self.chunk)[rows]
        same = (doc[:, None] == doc[None, :]) & (doc[:, None] >= 0)
        return (same & (np.abs(chunk[:, None] - chunk[None, :]) == 1)).astype(np.float32)


def _mention_keys(
    corpus: Corpus, o: LinkOptions, progress: bool, keys: list[str] | None = None
) -> tuple[sp.csr_matrix | None, list[str]]:
    """Each passage's text mentions (regex NER), normalised: a 0/1 passages × keys matrix and
    the keys (``keys`` extended). None when the part does not use title mentions."""
    if not o.title_mentions:
        return None, []
    keys = list(keys or [])
    ids = {k: i for i, k in enumerate(keys)}
    rows: list[int] = []
    cols: list[int] = []
    raw = make_extractor("regex").extract([p.text for p in corpus], progress=progress)
    for i, mentions in enumerate(raw):
        found = {ids.setdefault(normalize_entity(m, o.normalize), len(ids)) for m in mentions}
        rows.extend([i] * len(found))
        cols.extend(sorted(found))
    keys.extend(list(ids)[len(keys) :])
    m = sp.csr_matrix(
        (np.ones(len(rows), np.float32), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
        shape=(len(corpus), len(keys)),
    )
    return m, keys


def _title_mentions(
    corpus: Corpus, o: LinkOptions, raw: sp.csr_matrix, keys: list[str]
) -> tuple[list[int], list[int]]:
    """(source, target) rows: the source passage mentions the target's title."""
    aliases = title_alias_map(corpus, o.normalize)
    owners: dict[str, list[int]] = {}
    for j, p in enumerate(corpus):
        if p.title:
            alias = aliases.get(normalize_entity(strip_disambiguator(p.title), o.normalize))
            if alias and len(alias) >= o.min_title_len:
                owners.setdefault(alias, []).append(j)
    if not owners:
        return [], []
    targets = [owners.get(aliases.get(k, k), []) for k in keys]
    src: list[int] = []
    dst: list[int] = []
    for i in range(raw.shape[0]):
        seen: set[int] = set()
        for c in raw.indices[raw.indptr[i] : raw.indptr[i + 1]].tolist():
            for j in targets[c]:
                if j != i and j not in seen:
                    seen.add(j)
                    src.append(i)
                    dst.append(j)
    return src, dst


def _doc_chunks(corpus: Corpus) -> tuple[np.ndarray, np.ndarray]:
    codes: dict[str, int] = {}
    doc = np.full(len(corpus), -1, np.int32)
    chunk = np.full(len(corpus), -1, np.int32)
    for i, p in enumerate(corpus):
        d, c = p.metadata.get("doc_id"), p.metadata.get("chunk")
        if d is None or c is None:
            continue
        try:
            chunk[i] = int(c)
        except (TypeError, ValueError):
            raise CorpusError(f"passage {p.id!r}: metadata 'chunk' must be an integer") from None
        doc[i] = codes.setdefault(json.dumps(d), len(codes))
    return doc, chunk
