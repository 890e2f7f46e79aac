"""The tokenizer of the sparse index: lowercase word tokens, English stopwords, Snowball stems.

It reproduces ``bm25s.tokenize(..., stopwords="en", stemmer=Stemmer("english"))`` token for
token, so our BM25 scores equal bm25s's own pipeline (checked in tests/test_sparse.py).
"""

from __future__ import annotations

import re
from functools import lru_cache

from hopgraph.jit import import_bm25s

STOPWORDS_EN = import_bm25s().stopwords.STOPWORDS_EN  # bm25s without numba (issue 62)
_TOKEN = re.compile(r"(?u)\b\w\w+\b")


@lru_cache(maxsize=4)
def _stemmer(language: str):
    import Stemmer  # PyStemmer

    return Stemmer.Stemmer(language)


class Tokenizer:
    """Splits text into index terms. ``stemmer`` is a Snowball language or ``"none"``."""

    def __init__(self, stemmer: str = "english", stopwords: str = "en"):
        if stopwords not in ("en", "none"):
            raise ValueError(f"stopwords must be 'en' or 'none', got {stopwords!r}")
        self.stopwords = frozenset(STOPWORDS_EN) if stopwords == "en" else frozenset()
        self._stem = None if stemmer == "none" else _stemmer(stemmer).stemWord
        self._cache: dict[str, str] = {}

    def __call__(self, text: str) -> list[str]:
        words = [w for w in _TOKEN.findall(text.lower()) if w not in self.stopwords]
        if self._stem is None:
            return words
        cache = self._cache
        out = []
        for w in words:
            s = cache.get(w)
            if s is None:
                s = cache[w] = self._stem(w)
            out.append(s)
        return out
