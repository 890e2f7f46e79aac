"""Named-entity extraction backends and entity normalisation (SPRIG §3.2).

Backends take a list of texts and return, per text, the entity mentions in order of appearance.
``regex`` is SPRIG's heuristic (1–4 capitalised tokens); ``spacy`` runs a spaCy pipeline and keeps
the named-entity labels in :data:`SPACY_LABELS`. Asking for spaCy without its model is an error:
there is never a silent fallback to another NER.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

import numpy as np
import regex

from hopgraph.errors import ConfigError
from hopgraph.text.ner_labels import SPACY_LABELS as SPACY_LABELS  # re-exported

# SPRIG §3.2: \b[A-Z][a-z]+(\s+[A-Z][a-z]+){0,3}\b, except that a match never crosses a line
# break, so a passage's title line and its first sentence ("Ada Vell\nAda Vell was ...") stay apart.
REGEX_PATTERN = re.compile(r"\b[A-Z][a-z]+(?:[^\S\n]+[A-Z][a-z]+){0,3}\b")

NORMALIZATIONS = ("none", "simple", "lower", "letters")
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_NON_LETTERS = regex.compile(r"[^\p{L}\p{N}\p{M}]+")
_PAREN = re.compile(r"\s*\([^)]*\)\s*")


class EntityExtractor(Protocol):
    name: str

    def extract(self, texts: Sequence[str], *, progress: bool = False) -> list[list[str]]: ...


class RegexNER:
    """SPRIG's regex heuristic: runs of 1–4 capitalised words (~50k passages/s)."""

    name = "regex"

    def extract(self, texts: Sequence[str], *, progress: bool = False) -> list[list[str]]:
        findall = REGEX_PATTERN.findall
        return [findall(t) for t in texts]


@lru_cache(maxsize=1 << 18)
def normalize_entity(mention: str, mode: str) -> str:
    """``none``: trimmed; ``lower``: lowercased; ``simple``: lowercased, accents folded,
    every run of non-alphanumerics collapsed to one space (SPRIG's "simple rule"; ASCII letters
    and digits only); ``letters``: the same over the letters, digits and marks of every script
    (case folded; for a corpus not in English, :mod:`hopgraph.index.name_finder`)."""
    if mode == "none":
        return " ".join(mention.split())
    if mode == "lower":
        return " ".join(mention.lower().split())
    if mode == "letters":
        return _NON_LETTERS.sub(" ", fold_accents(mention.casefold())).strip()
    if mode == "simple":
        if mention.isascii():  # fast path: nothing to fold
            return _NON_ALNUM.sub(" ", mention.lower()).strip()
        return _NON_ALNUM.sub(" ", fold_accents(mention.lower())).strip()
    raise ConfigError(f"entity normalisation must be one of {NORMALIZATIONS}, got {mode!r}")


def fold_accents(text: str) -> str:
    """``"Gödel"`` → ``"Godel"``: accents removed (NFKD, combining marks dropped but kana's
    voicing marks: "データ" is not "テータ")."""
    if text.isascii():
        return text
    if len(text) > 256:
        return fold_accents_many([text])[0]
    folded = unicodedata.normalize("NFKD", text)
    return "".join(c for c in folded if not unicodedata.combining(c) or c in _KANA_VOICING)


def fold_accents_many(texts: list[str], chunk: int = 4096) -> list[str]:
    """:func:`fold_accents` of each text, combining marks dropped by one numpy mask over
    a chunk of texts at a time (a per-character test in Python took 8 s over a 100k-passage
    corpus, str.translate 1.5 s; this takes a tenth of that)."""
    marks = _combining_marks()
    out: list[str] = []
    for lo in range(0, len(texts), chunk):
        block = texts[lo : lo + chunk]
        if all(t.isascii() for t in block):
            out.extend(block)
            continue
        if len(block) > 1 and any("\x00" in t for t in block):
            out.extend(fold_accents_many([t], chunk=1)[0] for t in block)
            continue
        kept = folded_codes(block, marks).tobytes().decode("utf-32-le")
        out.extend(kept.split("\x00") if len(block) > 1 else [kept])
    return out


def folded_codes(texts: list[str], marks: np.ndarray | None = None) -> np.ndarray:
    """The code points of the texts joined by NUL, accents folded as :func:`fold_accents`
    folds them. NFKD works character by character (a starter such as NUL stops any
    reordering), so joining first changes nothing; NUL is no combining mark and survives."""
    marks = _combining_marks() if marks is None else marks
    joined = unicodedata.normalize("NFKD", "\x00".join(texts))
    codes = np.frombuffer(joined.encode("utf-32-le"), np.uint32)
    return codes[~marks[codes]]


@functools.cache
def _combining_marks() -> np.ndarray:
    """Whether each code point is a combining mark that folding drops (computed once, ~0.3 s)."""
    marks = np.zeros(sys.maxunicode + 1, bool)
    for c in range(_LAST_MARK_PLANE_END):  # no plane past the second holds a combining mark
        if unicodedata.combining(chr(c)):
            marks[c] = True
    marks[[ord(c) for c in _KANA_VOICING]] = False
    return marks


_LAST_MARK_PLANE_END = 0x30000
_KANA_VOICING = "\u3099\u309a"  # dakuten and handakuten: they tell デ from テ, パ from ハ


def strip_disambiguator(title: str) -> str:
    """``"Kiss and Tell (1945 film)"`` → ``"Kiss and Tell"``."""
    return _PAREN.sub(" ", title).strip()


class NoNER:
    """No NER: the entity part's mentions are the title aliases found in the texts (set for a
    corpus not in English whose titles are names, where capital letters say nothing)."""

    name = "none"

    def extract(self, texts: Sequence[str], *, progress: bool = False) -> list[list[str]]:
        return [[] for _ in texts]


def make_extractor(
    ner: str, *, spacy_model: str = "en_core_web_sm", n_process: int = 1
) -> EntityExtractor:
    """The NER backend named ``ner`` (``regex``, ``spacy`` or ``none``)."""
    if ner == "regex":
        return RegexNER()
    if ner == "none":
        return NoNER()
    if ner == "spacy":
        from hopgraph.text.spacy_ner import SpacyNER

        return SpacyNER(spacy_model, n_process=n_process)
    raise ConfigError(f"unknown NER {ner!r}; use 'regex', 'spacy' or 'none'")
