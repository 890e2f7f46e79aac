"""The ``entities`` part: named-entity mentions per passage (SPRIG §3.2), optional title aliases.

Stored as the passages × entities count matrix (CSR arrays) and the entity names; graphs for
PPR are derived from it at query time (cheap, and cached per setting), so hub penalty, pruning
and edge caps can be varied without re-running NER.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from hopgraph.config import in_unit_interval, option, positive
from hopgraph.corpus import Corpus
from hopgraph.graph.bipartite import BipartiteGraph, build_bipartite
from hopgraph.index.part import IndexPart, register_part
from hopgraph.text.ner import EntityExtractor, make_extractor, normalize_entity, strip_disambiguator


@dataclass(frozen=True)
class EntityOptions:
    ner: str = option("regex", "NER backend: SPRIG's regex or spaCy", ("regex", "spacy"))
    spacy_model: str = option("en_core_web_sm", "spaCy pipeline (ner=spacy)")
    n_process: int = option(2, "spaCy worker processes while indexing")
    normalize: str = option("simple", "entity normalisation", ("none", "simple", "lower"))
    min_entity_len: int = option(2, "drop entities shorter than this (characters)")
    min_entity_df: int = option(1, "drop entities in fewer passages")
    max_entity_df_ratio: float = option(1.0, "drop entities in more than this share of passages")
    title_aliases: bool = option(
        False, "SPRIG-EL: link mentions to unambiguous passage-title aliases"
    )

    def validate(self) -> None:
        positive("n_process", self.n_process)
        positive("min_entity_df", self.min_entity_df)
        in_unit_interval("max_entity_df_ratio", self.max_entity_df_ratio)


@register_part
class EntityPart(IndexPart):
    name = "entities"
    Options = EntityOptions

    def __init__(
        self,
        options: EntityOptions,
        names: list[str],
        mentions: sp.csr_matrix,
        aliases: dict[str, str] | None = None,
    ):
        super().__init__(options)
        self.names = names
        self.ids = {n: i for i, n in enumerate(names)}
        self.mentions = mentions
        self.aliases = aliases or {}
        self.df = np.bincount(mentions.indices, minlength=len(names))
        self._extractor: EntityExtractor | None = None
        self._graphs: dict[tuple, BipartiteGraph] = {}

    @property
    def extractor(self) -> EntityExtractor:
        if self._extractor is None:
            o = self.options
            self._extractor = make_extractor(o.ner, spacy_model=o.spacy_model, n_process=1)
        return self._extractor

    # -- building -------------------------------------------------------------------------
    @classmethod
    def build(cls, corpus: Corpus, options: EntityOptions, *, progress: bool = True) -> EntityPart:
        o = options
        extractor = make_extractor(o.ner, spacy_model=o.spacy_model, n_process=o.n_process)
        raw = extractor.extract([p.content for p in corpus], progress=progress)
        aliases = title_alias_map(corpus, o.normalize) if o.title_aliases else {}
        keys: dict[str, int] = {}  # canonical entity → provisional column
        memo: dict[str, int] = {}  # raw mention → provisional column (mentions repeat a lot)
        rows: list[int] = []
        cols: list[int] = []
        for i, mentions in enumerate(raw):
            for m in mentions:
                j = memo.get(m)
                if j is None:
                    j = memo[m] = keys.setdefault(canonical(m, o.normalize, aliases), len(keys))
                rows.append(i)
                cols.append(j)
            if aliases:
                own = aliases.get(
                    normalize_entity(strip_disambiguator(corpus[i].title), o.normalize)
                )
                if own:
                    rows.append(i)
                    cols.append(keys.setdefault(own, len(keys)))
        n = len(corpus)
        counts = sp.csr_matrix(
            (
                np.ones(len(rows), np.float32),
                (np.asarray(rows, np.int64), np.asarray(cols, np.int64)),
            ),
            shape=(n, len(keys)),
        )
        counts.sum_duplicates()
        df = np.bincount(counts.indices, minlength=len(keys))
        names_all = list(keys)
        lengths = np.fromiter((len(e) for e in names_all), dtype=np.int64, count=len(names_all))
        ok = (lengths >= o.min_entity_len) & (df >= o.min_entity_df)
        ok &= df <= o.max_entity_df_ratio * n
        # columns sorted by name, so the same corpus always gives the same ids
        kept = sorted(np.flatnonzero(ok).tolist(), key=names_all.__getitem__)
        names = [names_all[j] for j in kept]
        mentions = sp.csr_matrix(counts[:, kept])
        mentions.sort_indices()
        return cls(o, names, mentions, aliases)

    def save(self, folder: Path) -> None:
        (folder / "entities.json").write_text(json.dumps(self.names, ensure_ascii=False))
        (folder / "aliases.json").write_text(json.dumps(self.aliases, ensure_ascii=False))
        np.save(folder / "mentions.indptr.npy", self.mentions.indptr)
        np.save(folder / "mentions.indices.npy", self.mentions.indices)
        np.save(folder / "mentions.data.npy", self.mentions.data)

    @classmethod
    def load(cls, folder: Path, options: EntityOptions, *, mmap: bool = True) -> EntityPart:
        mode = "r" if mmap else None
        names = json.loads((folder / "entities.json").read_text())
        aliases = json.loads((folder / "aliases.json").read_text())
        indptr = np.load(folder / "mentions.indptr.npy", mmap_mode=mode)
        mentions = sp.csr_matrix(
            (
                np.load(folder / "mentions.data.npy", mmap_mode=mode),
                np.load(folder / "mentions.indices.npy", mmap_mode=mode),
                indptr,
            ),
            shape=(len(indptr) - 1, len(names)),
        )
        return cls(options, names, mentions, aliases)

    def stats(self) -> dict[str, Any]:
        return {
            "entities": len(self.names),
            "mentions": int(self.mentions.nnz),
            "aliases": len(self.aliases),
            "df_p95": float(np.percentile(self.df, 95)) if len(self.df) else 0.0,
        }

    # -- querying -------------------------------------------------------------------------
    def query_entities(self, text: str) -> list[int]:
        """Ids of the entities mentioned in ``text`` (same NER, normalisation and aliases)."""
        o = self.options
        out: list[int] = []
        for m in self.extractor.extract([text])[0]:
            j = self.ids.get(canonical(m, o.normalize, self.aliases))
            if j is not None and j not in out:
                out.append(j)
        return out

    def passage_entities(self, row: int) -> np.ndarray:
        return self.mentions.indices[self.mentions.indptr[row] : self.mentions.indptr[row + 1]]

    def graph(self, hub_penalty: float, prune_top_pct: float, edge_cap: int) -> BipartiteGraph:
        """The entity–passage transition graph for these settings (built once, then cached)."""
        key = (hub_penalty, prune_top_pct, edge_cap)
        g = self._graphs.get(key)
        if g is None:
            g = self._graphs[key] = build_bipartite(
                self.mentions,
                hub_penalty=hub_penalty,
                prune_top_pct=prune_top_pct,
                edge_cap=edge_cap,
            )
        return g


def canonical(mention: str, mode: str, aliases: dict[str, str]) -> str:
    key = normalize_entity(mention, mode)
    return aliases.get(key, key)


def title_alias_map(corpus: Corpus, mode: str) -> dict[str, str]:
    """SPRIG-EL: alias → canonical entity, from passage titles only (no external knowledge).

    A title's alias is the title without its parenthetical disambiguator. An alias shared by
    titles of different things (``Velmora (river)``, ``Velmora (ship)``) is ambiguous and dropped.
    Both the alias and the full title map to the alias, so ``"Kiss and Tell (1945 film)"`` and a
    mention ``"Kiss and Tell"`` become one node.
    """
    owners: dict[str, set[str]] = {}
    for p in corpus:
        if p.title:
            alias = normalize_entity(strip_disambiguator(p.title), mode)
            owners.setdefault(alias, set()).add(p.title)
    out: dict[str, str] = {}
    for alias, titles in owners.items():
        if alias and len(titles) == 1:
            out[alias] = alias
            full = normalize_entity(next(iter(titles)), mode)
            out.setdefault(full, alias)
    return out
