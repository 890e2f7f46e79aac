"""Named-entity extraction backends and entity normalisation (SPRIG §3.2).

Backends take a list of texts and return, per text, the entity mentions in order of appearance.
``regex`` is SPRIG's heuristic (1–4 capitalised tokens); ``spacy`` runs a spaCy pipeline and keeps
the named-entity labels in :data:`SPACY_LABELS`. Asking for spaCy without its model is an error:
there is never a silent fallback to another NER.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

from hopgraph.errors import ConfigError

# SPRIG §3.2: \b[A-Z][a-z]+(\s+[A-Z][a-z]+){0,3}\b, except that a match never crosses a line
# break, so a passage's title line and its first sentence ("Ada Vell\nAda Vell was ...") stay apart.
REGEX_PATTERN = re.compile(r"\b[A-Z][a-z]+(?:[^\S\n]+[A-Z][a-z]+){0,3}\b")

# spaCy labels for names (numeric types DATE, TIME, PERCENT, MONEY, QUANTITY, ORDINAL, CARDINAL
# are not entities a multi-hop question pivots on).
SPACY_LABELS = frozenset(
    {
        "PERSON",
        "NORP",
        "FAC",
        "ORG",
        "GPE",
        "LOC",
        "PRODUCT",
        "EVENT",
        "WORK_OF_ART",
        "LAW",
        "LANGUAGE",
    }
)

NORMALIZATIONS = ("none", "simple", "lower")
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
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
    every run of non-alphanumerics collapsed to one space (SPRIG's "simple rule")."""
    if mode == "none":
        return " ".join(mention.split())
    if mode == "lower":
        return " ".join(mention.lower().split())
    if mode == "simple":
        if mention.isascii():  # fast path: nothing to fold
            return _NON_ALNUM.sub(" ", mention.lower()).strip()
        return _NON_ALNUM.sub(" ", fold_accents(mention.lower())).strip()
    raise ConfigError(f"entity normalisation must be one of {NORMALIZATIONS}, got {mode!r}")


def fold_accents(text: str) -> str:
    """``"Gödel"`` → ``"Godel"``: accents removed (NFKD, combining marks dropped)."""
    if text.isascii():
        return text
    folded = unicodedata.normalize("NFKD", text)
    return "".join(c for c in folded if not unicodedata.combining(c))


def strip_disambiguator(title: str) -> str:
    """``"Kiss and Tell (1945 film)"`` → ``"Kiss and Tell"``."""
    return _PAREN.sub(" ", title).strip()


def make_extractor(
    ner: str, *, spacy_model: str = "en_core_web_sm", n_process: int = 1
) -> EntityExtractor:
    """The NER backend named ``ner`` (``regex`` or ``spacy``)."""
    if ner == "regex":
        return RegexNER()
    if ner == "spacy":
        from hopgraph.text.spacy_ner import SpacyNER

        return SpacyNER(spacy_model, n_process=n_process)
    raise ConfigError(f"unknown NER {ner!r}; use 'regex' or 'spacy'")
