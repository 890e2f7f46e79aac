"""GRIEVER's vector-based entity matcher (§4.3, after Stoilos et al. 2022).

The query is encoded once; its token embeddings (before pooling) are mean-pooled over every word
n-gram of up to ``max_n`` words, exactly as the sentence encoder pools a whole text, and
normalised. A candidate name (entity, synonym or predicate, embedded offline as a sentence) is
scored by its best cosine over the n-grams; the n-gram that wins is kept, so that query rewriting
(§4.5) knows which words named the entity.
"""

from __future__ import annotations

import re

import numpy as np

from hopgraph.errors import ConfigError
from hopgraph.models.embedder import TokenVectors

_WORD = re.compile(r"[\w][\w'’.-]*[\w]|[\w]")
# n-grams made only of these words match nothing useful
_FUNCTION_WORDS = frozenset(
    "a an the of in on at to for by with from and or is was were are be been did does do who "
    "whom whose which that what where when why how it its his her their this these those as".split()
)
_ARTICLES = frozenset({"a", "an", "the"})


class NGramMatcher:
    """Word n-gram vectors of one query; :meth:`match` scores candidate name vectors."""

    def __init__(self, text: str, tv: TokenVectors, *, max_n: int = 4):
        if tv.tokens.shape[1] != tv.sentence.shape[0]:
            raise ConfigError(
                "the entity matcher pools token embeddings into sentence-like vectors: it needs "
                f"a model whose sentence vector is pooled from its tokens (token dim "
                f"{tv.tokens.shape[1]} != sentence dim {tv.sentence.shape[0]})"
            )
        self.text = text
        words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
        starts = np.asarray([w[0] for w in words], np.int64)
        # the word each token belongs to: the last word starting at or before the token
        tok_word = np.searchsorted(starts, tv.spans[:, 0], side="right") - 1
        # token j belongs to word tok_word[j]; n-gram (i..j) pools the tokens of words i..j
        tok_word = np.asarray(tok_word, np.int64)
        first = np.searchsorted(tok_word, np.arange(len(words)), side="left")
        last = np.searchsorted(tok_word, np.arange(len(words)), side="right")
        cum = np.vstack([np.zeros((1, tv.tokens.shape[1]), np.float64), np.cumsum(tv.tokens, 0)])
        lower = [text[a:b].lower() for a, b in words]
        spans: list[tuple[int, int]] = []
        bounds: list[tuple[int, int]] = []
        for i in range(len(words)):
            for j in range(i, min(i + max_n, len(words))):
                if all(w in _FUNCTION_WORDS for w in lower[i : j + 1]):
                    continue
                if j > i and (
                    lower[j] in _FUNCTION_WORDS
                    or (lower[i] in _FUNCTION_WORDS and lower[i] not in _ARTICLES)
                ):
                    continue  # "Paris in", "of Paris" add nothing to "Paris"; "The Hague" stays
                if last[j] <= first[i]:
                    continue  # words past the encoder's truncation
                bounds.append((first[i], last[j]))
                spans.append((words[i][0], words[j][1]))
        self.spans = np.asarray(spans, np.int64).reshape(-1, 2)
        b = np.asarray(bounds, np.int64).reshape(-1, 2)
        vecs = (cum[b[:, 1]] - cum[b[:, 0]]) / np.maximum(b[:, 1] - b[:, 0], 1)[:, None]
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        self.vectors = vecs.astype(np.float32)

    def match(self, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each row of ``names`` (unit vectors): the best cosine over the n-grams and the
        index of that n-gram (-1 and 0.0 when the query has no n-gram)."""
        m = len(names)
        if m == 0 or len(self.vectors) == 0:
            return np.zeros(m, np.float32), np.full(m, -1, np.int64)
        sims = np.asarray(names, np.float32) @ self.vectors.T
        best = np.argmax(sims, axis=1)
        return sims[np.arange(m), best], best

    def span_text(self, i: int) -> str:
        a, b = self.spans[i]
        return self.text[a:b]
