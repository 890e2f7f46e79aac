"""The ``entities`` part: named-entity mentions per passage (SPRIG §3.2), optional title aliases.

Stored as the passages × entities count matrix (CSR arrays) and the entity names; graphs for
PPR are derived from it at query time (cheap, and cached per setting), so hub penalty, pruning
and edge caps can be varied without re-running NER.

This module builds, updates, saves and loads the part; what a search asks of it is
:mod:`hopgraph.index.entity_queries`, and the title aliases (which titles are aliases, where they
occur in texts) are :mod:`hopgraph.index.aliases`, whose functions stay importable from here.
"""

from __future__ import annotations

import copy
import json
import shutil
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import scipy.sparse as sp

from hopgraph.config import in_unit_interval, option, positive
from hopgraph.corpus import Corpus
from hopgraph.errors import NotUpdatableError
from hopgraph.graph.bipartite import BipartiteGraph
from hopgraph.index.aliases import (
    alias_records,
    alias_spans,
    block_words,
    rows_mentioning,
    rows_with_found,
    title_alias_map,
    title_alias_map_of,
    title_keys,
    updated_found,
)
from hopgraph.index.entity_queries import EntityQueries, canonical
from hopgraph.index.mentions import entity_matrix, raw_mentions
from hopgraph.index.npy import save_array
from hopgraph.index.part import (
    Change,
    IndexPart,
    ReplayStep,
    load_records,
    merge_records,
    save_records,
    stack_records,
)
from hopgraph.index.terms import TermNER, mine_terms
from hopgraph.index.word_postings import WordPostings, word_records
from hopgraph.text.ner import (
    EntityExtractor,
    make_extractor,
)

__all__ = [  # the alias functions stay importable from here, where they were defined
    "EntityOptions",
    "EntityPart",
    "alias_records",
    "alias_spans",
    "block_words",
    "canonical",
    "raw_mentions",
    "rows_mentioning",
    "rows_with_found",
    "title_alias_map",
    "title_alias_map_of",
    "title_keys",
    "uses_word_postings",
]


@dataclass(frozen=True)
class EntityOptions:
    ner: str = option(
        "regex",
        "NER backend: SPRIG's regex, spaCy, none (mentions: the title aliases in the texts), or "
        "terms (mined from the corpus by n-gram statistics, for scripts without case)",
        ("regex", "spacy", "none", "terms"),
    )
    spacy_model: str = option("en_core_web_sm", "spaCy pipeline (ner=spacy)")
    n_process: int = option(2, "spaCy worker processes while indexing")
    normalize: str = option(
        "simple",
        "entity normalisation (letters: every script's letters, names found without capitals)",
        ("none", "simple", "lower", "letters"),
    )
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


class EntityPart(EntityQueries, IndexPart):
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
        # ner=terms: the terms mined from the corpus at build; updates find the same ones
        self.terms: list[str] | None = None
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
            self._extractor = _extractor(self.options, self.terms, n_process=1)
        return self._extractor

    # -- building -------------------------------------------------------------------------
    @classmethod
    def build(cls, corpus: Corpus, options: EntityOptions, *, progress: bool = True) -> EntityPart:
        o = options
        texts = [p.content for p in corpus]
        terms = mine_terms(texts) if o.ner == "terms" else None
        extractor = _extractor(o, terms, n_process=o.n_process)
        raw = extractor.extract(texts, progress=progress)
        counts, keys = raw_mentions(raw, o.normalize)
        part = cls.assemble(corpus, o, counts, keys)
        part.terms = terms
        if uses_word_postings(o):
            part.words = WordPostings.of_texts([p.text for p in corpus])
        return part

    segmentable = True

    @classmethod
    def segment_context(cls, corpus: Corpus, options: EntityOptions) -> Any:
        """What each batch needs of the whole corpus: the title aliases (from every title),
        which it looks for in its texts, and with ``ner=terms`` the corpus's terms."""
        o = options
        scans = o.title_aliases and o.alias_mentions
        return {
            "aliases": title_alias_map(corpus, o.normalize) if scans else None,
            "terms": mine_terms([p.content for p in corpus]) if o.ner == "terms" else None,
        }

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
        context = context or {}
        terms = context.get("terms")
        extractor = _extractor(o, terms, n_process=o.n_process)
        raw = extractor.extract([p.content for p in passages])
        counts, keys = raw_mentions(raw, o.normalize)
        save_records(folder, "raw", counts, keys)
        if terms is not None:
            (folder / "terms.json").write_text(json.dumps(terms, ensure_ascii=False))
        if context.get("aliases") is not None:
            save_records(folder, "found", *alias_records(passages, context["aliases"], o.normalize))
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
        if options.ner == "terms" and folders:  # every batch holds the same terms
            part.terms = json.loads((folders[0] / "terms.json").read_text())
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
        corpus, so they are computed here (:func:`~hopgraph.index.mentions.entity_matrix`) from
        the per-passage mentions; building and live updates both go through here, which makes an
        updated part equal to a rebuilt one.
        """
        o = options
        n = len(corpus)
        if o.title_aliases and titles is None:
            titles = title_keys(corpus, o.normalize)
        if aliases is None:
            aliases = title_alias_map_of(titles) if titles is not None else {}
        if aliases and o.alias_mentions:  # title aliases found in the texts, whatever the NER saw
            if found is None:
                found = alias_records(corpus, aliases, o.normalize)
            scanned = found
        else:
            scanned = None
        raw = sp.csr_matrix(raw)
        names, mentions, owns = entity_matrix(n, o, raw, raw_keys, aliases, titles, scanned)
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
            assert self.found_keys is not None
            found, rescan = updated_found(
                self.found,
                self.found_keys,
                self.aliases,
                self.words,
                change,
                aliases,
                o.normalize,
                rescan,
            )
        part = type(self).assemble(
            change.new, o, raw, keys, found=found, aliases=aliases, titles=titles
        )
        part._extractor = self._extractor  # loaded once (a spaCy pipeline takes seconds)
        part.terms = self.terms  # the build's terms: an update finds them in the added texts
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
        save_array(folder / "mentions.indptr.npy", self.mentions.indptr)
        save_array(folder / "mentions.indices.npy", self.mentions.indices)
        save_array(folder / "mentions.data.npy", self.mentions.data)
        if self.owns is not None:
            save_array(folder / "owns.indptr.npy", self.owns.indptr)
            save_array(folder / "owns.indices.npy", self.owns.indices)
        if self.raw is not None and self.raw_keys is not None:
            (folder / "raw_keys.json").write_text(json.dumps(self.raw_keys, ensure_ascii=False))
            save_array(folder / "raw.indptr.npy", self.raw.indptr)
            save_array(folder / "raw.indices.npy", self.raw.indices)
            save_array(folder / "raw.data.npy", self.raw.data)
        if self.found is not None and self.found_keys is not None:
            save_records(folder, "found", self.found, self.found_keys)
        if self.words is not None:
            self.words.save(folder)
        if self.terms is not None:
            (folder / "terms.json").write_text(json.dumps(self.terms, ensure_ascii=False))
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
        if (folder / "terms.json").exists():
            part.terms = json.loads((folder / "terms.json").read_text())
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
            **({"terms": len(self.terms)} if self.terms is not None else {}),
        }


def _extractor(o: EntityOptions, terms: list[str] | None, *, n_process: int) -> EntityExtractor:
    """The part's NER: ``ner=terms`` finds ``terms`` (mined from the corpus at build)."""
    if o.ner == "terms":
        if terms is None:
            raise NotUpdatableError(
                "this entities part (ner=terms) lacks its mined terms; rebuild the index"
            )
        return TermNER(terms)
    return make_extractor(o.ner, spacy_model=o.spacy_model, n_process=n_process)


def uses_word_postings(options: EntityOptions) -> bool:
    """Whether the part keeps word postings: when it finds title aliases in the texts, with
    the ``simple`` normalisation (the words the alias scan compares)."""
    return bool(options.title_aliases and options.alias_mentions and options.normalize == "simple")


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
