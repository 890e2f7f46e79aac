"""The ``partial_triples`` part: GRIEVER's partial-triples index (§4.2.4, §A.1), built from the
``triples`` part.

A triple (s, p, o) gives two partial triples: (s, p) with complement o, and the inverse (p, o)
with complement s. Each distinct partial (entity, predicate, inverse) is a document whose
content is ``"s p"`` or ``"p o"``, searchable by BM25 and by its embedding; its passage ids and
complements are those of the triples it came from (derived, not stored twice), and ``freq`` is
the number of triples sharing it (the inverse partial-triple frequency of equation (1)).

The part also embeds the entity and predicate vocabularies once, for the n-gram entity matcher
(§4.3), so no triple is encoded at query time. ``full_triples=true`` also indexes whole triples
``"s p o"`` (the paper's *full_triples* ablation).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.config import option, positive
from hopgraph.corpus import Corpus
from hopgraph.errors import ConfigError
from hopgraph.index.npy import save_array
from hopgraph.index.part import Change, IndexPart
from hopgraph.index.sparse import SparseOptions, SparsePart
from hopgraph.index.triples import TriplesPart
from hopgraph.models.embedder import BACKENDS, DEFAULT_BACKEND, DEFAULT_EMBEDDER, load_embedder


@dataclass(frozen=True)
class StringEncoderOptions:
    """How short strings (entities, predicates, partial triples, aliases) are embedded."""

    model: str = option(DEFAULT_EMBEDDER, "sentence-transformers model: name or local folder")
    backend: str = option(DEFAULT_BACKEND, "encoder runtime: onnx or torch", BACKENDS)
    max_seq_length: int = option(64, "encoder truncation length in tokens")
    batch_size: int = option(256, "strings per encoder batch")

    def validate(self) -> None:
        positive("max_seq_length", self.max_seq_length)
        positive("batch_size", self.batch_size)

    def encode(self, texts: list[str], progress: bool) -> np.ndarray:
        emb = load_embedder(self.model, max_seq_length=self.max_seq_length, backend=self.backend)
        return emb.encode(texts, batch_size=self.batch_size, progress=progress)


@dataclass(frozen=True)
class PartialTripleOptions(StringEncoderOptions):
    full_triples: bool = option(False, "also index whole triples (the full_triples ablation)")


_SMALL = ("key", "of_triple", "freq")


def partial_texts(key: np.ndarray, ents: list[str], preds: list[str]) -> list[str]:
    """The content of each partial (entity, predicate, inverse): "s p" or "p o"."""
    return [
        f"{preds[p]} {ents[e]}" if inv_ else f"{ents[e]} {preds[p]}"
        for e, p, inv_ in np.asarray(key).tolist()
    ]


def full_texts(triples: np.ndarray, tp: TriplesPart) -> list[str]:
    ents, preds = tp.entities, tp.predicates
    return [f"{ents[s]} {preds[p]} {ents[o]}" for s, p, o, _ in np.asarray(triples).tolist()]


def encode_reusing(
    options: StringEncoderOptions,
    strings: list[str],
    old_strings: list[str],
    old_vectors: np.ndarray | None,
    progress: bool,
) -> np.ndarray:
    """Embeddings of ``strings``: copied from ``old_vectors`` (row i embeds ``old_strings[i]``)
    where the string was embedded before, the rest encoded in one pass."""
    known = {s: i for i, s in enumerate(old_strings)} if old_vectors is not None else {}
    fresh = sorted({s for s in strings if s not in known})
    if not fresh:
        rows = [known[s] for s in strings]
        if old_vectors is None:  # no strings at all: none, at the encoder's width
            return options.encode([], progress)
        return np.asarray(old_vectors[rows], dtype=np.float32)
    encoded = options.encode(fresh, progress)
    at = {s: i for i, s in enumerate(fresh)}
    out = np.empty((len(strings), encoded.shape[1]), np.float32)
    mine = [i for i, s in enumerate(strings) if s in at]
    out[mine] = encoded[[at[strings[i]] for i in mine]]
    reused = [i for i, s in enumerate(strings) if s not in at]
    if reused and old_vectors is not None:
        out[reused] = old_vectors[[known[strings[i]] for i in reused]]
    return out


def bm25_reusing(
    strings: list[str], old_strings: list[str], old: SparsePart | None, progress: bool
) -> SparsePart:
    """BM25 over ``strings``, tokenising only those ``old`` (over ``old_strings``) lacks."""
    if old is None:
        return SparsePart.from_texts(SparseOptions(), strings, progress=progress)
    known = {s: i for i, s in enumerate(old_strings)}
    return old.reassembled([known.get(s, s) for s in strings], progress=progress)


class PartialTriplesPart(IndexPart):
    name = "partial_triples"
    Options = PartialTripleOptions
    requires = ("triples",)

    def __init__(
        self,
        options: PartialTripleOptions,
        arrays: dict[str, np.ndarray],
        bm25: SparsePart,
        full_bm25: SparsePart | None,
    ):
        super().__init__(options)
        self.key = arrays["key"]  # (n, 3): entity, predicate, inverse (0/1)
        self.of_triple = arrays["of_triple"]  # (n_triples, 2): forward and inverse partial ids
        self.freq = arrays["freq"]  # triples sharing each partial
        self.vectors = arrays["vectors"]  # unit embedding of each partial's content
        self.entity_vectors = arrays["entity_vectors"]
        self.predicate_vectors = arrays["predicate_vectors"]
        self.full_vectors = arrays.get("full_vectors")
        self.bm25 = bm25
        self.full_bm25 = full_bm25

    @classmethod
    def build(cls, corpus: Corpus, options: Any, *, progress: bool = True) -> PartialTriplesPart:
        raise ConfigError("partial_triples is built from the triples part: use Index.add_parts")

    @classmethod
    def build_from(
        cls,
        corpus: Corpus,
        options: PartialTripleOptions,
        parts: dict[str, IndexPart],
        *,
        progress: bool = True,
    ) -> PartialTriplesPart:
        return cls._assemble(options, parts["triples"], None, None, progress)  # type: ignore[arg-type]

    def update(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> PartialTriplesPart:
        """Partials, frequencies and ids are recomputed from the updated triples (cheap); only
        strings this part has not embedded before go through the encoder, and only new partial
        texts are tokenised."""
        return type(self)._assemble(
            self.options,
            parts["triples"],
            self,
            old_parts["triples"],
            progress,  # type: ignore[arg-type]
        )

    @classmethod
    def _assemble(
        cls,
        options: PartialTripleOptions,
        tp: TriplesPart,
        old: PartialTriplesPart | None,
        old_tp: TriplesPart | None,
        progress: bool,
    ) -> PartialTriplesPart:
        """The part for the triples ``tp``, reusing the vectors and BM25 rows of ``old`` (built
        on ``old_tp``) for strings both have: the same result as building it anew."""
        t = np.asarray(tp.triples, np.int32).reshape(-1, 4)  # none: an empty part
        fwd = np.stack([t[:, 0], t[:, 1], np.zeros(len(t), np.int32)], axis=1)
        inv = np.stack([t[:, 2], t[:, 1], np.ones(len(t), np.int32)], axis=1)
        key, inverse = np.unique(np.concatenate([fwd, inv]), axis=0, return_inverse=True)
        inverse = inverse.ravel()
        of_triple = np.stack([inverse[: len(t)], inverse[len(t) :]], axis=1).astype(np.int32)
        freq = np.bincount(inverse, minlength=len(key)).astype(np.int32)
        ents, preds = tp.entities, tp.predicates
        texts = partial_texts(key, ents, preds)
        # the strings the old part embedded and indexed, row for row
        before: dict[str, list[str]] = {}
        if old is not None and old_tp is not None:
            before["partials"] = partial_texts(old.key, old_tp.entities, old_tp.predicates)
            before["entities"], before["predicates"] = old_tp.entities, old_tp.predicates
            if options.full_triples:
                before["full"] = full_texts(np.asarray(old_tp.triples), old_tp)

        def vectors(what: str, strings: list[str], old_vectors: str) -> np.ndarray:
            prev = None if old is None else getattr(old, old_vectors)
            return encode_reusing(options, strings, before.get(what, []), prev, progress)

        def bm25(what: str, strings: list[str], old_bm25: str) -> SparsePart:
            prev = None if old is None else getattr(old, old_bm25)
            return bm25_reusing(strings, before.get(what, []), prev, progress)

        arrays = {
            "key": key.astype(np.int32),
            "of_triple": of_triple,
            "freq": freq,
            "vectors": vectors("partials", texts, "vectors"),
            "entity_vectors": vectors("entities", list(ents), "entity_vectors"),
            "predicate_vectors": vectors("predicates", list(preds), "predicate_vectors"),
        }
        full_bm25 = None
        if options.full_triples:
            full = full_texts(t, tp)
            arrays["full_vectors"] = vectors("full", full, "full_vectors")
            full_bm25 = bm25("full", full, "full_bm25")
        return cls(options, arrays, bm25("partials", texts, "bm25"), full_bm25)

    _ARRAYS = ("key", "of_triple", "freq", "vectors", "entity_vectors", "predicate_vectors")

    def save(self, folder: Path) -> None:
        for name in self._ARRAYS:
            save_array(folder / f"{name}.npy", getattr(self, name))
        (folder / "bm25").mkdir()
        self.bm25.save(folder / "bm25")
        if self.full_vectors is not None and self.full_bm25 is not None:
            save_array(folder / "full_vectors.npy", self.full_vectors)
            (folder / "full_bm25").mkdir()
            self.full_bm25.save(folder / "full_bm25")

    @classmethod
    def load(
        cls, folder: Path, options: PartialTripleOptions, *, mmap: bool = True
    ) -> PartialTriplesPart:
        mode = "r" if mmap else None
        # the small integer arrays in memory (indexed per query), the vectors memory-mapped
        arrays = {
            n: np.load(folder / f"{n}.npy", mmap_mode=None if n in _SMALL else mode)
            for n in cls._ARRAYS
        }
        bm25 = SparsePart.load(folder / "bm25", SparseOptions(), mmap=mmap)
        full_bm25 = None
        if options.full_triples:
            arrays["full_vectors"] = np.load(folder / "full_vectors.npy", mmap_mode=mode)
            full_bm25 = SparsePart.load(folder / "full_bm25", SparseOptions(), mmap=mmap)
        return cls(options, arrays, bm25, full_bm25)

    def stats(self) -> dict[str, Any]:
        return {
            "partial_triples": int(self.key.shape[0]),
            "dim": int(self.vectors.shape[1]),
            "full_triples": self.full_vectors is not None,
        }
