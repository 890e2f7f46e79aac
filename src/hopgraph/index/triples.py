"""The ``triples`` part: (subject, predicate, object) triples per passage, GRIEVER's
``passages`` index fields ``triples``, ``subjects`` and ``objects`` (§A.1).

Triples come from an LLM-free extractor over spaCy's dependency parse (``extractor=spacy``, see
:mod:`hopgraph.text.triples`) or from a file of precomputed triples in HippoRAG's OpenIE format
(``extractor=openie``), so users with an LLM extractor can bring theirs.

Entities and predicates are interned: an entity is identified by its normalised form
(lowercase, accents folded, punctuation collapsed) and shown by its first surface form.
Stored arrays: the triples sorted by passage (``subject``, ``predicate``, ``object``, ``row``),
a passage → triples CSR pointer, and the entity → passages CSR (passages that name the entity
as a subject or object: the filter GRIEVER's later iterations use).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from hopgraph.config import option, positive
from hopgraph.corpus import Corpus
from hopgraph.errors import ConfigError, NotUpdatableError
from hopgraph.index.npy import save_array
from hopgraph.index.part import Change, IndexPart
from hopgraph.text.ner import normalize_entity

EXTRACTORS = ("spacy", "openie")


@dataclass(frozen=True)
class TripleOptions:
    extractor: str = option(
        "spacy",
        "spacy = dependency-parse patterns (no LLM); openie = a HippoRAG OpenIE JSON file",
        EXTRACTORS,
    )
    openie_file: str = option("", "extractor=openie: the OpenIE JSON, docs in corpus order")
    spacy_model: str = option("en_core_web_sm", "extractor=spacy: the spaCy pipeline")
    n_process: int = option(1, "extractor=spacy: worker processes")
    batch_size: int = option(64, "extractor=spacy: texts per spaCy batch")

    def validate(self) -> None:
        positive("n_process", self.n_process)
        positive("batch_size", self.batch_size)
        if self.extractor == "openie":
            if not self.openie_file:
                raise ConfigError("extractor=openie needs openie_file (the OpenIE JSON)")
            if not Path(self.openie_file).expanduser().is_file():
                raise ConfigError(f"openie_file {self.openie_file!r} is not a file")


def entity_key(name: str) -> str:
    """The identity of an entity or predicate string (case, accents, punctuation ignored)."""
    return normalize_entity(name, "simple")


class TriplesPart(IndexPart):
    name = "triples"
    Options = TripleOptions

    def __init__(
        self,
        options: TripleOptions,
        entities: list[str],
        predicates: list[str],
        triples: np.ndarray,
        info: dict[str, int],
    ):
        super().__init__(options)
        self.entities = entities  # surface form per entity id
        self.predicates = predicates
        self.triples = triples  # (n, 4) int32: subject, predicate, object, passage row
        self.info = info
        self._raw: list[list[tuple[str, str, str]]] | None = None
        self._raw_path: Path | None = None
        n_rows = int(info["passages"])
        rows = self.triples[:, 3]
        self.indptr = np.searchsorted(rows, np.arange(n_rows + 1)).astype(np.int64)
        self.entity_index = {entity_key(e): i for i, e in enumerate(entities)}
        # entity → passages naming it as subject or object (CSR, sorted, unique)
        ent = np.concatenate([self.triples[:, 0], self.triples[:, 2]])
        row = np.concatenate([rows, rows])
        m = sp.csr_matrix((np.ones(ent.size, np.int8), (ent, row)), shape=(len(entities), n_rows))
        m.sum_duplicates()
        m.sort_indices()
        self.entity_passages = m

    # -- building -------------------------------------------------------------------------
    @classmethod
    def build(cls, corpus: Corpus, options: TripleOptions, *, progress: bool = True) -> TriplesPart:
        texts = [p.text for p in corpus]
        titles = [p.title for p in corpus]
        malformed = 0
        if options.extractor == "openie":
            from hopgraph.text.triples import load_openie

            per_passage, malformed = load_openie(
                Path(options.openie_file).expanduser(), texts, titles
            )
        else:
            from hopgraph.text.triples import SpacyTripleExtractor

            extractor = SpacyTripleExtractor(
                options.spacy_model, n_process=options.n_process, batch_size=options.batch_size
            )
            per_passage = extractor.extract(texts, titles=titles, progress=progress)
        return cls.from_triples(options, per_passage, malformed=malformed)

    @classmethod
    def from_triples(
        cls,
        options: TripleOptions,
        per_passage: list[list[tuple[str, str, str]]],
        *,
        malformed: int = 0,
    ) -> TriplesPart:
        """Intern ``per_passage`` (one list of (s, p, o) strings per passage row).

        The extractor's output is kept as it is (``raw_triples.json``): interning, surface
        forms and ids depend on the whole corpus, so live updates re-run this on the kept
        passages' stored triples plus the added passages' new ones.
        """
        entities: list[str] = []
        ent_ids: dict[str, int] = {}
        predicates: list[str] = []
        pred_ids: dict[str, int] = {}

        def intern(name: str, table: list[str], ids: dict[str, int]) -> int | None:
            key = entity_key(name)
            if not key:
                return None
            i = ids.get(key)
            if i is None:
                i = ids[key] = len(table)
                table.append(" ".join(name.split()))
            return i

        out: list[tuple[int, int, int, int]] = []
        for row, triples in enumerate(per_passage):
            seen: set[tuple[int, int, int]] = set()
            for s, p, o in triples:
                si, pi, oi = (
                    intern(s, entities, ent_ids),
                    intern(p, predicates, pred_ids),
                    intern(o, entities, ent_ids),
                )
                if si is None or pi is None or oi is None or si == oi:
                    malformed += 1
                    continue
                if (si, pi, oi) not in seen:
                    seen.add((si, pi, oi))
                    out.append((si, pi, oi, row))
        arr = np.asarray(out, dtype=np.int32).reshape(-1, 4)
        info = {
            "passages": len(per_passage),
            "triples": int(arr.shape[0]),
            "entities": len(entities),
            "predicates": len(predicates),
            "skipped_triples": int(malformed),
        }
        part = cls(options, entities, predicates, arr, info)
        part._raw = [[tuple(t) for t in ts] for ts in per_passage]
        return part

    @property
    def raw(self) -> list[list[tuple[str, str, str]]]:
        """The extractor's triples of each passage (read from disk on first use)."""
        if self._raw is None:
            if self._raw_path is None or not self._raw_path.exists():
                raise NotUpdatableError(
                    "this triples part was built before live updates were supported (it lacks "
                    "raw_triples.json); rebuild the index to update it"
                )
            with open(self._raw_path, encoding="utf-8") as f:
                self._raw = [[tuple(t) for t in ts] for ts in json.load(f)]
        return self._raw

    def update(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> TriplesPart:
        """The parser runs on the added passages only; entities and predicates are interned
        again over every passage's stored triples (a deleted passage's names go with it)."""
        o = self.options
        if o.extractor == "openie":
            raise NotUpdatableError(
                "a triples part read from an OpenIE file (docs in corpus order) cannot be "
                "updated: the file has no triples for other passages; rebuild with a new file, "
                "or use extractor=spacy"
            )
        raw = self.raw
        added = change.added_passages
        new: list[list[tuple[str, str, str]]] = []
        if added:
            new = _extractor(o.spacy_model, o.batch_size).extract(
                [p.text for p in added], titles=[p.title for p in added], progress=progress
            )
        return type(self).from_triples(o, [raw[r] for r in change.keep.tolist()] + new)

    def save(self, folder: Path) -> None:
        save_array(folder / "triples.npy", self.triples)
        with open(folder / "raw_triples.json", "w", encoding="utf-8") as f:
            json.dump(self.raw, f, ensure_ascii=False)
        (folder / "vocab.json").write_text(
            json.dumps({"entities": self.entities, "predicates": self.predicates})
        )
        (folder / "info.json").write_text(json.dumps(self.info))

    @classmethod
    def load(cls, folder: Path, options: TripleOptions, *, mmap: bool = True) -> TriplesPart:
        vocab = json.loads((folder / "vocab.json").read_text())
        info = json.loads((folder / "info.json").read_text())
        triples = np.load(folder / "triples.npy")  # small, and indexed one triple at a time
        part = cls(options, vocab["entities"], vocab["predicates"], triples, info)
        part._raw_path = folder / "raw_triples.json"
        return part

    def stats(self) -> dict[str, Any]:
        return dict(self.info)

    # -- the passages index's fields --------------------------------------------------------
    def triples_of(self, rows: np.ndarray) -> np.ndarray:
        """Triple ids of passages ``rows``, in row order."""
        if len(rows) == 0:
            return np.zeros(0, np.int64)
        return np.concatenate([np.arange(self.indptr[r], self.indptr[r + 1]) for r in rows])

    def passages_naming(self, entity_ids: np.ndarray) -> np.ndarray:
        """Rows of passages with one of ``entity_ids`` among their subjects or objects."""
        if len(entity_ids) == 0:
            return np.zeros(0, np.int64)
        m = self.entity_passages
        return np.unique(
            np.concatenate([m.indices[m.indptr[e] : m.indptr[e + 1]] for e in entity_ids])
        ).astype(np.int64)

    def fields(self, row: int) -> dict[str, list]:
        """Passage ``row``'s triples, subjects and objects as strings (§A.1)."""
        t = self.triples[self.indptr[row] : self.indptr[row + 1]]
        e, p = self.entities, self.predicates
        return {
            "triples": [[e[s], p[q], e[o]] for s, q, o, _ in t.tolist()],
            "subjects": sorted({e[s] for s in t[:, 0].tolist()}),
            "objects": sorted({e[o] for o in t[:, 2].tolist()}),
        }


_EXTRACTORS: dict[tuple[str, int], Any] = {}
_EXTRACTORS_LOCK = threading.Lock()


def _extractor(model: str, batch_size: int) -> Any:
    """The spaCy triple extractor for updates, loaded once per process (a load takes ~1 s)."""
    from hopgraph.text.triples import SpacyTripleExtractor

    with _EXTRACTORS_LOCK:
        key = (model, batch_size)
        if key not in _EXTRACTORS:
            _EXTRACTORS[key] = SpacyTripleExtractor(model, n_process=1, batch_size=batch_size)
        return _EXTRACTORS[key]
