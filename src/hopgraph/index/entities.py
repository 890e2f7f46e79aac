"""The ``entities`` part: named-entity mentions per passage (SPRIG §3.2), optional title aliases.

Stored as the passages × entities count matrix (CSR arrays) and the entity names; graphs for
PPR are derived from it at query time (cheap, and cached per setting), so hub penalty, pruning
and edge caps can be varied without re-running NER.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import shutil
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import scipy.sparse as sp

from hopgraph.config import in_unit_interval, option, positive
from hopgraph.corpus import Corpus, Passage
from hopgraph.errors import NotUpdatableError
from hopgraph.graph.bipartite import BipartiteGraph, build_bipartite
from hopgraph.index.part import (
    Change,
    IndexPart,
    ReplayStep,
    load_records,
    merge_records,
    save_records,
    stack_records,
)
from hopgraph.index.word_postings import WordPostings, word_records
from hopgraph.text.ner import (
    EntityExtractor,
    fold_accents,
    fold_accents_many,
    make_extractor,
    normalize_entity,
    strip_disambiguator,
)


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
    alias_mentions: bool = option(
        False,
        "with title_aliases: also find every title alias of 2+ words in passage texts "
        "('Ermengarde of Tours', which the regex NER splits at 'of')",
    )

    def validate(self) -> None:
        positive("n_process", self.n_process)
        positive("min_entity_df", self.min_entity_df)
        in_unit_interval("max_entity_df_ratio", self.max_entity_df_ratio)


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
        # per-passage normalised mentions before aliasing and filtering (for live updates)
        self.raw: sp.csr_matrix | None = None
        self.raw_keys: list[str] | None = None
        # title aliases found in each passage's text (alias_mentions; for live updates)
        self.found: sp.csr_matrix | None = None
        self.found_keys: list[str] | None = None
        # which texts hold which words (uses_word_postings): an update finds the texts a new
        # alias can occur in without reading them all (hopgraph.index.word_postings)
        self.words: WordPostings | None = None
        # per passage: its title, the title's alias and the whole title normalised (title_aliases;
        # read from the part's folder when an update first needs them: ~70 MB of JSON at 1M)
        self._titles: list[tuple[str, str, str]] | None = None
        self._titles_file: Any = None  # the open titles.json (a later generation may replace it)

    @property
    def titles(self) -> list[tuple[str, str, str]] | None:
        if self._titles is None and self._titles_file is not None:
            self._titles_file.seek(0)
            # orjson: a third of json's time on the ~70 MB a million titles take
            self._titles = [tuple(t) for t in orjson.loads(self._titles_file.read())]
            self._titles_file.close()
            self._titles_file = None
        return self._titles

    @titles.setter
    def titles(self, value: list[tuple[str, str, str]] | None) -> None:
        self._titles, self._titles_file = value, None

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
        counts, keys = raw_mentions(raw, o.normalize)
        part = cls.assemble(corpus, o, counts, keys)
        if uses_word_postings(o):
            part.words = WordPostings.of_texts([p.text for p in corpus])
        return part

    segmentable = True

    @classmethod
    def segment_context(cls, corpus: Corpus, options: EntityOptions) -> Any:
        """The title aliases (from every title), which each batch looks for in its texts."""
        o = options
        if o.title_aliases and o.alias_mentions:
            return title_alias_map(corpus, o.normalize)
        return None

    @classmethod
    def write_segment(
        cls,
        passages: Corpus,
        options: EntityOptions,
        folder: Path,
        context: Any = None,
        *,
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        """The NER mentions of ``passages``, normalised (before aliasing and filtering), and
        the title aliases found in their texts (``context``: the aliases of the whole corpus)."""
        o = options
        extractor = make_extractor(o.ner, spacy_model=o.spacy_model, n_process=o.n_process)
        raw = extractor.extract([p.content for p in passages])
        counts, keys = raw_mentions(raw, o.normalize)
        save_records(folder, "raw", counts, keys)
        if context is not None:
            save_records(folder, "found", *alias_records(passages, context, o.normalize))
        if uses_word_postings(o):
            save_records(folder, "words", *word_records([p.text for p in passages]))

    @classmethod
    def from_segments(
        cls,
        corpus: Corpus,
        options: EntityOptions,
        folders: list[Path],
        parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> EntityPart:
        """Aliases, frequencies and filters over the merged mentions of all batches."""
        raw, keys = merge_records(load_records(f, "raw") for f in folders)
        found = None
        if options.title_aliases and options.alias_mentions:  # the segments hold alias hits
            found = merge_records(load_records(f, "found") for f in folders)
        part = cls.assemble(corpus, options, raw, keys, found=found)
        # segments written by a version without the postings (a resumed build) leave none
        if uses_word_postings(options) and all((f / "words.keys.json").exists() for f in folders):
            part.words = WordPostings.from_records(
                *merge_records(load_records(f, "words") for f in folders)
            )
        return part

    @classmethod
    def assemble(
        cls,
        corpus: Corpus,
        options: EntityOptions,
        raw: sp.csr_matrix,
        raw_keys: list[str],
        *,
        found: tuple[sp.csr_matrix, list[str]] | None = None,
        aliases: dict[str, str] | None = None,
        titles: list[tuple[str, str, str]] | None = None,
    ) -> EntityPart:
        """The part from each passage's normalised mentions (``raw[d, j]``: mentions of
        ``raw_keys[j]`` in passage d), before aliasing and filtering. ``found``: the title
        aliases in each passage's text (:func:`alias_records`; looked for here when not given).
        ``aliases``: :func:`title_alias_map` of ``corpus``, ``titles``: its
        :func:`title_keys`, when the caller has them already.

        Title aliases, own pages, document frequencies and the filters depend on the whole
        corpus, so they are computed here from the per-passage mentions; building and live
        updates both go through here, which makes an updated part equal to a rebuilt one.
        """
        o = options
        n = len(corpus)
        if o.title_aliases and titles is None:
            titles = title_keys(corpus, o.normalize)
        if aliases is None:
            aliases = title_alias_map_of(titles) if titles is not None else {}
        keys: dict[str, int] = {}  # canonical entity → provisional column
        to_col = np.asarray(
            [keys.setdefault(aliases.get(k, k), len(keys)) for k in raw_keys], dtype=np.int64
        )
        own_rows: list[int] = []
        own_cols: list[int] = []
        if aliases and titles is not None:
            for i, (_, alias, _) in enumerate(titles):
                own = aliases.get(alias)
                if own:
                    own_rows.append(i)
                    own_cols.append(keys.setdefault(own, len(keys)))
        found_matrix = None
        if aliases and o.alias_mentions:  # title aliases found in the texts, whatever the NER saw
            if found is None:
                found = alias_records(corpus, aliases, o.normalize)
            fm = sp.csr_matrix(found[0])
            fcols = np.asarray([keys.setdefault(k, len(keys)) for k in found[1]], np.int64)
            found_matrix = (fm.data.astype(np.float32), fcols[fm.indices], fm.indptr)
        raw = sp.csr_matrix(raw)
        rows = np.concatenate([np.repeat(np.arange(n), np.diff(raw.indptr)), own_rows])
        cols = np.concatenate([to_col[raw.indices], np.asarray(own_cols, np.int64)])
        vals = np.concatenate([raw.data.astype(np.float32), np.ones(len(own_rows), np.float32)])
        counts = sp.csr_matrix(
            (vals, (rows.astype(np.int64), cols.astype(np.int64))), shape=(n, len(keys))
        )
        counts.sum_duplicates()
        if found_matrix is not None and len(found_matrix[0]):
            # a mention the NER saw too is not counted twice
            counts = sp.csr_matrix(
                counts.maximum(sp.csr_matrix(found_matrix, shape=(n, len(keys))))
            )
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
        part = cls(o, names, mentions, aliases, owns)
        part.raw, part.raw_keys = raw, raw_keys
        part.titles = titles
        if found is not None:
            part.found, part.found_keys = sp.csr_matrix(found[0]), list(found[1])
        return part

    def update(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> EntityPart:
        """NER runs on the added passages only; aliases, frequencies and filters are recomputed
        from every passage's stored mentions (a deleted passage takes its mentions with it)."""
        if self.raw is None or self.raw_keys is None:
            raise NotUpdatableError(
                "this entities part was built before live updates were supported (it lacks the "
                "per-passage mentions); rebuild the index to update it"
            )
        added = change.added_passages
        new = self.extractor.extract([p.content for p in added], progress=progress)
        return self._with_mentions(change, new, None)

    replayable = True

    def replay(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        payload: dict[str, Any],
    ) -> EntityPart:
        """The update with the NER mentions of the added passages, and the rows whose texts
        were rescanned for title aliases, from ``payload`` (no NER, no scan of every text)."""
        return self._with_mentions(change, payload["mentions"], payload.get("rescan"))

    @classmethod
    def combined_payload(cls, steps: Sequence[ReplayStep], n_base_kept: int) -> dict[str, Any]:
        """The mentions of the added passages still there after the last step, and the rows
        before the first that some step rescanned (a rescan reads a text with the aliases of
        its time; once more with the last step's gives what the last rescan left, since the
        rows a later step did not rescan are those its change could not touch)."""
        mentions: list[list[str]] = []
        rescan: set[int] = set()
        for st in steps:
            alive = st.added_survivors()
            mentions += [list(m) for m, ok in zip(st.payload["mentions"], alive, strict=True) if ok]
            rows = st.to_final[np.asarray(st.payload.get("rescan") or [], np.int64)]
            rescan.update(rows[(rows >= 0) & (rows < n_base_kept)].tolist())
        return {"mentions": mentions, "rescan": sorted(rescan)}

    def _with_mentions(
        self, change: Change, new: list[list[str]], rescan: list[int] | None
    ) -> EntityPart:
        o = self.options
        assert self.raw is not None and self.raw_keys is not None
        counts, keys = raw_mentions(new, o.normalize, list(self.raw_keys))
        raw, keys = stack_records(self.raw, change.keep, counts, keys)
        found = aliases = titles = None
        if o.title_aliases:
            if self.titles is None:  # a part saved before they were kept
                titles = title_keys(change.new, o.normalize)
            else:  # the kept rows' stay; only the added titles are normalised
                kept_titles = self.titles  # a property: read once, not once per row
                titles = [kept_titles[r] for r in change.keep.tolist()]
                titles += title_keys(change.added_passages, o.normalize)
            aliases = title_alias_map_of(titles)
        if aliases is not None and o.alias_mentions and self.found is not None:
            found, rescan = self._updated_found(change, aliases, rescan)
        part = type(self).assemble(
            change.new, o, raw, keys, found=found, aliases=aliases, titles=titles
        )
        part._extractor = self._extractor  # loaded once (a spaCy pipeline takes seconds)
        if self.words is not None:  # the base's postings, the rows mapped, the added rows' words
            added = [p.text for p in change.added_passages]
            part.words = self.words.updated(change.old_to_new(), added, len(change.keep))
        part.payload = {"mentions": [list(m) for m in new], "rescan": rescan}
        return part

    def found_dict(self) -> list[dict[str, float]]:
        """Per passage, the title aliases found in its text and how often (for comparisons:
        the column order of :attr:`found` depends on the order passages arrived in)."""
        if self.found is None or self.found_keys is None:
            return []
        m, keys = sp.csr_matrix(self.found), self.found_keys
        return [
            {keys[j]: float(v) for j, v in zip(m.indices[a:b], m.data[a:b], strict=True) if v}
            for a, b in zip(m.indptr[:-1], m.indptr[1:], strict=True)
        ]

    def _updated_found(
        self, change: Change, aliases: dict[str, str], rescan: list[int] | None = None
    ) -> tuple[tuple[sp.csr_matrix, list[str]], list[int]]:
        """The title aliases found in each passage of ``change.new``, rescanning only the texts
        where an alias that came, went or changed its entity with the change can occur: in
        every other text the scan meets the same aliases at the same places, so its stored row
        is what a full rescan would give. ``rescan``: those rows, when known (a replay);
        returned with the result.

        An alias that went (or now names another entity) was matched only where the stored
        rows say so (:func:`rows_with_found`: the scan is greedy, so where it never chose the
        alias, removing it changes no choice); only an alias that came needs the texts read
        (:func:`rows_mentioning`, one Aho–Corasick pass over the kept texts). At a million
        passages that pass is most of an update's time, and an update that only makes
        existing aliases ambiguous (a page ``X (film)`` added beside ``X``) skips it."""
        assert self.found is not None and self.found_keys is not None
        mode = self.options.normalize
        n_keep = len(change.keep)
        if rescan is None:  # new rows
            old = self.aliases
            changed = {
                k
                for k in set(aliases) | set(old)
                if aliases.get(k) != old.get(k) and len(k.split()) >= 2
            }
            came = {k for k in changed if k not in old}
            went = {old[k] for k in changed - came}
            hit: set[int] = set()
            if went:
                hit.update(rows_with_found(self.found, self.found_keys, went, change.keep))
            if came:  # the kept passages are the first rows of change.new
                kept_rows = np.arange(n_keep)
                if self.words is not None:  # only texts holding every word of a new alias
                    old = self.words.candidates(came)
                    kept_rows = change.old_to_new()[old]
                    kept_rows = kept_rows[kept_rows >= 0]
                hit.update(rows_mentioning(change.new, came, mode, rows=kept_rows))
            rescan = sorted(hit)
        rows = [*rescan, *range(n_keep, len(change.new))]
        fresh, fresh_keys = alias_records(Corpus([change.new[r] for r in rows]), aliases, mode)
        kept = sp.csr_matrix(self.found)[change.keep]
        if rescan:  # their stored rows are replaced by the rescan
            mask = np.ones(n_keep, np.float32)
            mask[rescan] = 0.0
            kept = sp.csr_matrix(sp.diags(mask) @ kept)
            kept.eliminate_zeros()
        ids = {k: j for j, k in enumerate(self.found_keys)}
        fresh = sp.coo_matrix(fresh)
        fcols = np.asarray([ids.setdefault(k, len(ids)) for k in fresh_keys], np.int64)
        kept = sp.coo_matrix(kept)
        merged = sp.csr_matrix(
            (
                np.concatenate([kept.data, fresh.data]).astype(np.float32),
                (
                    np.concatenate([kept.row, np.asarray(rows, np.int64)[fresh.row]]),
                    np.concatenate([kept.col, fcols[fresh.col]]),
                ),
            ),
            shape=(len(change.new), len(ids)),
        )
        used = np.flatnonzero(np.bincount(merged.indices, minlength=len(ids)))
        keys = list(ids)
        return (sp.csr_matrix(merged[:, used]), [keys[j] for j in used.tolist()]), rescan

    def compacted(self) -> EntityPart:
        """The part with its word postings merged over its rows (the rows updates added and
        deleted since the base folded in), as a build over the same texts makes them."""
        if self.words is None or (self.words.to_current is None and not self.words.added):
            return self
        _ = self.titles  # read now: a copy must not share the open titles file (closed with us)
        part = copy.copy(self)
        part.words = self.words.compacted(self.mentions.shape[0])
        return part

    def save(self, folder: Path) -> None:
        (folder / "entities.json").write_text(json.dumps(self.names, ensure_ascii=False))
        (folder / "aliases.json").write_text(json.dumps(self.aliases, ensure_ascii=False))
        np.save(folder / "mentions.indptr.npy", self.mentions.indptr)
        np.save(folder / "mentions.indices.npy", self.mentions.indices)
        np.save(folder / "mentions.data.npy", self.mentions.data)
        if self.owns is not None:
            np.save(folder / "owns.indptr.npy", self.owns.indptr)
            np.save(folder / "owns.indices.npy", self.owns.indices)
        if self.raw is not None and self.raw_keys is not None:
            (folder / "raw_keys.json").write_text(json.dumps(self.raw_keys, ensure_ascii=False))
            np.save(folder / "raw.indptr.npy", self.raw.indptr)
            np.save(folder / "raw.indices.npy", self.raw.indices)
            np.save(folder / "raw.data.npy", self.raw.data)
        if self.found is not None and self.found_keys is not None:
            save_records(folder, "found", self.found, self.found_keys)
        if self.words is not None:
            self.words.save(folder)
        if self._titles is not None:
            (folder / "titles.json").write_text(json.dumps(self._titles, ensure_ascii=False))
        elif self._titles_file is not None:  # never read in this process: copied as it is
            self._titles_file.seek(0)
            with open(folder / "titles.json", "wb") as out:
                shutil.copyfileobj(self._titles_file, out)

    @classmethod
    def load(cls, folder: Path, options: EntityOptions, *, mmap: bool = True) -> EntityPart:
        mode = "r" if mmap else None
        names = json.loads((folder / "entities.json").read_text())
        aliases = json.loads((folder / "aliases.json").read_text())
        mentions = _load_csr(folder, "mentions", len(names), mode)
        owns = None
        if (folder / "owns.indptr.npy").exists():
            oi = np.load(folder / "owns.indices.npy")
            owns = sp.csr_matrix(
                (np.ones(len(oi), np.float32), oi, np.load(folder / "owns.indptr.npy")),
                shape=mentions.shape,
            )
        part = cls(options, names, mentions, aliases, owns)
        if (folder / "raw_keys.json").exists():  # the per-passage mentions (live updates)
            part.raw_keys = json.loads((folder / "raw_keys.json").read_text())
            part.raw = _load_csr(folder, "raw", len(part.raw_keys), mode)
        if (folder / "found.keys.json").exists():
            part.found, part.found_keys = load_records(folder, "found")
        if uses_word_postings(options):
            part.words = WordPostings.load(folder, mentions.shape[0], mmap=mmap)
        if (folder / "titles.json").exists():  # opened now, read when an update needs it
            part._titles_file = open(folder / "titles.json", "rb")  # noqa: SIM115
            weakref.finalize(part, part._titles_file.close)
        return part

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


def uses_word_postings(options: EntityOptions) -> bool:
    """Whether the part keeps word postings: when it finds title aliases in the texts, with
    the ``simple`` normalisation (the words the alias scan compares)."""
    return bool(options.title_aliases and options.alias_mentions and options.normalize == "simple")


def canonical(mention: str, mode: str, aliases: dict[str, str]) -> str:
    key = normalize_entity(mention, mode)
    return aliases.get(key, key)


def title_keys(passages: Iterable[Passage], mode: str) -> list[tuple[str, str, str]]:
    """Per passage: its title, the title's alias (without its disambiguator) and the whole
    title, both normalised ("" for an untitled passage): what :func:`title_alias_map` reads."""
    out = []
    for p in passages:
        t = p.title or ""
        if t:
            out.append(
                (t, normalize_entity(strip_disambiguator(t), mode), normalize_entity(t, mode))
            )
        else:
            out.append(("", "", ""))
    return out


def title_alias_map_of(titles: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """:func:`title_alias_map` from the passages' :func:`title_keys`."""
    first: dict[str, tuple[str, str]] = {}  # alias → its first title and that title's full key
    shared: set[str] = set()  # aliases of two or more distinct titles
    for title, alias, full in titles:
        if title:
            owner = first.setdefault(alias, (title, full))
            if owner[0] != title:
                shared.add(alias)
    out: dict[str, str] = {}
    for alias, (_, full) in first.items():
        if alias and alias not in shared:
            out[alias] = alias
            out.setdefault(full, alias)
    return out


def title_alias_map(corpus: Corpus, mode: str) -> dict[str, str]:
    """SPRIG-EL: alias → canonical entity, from passage titles only (no external knowledge).

    A title's alias is the title without its parenthetical disambiguator. An alias shared by
    titles of different things (``Velmora (river)``, ``Velmora (ship)``) is ambiguous and dropped.
    Both the alias and the full title map to the alias, so ``"Kiss and Tell (1945 film)"`` and a
    mention ``"Kiss and Tell"`` become one node.
    """
    return title_alias_map_of(title_keys(corpus, mode))


def alias_records(
    passages: Corpus, aliases: dict[str, str], mode: str
) -> tuple[sp.csr_matrix, list[str]]:
    """How often each title alias (of two or more words) occurs in each passage's text, as a
    (passages × keys) count matrix and its keys (see :func:`alias_spans`)."""
    rows, found = alias_spans(passages, aliases, mode)
    ids: dict[str, int] = {}
    cols = [ids.setdefault(k, len(ids)) for k in found]
    n = len(passages)
    m = sp.csr_matrix(
        (np.ones(len(rows), np.float32), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
        shape=(n, len(ids)),
    )
    m.sum_duplicates()
    return m, list(ids)


def alias_spans(
    corpus: Iterable[Passage], aliases: dict[str, str], mode: str
) -> tuple[list[int], list[str]]:
    """Every occurrence of a title alias of two or more words in each passage's text, starting
    with a capital or a digit: ``(rows, canonical entities)``, one pair per occurrence. The text
    is split and normalised like the aliases and scanned word by word against the aliases
    starting with that word, longest first, without overlaps."""
    by_first: dict[str, list[tuple[str, ...]]] = {}
    for alias in aliases:
        words = tuple(alias.split())
        if len(words) >= 2:
            by_first.setdefault(words[0], []).append(words)
    for spans in by_first.values():
        spans.sort(key=lambda w: (-len(w), w))
    rows: list[int] = []
    found: list[str] = []
    for row, p in enumerate(corpus):
        tokens = _WORD.findall(fold_accents(p.text)) if mode == "simple" else p.text.split()
        words = [normalize_entity(t, mode) for t in tokens]
        i = 0
        while i < len(words):
            if tokens[i][:1].isupper() or tokens[i][:1].isdigit():
                for span in by_first.get(words[i], ()):
                    if tuple(words[i : i + len(span)]) == span:
                        rows.append(row)
                        found.append(aliases[" ".join(span)])
                        i += len(span) - 1
                        break
            i += 1
    return rows, found


def rows_with_found(
    found: sp.spmatrix, keys: list[str], entities: Iterable[str], keep: np.ndarray
) -> list[int]:
    """The rows, numbered after an update that keeps old rows ``keep`` (increasing), whose
    stored title-alias matches ``found`` (old rows × ``keys``) hold one of ``entities``."""
    col = {k: j for j, k in enumerate(keys)}
    cols = sorted({col[e] for e in entities if e in col})
    if not cols:
        return []
    old_rows = np.unique(sp.csc_matrix(sp.csr_matrix(found)[:, cols]).indices)
    new = np.searchsorted(keep, old_rows)
    ok = new < len(keep)
    ok[ok] = keep[new[ok]] == old_rows[ok]  # rows deleted by the update are gone
    return new[ok].tolist()


def rows_mentioning(
    corpus: Corpus, phrases: Iterable[str], mode: str, rows: np.ndarray | None = None
) -> list[int]:
    """The rows of ``corpus`` (of ``rows`` only, when given) whose text holds one of
    ``phrases`` (normalised title aliases) as consecutive words, in the words
    :func:`alias_spans` compares (capitalisation not checked: a superset of its hits)."""
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for phrase in phrases:
        automaton.add_word(f" {phrase} ", phrase)
    if len(automaton) == 0:
        return []
    automaton.make_automaton()
    wanted = list(range(len(corpus))) if rows is None else np.asarray(rows).tolist()
    out: set[int] = set()
    block = 4096
    for lo in range(0, len(wanted), block):
        batch = wanted[lo : lo + block]
        if batch[-1] - batch[0] == len(batch) - 1:  # a run of rows: read at once
            texts = corpus.texts(batch[0], batch[-1] + 1)
        else:
            texts = [corpus[r].text for r in batch]
        if mode == "simple":
            # One string per block: the words of each text (normalize_entity of an ASCII
            # alphanumeric word is its lowercase) between NUL separators, which no phrase
            # holds; the automaton runs over it once, and a hit's position gives its text.
            if any("\x00" in t for t in texts):  # a text holding NUL itself: one at a time
                hits = [
                    i for i, t in enumerate(fold_accents_many(texts))
                    if next(automaton.iter(f" {_NON_WORD.sub(' ', t).lower()} "), None)
                ]  # fmt: skip
                out.update(batch[i] for i in hits)
                continue
            words, starts = block_words(texts)
            ends = [end for end, _ in automaton.iter(words)]
            if ends:
                which = np.searchsorted(starts, np.asarray(ends), side="right") - 1
                out.update(batch[i] for i in np.unique(which).tolist())
        else:
            texts = [" ".join(normalize_entity(w, mode) for w in t.split()) for t in texts]
            out.update(
                r for r, t in zip(batch, texts, strict=True)
                if next(automaton.iter(f" {t} "), None) is not None
            )  # fmt: skip
    return sorted(out)


def block_words(texts: list[str]) -> tuple[str, np.ndarray]:
    """The words :func:`alias_spans` compares in each text (accents folded, runs of
    [0-9A-Za-z] lowercased), each text's between single spaces and the texts joined by NUL,
    as one ASCII string, with the offset where each text's part starts. Done with numpy over
    the bytes (a regex over 70 MB of text took 2 s). Only the texts that are not ASCII are
    folded (NFKD is the identity on ASCII); what folding leaves past ASCII is no word
    character, so it becomes one byte (``?``, then a space) like every other such character."""
    odd = [i for i, t in enumerate(texts) if not t.isascii()]
    if odd:
        texts = list(texts)
        for i, t in zip(odd, fold_accents_many([texts[i] for i in odd]), strict=True):
            texts[i] = t
    raw = "\x00".join(texts).encode("ascii", "replace")
    b = _word_table()[np.frombuffer(raw, np.uint8)]
    # one space between words; every text starts and ends with one (NUL stays as a separator)
    b = np.concatenate([[32], b, [32]]).astype(np.uint8)
    nul = b == 0
    b = np.repeat(b, np.where(nul, 3, 1))  # NUL → " NUL " so each text is space-bounded
    zeros = np.flatnonzero(b == 0)  # in threes, one three per separator
    b[zeros[0::3]] = 32
    b[zeros[2::3]] = 32
    keep = np.ones(len(b), bool)
    keep[1:] = ~((b[1:] == 32) & (b[:-1] == 32))
    b = b[keep]
    starts = np.concatenate([[0], np.flatnonzero(b == 0) + 1])
    return b.tobytes().decode("ascii"), starts


@functools.cache
def _word_table() -> np.ndarray:
    """Code point → ASCII byte: 0-9 and a-z themselves, A-Z lowercased, NUL kept, anything
    else a space (:func:`block_words` gives it ASCII bytes only)."""
    table = np.full(129, 32, np.uint8)
    for c in "0123456789abcdefghijklmnopqrstuvwxyz":
        table[ord(c)] = ord(c)
    for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        table[ord(c)] = ord(c.lower())
    table[0] = 0
    return table


_WORD = re.compile(r"[0-9A-Za-z]+")
_NON_WORD = re.compile(r"[^0-9A-Za-z]+")
# lowercase words inside names, where the regex NER splits them ("Ermengarde of Tours")
_CONNECTORS = frozenset(
    "of the and de del della di da du des la le les von van der den y e al el bin ibn on in at "
    "for to a an".split()
)


def raw_mentions(
    mentions: list[list[str]], mode: str, keys: list[str] | None = None
) -> tuple[sp.csr_matrix, list[str]]:
    """Counts of each passage's normalised mentions, and the keys (``keys`` extended)."""
    keys = list(keys or [])
    ids = {k: i for i, k in enumerate(keys)}
    memo: dict[str, int] = {}  # raw mention → column (mentions repeat a lot)
    rows: list[int] = []
    cols: list[int] = []
    for i, found in enumerate(mentions):
        for m in found:
            j = memo.get(m)
            if j is None:
                k = normalize_entity(m, mode)
                j = memo[m] = ids.setdefault(k, len(ids))
                if j == len(keys):
                    keys.append(k)
            cols.append(j)
        rows.extend([i] * len(found))
    counts = sp.csr_matrix(
        (np.ones(len(rows), np.float32), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
        shape=(len(mentions), len(keys)),
    )
    counts.sum_duplicates()
    return counts, keys


def _load_csr(folder: Path, name: str, n_cols: int, mode: str | None) -> sp.csr_matrix:
    indptr = np.load(folder / f"{name}.indptr.npy", mmap_mode=mode)
    return sp.csr_matrix(
        (
            np.load(folder / f"{name}.data.npy", mmap_mode=mode),
            np.load(folder / f"{name}.indices.npy", mmap_mode=mode),
            indptr,
        ),
        shape=(len(indptr) - 1, n_cols),
    )
