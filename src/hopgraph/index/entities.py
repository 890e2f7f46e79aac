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
        owns: sp.csr_matrix | None = None,
    ):
        super().__init__(options)
        self.names = names
        # owns[d, e] = 1 when entity e is the title alias of passage d (its "own page"; EL only)
        self.owns = owns
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
        own_rows: list[int] = []
        own_cols: list[int] = []
        keys: dict[str, int] = {}  # canonical entity → provisional column

        class Memo(dict):  # raw mention → provisional column (mentions repeat a lot)
            def __missing__(self, m: str) -> int:
                j = self[m] = keys.setdefault(canonical(m, o.normalize, aliases), len(keys))
                return j

        column = Memo().__getitem__
        rows: list[int] = []
        cols: list[int] = []
        for i, mentions in enumerate(raw):
            cols.extend(map(column, mentions))  # the loop runs in C
            rows.extend([i] * len(mentions))
            if aliases:
                own = aliases.get(
                    normalize_entity(strip_disambiguator(corpus[i].title), o.normalize)
                )
                if own:
                    rows.append(i)
                    cols.append(keys.setdefault(own, len(keys)))
                    own_rows.append(i)
                    own_cols.append(cols[-1])
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
        owns = None
        if aliases:
            owned = sp.csr_matrix(
                (np.ones(len(own_rows), np.float32), (own_rows, own_cols)), shape=(n, len(keys))
            )
            owns = sp.csr_matrix(owned[:, kept])
            owns.data[:] = 1.0
            owns.sort_indices()
        return cls(o, names, mentions, aliases, owns)

    def save(self, folder: Path) -> None:
        (folder / "entities.json").write_text(json.dumps(self.names, ensure_ascii=False))
        (folder / "aliases.json").write_text(json.dumps(self.aliases, ensure_ascii=False))
        np.save(folder / "mentions.indptr.npy", self.mentions.indptr)
        np.save(folder / "mentions.indices.npy", self.mentions.indices)
        np.save(folder / "mentions.data.npy", self.mentions.data)
        if self.owns is not None:
            np.save(folder / "owns.indptr.npy", self.owns.indptr)
            np.save(folder / "owns.indices.npy", self.owns.indices)

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
        owns = None
        if (folder / "owns.indptr.npy").exists():
            oi = np.load(folder / "owns.indices.npy")
            owns = sp.csr_matrix(
                (np.ones(len(oi), np.float32), oi, np.load(folder / "owns.indptr.npy")),
                shape=mentions.shape,
            )
        return cls(options, names, mentions, aliases, owns)

    def stats(self) -> dict[str, Any]:
        return {
            "entities": len(self.names),
            "mentions": int(self.mentions.nnz),
            "aliases": len(self.aliases),
            "df_p95": float(np.percentile(self.df, 95)) if len(self.df) else 0.0,
        }

    # -- querying -------------------------------------------------------------------------
    def query_entities(self, text: str, matcher: str = "ner") -> list[int]:
        """Ids of the entities mentioned in ``text``.

        ``ner``: the index's own NER, normalisation and aliases (SPRIG). ``ngram``: every span of
        1–6 words of the query, normalised the same way, looked up in the entity vocabulary,
        longest match first and without overlaps; it does not depend on capitalisation, so
        "Me And Bobby Mcgee" finds the alias of the passage titled "Me and Bobby McGee".
        """
        o = self.options
        if matcher == "ngram":
            return self._ngram_entities(text)
        out: list[int] = []
        for m in self.extractor.extract([text])[0]:
            j = self.ids.get(canonical(m, o.normalize, self.aliases))
            if j is not None and j not in out:
                out.append(j)
        return out

    def _ngram_entities(self, text: str, max_len: int = 6) -> list[int]:
        words = [w.strip(_EDGE_PUNCT) for w in text.split()]
        o, ids = self.options, self.ids
        found: list[tuple[int, int, int]] = []  # (start, end, entity)
        for n in range(min(max_len, len(words)), 0, -1):
            for i in range(len(words) - n + 1):
                span = words[i : i + n]
                if not span[0] or not span[-1]:
                    continue
                if n == 1 and (span[0].lower() in _STOP or not span[0][:1].isupper()):
                    continue  # one lowercase or function word is no entity reference
                j = ids.get(canonical(" ".join(span), o.normalize, self.aliases))
                if j is not None and all(e <= i or s >= i + n for s, e, _ in found):
                    found.append((i, i + n, j))
        out: list[int] = []
        for _, _, j in sorted(found):
            if j not in out:
                out.append(j)
        return out

    def passage_entities(self, row: int) -> np.ndarray:
        return self.mentions.indices[self.mentions.indptr[row] : self.mentions.indptr[row + 1]]

    def graph(
        self, hub_penalty: float, prune_top_pct: float, edge_cap: int, own_page_boost: float = 1.0
    ) -> BipartiteGraph:
        """The entity–passage transition graph for these settings (built once, then cached)."""
        key = (hub_penalty, prune_top_pct, edge_cap, own_page_boost)
        g = self._graphs.get(key)
        if g is None:
            g = self._graphs[key] = build_bipartite(
                self.mentions,
                hub_penalty=hub_penalty,
                prune_top_pct=prune_top_pct,
                edge_cap=edge_cap,
                own=self.owns if own_page_boost != 1.0 else None,
                own_boost=own_page_boost,
            )
        return g


_EDGE_PUNCT = "\"'“”‘’.,;:!?()[]{}"
_STOP = frozenset(
    "a an the and or of in on at to for from by with who what when where which why how whose "
    "is was are were be been did do does has have had that this these those it its his her their "
    "both same than film song".split()
)


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
