"""Title aliases (SPRIG-EL): which passage titles name an entity, and where those aliases occur
in passage texts, found again after an update only where they can have changed.

The ``entities`` part (:mod:`hopgraph.index.entities`) links mentions to these aliases; the
``links`` part and the word postings (:mod:`hopgraph.index.word_postings`) read them too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from hopgraph.corpus import Corpus, Passage
from hopgraph.index.part import Change
from hopgraph.text.ner import fold_accents, fold_accents_many, normalize_entity, strip_disambiguator

if TYPE_CHECKING:  # word_postings imports block_words from here
    from hopgraph.index.word_postings import WordPostings


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
    if mode == "letters":  # any script, no capital letters needed (index/name_finder.py)
        return _letters_spans(corpus, aliases)
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


def _letters_spans(
    corpus: Iterable[Passage], aliases: dict[str, str]
) -> tuple[list[int], list[str]]:
    """:func:`alias_spans` under the ``letters`` normalisation: the names
    :class:`~hopgraph.index.name_finder.NameFinder` finds in each text."""
    from hopgraph.index.name_finder import NameFinder

    finder = NameFinder(aliases)
    rows: list[int] = []
    found: list[str] = []
    for row, p in enumerate(corpus):
        for key in finder.find(p.text):
            rows.append(row)
            found.append(aliases[key])
    return rows, found


def scanned_for(alias: str, mode: str) -> bool:
    """Whether the alias scan looks for ``alias`` in texts: two words or more, or under the
    ``letters`` normalisation what :func:`~hopgraph.index.name_finder.findable` allows."""
    if mode == "letters":
        from hopgraph.index.name_finder import findable

        return findable(alias)
    return len(alias.split()) >= 2


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
    if mode == "letters":  # the rows where the name finder finds one (exactly its hits)
        from hopgraph.index.name_finder import NameFinder

        finder = NameFinder(phrases)
        wanted = range(len(corpus)) if rows is None else np.asarray(rows).tolist()
        return sorted(r for r in wanted if finder.find(corpus[r].text))
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


def updated_found(
    found: sp.spmatrix,
    found_keys: list[str],
    old_aliases: dict[str, str],
    words: WordPostings | None,
    change: Change,
    aliases: dict[str, str],
    mode: str,
    rescan: list[int] | None = None,
) -> tuple[tuple[sp.csr_matrix, list[str]], list[int]]:
    """The title aliases found in each passage of ``change.new`` (``found``: each old row's,
    over ``found_keys``, with the aliases ``old_aliases``), rescanning only the texts
    where an alias that came, went or changed its entity with the change can occur: in
    every other text the scan meets the same aliases at the same places, so its stored row
    is what a full rescan would give. ``rescan``: those rows, when known (a replay);
    returned with the result. ``words``: the part's word postings, when it keeps them (only
    the texts holding every word of a new alias are read).

    An alias that went (or now names another entity) was matched only where the stored
    rows say so (:func:`rows_with_found`: the scan is greedy, so where it never chose the
    alias, removing it changes no choice); only an alias that came needs the texts read
    (:func:`rows_mentioning`, one Aho–Corasick pass over the kept texts). At a million
    passages that pass is most of an update's time, and an update that only makes
    existing aliases ambiguous (a page ``X (film)`` added beside ``X``) skips it."""
    n_keep = len(change.keep)
    if rescan is None:  # new rows
        old = old_aliases
        changed = {
            k
            for k in set(aliases) | set(old)
            if aliases.get(k) != old.get(k) and scanned_for(k, mode)
        }
        came = {k for k in changed if k not in old}
        went = {old[k] for k in changed - came}
        hit: set[int] = set()
        if went:
            hit.update(rows_with_found(found, found_keys, went, change.keep))
        if came:  # the kept passages are the first rows of change.new
            kept_rows = np.arange(n_keep)
            if words is not None:  # only texts holding every word of a new alias
                old = words.candidates(came)
                kept_rows = change.old_to_new()[old]
                kept_rows = kept_rows[kept_rows >= 0]
            hit.update(rows_mentioning(change.new, came, mode, rows=kept_rows))
        rescan = sorted(hit)
    rows = [*rescan, *range(n_keep, len(change.new))]
    fresh, fresh_keys = alias_records(Corpus([change.new[r] for r in rows]), aliases, mode)
    kept = sp.csr_matrix(found)[change.keep]
    if rescan:  # their stored rows are replaced by the rescan
        mask = np.ones(n_keep, np.float32)
        mask[rescan] = 0.0
        kept = sp.csr_matrix(sp.diags(mask) @ kept)
        kept.eliminate_zeros()
    ids = {k: j for j, k in enumerate(found_keys)}
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
