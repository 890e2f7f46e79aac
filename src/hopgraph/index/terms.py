"""Terms found by n-gram statistics: the entity mentions of a corpus whose names carry no
capital letters (Chinese, Japanese, Arabic, Hindi, Thai) or whose capitals say nothing (German
capitalises every noun), and whose titles are not names to link to.

A term is a run of two to :data:`MAX_CHARS` characters inside a word of a script written without
spaces (Han, kana, Thai...), or of two to :data:`MAX_WORDS` words elsewhere, that the corpus uses
as a unit (the statistics of unsupervised word discovery, as in Chinese new-word discovery):

- **frequent**: :data:`MIN_COUNT` occurrences or more, in two passages or more (a term that
  links nothing is no use to the graph), and in at most :data:`MAX_DOC_SHARE` of the passages
  (a term in every passage is a common word);
- **cohesive**: its parts occur together far more often than chance would put them there, at
  every split (pointwise mutual information of the weakest split ≥ :data:`MIN_PMI`);
- **free at both ends**: many different units precede and follow it (the entropy of its left and
  of its right neighbours ≥ :data:`MIN_ENTROPY`, where the start or end of a clause counts as a
  neighbour of its own), so "伦代尔" inside "奥伦代尔号" (always the same neighbours) is no term;
- in a spaced script, neither first nor last word is a common word of the corpus (one in more
  passages than a term may be);
- neither first nor last character is a digit ("1978年", "000 quadratmeilen");
- **bursty**: :data:`MIN_BURST` occurrences or more per passage that holds it, on average, as a
  name is where it is written about, where a common word is spread thin ("然而", "一起").

Words are the :mod:`~hopgraph.index.name_finder`'s (runs of letters, digits and marks, normalised
as ``entities.normalize=letters`` does), so the terms are found again in any text by a
:class:`~hopgraph.index.name_finder.NameFinder`. Mining reads at most :data:`MAX_UNITS` units of
an even sample of the passages; the thresholds are the usual ones of the method, not tuned on a
question set (docs/notes/languages.md).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import regex

from hopgraph.index.name_finder import UNSPACED, NameFinder
from hopgraph.text.ner import normalize_entity

MAX_CHARS = 6
MAX_WORDS = 3
MIN_COUNT = 3
MAX_DOC_SHARE = 0.1
MIN_PMI = math.log(10.0)
MIN_ENTROPY = 1.0
MIN_BURST = 1.5
MAX_UNITS = 2_000_000

_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
_SPACE_ONLY = regex.compile(r"\s*")
_GRAPHEME = regex.compile(r"\X")

Segment = tuple[tuple[str, ...], bool]
"""A clause's units, and whether they are characters of a script without spaces."""


def segments(text: str) -> list[Segment]:
    """``text`` cut into clauses at punctuation, and each clause into units: the characters
    (graphemes) of each word of a script without spaces, one segment per such word; else the
    words, normalised (``letters``)."""
    out: list[Segment] = []
    words: list[str] = []
    last = 0
    for m in _WORD.finditer(text):
        if words and not _SPACE_ONLY.fullmatch(text, last, m.start()):
            out.append((tuple(words), False))  # punctuation between: the clause ends
            words = []
        last = m.end()
        word = normalize_entity(m.group(), "letters")
        if not word:
            continue
        if UNSPACED.search(word):
            if words:
                out.append((tuple(words), False))
                words = []
            out.append((tuple(_GRAPHEME.findall(word)), True))
        else:
            words.append(word)
    if words:
        out.append((tuple(words), False))
    return out


def _sample(texts: Sequence[str], max_units: int) -> list[list[Segment]]:
    """The segments of an even sample of ``texts`` (every k-th, k as small as fits
    ``max_units``; all of them where they fit)."""
    step = 1
    while True:
        docs, units = [], 0
        for t in texts[::step]:
            segs = segments(t)
            units += sum(len(u) for u, _ in segs)
            docs.append(segs)
            if units > max_units:
                break
        else:
            return docs
        step *= 2


def _entropy(counts: Sequence[int], edges: int) -> float:
    """Entropy of a neighbour distribution; each of ``edges`` clause ends its own neighbour."""
    total = sum(counts) + edges
    if total == 0:
        return 0.0
    h = -sum(c / total * math.log(c / total) for c in counts if c)
    return h + (edges / total * math.log(total) if edges else 0.0)


Gram = tuple[bool, tuple[str, ...]]
"""An n-gram: whether its units are characters of a script without spaces, and the units."""


def _longest(unspaced: bool) -> int:
    return MAX_CHARS if unspaced else MAX_WORDS


def _count(docs: list[list[Segment]]) -> tuple[dict[int, Counter], Counter]:
    """Occurrences of every n-gram up to one unit past the longest term (the neighbours of
    terms), and in how many passages each occurs. An n-gram is counted only where both its
    (n-1)-grams occur :data:`MIN_COUNT` times (no rarer n-gram can hold a term)."""
    counts: dict[int, Counter] = {}
    df: Counter = Counter()
    for n in range(1, max(MAX_CHARS, MAX_WORDS) + 2):
        c: Counter = Counter()
        prev = counts.get(n - 1)
        for segs in docs:
            seen: set[Gram] = set()
            for units, unspaced in segs:
                if n > _longest(unspaced) + 1:
                    continue
                for i in range(len(units) - n + 1):
                    g = units[i : i + n]
                    if prev is not None and (
                        prev.get((unspaced, g[:-1]), 0) < MIN_COUNT
                        or prev.get((unspaced, g[1:]), 0) < MIN_COUNT
                    ):
                        continue
                    c[(unspaced, g)] += 1
                    seen.add((unspaced, g))
            df.update(seen)
        counts[n] = c
    return counts, df


def _cohesion(key: Gram, counts: dict[int, Counter], total: int) -> float:
    """Pointwise mutual information of ``key``'s weakest split into two parts."""
    unspaced, g = key
    n = len(g)
    p = counts[n][key] / total
    return min(
        math.log(
            p / (counts[i][(unspaced, g[:i])] / total * counts[n - i][(unspaced, g[i:])] / total)
        )
        for i in range(1, n)
    )


def mine_terms(texts: Sequence[str], *, max_units: int = MAX_UNITS) -> list[str]:
    """The terms of ``texts`` (see the module docstring), sorted; normalised as the
    ``letters`` entity normalisation writes them (characters joined without spaces, words with
    one)."""
    docs = _sample(texts, max_units)
    if not docs:
        return []
    counts, df = _count(docs)
    total = sum(counts[1].values())
    most = max(2.0, MAX_DOC_SHARE * len(docs))  # a term links 2 passages, in a small corpus too
    common = {g[0] for (u, g), k in df.items() if len(g) == 1 and not u and k > most}
    right: dict[Gram, list[int]] = {}
    left: dict[Gram, list[int]] = {}
    for n in range(3, len(counts) + 1):  # the neighbours of each term: the (n+1)-grams around it
        for (u, g), k in counts[n].items():
            right.setdefault((u, g[:-1]), []).append(k)
            left.setdefault((u, g[1:]), []).append(k)
    terms: set[str] = set()
    for n in range(2, len(counts)):
        for key, k in counts[n].items():
            unspaced, g = key
            if n > _longest(unspaced) or k < MIN_COUNT or not 2 <= df[key] <= most:
                continue
            if not unspaced and (g[0] in common or g[-1] in common):
                continue
            if g[0][0].isdigit() or g[-1][-1].isdigit() or k / df[key] < MIN_BURST:
                continue
            if _cohesion(key, counts, total) < MIN_PMI:
                continue
            r, le = right.get(key, []), left.get(key, [])
            if min(_entropy(r, k - sum(r)), _entropy(le, k - sum(le))) < MIN_ENTROPY:
                continue
            terms.add(("" if unspaced else " ").join(g))
    return sorted(terms)


class TermNER:
    """The ``terms`` NER: the mined terms (:func:`mine_terms`), found in each text by a
    :class:`~hopgraph.index.name_finder.NameFinder` (longest first, without overlaps)."""

    name = "terms"

    def __init__(self, terms: Sequence[str]):
        self.terms = list(terms)
        self.finder = NameFinder(self.terms)

    def extract(self, texts: Sequence[str], *, progress: bool = False) -> list[list[str]]:
        return [self.finder.find(t) for t in texts]
