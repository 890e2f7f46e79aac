"""What a search asks the ``entities`` part: the entities a query mentions, a passage's entities,
and the entity–passage graph PPR walks (built per setting, then cached)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from hopgraph.graph.bipartite import BipartiteGraph, build_bipartite
from hopgraph.text.ner import EntityExtractor, normalize_entity


class EntityQueries:
    """The query side of :class:`~hopgraph.index.entities.EntityPart` (which sets these
    attributes when it is built or loaded)."""

    options: Any  # EntityOptions
    names: list[str]
    ids: dict[str, int]
    aliases: dict[str, str]
    mentions: sp.csr_matrix
    owns: sp.csr_matrix | None
    _graphs: dict[tuple, BipartiteGraph]
    extractor: EntityExtractor  # the part's NER (a property of EntityPart: loaded once)

    def query_entities(self, text: str, matcher: str = "ner") -> list[int]:
        """Ids of the entities mentioned in ``text``.

        ``ner``: the index's own NER, normalisation and aliases (SPRIG). ``ngram``: every span of
        1–6 words of the query, normalised the same way, looked up in the entity vocabulary,
        longest match first and without overlaps; it does not depend on capitalisation, so
        "Me And Bobby Mcgee" finds the alias of the passage titled "Me and Bobby McGee".
        """
        o = self.options
        if o.normalize == "letters":  # any script: names found without capitals, either way
            return self._found_entities(text)
        if matcher == "ngram":
            return self._ngram_entities(text)
        out: list[int] = []
        for m in self.extractor.extract([text])[0]:
            j = self.ids.get(canonical(m, o.normalize, self.aliases))
            if j is not None and j not in out:
                out.append(j)
        return out

    def _found_entities(self, text: str) -> list[int]:
        """The entities whose names or title aliases :class:`~hopgraph.index.name_finder.
        NameFinder` finds in ``text``, in order of appearance."""
        finder = getattr(self, "_names", None)
        if finder is None:
            from hopgraph.index.name_finder import NameFinder

            finder = self._names = NameFinder({*self.ids, *self.aliases})
        out: list[int] = []
        for key in finder.find(text):
            j = self.ids.get(self.aliases.get(key, key))
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
