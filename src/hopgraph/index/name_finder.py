"""Names found in texts of any script, without leaning on capital letters.

The ``simple`` entity normalisation and the alias scan of :mod:`hopgraph.index.aliases` read
ASCII words and want a capital at the start of a name: right for English, blind to Chinese,
Japanese, Arabic or Hindi (no case, and for the first two no spaces) and noisy for German
(every noun capitalised). Under the ``letters`` normalisation (set for a corpus that is not in
English, :func:`~hopgraph.index.detect.detect_settings`), names are found here instead:

- a text becomes its words (runs of letters, digits and marks of any script), each normalised
  as :func:`~hopgraph.text.ner.normalize_entity` does (case folded, accents folded), joined by
  single spaces;
- a name in a script written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar) is found
  anywhere in a word ("奥伦代尔号" in "奥伦代尔号是一艘货轮"); any other on word boundaries;
- a one-word name in a cased script counts only where the text capitalises it (a French page
  titled "Eau" is not every "eau"); one in a caseless script (Arabic, Devanagari) and every name
  of two or more words count wherever they occur;
- matches are taken longest first, without overlaps, in order of appearance.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import regex

from hopgraph.text.ner import normalize_entity

WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
UNSPACED = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}]")
CASED = regex.compile(r"[\p{Lu}\p{Ll}\p{Lt}]")
LETTER = regex.compile(r"\p{L}")
MIN_UNSPACED_CHARS = 2  # a one-character name in Chinese or Japanese is a word, not a name
MIN_CASELESS_CHARS = 3  # a one-word name in Arabic or Hindi: three letters or more


def words_of(text: str) -> tuple[str, list[int], list[bool]]:
    """``text``'s normalised words joined by single spaces, where each word starts in that
    string, and whether it was capitalised in ``text``."""
    parts: list[str] = []
    starts: list[int] = []
    caps: list[bool] = []
    at = 0
    for m in WORD.finditer(text):
        word = normalize_entity(m.group(), "letters")
        if not word:
            continue
        starts.append(at)
        caps.append(m.group()[0].isupper())
        parts.append(word)
        at += len(word) + 1
    return " ".join(parts), starts, caps


def findable(key: str) -> bool:
    """Whether a normalised name is looked for in texts: two words or more; or one word of
    :data:`MIN_UNSPACED_CHARS` characters in a script without spaces, or of
    :data:`MIN_CASELESS_CHARS` in any other."""
    if not key:
        return False
    if " " in key:
        return True
    if UNSPACED.search(key):
        return len(key) >= MIN_UNSPACED_CHARS
    return len(key) >= MIN_CASELESS_CHARS


class NameFinder:
    """Finds normalised names (``keys``) in texts by the rules of the module docstring."""

    def __init__(self, keys: Iterable[str]):
        import ahocorasick

        self.automaton = ahocorasick.Automaton()
        for key in keys:
            if findable(key):
                self.automaton.add_word(key, key)
        self.empty = len(self.automaton) == 0
        if not self.empty:
            self.automaton.make_automaton()

    def find(self, text: str) -> list[str]:
        """The names in ``text``, longest first and without overlaps, in order of appearance."""
        if self.empty:
            return []
        words, starts, caps = words_of(text)
        if not words:
            return []
        hits: list[tuple[int, int, str]] = []
        for end, key in self.automaton.iter(words):
            start = end - len(key) + 1
            if self._counts(words, start, end, key, starts, caps):
                hits.append((start, end, key))
        return _without_overlaps(hits)

    @staticmethod
    def _counts(
        words: str, start: int, end: int, key: str, starts: list[int], caps: list[bool]
    ) -> bool:
        if UNSPACED.search(key):
            return True
        if (start > 0 and words[start - 1] != " ") or (
            end + 1 < len(words) and words[end + 1] != " "
        ):
            return False  # a spaced name inside a longer word
        if " " in key or not CASED.search(key):
            return True
        i = bisect.bisect_left(starts, start)
        return i < len(caps) and starts[i] == start and caps[i]


def _without_overlaps(hits: list[tuple[int, int, str]]) -> list[str]:
    """The longest hits first, each kept where it overlaps none kept before; returned in order
    of appearance."""
    kept: list[tuple[int, int, str]] = []
    for hit in sorted(hits, key=lambda h: (-(h[1] - h[0]), h[0])):
        if all(hit[1] < s or hit[0] > e for s, e, _ in kept):
            kept.append(hit)
    return [k for _, _, k in sorted(kept)]
